"""Scenario 3 host check: volume steps, mute and hold measured in the captured audio.

Each capture after the reference holds the button presses' clicks (if any) and then the order.
- Order: the same words at every level, so the energy ratio of the speech to the reference's is
  the gain ratio: dB = 10·log10(E/E_ref), expected -3 dB × (10 − level) (volume.steps 10,
  volume.min_db -30), ± 1 dB.
- Clicks before the speech: one per click effect in crier's log, each at its level's absolute
  loudness (so 3 dB apart); a click may be missing only where crier logged an underrun (the
  emulator starving the guest), which is printed.
- Mute (floor): nothing at all before the speech for ≥ 3 s, the playback PCM RUNNING and
  moving meanwhile (an underrun restart is noted, not failed: scenario 2 is about those).
"""
import json, math, os, sys
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
import wav

run = sys.argv[1]
res = os.path.join(run, "results")
STEP_DB, TOL_DB = 3.0, 1.0
bad = []
phases = {}
for l in open(os.path.join(res, "phases")):
    name, *kv = l.split()
    phases[name] = dict(x.split("=") for x in kv)


def say(msg):
    print("3-buttons.check: " + msg)


def load(name):
    meta = json.load(open(os.path.join(res, name + ".json")))
    rate, x = wav.load(os.path.join(res, name + ".wav"))
    if not meta.get("marked"):
        bad.append(f"{name}: the capture never went quiet before the trigger")
        return rate, [], meta
    if meta.get("gaps") or meta.get("arecord_restarts"):
        say(f"{name}: capture restarted, silence filled in at {meta['gaps']}")
    if meta.get("trigger_cmd") and meta.get("trigger_cmd_exit") != 0:
        bad.append(f"{name}: the press command failed (exit {meta.get('trigger_cmd_exit')})")
    return rate, x[meta["mark_sample"]:], meta


def bursts(x, rate, thr=0.004, gap_ms=60):
    """→ [[start s, end s, peak]] of sound separated by ≥ gap_ms of quiet (5 ms resolution).
    A click (35 ms) cut in two by an underrun (the emulator starving the guest: the playback
    stops for a while mid-click) shows as two pieces at the same level adding up to one click:
    they are merged, and noted."""
    out, last, n = [], None, rate // 200
    for i in range(0, len(x) - n + 1, n):
        pk = max(abs(s) for s in x[i:i + n])
        if pk > thr:
            if last is None or i - last > gap_ms * rate // 1000:
                out.append([i / rate, (i + n) / rate, pk])
            else:
                out[-1][1], out[-1][2] = (i + n) / rate, max(out[-1][2], pk)
            last = i
    merged = []
    for b in out:
        if merged:
            p = merged[-1]
            if abs(20 * math.log10(b[2] / p[2])) < 0.5 and (p[1] - p[0]) + (b[1] - b[0]) <= 0.055:
                say(f"note: click at {p[0]:.2f} s continues at {b[0]:.2f} s (an underrun cut it in two)")
                p[1] = b[1]
                continue
        merged.append(b)
    return merged


def split(name, x, rate):
    """→ (clicks, speech start s, speech samples): the speech is everything from the first burst
    longer than 0.15 s (bursts joined across 100 ms pauses; a click lasts 35 ms, held-key
    clicks come 250 ms apart) on; clicks are the bursts before."""
    coarse = bursts(x, rate, gap_ms=100)
    sp = next((b for b in coarse if b[1] - b[0] > 0.15), None)
    if sp is None:
        bad.append(f"{name}: no speech in the capture")
        return [], None, []
    # A quiet start of the speech (at low volume the first consonant can stand apart) belongs
    # to it: sound ending within 0.3 s of the speech is speech (clicks come ≥ 1 s earlier: the
    # order is sent ≥ 1 s after the last press and takes ≥ 0.4 s to synthesize).
    start = sp[0]
    for b in reversed([b for b in coarse if b[1] <= sp[0]]):
        if b[1] > start - 0.3:
            start = b[0]
    t0 = max(0.0, start - 0.05)
    return bursts(x[:int(t0 * rate)], rate), t0, x[int(t0 * rate):]


def energy(x):
    return sum(s * s for s in x)


# Click effects and underruns in crier's log: [(unix time, level)], [unix time]. A click is the
# 1200 Hz tone at 0.3 of full scale (-3 dB headroom) times the new level's gain, so at level L it
# peaks at 20·log10(0.3) - 3 - 3 × (10 − L) dBFS (-16.5 at level 9).
import datetime, re
def unix(l):
    return datetime.datetime.strptime(l[:23], "%Y-%m-%dT%H:%M:%S.%f").replace(tzinfo=datetime.timezone.utc).timestamp()
