"""Scenario 12 host check: every order sent was acked `spoken` exactly once, nothing else."""
import os, re, sys

run = sys.argv[1]
out = open(os.path.join(run, "host.out"), errors="replace").read().splitlines()
sent = [m.group(1) for l in out for m in [re.search(r"(?:^|\s)order id=(\S+) kind=new_customer", l)] if m]
acks = [(m.group(1), m.group(2)) for l in out for m in [re.search(r"(?:^|\s)ack id=(\S+) status=(\S+)", l)] if m]
bad = []
if len(sent) != 5:
    bad.append("expected 5 orders sent, got %d: %r" % (len(sent), sent))
for oid in sent:
    mine = [s for i, s in acks if i == oid]
    if mine != ["spoken"]:
        bad.append("order %s acked %r (want exactly one 'spoken')" % (oid, mine))
for b in bad:
    print("12-clock.check: FAIL: " + b)
print("12-clock.check: %d orders, acks %r" % (len(sent), acks))
sys.exit(1 if bad else 0)
