"""The audio device lost while a clip's end is still in its buffer (issue 31, item 5).

A sound card of our own (`failing_pcm.c`, an ALSA ioplug PCM built here with gcc and loaded
through the box's asoundrc) plays at the pace of the clock, answers snd_pcm_delay, and
disconnects once, on cue: ENODEV for every write and delay from then on, as a pulled USB DAC
does. What was queued in it never plays. The order whose clip's end was queued is not acked
`spoken` then: the clip is played again from its start once the device is back, and acked once.
"""
import os
import re
import shutil
import signal
import subprocess
import time

import pytest

from test_speaker import Acks, assert_log_matches_acks, connect, run_crier, send_order
from test_daemon import RawServer

HERE = os.path.dirname(os.path.abspath(__file__))
# A buffer long enough that the clip's end is still queued after more silence than the speech
# has between its words (quiet_ms): the device is cut with ~250 ms of the clip's end unplayed.
BUFFER_MS = 600
QUIET_MS = 350


def failing_device(box, mode, after_ms=500, skip=0, away_ms=0):
    """Builds the plugin into the box and names it `failing` in the box's asoundrc."""
    if not shutil.which("gcc") or not os.path.exists("/usr/include/alsa/pcm_external.h"):
        pytest.skip("needs gcc and the ALSA headers (libasound2-dev)")
    lib = box.tmp / "libasound_module_pcm_crierfail.so"
    subprocess.run(["gcc", "-shared", "-fPIC", "-DPIC", "-O1", "-Wall", "-o", str(lib),
                    os.path.join(HERE, "failing_pcm.c"), "-lasound"], check=True)
    log = box.tmp / "pcm.log"
    alsa = box.tmp / "xdg" / "alsa" / "asoundrc"
    alsa.write_text(alsa.read_text() + 'pcm_type.crierfail { lib "%s" }\n' % lib +
                    'pcm.failing { type crierfail mode "%s" quiet_ms %d after_ms %d skip %d away_ms %d marker "%s" log "%s" }\n' % (
                        mode, QUIET_MS, after_ms, skip, away_ms, box.tmp / "pcm.failed", log))
    return log


def events(log):
    """Each line of the plugin's log as (event, {field: int or str})."""
    out = []
    for line in log.read_text().splitlines():
        name, *rest = line.split()
        fields = dict(f.split("=", 1) for f in rest)
        out.append((name, {k: int(v) if v.lstrip("-").isdigit() else v for k, v in fields.items()}))
    return out


def when(crier, pattern):
    """Monotonic time at which the first stderr line matching `pattern` was read."""
    rx = re.compile(pattern)
    with crier.lock:
        return next(t for t, l in crier.err if rx.search(l))


CONF = "status.on_start = off\nstatus.on_link_up = off\naudio.device = failing\naudio.buffer_ms = %d\n" % BUFFER_MS
LOST = r"ERROR audio: .*keeping queued speech and reopening"
BACK = r"INFO audio: opened .*after="


def one_order(box, oid, mode, steps, debug=True, **device):
    """One order said through a failing device made with `mode` (and `device`'s options); each
    step is a log pattern to wait for or "ack" (the order's ack). Returns the exit code, the
    daemon, the acks and the plugin's events."""
    log = failing_device(box, mode, **device)
    srv = RawServer()
    crier = run_crier(box, srv.port, CONF + ("log.level = debug\n" if debug else ""))
    try:
        c = connect(srv)
        acks = Acks(c)
        crier.wait_for(r"INFO audio: opened")
        send_order(c, oid, kind="new_customer", number=42)
        for step in steps:
            if step == "ack":
                acks.read_until(lambda a: a["id"] == oid, timeout=30)
            else:
                crier.wait_for(step, timeout=30)
        acks.drain(timeout=2)  # and nothing more comes
    finally:
        rc = crier.stop()
    return rc, crier, acks, events(log)


