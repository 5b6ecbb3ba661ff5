"""Scenario 8 host check: music ducks under an alert on a clock-driven device and comes back."""
import json, math, os, re, sys
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
import wav

run = sys.argv[1]
res = os.path.join(run, "results")
meta = json.load(open(os.path.join(res, "capture.json")))
rate, x = wav.load(os.path.join(res, "capture.wav"))
ok = True


def bad(msg):
    global ok
    ok = False
    print("9-music.check: FAIL: " + msg)


def levels(x, hz=15000.0, hop_s=0.002):
    hop = int(rate * hop_s)
    w = 2 * hop
    k = 2 * math.pi * hz / rate
    han = [0.5 - 0.5 * math.cos(2 * math.pi * i / w) for i in range(w)]
    s_ = [math.sin(k * i) * han[i] for i in range(w)]
    c_ = [math.cos(k * i) * han[i] for i in range(w)]
    norm = sum(han)
    out = []
    for i in range(0, len(x) - w, hop):
        s = sum(x[i + j] * s_[j] for j in range(w))
        c = sum(x[i + j] * c_[j] for j in range(w))
        out.append(2 * math.hypot(s, c) / norm)
    return [out[0]] + out


def db(a, ref):
    return 20 * math.log10(max(a, 1e-9) / ref)


c = 2 * math.cos(2 * math.pi * 15000 / rate)
speech = [x[i] - c * x[i - 1] + x[i - 2] for i in range(2, len(x))]
loud = [i for i, v in enumerate(speech) if abs(v) > 0.02]
if not loud:
    bad("no speech in the capture")
    sys.exit(1)
onset, end = loud[0] / rate, loud[-1] / rate
lv = levels(x)
win = 0.002
trig = meta["mark_sample"] / rate
# Full level: before the order was sent (the duck starts when it is queued in the guest).
before = sorted(lv[int(max(0.05, trig - 1.4) / win):int(trig / win)])
if len(before) < 100:
    bad("less than 0.2 s of music before the alert")
    sys.exit(1)
full = before[len(before) // 2]
during = sorted(lv[int((onset + 0.15) / win):int((end - 0.05) / win)])
ducked = db(during[len(during) // 2], full)
after = sorted(lv[len(lv) - int(0.5 / win):])
restored = db(after[len(after) // 2], full) if after else float("nan")
# No skip or gap of the music before the alert (the rewind hands the music back): every 2 ms
# window of the 0.3 s before the duck within 1.5 dB.
pre = lv[int(max(0.05, trig - 1.0) / win):int(trig / win)]
spread = (db(min(pre), full), db(max(pre), full)) if pre else (0, 0)
a1 = next((i * win for i in range(int(trig / win), len(lv)) if db(lv[i], full) < -1), None)
a17 = next((i * win for i in range(int(a1 / win), len(lv)) if db(lv[i], full) < -17), None) if a1 else None
attack = (a17 - a1) * 18 / 16 if a1 and a17 else float("nan")
r17 = next((i * win for i in range(int(end / win), len(lv)) if db(lv[i], full) > -17), None)
r1 = next((i * win for i in range(int(r17 / win), len(lv)) if db(lv[i], full) > -1), None) if r17 else None
release = (r1 - r17) * 18 / 16 if r1 and r17 else float("nan")
under = [l.strip() for l in open(os.path.join(res, "crier.log"), errors="replace") if re.search(r"underrun|xrun", l, re.I)]
# Gaps of digital silence in the music (the music thread starved under TCG) during a ramp make its
# length unmeasurable; they are counted and a ramp failure then only noted.
gaps = sum(1 for v in lv[int(trig / win):] if v < full * 1e-3)
print(f"9-music.check: {gaps} windows of music underrun (silence) after the order")
print(f"9-music.check: order sent at {trig:.2f} s, first loud speech {onset - trig:.3f} s later; music {full:.4f} before, ducked {ducked:.1f} dB during the alert, {restored:.1f} dB after; "
      f"attack {attack * 1000:.0f} ms, release {release * 1000:.0f} ms; spread before the duck {spread[0]:.1f}..{spread[1]:.1f} dB; "
      f"speech {onset:.2f}-{end:.2f} s")
if abs(ducked + 18) > 1:
    bad(f"ducked by {ducked:.1f} dB, not -18 ± 1")
if not abs(restored) < 1:
    bad(f"music {restored:.1f} dB after the alert, not restored")
for what, got, want in (("attack", attack, 0.060), ("release", release, 0.700)):
    if not abs(got - want) <= 0.025:
        (print if gaps else bad)(f"{'9-music.check: note, ' if gaps else ''}{what} {got * 1000:.0f} ms, not {want * 1000:.0f} ± 25"
                                 + (" (music underruns in the capture)" if gaps else ""))
if spread[0] < -1.5 or spread[1] > 1.5:
    bad(f"music level not steady before the alert: {spread}")
if under:
    print("9-music.check: note, underruns logged (TCG starvation?): " + " | ".join(under[:5]))
if meta.get("gaps"):
    print(f"9-music.check: capture restarted, silence filled in at {meta['gaps']}")
sys.exit(0 if ok else 1)
