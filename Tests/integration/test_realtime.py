"""The audio thread's real-time priority (docs/audio.md, "Real-time priority"): the real daemon,
the kernel's own view of every thread (/proc/PID/task/TID/stat: policy and rt_priority), while
music decodes and espeak-ng speaks. Only the audio thread may be SCHED_FIFO."""
import os
import shutil
import subprocess
import time

import pytest

from conftest import CRIER
from test_daemon import Proc, order_sim
from test_music import daemon_conf, make_tone, say, status

SCHED_OTHER, SCHED_FIFO = 0, 1


def threads(pid):
    """{(pid, tid): (comm, policy, rt_priority)} for `pid` and every process below it."""
    out = {}
    pids = [pid]
    try:
        with open("/proc/%d/task/%d/children" % (pid, pid)) as f:
            pids += [int(c) for c in f.read().split()]
    except OSError:
        pass
    for p in pids:
        try:
            tids = os.listdir("/proc/%d/task" % p)
        except OSError:
            continue
        for t in tids:
            try:
                with open("/proc/%d/task/%s/stat" % (p, t)) as f:
                    s = f.read()
            except OSError:
                continue
            comm = s[s.index("(") + 1:s.rindex(")")]
            fields = s[s.rindex(")") + 2:].split()
            # stat fields 40 and 41 (rt_priority, policy), counted from field 3 after the comm.
            out[(p, int(t))] = (comm, int(fields[38]), int(fields[37]))
    return out


def run_and_watch(box, extra, prefix=None):
    """Daemon with music playing; one alert said; every thread's policy sampled every 20 ms
    from the start until the alert is said. Returns (daemon, status JSON, samples, crier status text)."""
    music = box.tmp / "music"
    music.mkdir()
    make_tone(str(music / "tone.wav"), 3.0, hz=15000)
    sim = order_sim()
    daemon_conf(box, "server = tcp://127.0.0.1:%d\nmusic.source = %s\n%s" % (sim.port, music, extra))
    d = Proc((prefix or []) + [CRIER, "run", "--config", box.conf], env=box.env)
    seen = {}
    try:
        d.wait_for(r"INFO link: connected")
        d.wait_for(r"INFO audio: opened")
        d.wait_for(r"INFO music: playing file=")
        sayer = subprocess.Popen([CRIER, "say", "--config", box.conf, "--lang", "en",
                                  "Order forty two is ready, please come to the counter"],
                                 env=box.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            seen.update(threads(d.p.pid))
            if any("said on request" in l for l in d.lines()) and sayer.poll() is not None:
                break
            time.sleep(0.02)
        assert sayer.wait(10) == 0
        st = status(box)
        text = subprocess.run([CRIER, "status", "--config", box.conf], env=box.env,
                              capture_output=True, text=True, timeout=10).stdout
    finally:
        sim.stop()
        assert d.stop() == 0
    return d, st, seen, text


def assert_only_audio_is_fifo(seen, priority):
    names = {comm for comm, _, _ in seen.values()}
    print("\nthreads seen: %d, %s" % (len(seen), sorted(names)))
    # The speech and music threads were there to be checked, not only the audio thread.
    assert {"crier-audio", "crier-speech", "crier-music", "crier-link"} <= names, sorted(names)
    fifo = {k: v for k, v in seen.items() if v[1] != SCHED_OTHER}
    if priority:
        assert sorted(v for v in fifo.values()) == [("crier-audio", SCHED_FIFO, priority)], fifo
    else:
        assert not fifo, fifo


@pytest.mark.skipif(os.geteuid() != 0, reason="SCHED_FIFO needs root (CAP_SYS_NICE) or RLIMIT_RTPRIO")
def test_as_root_the_audio_thread_alone_is_fifo_30(box):
    d, st, seen, text = run_and_watch(box, "")
    assert_only_audio_is_fifo(seen, 30)
    assert st["audio_thread"] == {"policy": "SCHED_FIFO", "priority": 30, "detail": None}
    assert "audio thread: SCHED_FIFO 30\n" in text
    assert [l for l in d.lines() if "audio thread:" in l] == [
        l for l in d.lines() if l.endswith(" INFO audio: audio thread: SCHED_FIFO 30")]
    assert len([l for l in d.lines() if "audio thread:" in l]) == 1


@pytest.mark.skipif(os.geteuid() != 0, reason="SCHED_FIFO needs root (CAP_SYS_NICE) or RLIMIT_RTPRIO")
def test_a_configured_priority_is_the_one_used(box):
    d, st, seen, text = run_and_watch(box, "audio.realtime_priority = 12\n")
    assert_only_audio_is_fifo(seen, 12)
    assert st["audio_thread"]["priority"] == 12


def test_priority_0_leaves_every_thread_sched_other(box):
    d, st, seen, text = run_and_watch(box, "audio.realtime_priority = 0\n")
    assert_only_audio_is_fifo(seen, 0)
    assert st["audio_thread"] == {"policy": "SCHED_OTHER", "priority": 0, "detail": "off: audio.realtime_priority = 0"}
    assert "audio thread: SCHED_OTHER (off: audio.realtime_priority = 0)\n" in text
    assert not [l for l in d.lines() if "refused" in l]


def test_a_refusal_is_one_warning_with_what_to_change_and_audio_runs_as_before(box):
    # Root without CAP_SYS_NICE and with RLIMIT_RTPRIO 0 is refused as an unprivileged user is
    # (not root, no LimitRTPRIO=): EPERM.
    prefix = ["prlimit", "--rtprio=0:0", "--"]
    if os.geteuid() == 0:
        if not shutil.which("setpriv"):
            pytest.skip("setpriv (util-linux) missing")
        prefix += ["setpriv", "--inh-caps=-sys_nice", "--bounding-set=-sys_nice", "--"]
    d, st, seen, text = run_and_watch(box, "", prefix)
    assert_only_audio_is_fifo(seen, 0)
    warnings = [l for l in d.lines() if "audio thread" in l]
    assert len(warnings) == 1 and " WARN audio: audio thread: real-time priority SCHED_FIFO 30 refused (EPERM: " in warnings[0], warnings
    assert "LimitRTPRIO=30 and RestrictRealtime=no" in warnings[0] and warnings[0].endswith(
        "or set audio.realtime_priority = 0 to silence this"), warnings
    assert st["audio_thread"] == {"policy": "SCHED_OTHER", "priority": 0,
                                  "detail": "real-time refused: EPERM Operation not permitted"}
    assert "audio thread: SCHED_OTHER (real-time refused: EPERM Operation not permitted)\n" in text
    assert {c["name"]: c["state"] for c in st["components"]}["audio"] == "running"
