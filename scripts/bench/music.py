#!/usr/bin/env python3
"""Background-music benchmarks (docs/music.md, docs/benchmarks.md#music): a benchmark, not a
test. Prints a table; exits non-zero only if something broke, never because of a time.

  scripts/bench/music.sh [--quick]

- CPU of the daemon idle with no music, with a directory of MP3s (44.1 kHz stereo, decoded by
  libsndfile/libmpg123, resampled to 48 kHz by libsoxr), with a 48 kHz WAV (no resampling) and
  with a FIFO fed 44100:16:2 in real time; per thread (crier-music, crier-audio) and in total,
  on the null PCM (self-paced, as in bench.py's idle row).
- Order → first loud sample leaving ALSA, with and without music, through bench.py's own latency
  measurement (order server on loopback, detector on the PCM FIFO). The music is a quiet tone
  (peak below the detector's 1 % threshold) so only speech counts as an onset; the music path
  (decode, resample, buffer, duck, mix) runs in full either way.
"""
import argparse
import math
import os
import re
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "..", "Tests", "integration"))
import bench  # noqa: E402
from bench import Broken, thread_counters, mono_ns  # noqa: E402

MUSIC = ""


class MusicBench(bench.Bench):
    def conf(self, d, server_port=None, extra=""):
        # Its own control socket: another daemon on this machine must not make it refuse to start.
        return super().conf(d, server_port, extra + MUSIC + "control.socket = %s/control.sock\n" % d)


def write_mp3(path, seconds, hz, vol):
    import ctypes
    lib = ctypes.CDLL("libsndfile.so.1")

    class SFInfo(ctypes.Structure):
        _fields_ = [("frames", ctypes.c_int64), ("samplerate", ctypes.c_int), ("channels", ctypes.c_int),
                    ("format", ctypes.c_int), ("sections", ctypes.c_int), ("seekable", ctypes.c_int)]
    lib.sf_open.restype = ctypes.c_void_p
    lib.sf_open.argtypes = [ctypes.c_char_p, ctypes.c_int, ctypes.POINTER(SFInfo)]
    lib.sf_writef_float.argtypes = [ctypes.c_void_p, ctypes.POINTER(ctypes.c_float), ctypes.c_int64]
    lib.sf_close.argtypes = [ctypes.c_void_p]
    rate = 44100
    info = SFInfo(0, rate, 2, 0x230000 | 0x0082, 0, 0)
    h = lib.sf_open(path.encode(), 0x20, ctypes.byref(info))
    if not h:
        raise Broken("libsndfile cannot write MP3")
    n = int(seconds * rate)
    buf = (ctypes.c_float * (2 * n))()
    for i in range(n):
        # a chord with some movement, so the encoder has real work (not a pure tone)
        t = i / rate
        v = vol * (0.5 * math.sin(2 * math.pi * 220 * t) + 0.3 * math.sin(2 * math.pi * 331 * t + math.sin(t)) +
                   0.2 * math.sin(2 * math.pi * 1490 * t))
        buf[2 * i] = v
        buf[2 * i + 1] = v * (0.8 + 0.2 * math.sin(t))
    lib.sf_writef_float(h, buf, n)
    lib.sf_close(h)


def cpu_run(b, name, extra, feeder=None, seconds=20):
    d = b.dir("music-cpu-" + name)
    env = b.env(d, "")
    conf = b.conf(d, None, "audio.device = null\n" + extra)
    p = b.crier_run(d, env, conf)
    p.wait_for(r"INFO audio: opened device=null type=NULL", timeout=20)
    stop = threading.Event()
    if feeder:
        threading.Thread(target=feeder, args=(stop,), daemon=True).start()
    time.sleep(3)
    names = {}
    for t in os.listdir("/proc/%d/task" % p.pid):
        try:
            names[t] = open("/proc/%d/task/%s/comm" % (p.pid, t)).read().strip()
        except OSError:
            pass
    a = thread_counters(p.pid)
    t0 = mono_ns()
    time.sleep(seconds)
    z = thread_counters(p.pid)
    t1 = mono_ns()
    stop.set()
    b.check_alive(p, "crier")
    p.stop()
    per = {}
    for tid, v in z.items():
        cpu = v[0] - a.get(tid, (0, 0, 0))[0]
        n = names.get(tid, "?")
        per[n] = per.get(n, 0) + cpu
    total = 100.0 * sum(per.values()) / (t1 - t0)
    return {"total": total, "music": 100.0 * per.get("crier-music", 0) / (t1 - t0),
            "audio": 100.0 * per.get("crier-audio", 0) / (t1 - t0), "seconds": (t1 - t0) / 1e9,
            "underruns": sum(1 for _, l in p.lines() if "underrun" in l)}


