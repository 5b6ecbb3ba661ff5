#!/usr/bin/env python3
"""Guest-side evidence collector: captures an ALSA device with arecord, timestamps the stream,
optionally sends one control line at a known point of the stream (e.g. the order), polls a PCM
status file and a process's CPU time meanwhile. Writes a WAV and a JSON of what it saw.

  capture.py --device hw:Loopback,1 --params "S16_LE 2 48000" --seconds 10 --out X.wav --meta X.json
             [--quiet 1.0] [--trigger-line "stdin 42" --trigger-dev /dev/ttyS2] [--trigger-cmd CMD]
             [--watch /proc/asound/Loopback/pcm0p/sub0/status] [--pid PID]

The measured window starts ("mark") once the capture has been quiet (peak below 1 % of full
scale) for --quiet seconds (0: at once; gives up after --max-wait); then the trigger line, if any,
is sent, and --seconds more are captured (less with --stop-after-speech). The PCM status is watched and the CPU counted only
inside the window.

Timing: every chunk read from arecord's stdout is stamped with CLOCK_MONOTONIC; the stream's
start time is the earliest (arrival - samples so far / rate), i.e. the chunk that arrived with the
least delay. The trigger's sample index is (trigger time - start) * rate.
"""
import argparse, array, json, os, subprocess, threading, time, wave

p = argparse.ArgumentParser()
p.add_argument("--device", required=True)
p.add_argument("--params", required=True, help='"FORMAT CHANNELS RATE" as in /proc/asound/.../hw_params')
p.add_argument("--seconds", type=float, required=True)
p.add_argument("--out", required=True)
p.add_argument("--meta", required=True)
p.add_argument("--quiet", type=float, default=0.0)
p.add_argument("--max-wait", type=float, default=30.0)
p.add_argument("--trigger-line")
p.add_argument("--trigger-dev", default="/dev/ttyS2")
p.add_argument("--trigger-cmd", help="shell command started (not waited for) at the mark; its exit code is recorded")
p.add_argument("--stop-after-speech", type=float, default=0.0,
               help="end the window early once something loud was heard and then this many s of quiet")
p.add_argument("--loud", type=float, default=0.05,
               help="fraction of full scale that counts as speech for --stop-after-speech (quiet alerts: lower)")
p.add_argument("--stop-file", help="end the window as soon as this file exists")
p.add_argument("--stop-after-cmd", type=float, default=0.0,
               help="end the window this many s after the --trigger-cmd exited (--seconds stays the limit)")
p.add_argument("--watch")
p.add_argument("--pid", type=int)
a = p.parse_args()

fmt, ch, rate = a.params.split()
ch, rate = int(ch), int(rate)
width = {"S16_LE": 2, "S32_LE": 4, "S24_LE": 4}.get(fmt)
if width is None:
    raise SystemExit(f"capture.py: unsupported format {fmt}")
frame = width * ch
total = int(a.seconds * rate)

watch = {"polls": 0, "states": {}, "trigger_times": [], "hw_ptr_first": None, "hw_ptr_last": None,
         "hw_ptr_backwards": 0, "unreadable": 0}
stop = threading.Event()
marked = threading.Event()


def watcher():
    last_ptr = None
    while not stop.is_set():
        if not marked.is_set():
            marked.wait(0.05)
            continue
        try:
            txt = open(a.watch).read()
        except OSError:
            watch["unreadable"] += 1
            time.sleep(0.02)
            continue
        watch["polls"] += 1
        kv = {}
        for line in txt.splitlines():
            k, _, v = line.partition(":")
            kv[k.strip()] = v.strip()
        st = kv.get("state", "closed" if txt.strip() == "closed" else "?")
        watch["states"][st] = watch["states"].get(st, 0) + 1
        tt = kv.get("trigger_time")
        if tt and tt not in watch["trigger_times"]:
            watch["trigger_times"].append(tt)
        if "hw_ptr" in kv:
            ptr = int(kv["hw_ptr"])
            if watch["hw_ptr_first"] is None:
                watch["hw_ptr_first"] = ptr
            if last_ptr is not None and ptr < last_ptr:
                watch["hw_ptr_backwards"] += 1
            last_ptr = watch["hw_ptr_last"] = ptr
        time.sleep(0.02)


def cpu_ticks(pid):
    try:
        f = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
        return int(f[11]) + int(f[12])  # utime + stime (fields 14, 15)
    except OSError:
        return None


if a.watch:
    threading.Thread(target=watcher, daemon=True).start()
cpu0 = t_cpu0 = None