click_lines, underruns = [], []
for l in open(os.path.join(res, "crier.log"), errors="replace"):
    m = re.search(r"INFO buttons: button volume_\w+: \S+ effects=.*alerts=([0-9.]+)\).*,click", l)
    if m:
        click_lines.append((unix(l), round(10 + 20 * math.log10(float(m.group(1))) / STEP_DB)))
    if "WARN audio: underrun" in l:
        underruns.append(unix(l))
CLICK10_DB = 20 * math.log10(0.3) - 3.0


def click_level(peak):
    return 10 + (20 * math.log10(peak) - CLICK10_DB) / STEP_DB


rate, ref, _ = load("ref")
_, _, ref_sp = split("ref", ref, rate)
e_ref = energy(ref_sp)
if e_ref == 0:
    bad.append("ref: nothing was spoken")
else:
    say(f"ref: speech {len(ref_sp) / rate:.2f} s (to the end of the capture), peak {max(abs(s) for s in ref_sp):.3f}")
for name in ("down3", "floor", "after"):
    if name not in phases:
        bad.append(f"{name}: phase missing (guest stopped early)")
        continue
    if e_ref == 0:
        continue
    ph = phases[name]
    level, want_clicks = int(ph["level"]), int(ph["clicks"])
    rate, x, meta = load(name)
    clicks, t_sp, sp = split(name, x, rate)
    if t_sp is None:
        continue
    # --- the order's level
    want = -STEP_DB * (10 - level)
    got = 10 * math.log10(energy(sp) / e_ref)
    ok = abs(got - want) <= TOL_DB
    say(f"{name}: order at level {level}: {got:+.2f} dB vs ref (expected {want:+.1f} ± {TOL_DB}), "
        f"speech from {t_sp:.2f} s, peak {max(abs(s) for s in sp):.3f} {'ok' if ok else 'WRONG'}")
    if not ok:
        bad.append(f"{name}: order at {got:+.2f} dB vs the reference, expected {want:+.1f} dB (level {level})")
    # --- the clicks before it
    say(f"{name}: {len(clicks)} click(s) before the speech" + (" at " if clicks else "") +
        ", ".join(f"{t:.2f} s {20 * math.log10(p):+.1f} dBFS" for t, _, p in clicks) + f" (expected {want_clicks})")
    expect, click_lines = click_lines[:want_clicks], click_lines[want_clicks:]
    got_lv = [click_level(p) for _, _, p in clicks]
    say(f"{name}: click levels heard {[round(v, 2) for v in got_lv]}, logged {[lv for _, lv in expect]}")
    k = 0
    for v in got_lv:   # every click heard must be the next logged one (or a later one: below)
        while k < len(expect) and abs(v - expect[k][1]) > TOL_DB / STEP_DB:
            t, lv = expect[k]
            near = [u for u in underruns if abs(u - t) < 0.5]
            if near:
                say(f"{name}: note: the click of level {lv} is missing; crier logged an underrun "
                    f"{near[0] - t:+.3f} s from it (the emulator starving the guest)")
            else:
                bad.append(f"{name}: the click of level {lv} (logged) is not in the capture, and no underrun near it")
            k += 1
        if k == len(expect):
            bad.append(f"{name}: a click at level {v:.2f} that crier did not log (or out of order)")
            break
        k += 1
    for t, lv in expect[k:]:
        near = [u for u in underruns if abs(u - t) < 0.5]
        if not near:
            bad.append(f"{name}: the click of level {lv} (logged) is not in the capture, and no underrun near it")
        else:
            say(f"{name}: note: the click of level {lv} is missing; crier logged an underrun near it")
    # --- mute: silence before the order, the stream running
    if "silent_s" in ph:
        pk = max((abs(s) for s in x[:int(t_sp * rate)]), default=0)
        w = meta.get("watch", {})
        states = w.get("states", {})
        polls = sum(states.values())
        restarted = len(w.get("trigger_times", [])) > 1 or w.get("hw_ptr_backwards")
        moved = ((w.get("hw_ptr_last") or 0) - (w.get("hw_ptr_first") or 0)) / rate
        say(f"{name}: {t_sp:.2f} s from the mark (press command started) to the speech, peak {pk:.5f}; "
            f"PCM states {states}, trigger_times {len(w.get('trigger_times', []))}, hw_ptr moved {moved:.2f} s")
        if restarted:
            say(f"{name}: note: the stream was restarted (underrun) at {w['trigger_times'][1:]}")
        if pk > 0.01:
            bad.append(f"{name}: sound while muted before the order (peak {pk:.4f}): no click may play while muted")
        if t_sp < float(ph["silent_s"]):
            bad.append(f"{name}: only {t_sp:.2f} s before the speech, expected ≥ {ph['silent_s']} s of muted silence")
        if not polls or states.get("RUNNING", 0) < 0.9 * polls or (not restarted and moved < 0.7 * len(x) / rate):
            bad.append(f"{name}: the keep-alive stream did not keep running: states {states}, hw_ptr moved {moved:.2f} s")

for b_ in bad:
    say("FAIL: " + b_)
sys.exit(1 if bad else 0)