def test_an_order_whose_end_was_queued_when_the_device_died_is_said_again_and_acked_once(box):
    rc, crier, acks, ev = one_order(box, "LOSS-1", "queued", [LOST, "ack"])
    assert rc == 0
    err = "\n".join(crier.lines())
    fails = [f for e, f in ev if e == "fail"]
    assert len(fails) == 1, ev
    f = fails[0]
    rate = f["rate"]
    # The device died with the clip's end queued: its loud frames past the pointer never played.
    assert f["why"] == "end_queued" and f["unplayed_loud"] > 0, f
    closes = [f for e, f in ev if e == "close"]
    first, again = closes[0], closes[1:]
    lost = re.search(r"WARN audio: lost with the last (\d+) ms of a clip still queued; not heard, it plays again "
                     r"from its start when the device is back device=failing clip=\d+", err)
    assert lost, err[-3000:]
    # Where the engine put the playhead (its last good snd_pcm_delay) against where the device
    # really stopped: never further (it errs towards "not heard"), and by less than a buffer.
    at = re.search(r"DEBUG audio: device lost with clip ends queued played=(\d+) ends=(\d+)", err)
    assert at, err[-3000:]
    played, end = int(at.group(1)), int(at.group(2))
    print("\nbuffer %d ms: died with %d ms queued, %d ms of the clip's end unplayed (%d ms of it loud; "
          "last sample written at +%d ms); the engine counted %d ms unplayed (its playhead %d frames = %.1f ms "
          "behind the device's)" % (
              BUFFER_MS, f["queued"] * 1000 // rate, (end - f["hw"]) * 1000 // rate, f["unplayed_loud"] * 1000 // rate,
              (f["last_sound"] + 1 - f["hw"]) * 1000 // rate, int(lost.group(1)), f["hw"] - played,
              (f["hw"] - played) * 1000 / rate))
    assert played <= f["hw"] < end, "the engine's playhead %d, the device's %d, the clip's end %d" % (played, f["hw"], end)
    assert f["hw"] - played < f["buffer"]
    assert end >= f["last_sound"] + 1 >= f["last_loud"] + 1
    # Not acked when the device died: acked once, after the clip was played again in full on the
    # device that came back (as loud as the first time: said once more, not twice, not cut).
    assert acks.status("LOSS-1") == ["spoken"], err[-3000:]
    assert acks.at("LOSS-1") > when(crier, BACK), "acked before the device was back"
    assert sum(c["loud_frames"] for c in again) >= 0.95 * first["loud_frames"], ev
    assert sum(c["loud_frames"] for c in again) <= 1.05 * first["loud_frames"], ev
    assert len(re.findall(r"INFO alert: saying ids=LOSS-1 ", err)) == 1, err
    assert_log_matches_acks(err, acks)


def test_a_device_that_dies_after_the_clip_had_played_leaves_the_ack_alone(box):
    """The control: the device dies 500 ms after the clip's last loud frame played. The order was
    acked `spoken` once when its end left the device, and nothing is said again."""
    rc, crier, acks, ev = one_order(box, "LOSS-2", "played", ["ack", LOST, BACK], debug=False, after_ms=500)
    assert rc == 0
    err = "\n".join(crier.lines())
    fails = [f for e, f in ev if e == "fail"]
    assert len(fails) == 1 and fails[0]["why"] == "end_played" and fails[0]["unplayed_loud"] == 0, ev
    assert acks.status("LOSS-2") == ["spoken"]
    assert acks.at("LOSS-2") < when(crier, LOST)
    assert "still queued" not in err
    closes = [f for e, f in ev if e == "close"]
    assert closes[0]["loud_frames"] > 0 and all(c["loud_frames"] == 0 for c in closes[1:]), ev
    assert len(re.findall(r"INFO alert: saying ids=LOSS-2 ", err)) == 1, err
    assert_log_matches_acks(err, acks)


