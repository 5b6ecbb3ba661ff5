#!/usr/bin/env python3
"""A stall watcher for the VM's loaded scenario (14-loaded): one per vCPU, pinned to it, at
SCHED_FIFO 90 (above crier's audio thread at 30), sleeping 10 ms at a time. A wake-up later than
--min-ms means that vCPU ran nothing of the guest's for that long (the emulator's thread not
scheduled on the host, or the host itself stolen from): no guest thread could have run there,
whatever its priority. Each such gap is one line in --out: "<unix time it ended> <gap ms> <cpu>".
stallmatch.py puts crier's underruns against them."""
import argparse
import os
import signal
import time

ap = argparse.ArgumentParser()
ap.add_argument("--cpu", type=int, required=True)
ap.add_argument("--out", required=True)
ap.add_argument("--period", type=float, default=0.010)
ap.add_argument("--min-ms", type=float, default=20.0)
a = ap.parse_args()
os.sched_setaffinity(0, {a.cpu})
os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(90))
stop = False


def done(*_):
    global stop
    stop = True


signal.signal(signal.SIGTERM, done)
with open(a.out, "a") as out:
    last = time.monotonic()
    while not stop:
        time.sleep(a.period)
        now = time.monotonic()
        gap = (now - last - a.period) * 1000
        if gap >= a.min_ms:
            out.write("%.3f %.1f %d\n" % (time.time(), gap, a.cpu))
            out.flush()
        last = now
