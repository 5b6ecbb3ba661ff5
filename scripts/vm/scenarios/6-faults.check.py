"""Scenario 6 host check (b): the order killed mid-alert was acked `spoken` exactly once by the
server's own record (host.out of order-sim), and the capture holds at most a cut-off burst of
speech and then exactly one whole saying of it."""
import json, os, re, sys
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
import wav

run = sys.argv[1]
res = os.path.join(run, "results")
bad = []
oid = open(os.path.join(res, "killed-ids")).read().strip()
out = [l.split(" ", 1)[1].rstrip("\n") for l in open(os.path.join(run, "host.out"), errors="replace")]
mine = [l for l in out if re.search(rf"\bid={re.escape(oid)}\b", l)]
print("6-faults.check: order-sim on " + oid + ":\n  " + "\n  ".join(mine))
acks = [l for l in mine if l.startswith("ack ")]
spoken = [l for l in acks if "status=spoken" in l]
if len(spoken) != 1:
    bad.append(f"{len(spoken)} 'ack id={oid} status=spoken' lines from order-sim, expected exactly 1")
if len(acks) != len(spoken):
    bad.append(f"other acks for {oid}: {acks}")
if not any(l.startswith("redeliver ") for l in mine):
    bad.append(f"order-sim never redelivered {oid} (no 'redeliver id={oid}')")
if sum(l.startswith("order ") for l in mine) != 1:
    bad.append(f"expected one 'order id={oid}' line")

# --- audio: bursts of speech after the order ------------------------------------------------
meta = json.load(open(os.path.join(res, "capture.json")))
rate, x = wav.load(os.path.join(res, "capture.wav"))
if not meta.get("marked"):
    bad.append("the capture never went quiet before the order")
else:
    x = x[meta["mark_sample"]:]
    w = wav.windows(x, rate, 50)   # 50 ms RMS windows
    segs, cur, quiet = [], None, 0
    for i, r in enumerate(w):
        if r > 0.02:
            if cur is None:
                cur = [i, i]
            cur[1], quiet = i, 0
        elif cur is not None:
            quiet += 1
            if quiet >= 20:   # 1 s of quiet ends a saying
                segs.append(cur)
                cur = None
    if cur is not None:
        segs.append(cur)
    spans = [((a * 0.05), (b + 1) * 0.05) for a, b in segs]
    print("6-faults.check: speech after the order at " +
          ", ".join(f"{a:.2f}-{b:.2f} s ({b - a:.2f} s)" for a, b in spans) +
          f"; capture {len(x) / rate:.1f} s, arecord restarts {meta.get('arecord_restarts')}, gaps {meta.get('gaps')}")
    if not spans or len(spans) > 2:
        bad.append(f"{len(spans)} bursts of speech in the capture, expected a cut-off one (SIGKILL) and one whole one")
    else:
        whole = spans[-1][1] - spans[-1][0]
        if whole < 1.8:
            bad.append(f"the saying after the restart lasted only {whole:.2f} s")
        if len(spans) == 1:
            print("6-faults.check: note: nothing of the first saying reached the device before the kill")
        elif spans[0][1] - spans[0][0] >= whole - 0.2:
            bad.append(f"the first saying ({spans[0][1] - spans[0][0]:.2f} s) was not cut short (whole: {whole:.2f} s): said twice, or not killed mid-alert")
for b in bad:
    print("6-faults.check: FAIL: " + b)
sys.exit(1 if bad else 0)
