#!/usr/bin/python3
"""First-loud-sample detector for the latency benchmark.

Reads raw S16_LE audio from a FIFO that an ALSA `type file` PCM writes into
(`pcm.!default { type file slave.pcm "null" file "/path/pcm.fifo" format "raw" }`), reopening it
after every writer closes it (aplay opens the device once per order, Crier once per run). For
every loud sample (|x| > threshold) that follows at least --gap-ms of silence, or is the first
loud sample since the FIFO was opened, it prints one line on stdout:

    loud <CLOCK_MONOTONIC ns when the bytes holding it were read> <bytes since open>

CLOCK_MONOTONIC is system-wide, so the benchmark driver compares it with its own send times.
Channels and rate do not matter for "the first loud sample", so the stream format is not needed.
It also prints `open <ns>` / `close <ns> <bytes>` lines for each writer, and `priority …` once:
it runs at SCHED_FIFO priority when it may (root), so its own scheduling delay on a loaded
machine does not end up in the figures.
"""
import argparse
import array
import os
import sys
import time


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("fifo")
    ap.add_argument("--threshold", type=float, default=0.01, help="fraction of full scale")
    ap.add_argument("--gap-ms", type=float, default=250.0,
                    help="silence (wall time) needed before a loud sample counts as a new onset")
    a = ap.parse_args()
    # The detector is the measuring instrument: on a loaded machine a normal-priority reader stamps
    # late (its own scheduling delay). Real-time priority if allowed (root), else as is.
    try:
        os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(20))
        rt = "SCHED_FIFO"
    except (OSError, AttributeError):
        rt = "normal"
    sys.stdout.write("priority %s\n" % rt)
    sys.stdout.flush()
    thr = int(a.threshold * 32768)
    gap_ns = int(a.gap_ms * 1e6)
    out = sys.stdout
    while True:
        try:
            fd = os.open(a.fifo, os.O_RDONLY)  # blocks until a writer opens the device
        except FileNotFoundError:
            return
        now = time.monotonic_ns()
        out.write("open %d\n" % now)
        out.flush()
        last_loud = None  # ns of the last chunk that had a loud sample
        total = 0
        rest = b""
        while True:
            b = os.read(fd, 1 << 16)
            t = time.monotonic_ns()
            if not b:
                break
            data = rest + b
            cut = len(data) & ~1
            rest = data[cut:]
            s = array.array("h")
            s.frombytes(data[:cut])
            loud_at = None
            if thr > 0 and (max(s, default=0) > thr or -min(s, default=0) > thr):
                for i, v in enumerate(s):
                    if v > thr or -v > thr:
                        loud_at = i
                        break
            if loud_at is not None:
                if last_loud is None or t - last_loud > gap_ns:
                    out.write("loud %d %d\n" % (t, total + 2 * loud_at))
                    out.flush()
                last_loud = t
            total += len(b)
        os.close(fd)
        out.write("close %d %d\n" % (time.monotonic_ns(), total))
        out.flush()


if __name__ == "__main__":
    try:
        main()
    except (KeyboardInterrupt, BrokenPipeError):
        pass
