"""Scenario 1 host check: silence before the order, speech after it, latency, the ack."""
import os, sys
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
import speechcheck

run = sys.argv[1]
bad = speechcheck.check(run, "1-order-speech", "the order")
acks = [l for l in open(os.path.join(run, "host.out"), errors="replace") if "ack" in l]
if not any("status=spoken" in l for l in acks):
    bad.append("order-sim printed no 'ack ... status=spoken': " + repr(acks))
for b in bad:
    print("1-order-speech.check: FAIL: " + b)
sys.exit(1 if bad else 0)
