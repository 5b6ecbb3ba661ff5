"""Scenario 1 host check: silence before the order, speech after it, latency, the ack."""
import json, os, sys
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
import wav

QUIET_PEAK = 0.01     # "silence": no sample above 1 % of full scale
LOUD = 0.05           # first sample above 5 % of full scale = speech has started
SPEECH_RMS = 0.02     # a 50 ms window above this counts as speech
MIN_SPEECH_S = 0.5
MAX_LATENCY_S = float(os.environ.get("CRIER_VM_MAX_LATENCY", "5"))  # TCG; on a Pi far less

run = sys.argv[1]
res = os.path.join(run, "results")
meta = json.load(open(os.path.join(res, "capture.json")))
rate, x = wav.load(os.path.join(res, "capture.wav"))
ok = True


def bad(msg):
    global ok
    ok = False
    print("1-order-speech.check: FAIL: " + msg)


if not meta.get("marked"):
    bad("the capture never went quiet before the order (see capture.wav)")
    sys.exit(1)
trig = meta["mark_sample"]
pre = x[max(0, trig - rate): trig]
pre_peak = max((abs(s) for s in pre), default=0)
if pre_peak > QUIET_PEAK:
    bad(f"not silent before the order: peak {pre_peak:.4f}")
first = next((i for i in range(trig, len(x)) if abs(x[i]) > LOUD), None)
post = x[trig:]
w = wav.windows(post, rate, 50)
speech_s = sum(1 for r in w if r > SPEECH_RMS) * 0.05
if first is None:
    bad("no loud sample after the order: nothing was spoken")
else:
    lat = (first - trig) / rate
    print(f"1-order-speech.check: order → first loud sample: {lat * 1000:.0f} ms "
          f"(capture {len(x) / rate:.1f} s, {rate} Hz, pre-order peak {pre_peak:.4f}, "
          f"speech {speech_s:.2f} s, max window RMS {max(w):.3f})")
    if lat > MAX_LATENCY_S:
        bad(f"latency {lat:.2f} s above {MAX_LATENCY_S} s")
if speech_s < MIN_SPEECH_S:
    bad(f"only {speech_s:.2f} s of speech-level audio after the order")
if meta.get("arecord_stderr"):
    print("1-order-speech.check: arecord said: " + meta["arecord_stderr"])
acks = [l for l in open(os.path.join(run, "host.out"), errors="replace") if "ack" in l]
if not any("status=spoken" in l for l in acks):
    bad("order-sim printed no 'ack ... status=spoken': " + repr(acks))
if meta.get("cpu"):
    print(f"1-order-speech.check: crier CPU from the order to the end of the speech: {meta['cpu']['percent']:.1f}% (TCG)")
sys.exit(0 if ok else 1)
