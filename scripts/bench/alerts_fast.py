#!/usr/bin/python3
"""bench.py's "alerts" memory step in seconds instead of ~26 minutes (issue 16).

The daemon plays to `plug` over the null PCM: the engine paces itself only on null/file PCMs,
so through a plug it writes as fast as the CPU allows and 10 000 short alerts take ~25 s. Same
orders, voice and config as the bench step otherwise; anonymous memory (smaps_rollup) every
--step alerts, and the anonymous kB of each mapping (heap, malloc arenas, mmapped blocks) in
--json, to see which one grows. Not paced, so no timing figure here means anything.

    scripts/bench/alerts_fast.py --crier .build/release/crier --alerts 10000
    scripts/bench/alerts_fast.py --crier … --alerts 50000 --chunk 250   # steady traffic, not one burst
    scripts/bench/alerts_fast.py --crier … --env MALLOC_ARENA_MAX=2     # allocator, not retention?
"""
import argparse
import json
import os
import shutil
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench  # noqa: E402
from bench import Proc, proc_status, smaps  # noqa: E402


def anon_mappings(pid):
    """[(address range, name, anonymous kB)] for every mapping holding anonymous memory."""
    out, cur = [], None
    with open("/proc/%d/smaps" % pid) as f:
        for line in f:
            p = line.split()
            if "-" in p[0] and not p[0].endswith(":"):
                cur = [p[0], p[5] if len(p) > 5 else "", 0]
                out.append(cur)
            elif p[0] == "Anonymous:":
                cur[2] = int(p[1])
    return [m for m in out if m[2] > 0]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--crier", required=True)
    ap.add_argument("--alerts", type=int, default=10000)
    ap.add_argument("--step", type=int, default=0, help="sample every N acks (default a tenth)")
    ap.add_argument("--chunk", type=int, default=0, help="send N orders, wait for their acks, repeat (default: all at once, as the bench)")
    ap.add_argument("--env", action="append", default=[], help="NAME=VALUE for the daemon")
    ap.add_argument("--json", help="write the samples and per-mapping figures here")
    a = ap.parse_args()
    n, step = a.alerts, a.step or max(1, a.alerts // 10)
    work = tempfile.mkdtemp(prefix="crier-alerts-fast-")
    b = bench.Bench(os.path.abspath(a.crier), False, work)
    d = b.dir("alerts")
    env = b.env(d, 'pcm.fast { type plug slave.pcm "null" }')
    for kv in a.env:
        k, v = kv.split("=", 1)
        env[k] = v
    sim = Proc([b.sim, "order-sim", "--host", "127.0.0.1", "--port", "0", "--every", "0"], stdin=True)
    p = None
    try:
        port = int(sim.wait_for(r"^listening addr=", which="out")[0][1].rsplit(":", 1)[1].split()[0])
        conf = b.conf(d, port, "audio.device = fast\nspeech.lang = en\nspeech.en.rate = 450\nqueue.max = %d\n" % (n + 50))
        p = Proc([b.crier, "run", "--config", conf], env=env)
        p.wait_for(r" INFO runtime: ready", timeout=30)
        p.wait_for(r"INFO link: connected", timeout=20)
        p.wait_for(r"INFO audio: opened device=fast", timeout=20)
        time.sleep(3)
        sm = smaps(p.pid) or {}
        samples, maps = [(0, sm.get("Anonymous"), sm.get("Pss"))], {0: anon_mappings(p.pid)}
        t0, sent, chunk = time.monotonic(), 0, a.chunk or n
        for k in range(step, n + 1, step):
            while sent < k:
                m = min(chunk, n - sent)
                for _ in range(m):
                    sim.send("a")
                sent += m
                if a.chunk:
                    sim.wait_for(r"^ack id=\S+ status=spoken", which="out", count=sent, timeout=chunk + 60)
            sim.wait_for(r"^ack id=\S+ status=spoken", which="out", count=k, timeout=step + 60)
            b.check_alive(p, "crier")
            sm = smaps(p.pid) or {}
            samples.append((k, sm.get("Anonymous"), sm.get("Pss")))
            maps[k] = anon_mappings(p.pid)
            print("[%5.0f s] %d: anonymous %s kB, PSS %s kB, threads %s" % (
                time.monotonic() - t0, k, sm.get("Anonymous"), sm.get("Pss"), proc_status(p.pid, "Threads")), flush=True)
        half = samples[len(samples) // 2][1]
        print("anonymous kB: %s" % ", ".join("%d: %s" % (k, v) for k, v, _ in samples))
        print("second half of the run: %+d kB (target < 512)" % (samples[-1][1] - half))
        if a.json:
            with open(a.json, "w") as f:
                json.dump({"samples": samples, "maps": maps}, f)
    finally:
        for x in (p, sim):
            if x is not None:
                x.stop()
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
