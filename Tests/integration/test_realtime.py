"""The audio thread's real-time priority (docs/audio.md, "Real-time priority"): the real daemon,
the kernel's own view of every thread (/proc/PID/task/TID/stat: policy and rt_priority), while
music decodes and espeak-ng speaks. Only the audio thread, and the speech thread while it waits
for an utterance and until its first chunk, may be SCHED_FIFO."""
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


def assert_only_audio_and_speech_are_fifo(seen, audio, speech, events=0):
    """`seen` holds each thread's last sample, taken once the alert was said: the speech thread
    is waiting for the next utterance then. Only the audio, speech and event threads may be
    real-time, and the link thread while it waits (the music, web and Swift's pool threads never)."""
    names = {comm for comm, _, _ in seen.values()}
    print("\nthreads seen: %d, %s" % (len(seen), sorted(names)))
    # The speech and music threads were there to be checked, not only the audio thread.
    assert {"crier-audio", "crier-speech", "crier-music", "crier-link", "crier-events"} <= names, sorted(names)
    fifo = {k: v for k, v in seen.items() if v[1] != SCHED_OTHER}
    assert [v for v in seen.values() if v[0] == "crier-speech"], "no speech thread seen"
    # The link thread waits for the server at the event thread's priority (within a budget).
    want = sorted(([("crier-audio", SCHED_FIFO, audio)] if audio else []) + ([("crier-speech", SCHED_FIFO, speech)] if speech else [])
                  + ([("crier-events", SCHED_FIFO, events), ("crier-link", SCHED_FIFO, events)] if events else []))
    assert sorted(v for v in fifo.values()) == want, fifo


@pytest.mark.skipif(os.geteuid() != 0, reason="SCHED_FIFO needs root (CAP_SYS_NICE) or RLIMIT_RTPRIO")
def test_as_root_the_audio_thread_is_fifo_30_and_the_waiting_speech_thread_fifo_20(box):
    d, st, seen, text = run_and_watch(box, "")
    assert_only_audio_and_speech_are_fifo(seen, 30, 20, 10)
    assert st["audio_thread"] == {"policy": "SCHED_FIFO", "priority": 30, "detail": None}
    assert st["speech_thread"] == {"policy": "SCHED_FIFO", "priority": 20, "detail": None}
    assert st["event_thread"] == {"policy": "SCHED_FIFO", "priority": 10, "detail": None}
    assert "audio thread: SCHED_FIFO 30\n" in text
    assert "speech thread: SCHED_FIFO 20 (waiting and until each first chunk)\n" in text
    assert "event thread: SCHED_FIFO 10\n" in text
    assert len([l for l in d.lines() if l.endswith(" INFO runtime: event thread: SCHED_FIFO 10 (orders, buttons and timers turned into speech)")]) == 1
    assert len([l for l in d.lines() if l.endswith(" INFO speech: speech thread: SCHED_FIFO 20 while it waits and until each utterance's first chunk")]) == 1
    assert [l for l in d.lines() if "audio thread:" in l] == [
        l for l in d.lines() if l.endswith(" INFO audio: audio thread: SCHED_FIFO 30")]
    assert len([l for l in d.lines() if "audio thread:" in l]) == 1


@pytest.mark.skipif(os.geteuid() != 0, reason="SCHED_FIFO needs root (CAP_SYS_NICE) or RLIMIT_RTPRIO")
def test_a_configured_priority_is_the_one_used(box):
    d, st, seen, text = run_and_watch(box, "audio.realtime_priority = 12\nspeech.realtime_priority = 5\nspeech.start_priority = 3\n")
    assert_only_audio_and_speech_are_fifo(seen, 12, 5, 3)
    assert st["audio_thread"]["priority"] == 12
    assert st["speech_thread"]["priority"] == 5
    assert st["event_thread"]["priority"] == 3


@pytest.mark.skipif(os.geteuid() != 0, reason="SCHED_FIFO needs root (CAP_SYS_NICE) or RLIMIT_RTPRIO")
def test_a_speech_priority_not_below_the_audio_one_is_lowered_with_a_warning(box):
    d, st, seen, text = run_and_watch(box, "audio.realtime_priority = 12\nspeech.realtime_priority = 12\nspeech.start_priority = 11\n")
    assert_only_audio_and_speech_are_fifo(seen, 12, 11, 10)
    assert [l for l in d.lines() if "speech.realtime_priority" in l and "not below audio.realtime_priority = 12" in l and "using 11" in l]
    assert [l for l in d.lines() if "speech.start_priority" in l and "not below speech.realtime_priority = 11" in l and "using 10" in l]


