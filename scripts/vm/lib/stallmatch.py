#!/usr/bin/env python3
"""Puts crier's underrun warnings against the stall watchers' gaps (stallwatch.py): an underrun
is the emulator's only when the warning says the audio thread woke late (`why="woke late"`) and
a vCPU ran nothing of the guest's for about as long as it was late (the gap at least that long
less 15 ms: the watcher's 10 ms period and slack), overlapping the time it overslept. Any other
underrun is crier's. Prints one line per underrun, then "crier N emulator M".

  stallmatch.py CRIER_LOG STALLS
  stallmatch.py --self-test"""
import datetime
import re
import sys

LINE = re.compile(r"^(\S+)Z WARN audio: underrun, recovered .*?slept_ms=([\d.]+) asked_ms=([\d.]+) .*?why=\"?([a-z ]+)\"?$")


def unix(iso):
    return datetime.datetime.fromisoformat(iso).replace(tzinfo=datetime.timezone.utc).timestamp()


def judge(log_lines, stall_lines):
    stalls = []
    for l in stall_lines:
        f = l.split()
        if len(f) >= 3:
            stalls.append((float(f[0]) - float(f[1]) / 1000, float(f[0]), float(f[1]), int(f[2])))
    out, crier, emu = [], 0, 0
    for l in log_lines:
        if "WARN audio: underrun, recovered" not in l:
            continue
        m = LINE.match(l.strip())
        if not m or m.group(4) != "woke late":
            crier += 1
            out.append("crier's: %s" % l.strip())
            continue
        t = unix(m.group(1))
        slept, asked = float(m.group(2)) / 1000, float(m.group(3)) / 1000
        late = slept - asked
        # It should have woken at t - slept + asked (give or take the busy time before the log line).
        due, woke = t - slept + asked - 0.015, t + 0.015
        hit = [s for s in stalls if s[0] < woke and s[1] > due and s[2] / 1000 >= late - 0.015]
        if hit:
            emu += 1
            s = max(hit, key=lambda s: s[2])
            out.append("emulator's (vCPU %d ran nothing for %.1f ms, the thread was %.1f ms late): %s" % (s[3], s[2], late * 1000, l.strip()))
        else:
            crier += 1
            out.append("crier's (no vCPU stall covers %.1f ms late): %s" % (late * 1000, l.strip()))
    return out, crier, emu


def self_test():
    log = ["2026-12-05T16:50:42.676Z WARN audio: underrun, recovered device=hw:Loopback,0 slept_ms=108.6 asked_ms=38.7 queued_ms=78.7 busy_ms=4.2 why=\"woke late\"",
           "2026-12-05T16:51:00.000Z WARN audio: underrun, recovered device=hw:Loopback,0 slept_ms=90.0 asked_ms=20.0 queued_ms=60.0 busy_ms=0.1 why=\"woke late\"",
           "2026-12-05T16:52:00.000Z WARN audio: underrun, recovered device=hw:Loopback,0 slept_ms=10.0 asked_ms=20.0 queued_ms=60.0 busy_ms=70.0 why=busy"]
    t = unix("2026-12-05T16:50:42.676")
    stalls = ["%.3f 75.0 1" % (t - 0.004),              # covers the first (70 ms late)
              "%.3f 30.0 0" % (unix("2026-12-05T16:51:00.000") - 0.01)]  # too short for the second
    out, c, e = judge(log, stalls)
    assert (c, e) == (2, 1), (out, c, e)
    assert out[0].startswith("emulator's (vCPU 1") and out[1].startswith("crier's (no vCPU") and out[2].startswith("crier's:"), out
    assert judge(log[:1], []) [1:] == (1, 0)
    print("stallmatch: self-test ok")


if __name__ == "__main__":
    if sys.argv[1:] == ["--self-test"]:
        self_test()
        sys.exit(0)
    with open(sys.argv[1]) as f:
        log = f.readlines()
    try:
        with open(sys.argv[2]) as f:
            st = f.readlines()
    except OSError:
        st = []
    out, c, e = judge(log, st)
    for l in out:
        print(l)
    print("crier %d emulator %d" % (c, e))
