"""Scenario 5 host check: crier's log lines arrived on ttyS1, in the log format, readable."""
import os, re, sys

run = sys.argv[1]
lines = open(os.path.join(run, "ttyS1.log"), "rb").read().decode("utf-8", "replace").splitlines()
fmt = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z (ERROR|WARN|NOTICE|INFO|DEBUG) [a-z-]+: ")
good = [l.rstrip("\r") for l in lines if fmt.match(l.rstrip("\r"))]
print(f"5-serial-log.check: {len(lines)} lines on ttyS1, {len(good)} in the log format")
ok = any(" INFO runtime: ready" in l for l in good)
if not ok:
    print("5-serial-log.check: FAIL: no ' INFO runtime: ready' line on ttyS1; got: " + repr(lines[:10]))
sys.exit(0 if ok else 1)