@pytest.mark.skipif(os.geteuid() != 0, reason="SCHED_FIFO needs root (CAP_SYS_NICE) or RLIMIT_RTPRIO")
def test_the_speech_thread_synthesizes_past_its_first_chunk_as_sched_other(box):
    """FIFO while waiting, SCHED_OTHER while a long text is made after its first chunk: a long
    synthesis never holds a core at real-time priority."""
    sim = order_sim()
    daemon_conf(box, "server = tcp://127.0.0.1:%d\n" % sim.port)
    d = Proc([CRIER, "run", "--config", box.conf], env=box.env)
    policies = []
    try:
        d.wait_for(r"INFO link: connected")
        d.wait_for(r"INFO speech: speech thread: SCHED_FIFO 20")
        # espeak-ng starts a helper thread of its own from the speech thread (same name,
        # SCHED_OTHER through SCHED_RESET_ON_FORK): the speech thread is the FIFO one.
        # (the voice data's warm-up at start runs as SCHED_OTHER: wait for it to end)
        end = time.monotonic() + 10
        while True:
            waiting = [k for k, (comm, pol, prio) in threads(d.p.pid).items() if comm == "crier-speech" and pol == SCHED_FIFO]
            if waiting or time.monotonic() > end:
                break
            time.sleep(0.01)
        assert len(waiting) == 1, threads(d.p.pid)
        tid = waiting[0]
        text = " ".join(["Order %d is ready at the counter, thank you for waiting." % n for n in range(1, 9)])  # < speech.max_chars
        sayer = subprocess.Popen([CRIER, "say", "--config", box.conf, "--lang", "en", text],
                                 env=box.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        # `crier say` returns once the text is queued; the synthesis follows (~0.1-0.5 s here).
        deadline = time.monotonic() + 4
        stat = "/proc/%d/task/%d/stat" % tid
        while time.monotonic() < deadline:
            with open(stat) as f:
                fields = f.read().rsplit(")", 1)[1].split()
            policies.append((int(fields[38]), int(fields[37])))
            time.sleep(0.0005)
        sayer.kill()
        sayer.wait(10)
        time.sleep(0.3)
        after = threads(d.p.pid).get(tid)
    finally:
        sim.stop()
        d.stop()
    print("\nspeech thread samples: %d, %d SCHED_OTHER" % (len(policies), policies.count((SCHED_OTHER, 0))))
    assert (SCHED_OTHER, 0) in policies, policies[:20]
    assert set(policies) <= {(SCHED_OTHER, 0), (SCHED_FIFO, 20)}, set(policies)
    assert after[1:] == (SCHED_FIFO, 20), after


def test_priority_0_leaves_every_thread_sched_other(box):
    d, st, seen, text = run_and_watch(box, "audio.realtime_priority = 0\nspeech.realtime_priority = 0\nspeech.start_priority = 0\n")
    assert_only_audio_and_speech_are_fifo(seen, 0, 0)
    assert st["event_thread"] == {"policy": "SCHED_OTHER", "priority": 0, "detail": "off: speech.start_priority = 0"}
    assert st["speech_thread"] == {"policy": "SCHED_OTHER", "priority": 0, "detail": "off: speech.realtime_priority = 0"}
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
    assert_only_audio_and_speech_are_fifo(seen, 0, 0)
    speech = [l for l in d.lines() if "speech thread" in l]
    assert len(speech) == 1 and " WARN speech: speech thread: real-time priority SCHED_FIFO 20 refused (EPERM: " in speech[0], speech
    assert speech[0].endswith("or set speech.realtime_priority = 0 to silence this"), speech
    assert st["speech_thread"]["detail"] == "real-time refused: EPERM Operation not permitted"
    events = [l for l in d.lines() if "event thread" in l]
    assert len(events) == 1 and " WARN runtime: event thread: real-time priority SCHED_FIFO 10 refused (EPERM: " in events[0], events
    assert st["event_thread"]["detail"] == "real-time refused: EPERM Operation not permitted"
    links = [l for l in d.lines() if "link thread" in l]
    assert len(links) == 1 and " WARN link: link thread: real-time priority SCHED_FIFO 10 refused (EPERM: " in links[0], links
    assert links[0].endswith("or set speech.start_priority = 0 to silence this"), links
    warnings = [l for l in d.lines() if "audio thread" in l]
    assert len(warnings) == 1 and " WARN audio: audio thread: real-time priority SCHED_FIFO 30 refused (EPERM: " in warnings[0], warnings
    assert "LimitRTPRIO=30 and RestrictRealtime=no" in warnings[0] and warnings[0].endswith(
        "or set audio.realtime_priority = 0 to silence this"), warnings
    assert st["audio_thread"] == {"policy": "SCHED_OTHER", "priority": 0,
                                  "detail": "real-time refused: EPERM Operation not permitted"}
    assert "audio thread: SCHED_OTHER (real-time refused: EPERM Operation not permitted)\n" in text
    assert {c["name"]: c["state"] for c in st["components"]}["audio"] == "running"


@pytest.mark.skipif(os.geteuid() != 0, reason="SCHED_FIFO needs root (CAP_SYS_NICE) or RLIMIT_RTPRIO")
def test_a_flooding_server_cannot_hold_the_link_thread_at_real_time_priority(box):
    """The link thread waits for the server at SCHED_FIFO 10 (an order wakes it at once on a busy
    box), within 2% of a core of work per second (RealtimeWaitBudget). A server that floods it
    with pings makes it an ordinary thread, with one warning, until it calms down; orders sent
    during and after the flood are said."""
    import socket
    from test_daemon import crier_run
    from test_link import ScriptedConn, loopback_listener
    listener, port = loopback_listener()
    crier = crier_run(box, port, "link.heartbeat = 30\n")
    policies = []
    try:
        c = ScriptedConn(listener)
        assert c.line(10)["type"] == "hello"
        c.send({"type": "welcome"})
        crier.wait_for(r"INFO link: link thread: SCHED_FIFO 10 while it waits for the server")
        link = [k for k, v in threads(crier.p.pid).items() if v[0] == "crier-link"]
        assert len(link) == 1 and threads(crier.p.pid)[link[0]][1:] == (SCHED_FIFO, 10)
        stat = "/proc/%d/task/%d/stat" % link[0]
        # The flood: pings as fast as the socket takes them, for 3 s, our reader draining pongs.
        c.c.setblocking(False)
        ping = b'{"type":"ping"}\n' * 2000
        pending = b""
        end = time.monotonic() + 3
        while time.monotonic() < end:
            pending = pending or ping
            try:
                pending = pending[c.c.send(pending):]  # whole lines only, in the end
            except BlockingIOError:
                pass
            try:
                while c.c.recv(1 << 20):
                    pass
            except BlockingIOError:
                pass
            with open(stat) as f:
                fields = f.read().rsplit(")", 1)[1].split()
            policies.append((int(fields[38]), int(fields[37])))
        crier.wait_for(r"WARN link: the order server keeps the link busy \(over 2% of a core in a second\)")
        assert (SCHED_OTHER, 0) in policies, policies[:10]
        # Calm again: back to FIFO 10 within two windows, and an order is said.
        c.c.setblocking(True)
        c.c.sendall(pending)
        deadline = time.monotonic() + 6
        while time.monotonic() < deadline and threads(crier.p.pid)[link[0]][1:] != (SCHED_FIFO, 10):
            c.c.settimeout(0.2)
            try:
                c.c.recv(1 << 20)
            except socket.timeout:
                pass
        assert threads(crier.p.pid)[link[0]][1:] == (SCHED_FIFO, 10)
        c.buf = b""
        c.send({"type": "order", "id": "FL-1", "kind": "new_customer", "number": 7})
        got = []
        c.acks(got, 30, until=lambda a: any(m["id"] == "FL-1" for m in a))
        assert {"type": "ack", "id": "FL-1", "status": "spoken"} in got, (got, "\n".join(crier.lines()[-15:]))
        c.close()
    finally:
        crier.stop()
        listener.close()
    print("\nlink thread samples during the flood: %d, %d SCHED_OTHER" % (len(policies), policies.count((SCHED_OTHER, 0))))