def arecord():
    return subprocess.Popen(["arecord", "-q", "-D", a.device, "-t", "raw", "-f", fmt, "-c", str(ch), "-r", str(rate),
                             "--buffer-time=1000000", "--period-time=20000"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, bufsize=0)


rec = arecord()
errors = []   # stderr of arecords that died
gaps = []     # [frame index, frames of silence inserted] where arecord was restarted
resync = False
data = bytearray()
start = None
mark_frame = None
mark_t = None
loud_seen = False
mark_wall = None
trig_proc = None
cmd_done = None
quiet_since = 0  # frame index since which everything has been quiet
limit = int(32767 * 0.01) if width == 2 else int(2147483647 * 0.01)
acode = "h" if width == 2 else "i"
loud = int((32767 if width == 2 else 2147483647) * a.loud)
t_open = time.monotonic()
while True:
    frames = len(data) // frame
    if mark_frame is not None and frames >= mark_frame + total:
        break
    if mark_frame is None and frames > (a.quiet + a.max_wait) * rate:
        break
    chunk = rec.stdout.read(min(65536, (total if mark_frame is None else mark_frame + total - frames) * frame or frame))
    now = time.monotonic()
    if not chunk:
        # arecord died (snd-aloop's capture can fail with EIO when the playback side stalls):
        # note it, start another, and fill the gap with silence by the clock so that sample
        # indices stay times.
        errors.append(rec.communicate()[1].decode(errors="replace").strip())
        if len(errors) > 5 or start is None:
            break
        del data[len(data) // frame * frame:]
        rec, resync = arecord(), True
        continue
    if resync:
        resync = False
        want = round((now - start) * rate) - len(chunk) // frame
        pad = want - len(data) // frame
        if pad > 0:
            gaps.append([len(data) // frame, pad])
            data += bytes(pad * frame)
    before = len(data) // frame
    data += chunk
    frames = len(data) // frame
    est = now - frames / rate
    start = est if start is None else min(start, est)
    samples = array.array(acode, bytes(data[before * frame: frames * frame]))
    if len(samples) and max(max(samples), -min(samples)) > limit:
        quiet_since = frames
        if mark_frame is not None and max(max(samples), -min(samples)) > loud \
                and (trig_proc is None or trig_proc.poll() is not None):
            loud_seen = True   # (with --trigger-cmd: only what is heard once the command ended)
    if mark_frame is not None and a.stop_file and os.path.exists(a.stop_file):
        break
    if trig_proc and a.stop_after_cmd and trig_proc.poll() is not None:
        cmd_done = cmd_done or now
        if now - cmd_done >= a.stop_after_cmd:
            break
    if (mark_frame is not None and a.stop_after_speech and loud_seen
            and frames - quiet_since >= a.stop_after_speech * rate):
        break
    if mark_frame is None:
        if frames - quiet_since >= a.quiet * rate:
            mark_frame, mark_t = frames, now
            if a.trigger_line:
                with open(a.trigger_dev, "w") as t:
                    t.write(a.trigger_line + "\n")
                mark_t = time.monotonic()
            if a.trigger_cmd:
                mark_t = time.monotonic()
                trig_proc = subprocess.Popen(a.trigger_cmd, shell=True)
            if a.pid:
                cpu0, t_cpu0 = cpu_ticks(a.pid), time.monotonic()
            mark_wall = time.time()
            marked.set()
rec.terminate()
trig_rc = None
if trig_proc:
    try:
        trig_rc = trig_proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        trig_proc.kill()
err = "\n".join(errors + [rec.communicate()[1].decode(errors="replace").strip()]).strip()
cpu1, t_cpu1 = (cpu_ticks(a.pid), time.monotonic()) if a.pid else (None, None)
stop.set()

with wave.open(a.out, "wb") as w:
    w.setnchannels(ch)
    w.setsampwidth(width)
    w.setframerate(rate)
    w.writeframes(bytes(data[: len(data) // frame * frame]))

meta = {"device": a.device, "format": fmt, "channels": ch, "rate": rate, "frames": len(data) // frame,
        "wanted_frames": total, "arecord_stderr": err, "arecord_restarts": len(errors), "gaps": gaps, "open_to_start_s": start - t_open if start else None}
meta["mark_sample"] = None if mark_t is None else round((mark_t - start) * rate)
meta["marked"] = mark_t is not None
meta["window_wall"] = [mark_wall, time.time()]  # UTC seconds: to match log lines to the window
if a.trigger_line:
    meta["trigger_line"] = a.trigger_line
if a.trigger_cmd:
    meta["trigger_cmd"] = a.trigger_cmd
    meta["trigger_cmd_exit"] = trig_rc
if a.watch:
    meta["watch"] = watch
if a.pid:
    hz = os.sysconf("SC_CLK_TCK")
    meta["cpu"] = None if cpu0 is None or t_cpu0 is None or cpu1 is None else {
        "seconds": (cpu1 - cpu0) / hz, "wall": t_cpu1 - t_cpu0,
        "percent": 100.0 * (cpu1 - cpu0) / hz / (t_cpu1 - t_cpu0)}
json.dump(meta, open(a.meta, "w"), indent=1)
print(f"capture: {meta['frames'] / rate:.2f} s of {a.device} ({fmt} {ch}ch {rate} Hz)"
      + (f", window from sample {meta['mark_sample']}" if mark_t else ", NO quiet window found")
      + (f", cpu {meta['cpu']['percent']:.1f}%" if a.pid and meta.get("cpu") else ""))
