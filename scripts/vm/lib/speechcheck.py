"""Shared host-side check: silence before the mark, speech after it, latency to the first loud
sample. Used by the order → speech and say scenarios."""
import json, os
import wav

QUIET_PEAK = 0.01     # "silence": no sample above 1 % of full scale
LOUD = 0.05           # first sample above 5 % of full scale = speech has started
SPEECH_RMS = 0.02     # a 50 ms window above this counts as speech
MIN_SPEECH_S = 0.5
MAX_LATENCY_S = float(os.environ.get("CRIER_VM_MAX_LATENCY", "20"))  # TCG + debug build; a Pi: far less


def check(run, name, what, max_latency=MAX_LATENCY_S, env="CRIER_VM_MAX_LATENCY"):
    """→ list of failures (printing the measurements)."""
    res = os.path.join(run, "results")
    meta = json.load(open(os.path.join(res, "capture.json")))
    rate, x = wav.load(os.path.join(res, "capture.wav"))
    bad = []
    if not meta.get("marked"):
        return ["the capture never went quiet before " + what]
    trig = meta["mark_sample"]
    pre = x[max(0, trig - rate // 2): trig]
    pre_peak = max((abs(s) for s in pre), default=0)
    if pre_peak > QUIET_PEAK:
        bad.append(f"not silent before {what}: peak {pre_peak:.4f}")
    first = next((i for i in range(trig, len(x)) if abs(x[i]) > LOUD), None)
    w = wav.windows(x[trig:], rate, 50)
    speech_s = sum(1 for r in w if r > SPEECH_RMS) * 0.05
    if first is None:
        bad.append(f"no loud sample after {what}: nothing was spoken")
    else:
        lat = (first - trig) / rate
        print(f"{name}: {what} → first loud sample: {lat * 1000:.0f} ms "
              f"(capture {len(x) / rate:.1f} s at {rate} Hz, peak before {pre_peak:.4f}, "
              f"speech {speech_s:.2f} s, loudest 50 ms RMS {max(w, default=0):.3f})")
        if lat > max_latency:
            bad.append(f"latency {lat:.2f} s above {max_latency} s ({env})")
    if speech_s < MIN_SPEECH_S:
        bad.append(f"only {speech_s:.2f} s of speech-level audio after {what}")
    if meta.get("arecord_stderr"):
        print(f"{name}: arecord said: " + meta["arecord_stderr"].replace("\n", " | "))
    if meta.get("gaps"):
        print(f"{name}: capture restarted, silence filled in at [frame, frames]: {meta['gaps']}")
    if meta.get("cpu"):
        print(f"{name}: crier CPU from {what} to the end of the capture: {meta['cpu']['percent']:.1f}% (TCG)")
    return bad
