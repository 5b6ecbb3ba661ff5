"""Scenario 0 host check: `crier say` put speech on the loopback, silence before it."""
import os, sys
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
import speechcheck

# From process start: the debug build loads libswift*/Foundation over 9p and espeak-ng loads its
# cmn dictionary, all under TCG: seconds, not milliseconds.
limit = float(os.environ.get("CRIER_VM_MAX_SAY_LATENCY", "20"))
bad = speechcheck.check(sys.argv[1], "0-say", "starting crier say", limit, "CRIER_VM_MAX_SAY_LATENCY")
for b in bad:
    print("0-say.check: FAIL: " + b)
sys.exit(1 if bad else 0)
