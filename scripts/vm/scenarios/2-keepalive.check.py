"""Scenario 2 host check: 10 s of keep-alive, PCM RUNNING throughout, capture continuous silence."""
import datetime, json, os, re, sys
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
import wav

QUIET_PEAK = 0.01
MAX_CPU_PERCENT = 50.0   # a busy loop shows as ~100 % (TCG inflates everything else)

run = sys.argv[1]
res = os.path.join(run, "results")
meta = json.load(open(os.path.join(res, "capture.json")))
rate, x = wav.load(os.path.join(res, "capture.wav"))
ok = True


def bad(msg):
    global ok
    ok = False
    print("2-keepalive.check: FAIL: " + msg)


if not meta.get("marked"):
    bad("the capture never went quiet")
    sys.exit(1)
m = meta["mark_sample"]
win = x[m:]
secs = len(win) / rate
if secs < 9.9:
    bad(f"window is only {secs:.2f} s of capture")
peak = max((abs(s) for s in win), default=1)
if peak > QUIET_PEAK:
    bad(f"keep-alive not silent: peak {peak:.4f}")
if meta.get("arecord_restarts"):
    bad(f"capture not continuous: arecord restarted {meta['arecord_restarts']}x, gaps {meta.get('gaps')}: {meta['arecord_stderr']}")
if "overrun" in meta.get("arecord_stderr", "").lower():
    bad("capture overran: " + meta["arecord_stderr"])
w = meta.get("watch", {})
states = w.get("states", {})
if set(states) != {"RUNNING"}:
    bad(f"playback PCM states seen: {states}")
if len(w.get("trigger_times", [])) != 1:
    bad(f"playback PCM was (re)started during the window: trigger_time values {w.get('trigger_times')}")
if w.get("hw_ptr_backwards") or (w.get("hw_ptr_last") or 0) <= (w.get("hw_ptr_first") or 0):
    bad(f"hw_ptr did not advance steadily: {w}")
advanced = ((w.get("hw_ptr_last") or 0) - (w.get("hw_ptr_first") or 0)) / rate
t0, t1 = meta.get("window_wall") or [None, None]
in_window = []
for line in open(os.path.join(res, "crier.log"), errors="replace"):
    m = re.match(r"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d+)Z ", line)
    if m and re.search(r"xrun|underrun", line, re.I):
        t = datetime.datetime.fromisoformat(m.group(1)).replace(tzinfo=datetime.timezone.utc).timestamp()
        if t0 and t0 <= t <= t1:
            in_window.append(line.strip())
        else:
            print("2-keepalive.check: note, outside the window: " + line.strip())
if in_window:
    bad("crier logged underruns inside the window: " + " | ".join(in_window))
cpu = meta.get("cpu") or {}
print(f"2-keepalive.check: {secs:.1f} s watched, {w.get('polls')} status polls all RUNNING={set(states) == {'RUNNING'}}, "
      f"hw_ptr advanced {advanced:.2f} s, capture peak {peak:.5f}, "
      f"crier CPU {cpu.get('percent', float('nan')):.1f}% ({cpu.get('seconds', float('nan')):.2f} s in {cpu.get('wall', float('nan')):.1f} s, TCG)")
if cpu.get("percent", 0) > MAX_CPU_PERCENT:
    bad(f"crier used {cpu['percent']:.0f}% CPU while idle")
sys.exit(0 if ok else 1)