def vm_rows(crier, secs):
    """CPU of music on a clock-driven device: the VM tier's hw:Loopback under TCG (~100× native)."""
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env = dict(os.environ, CRIER_BIN=crier, CRIER_VM_BENCH_N=str(secs))
    l0 = os.getloadavg()[0]
    r = subprocess.run(["bash", os.path.join(root, "scripts", "vm-test.sh"), "../../bench/vm/music"], env=env,
                       capture_output=True, text=True, timeout=900)
    m = re.search(r"run dir (\S+)", r.stdout + r.stderr)
    path = os.path.join(m.group(1), "results", "bench.txt") if m else ""
    rows = {}
    if path and os.path.exists(path):
        for line in open(path):
            name, _, rest = line.strip().partition(" ")
            if name.startswith("music_"):
                rows[name[6:]] = {kv.split("=")[0]: float(kv.split("=")[1]) for kv in rest.split()}
    if r.returncode != 0 or len(rows) < 3:
        raise Broken("VM music run failed (exit %s):\n  %s" % (r.returncode, "\n  ".join((r.stdout + r.stderr).splitlines()[-25:])))
    print()
    print("| music on hw:Loopback in the VM (TCG, release build, %d s each; load %.2f→%.2f) | CPU total (%% of one vCPU) | crier-music | crier-audio | wakeups/s |" % (
        secs, l0, os.getloadavg()[0]))
    print("|---|---|---|---|---|")
    for key, label in (("none", "no music"), ("mp3", "MP3 44.1 kHz → 48 kHz"), ("fifo", "FIFO 44100:16:2 → 48 kHz")):
        v = rows[key]
        print("| %s | %.2f | %.2f | %.2f | %.1f |" % (label, v["cpu_pct"], v["music_pct"], v["audio_pct"], v["wakeups"]))
    print("run dir: %s" % m.group(1))


def main():
    global MUSIC
    ap = argparse.ArgumentParser()
    ap.add_argument("--crier", required=True)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--vm", action="store_true", help="also the CPU rows on hw:Loopback in the QEMU VM (scripts/bench/vm/music.sh)")
    ap.add_argument("--vm-only", action="store_true", help="only the VM rows")
    a = ap.parse_args()
    if a.vm or a.vm_only:
        vm_rows(os.path.abspath(a.crier), 10 if a.quick else 30)
        if a.vm_only:
            return 0
    work = tempfile.mkdtemp(prefix="crier-bench-music-")
    b = MusicBench(os.path.abspath(a.crier), a.quick, work)
    secs = 8 if a.quick else 20
    mdir = os.path.join(work, "mp3")
    os.makedirs(mdir)
    b.log("making music files")
    write_mp3(os.path.join(mdir, "a.mp3"), 30, 220, 0.8)
    wdir = os.path.join(work, "wav")
    os.makedirs(wdir)
    subprocess.run(["sox", "-n", "-r", "48000", "-c", "2", "-b", "16", os.path.join(wdir, "a.wav"), "synth", "30",
                    "sine", "220", "vol", "0.8"], check=True)
    quiet = os.path.join(work, "quiet")
    os.makedirs(quiet)
    # Peak 0.12 × (-12 dB level, -9 dB volume 7, -3 dB headroom) ≈ 0.008: under the detector's 0.01.
    write_mp3(os.path.join(quiet, "q.mp3"), 120, 220, 0.12)
    fifo = os.path.join(work, "music.pcm")
    raw = os.path.join(work, "tone.raw")
    subprocess.run(["sox", "-n", "-r", "44100", "-c", "2", "-b", "16", "-e", "signed", "-t", "raw", raw, "synth", "5",
                    "sine", "220", "vol", "0.8"], check=True)
    data = open(raw, "rb").read()

    def feeder(stop):
        # A player writing 44100:16:2 in real time, 20 ms at a time.
        while not os.path.exists(fifo) and not stop.is_set():
            time.sleep(0.05)
        with open(fifo, "wb") as w:
            step = 44100 * 4 // 50
            t = time.monotonic()
            pos = 0
            while not stop.is_set():
                w.write(data[pos:pos + step])
                w.flush()
                pos = (pos + step) % (len(data) - step)
                t += 0.02
                time.sleep(max(0, t - time.monotonic()))

    rows = []
    try:
        for name, extra, fd in [("no music", "", None),
                                ("MP3 44.1 kHz → 48 kHz", "music.source = %s\n" % mdir, None),
                                ("WAV 48 kHz (no resampling)", "music.source = %s\n" % wdir, None),
                                ("FIFO 44100:16:2 → 48 kHz", "music.source = fifo:%s\n" % fifo, feeder)]:
            b.log("cpu: %s" % name)
            r = cpu_run(b, name.split()[0].lower(), extra, fd, secs)
            rows.append((name, r))
            b.log("  total %.2f %% of a core, crier-music %.2f %%, crier-audio %.2f %%" % (r["total"], r["music"], r["audio"]))
            b.cleanup()
        lat = []
        for name, music in [("without music", ""), ("with music (MP3, resampled)", "music.source = %s\n" % quiet)]:
            MUSIC = music
            b.log("latency %s" % name)
            b.latency("crier")
            r = b.results["latency_crier"]
            lat.append((name, r))
            b.cleanup()
    finally:
        b.cleanup()
    load = os.getloadavg()
    print()
    print("| music (null PCM, release build, %d s each) | CPU total (%% of one core) | crier-music | crier-audio |" % secs)
    print("|---|---|---|---|")
    for name, r in rows:
        print("| %s | %.2f | %.2f | %.2f |" % (name, r["total"], r["music"], r["audio"]))
    print()
    print("| order → first loud sample (file PCM, %d orders) | p50 ms | p90 ms | p99 ms | max ms | detected |" % lat[0][1]["n"])
    print("|---|---|---|---|---|---|")
    for name, r in lat:
        print("| %s | %.1f | %.1f | %.1f | %.1f | %d/%d |" % (name, r["p50"], r["p90"], r["p99"], r["max"], r["got"], r["n"]))
    print()
    print("load average at the end: %.2f %.2f %.2f" % load)
    return 0


if __name__ == "__main__":
    sys.exit(main())
