"""Scenario 5 host check: crier's log lines arrived on ttyS1 (the host end of the guest's UART),
in the log format and complete: every line crier wrote to stderr (results/crier.log) is on the
serial port too (order may differ between lines logged at the same moment), nothing dropped."""
import os, re, sys

run = sys.argv[1]
raw = open(os.path.join(run, "ttyS1.log"), "rb").read()
serial = [l.rstrip("\r") for l in raw.decode("utf-8", "replace").split("\n")]
fmt = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z (ERROR|WARN|NOTICE|INFO|DEBUG) [a-z-]+: ")
good = [l for l in serial if fmt.match(l)]
stderr = [l.rstrip("\n") for l in open(os.path.join(run, "results", "crier.log"), encoding="utf-8", errors="replace")
          if fmt.match(l)]
print(f"5-serial-log.check: {len(raw)} bytes, {len(serial)} lines on ttyS1, {len(good)} in the log format; "
      f"{len(stderr)} log lines on stderr")
bad = []
if not any(" INFO runtime: ready" in l for l in good):
    bad.append("no ' INFO runtime: ready' line on ttyS1; got: " + repr(serial[:10]))
for want in ("button volume_down: press", "INFO alert: spoken id="):
    if not any(want in l for l in good):
        bad.append(f"no '{want}' line on ttyS1")
# every stderr line on the serial port (as a multiset: the two sinks are fed independently, so
# lines logged at the same moment by two threads may come out in another order: noted)
from collections import Counter
have = Counter(serial)
missing = [l for l, n in (Counter(stderr) - have).items() for _ in range(n)]
if missing:
    bad.append(f"{len(missing)} of {len(stderr)} stderr lines not on ttyS1, first: {missing[:3]!r}")
ser_order = [l for l in serial if l in set(stderr)]
moved = sum(1 for a, b in zip(stderr, ser_order) if a != b)
if moved:
    print(f"5-serial-log.check: note: {moved} line(s) in another order than on stderr (concurrent loggers)")
drops = [l for l in good if "serial: dropped" in l]
if drops:
    bad.append("the serial sink dropped lines: " + repr(drops))
extra = [l for l in serial if l and not fmt.match(l)]
if extra:
    print(f"5-serial-log.check: note: {len(extra)} other line(s) on ttyS1: {extra[:3]!r}")
for b in bad:
    print("5-serial-log.check: FAIL: " + b)
sys.exit(1 if bad else 0)
