#!/usr/bin/env python3
"""Fleet load on one broker (a benchmark: prints a table, never fails on a time).

For each fleet size: a fresh Debian mosquitto on 127.0.0.1 (free port, persistence on, its own
temp dir), `crier-sim mqtt-fleet` with that many MQTT links in one process (the real link: own
thread, persistent session, inbox journal fsynced per order; the ack follows the order at
once, no audio), orders at a steady rate round robin. Reported: orders, acked exactly once,
duplicate acks, unacked, publish -> ack p50/p99, broker CPU (share of one core over the run)
and peak RSS.

    scripts/bench.sh --only mqtt            # or: python3 scripts/bench/mqtt_fleet.py --crier BIN
"""
import argparse
import os
import re
import socket
import subprocess
import tempfile
import time


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


def proc_cpu(pid):
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def proc_mem(pid, key):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1]) / 1024
    return 0.0


def one(crier, boxes, rate, seconds):
    with tempfile.TemporaryDirectory(prefix="crier-mqtt-bench-") as d:
        port = free_port()
        conf = os.path.join(d, "mosquitto.conf")
        with open(conf, "w") as f:
            f.write("listener %d 127.0.0.1\nallow_anonymous true\npersistence true\npersistence_location %s/\n"
                    "max_queued_messages 100000\nmax_inflight_messages 100\n" % (port, d))
            if os.geteuid() == 0:
                f.write("user root\n")
        broker = subprocess.Popen(["/usr/sbin/mosquitto", "-c", conf], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            for _ in range(100):
                try:
                    socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                    break
                except OSError:
                    time.sleep(0.05)
            c0, t0 = proc_cpu(broker.pid), time.monotonic()
            # crier-sim from the same build (the fleet bench is not in crier since issue 32)
            sim = os.path.join(os.path.dirname(crier), "crier-sim")
            r = subprocess.run([sim, "mqtt-fleet", "--server", "mqtt://127.0.0.1:%d" % port, "--boxes", str(boxes),
                                "--rate", str(rate), "--seconds", str(seconds), "--dir", d],
                               capture_output=True, text=True, timeout=seconds + 180)
            c1, t1 = proc_cpu(broker.pid), time.monotonic()
            hwm = proc_mem(broker.pid, "VmHWM")
        finally:
            broker.kill()
            broker.wait()
    out = r.stdout
    done = re.search(r"done orders=(\d+) spoken=(\d+).*unacked=(\d+) duplicate_acks=(\d+) latency_p50_ms=(\S+) latency_p99_ms=(\S+)", out)
    conn = re.search(r"connected=(\d+) connect_s=(\S+)", out)
    sync = re.search(r"inbox fsyncs=(\d+) mean_ms=(\S+)", out)
    if not done:
        return {"boxes": boxes, "error": (r.stdout + r.stderr)[-400:]}
    return {"boxes": boxes, "connected": conn.group(1) if conn else "?", "connect_s": conn.group(2) if conn else "?",
            "orders": int(done.group(1)), "once": int(done.group(2)), "unacked": int(done.group(3)),
            "dups": int(done.group(4)), "p50": done.group(5), "p99": done.group(6),
            "cpu": 100 * (c1 - c0) / (t1 - t0), "rss": hwm, "fsync": sync.group(2) if sync else "?", "rc": r.returncode}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--crier", required=True)
    ap.add_argument("--boxes", default="100,300")
    ap.add_argument("--rate", type=float, default=50)
    ap.add_argument("--seconds", type=float, default=20)
    a = ap.parse_args()
    rows = [one(a.crier, int(b), a.rate, a.seconds) for b in a.boxes.split(",")]
    ver = subprocess.run(["dpkg-query", "-W", "-f", "${Version}", "mosquitto"], capture_output=True, text=True).stdout or "?"
    print("\nMQTT fleet on one broker (mosquitto %s, persistence on), %g orders/s for %g s, round robin; load %s" % (
        ver, a.rate, a.seconds, " ".join(open("/proc/loadavg").read().split()[:3])))
    print("| boxes | connected (s) | orders | acked spoken once | duplicate acks | unacked | publish→ack p50 ms | p99 ms | inbox fsync mean ms | broker CPU % of a core | broker peak RSS MB |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        if "error" in r:
            print("| %d | failed: %s |" % (r["boxes"], r["error"].replace("\n", " ")))
            continue
        print("| %d | %s (%s) | %d | %d | %d | %d | %s | %s | %s | %.1f | %.1f |" % (
            r["boxes"], r["connected"], r["connect_s"], r["orders"], r["once"], r["dups"], r["unacked"],
            r["p50"], r["p99"], r["fsync"], r["cpu"], r["rss"]))


if __name__ == "__main__":
    main()