def test_a_device_that_dies_with_only_the_clips_silent_end_queued_does_not_say_it_again(box):
    """espeak ends each utterance in ~300 ms of digital silence. The device dies 120 ms after the
    clip's last sound played, its silent end still queued: every word was heard, so the order is
    acked `spoken` once, at the failure, and not said again (a clip counts heard once its last
    audible frame has played). Before, it counted as not heard and was said a second time."""
    rc, crier, acks, ev = one_order(box, "LOSS-3", "tail", [LOST, BACK, "ack"], after_ms=120)
    assert rc == 0
    err = "\n".join(crier.lines())
    fails = [f for e, f in ev if e == "fail"]
    assert len(fails) == 1 and fails[0]["why"] == "sound_played" and fails[0]["unplayed_loud"] == 0, ev
    # Acked once (at the failure), nothing said again on the device that came back: what failed
    # before this rule (the clip counted as not heard and played a second time).
    assert "not heard, it plays again" not in err, err[-3000:]
    assert acks.status("LOSS-3") == ["spoken"], err[-3000:]
    closes = [f for e, f in ev if e == "close"]
    assert closes[0]["loud_frames"] > 0 and all(c["loud_frames"] == 0 for c in closes[1:]), ev
    assert len(re.findall(r"INFO alert: saying ids=LOSS-3 ", err)) == 1, err
    assert re.search(r"INFO audio: lost with the last \d+ ms of a clip still queued, all of it silence after its last "
                     r"word; heard, not said again device=failing clip=\d+", err), err[-3000:]
    f = fails[0]
    rate = f["rate"]
    at = re.search(r"DEBUG audio: device lost with clip ends queued played=(\d+) ends=(\d+) audible_ends=(\d+)", err)
    assert at, err[-3000:]
    played, end, audible = (int(g) for g in at.groups())
    print("\nthe clip's last sound at +%d ms, its end at +%d ms: %d ms of silent end (%d ms of it after its last "
          "frame above -60 dBFS); the device died %d ms after the last sound with %d ms of that silence queued; "
          "the engine's playhead %d ms past the audible end" % (
              (f["last_sound"] + 1) * 1000 // rate, end * 1000 // rate, (end - f["last_sound"] - 1) * 1000 // rate,
              (end - audible) * 1000 // rate, (f["hw"] - f["last_sound"] - 1) * 1000 // rate,
              (end - f["hw"]) * 1000 // rate, (played - audible) * 1000 // rate))
    # The case is real: the clip's end was still queued (before, that alone made it "not heard").
    assert played <= f["hw"] < end, (played, f["hw"], end)
    # Its audible end is at most a fade (5 ms) past its last non-zero frame, and had played.
    assert f["last_loud"] < audible <= f["last_sound"] + 1 + rate // 200 and audible <= played, (f, audible, played)
    assert_log_matches_acks(err, acks)


def test_a_coalesced_alert_cut_at_shutdown_acks_only_what_played_before_the_device_died(box):
    """SIGTERM in a nine-order announcement: the grace period ends, the clip fades out, and the
    device dies with that fade (and what came before it) still queued. Only the orders whose
    part had left the device are acked `spoken`; before, every part up to where the fade began
    was, although its last ~250 ms never played."""
    # The end of T-0 plays; once lost, the device stays away while crier stops.
    log = failing_device(box, "queued", skip=1, away_ms=30000)
    srv = RawServer()
    crier = run_crier(box, srv.port, CONF)
    try:
        c = connect(srv)
        acks = Acks(c)
        crier.wait_for(r"INFO audio: opened")
        send_order(c, "T-0", text="请稍候")
        crier.wait_for(r"INFO alert: saying ids=T-0")
        for i in range(1, 10):
            send_order(c, "N-%d" % i, kind="new_customer", number=100 + i * 11)
        crier.wait_for(r"INFO alert: saying ids=N-1,N-2,N-3,N-4,N-5,N-6,N-7,N-8,N-9 ", timeout=30)
        said = crier.wait_for(r"INFO alert: synthesized ids=N-1,N-2,N-3,N-4,N-5,N-6,N-7,N-8,N-9 ", timeout=30)[0]
        seconds = float(re.search(r"seconds=([\d.]+)", said).group(1))
        time.sleep(1)
        crier.p.send_signal(signal.SIGTERM)
        acks.drain(timeout=12)
        rc = crier.stop()
    finally:
        crier.stop()
    assert rc == 0
    err = "\n".join(crier.lines())
    f = [f for e, f in events(log) if e == "fail"]
    assert len(f) == 1 and f[0]["why"] == "end_queued", events(log)
    f = f[0]
    rate = f["rate"]
    cut = re.search(r"WARN audio: lost before a stopped clip's fade-out had played; heard (\d+) ms of it, "
                    r"not the (\d+) ms before its fade", err)
    assert cut, err[-3000:]
    heard_ms, before_ms = int(cut.group(1)), int(cut.group(2))
    unplayed_ms = f["unplayed_loud"] * 1000 // rate
    print("\nSIGTERM in a %.1f s announcement, buffer %d ms: the device died %d ms before the fade's end played; "
          "heard %d ms, not %d ms" % (seconds, BUFFER_MS, unplayed_ms, heard_ms, before_ms))
    # What had not played is not counted heard (the fade is 5 ms; the estimate may only err low).
    assert before_ms - heard_ms >= unplayed_ms - 5 - 1, (before_ms, heard_ms, unplayed_ms)
    heard = re.search(r"INFO alert: not heard in full ids=(\S+) heard_s=([\d.]+)", err)
    assert heard, err[-3000:]
    assert abs(float(heard.group(2)) - heard_ms / 1000) <= 0.051
    spoken = [i for i in range(1, 10) if acks.status("N-%d" % i) == ["spoken"]]
    assert all(acks.status("N-%d" % i) == [] for i in range(1, 10) if i not in spoken)
    assert spoken == list(range(1, len(spoken) + 1))
    assert heard.group(1) == ",".join("N-%d" % i for i in range(len(spoken) + 1, 10))
    # Parts are about equally long: the acked ones fit in what had played.
    assert len(spoken) <= 9 * (heard_ms / 1000) / seconds + 1.5, (spoken, heard_ms, seconds)
    assert_log_matches_acks(err, acks)
