"""Buttons end to end: electrical levels written to the FIFO input go through the real reader,
gesture recognizer and controls; the effect is measured in what reached ALSA."""
import math
import os
import re
import time

from conftest import CRIER, read_wav
from test_daemon import Proc, order_sim


def segments(x, rate, threshold=0.003, gap=0.3, min_len=0.5):
    """Loud stretches separated by ≥ gap seconds of quiet, at least min_len long (skips clicks)."""
    out, start, last = [], None, None
    g = int(gap * rate)
    for i, v in enumerate(x):
        if abs(v) > threshold:
            if start is None:
                start = i
            elif i - last > g:
                out.append((start, last))
                start = i
            last = i
    if start is not None:
        out.append((start, last))
    return [(a, b) for a, b in out if (b - a) / rate >= min_len]


def rms(x):
    return math.sqrt(sum(v * v for v in x) / len(x))


def press(fifo, line, hold=0.1):
    with open(fifo, "w") as f:
        f.write("%s 0\n" % line)
        f.flush()
        time.sleep(hold)
        f.write("%s 1\n" % line)
        f.flush()


def test_volume_down_and_mute_floor_are_heard(box):
    fifo = str(box.tmp / "buttons.fifo")
    sim = order_sim()
    box.write_conf("\n".join([
        "server = tcp://127.0.0.1:%d" % sim.port, "status.on_start = off", "status.on_link_up = off",
        "input = fifo:%s" % fifo, "state.path = %s" % (box.tmp / "state"),
        "volume.steps = 10", "volume.default = 10", "volume.min_db = -30", "volume.alert_floor = 4",
        "mute.alerts = floor", ""]))
    crier = Proc([CRIER, "run", "--config", box.conf], env=box.env)
    try:
        crier.wait_for(r"INFO link: connected")
        crier.wait_for(r"buttons: reading input=fifo")
        n = 0

        def say42():
            nonlocal n
            n += 1
            sim.send("42")
            sim.wait_for(r"^ack id=\S+ status=spoken", which="out", count=n, timeout=30)

        say42()                                   # full volume
        press(fifo, "GPIO27")                     # volume down one step (3 dB)
        crier.wait_for(r"button volume_down: press")
        say42()
        press(fifo, "GPIO22")                     # mute: orders at the floor (level 4)
        crier.wait_for(r"button mute: press")
        say42()
        press(fifo, "GPIO22")                     # unmute
        crier.wait_for(r"button mute: press", count=2)
    finally:
        rc = crier.stop()
        sim.stop()
    assert rc == 0
    rate, _, x = read_wav(box.capture)
    segs = segments(x, rate)
    assert len(segs) == 3, segs
    levels = [rms(x[a:b]) for a, b in segs]
    db = [20 * math.log10(l / levels[0]) for l in levels]
    print("\nalert levels relative to full volume: %s dB" % ", ".join("%.2f" % d for d in db))
    assert abs(db[1] - (-3.0)) < 0.5, db          # one step of 30 dB / 10
    assert abs(db[2] - (-18.0)) < 0.5, db         # the floor: level 4 = -18 dB
    state = open(str(box.tmp / "state")).read()
    assert "volume" in state                      # persisted
