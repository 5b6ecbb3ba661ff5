import os
import re
import subprocess
import time

import pytest

from conftest import CRIER, ROOT


def check(box, text):
    box.write_conf(text)
    return subprocess.run([CRIER, "check-config", box.conf], capture_output=True, text=True)


def test_bad_line_is_reported_with_file_line_and_key(box):
    r = check(box, "# shop\n" * 11 + "audio.rate = fast\n")
    assert r.returncode == 1
    assert 'crier.conf:12: audio.rate: expected an integer 8000...192000, got "fast"' in r.stderr
    assert "audio.rate = 48000" in r.stdout  # the default the box would use


def test_unknown_key_warns_but_passes(box):
    r = check(box, "volume.stpes = 10\naudio.device = hw:1\n")
    assert r.returncode == 0, r.stderr
    assert "warning: crier.conf:1: volume.stpes: unknown key, ignored" in r.stderr
    assert "audio.device = hw:1" in r.stdout


def test_windows_edited_file_is_fine(box):
    with open(box.conf, "wb") as f:
        f.write("\ufeffspeech.lang = en\r\nserver = tcp://192.0.2.1:9000\r\n".encode())
    r = subprocess.run([CRIER, "check-config", box.conf], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert "speech.lang = en" in r.stdout and "server = tcp://192.0.2.1:9000" in r.stdout


def test_not_utf8_is_explained(box):
    with open(box.conf, "wb") as f:
        f.write("speech.lang = 中文\n".encode("gbk"))
    r = subprocess.run([CRIER, "check-config", box.conf], capture_output=True, text=True)
    assert r.returncode == 1
    assert "is not UTF-8 text" in r.stderr


def test_example_config_checks_clean(tmp_path):
    ex = subprocess.run([CRIER, "config", "--example"], capture_output=True, text=True).stdout
    p = tmp_path / "ex.conf"
    p.write_text(ex)
    r = subprocess.run([CRIER, "check-config", str(p)], capture_output=True, text=True)
    assert r.returncode == 0 and r.stderr == ""


def test_docs_configuration_lists_every_key():
    table = subprocess.run([CRIER, "config", "--markdown"], capture_output=True, text=True).stdout
    with open(os.path.join(ROOT, "docs", "configuration.md")) as f:
        doc = f.read()
    assert table in doc, "docs/configuration.md is out of date: regenerate the table with `crier config --markdown`"


def test_old_mac_line_ends_and_a_duplicate_whose_last_value_is_bad(box):
    with open(box.conf, "wb") as f:
        f.write(b"speech.lang = en\raudio.device = hw:1\rspeech.lang = klingon\rvolume.default = 40\r")
    r = subprocess.run([CRIER, "check-config", box.conf], capture_output=True, text=True)
    assert r.returncode == 1
    assert "audio.device = hw:1" in r.stdout
    # The last value decides: invalid, so the default, not the first value.
    assert "speech.lang = zh" in r.stdout
    assert 'crier.conf:3: speech.lang: expected one of zh, en, got "klingon"; using the default (zh)' in r.stderr
    # Never clamped silently: the error names the line, and what is printed is what runs.
    assert "crier.conf:4: volume.default: 40 is above volume.steps = 10" in r.stderr
    assert "volume.default = 7" in r.stdout


def test_a_directory_a_fifo_or_a_huge_file_is_refused_without_blocking(tmp_path):
    d = tmp_path / "crier.conf.d"
    d.mkdir()
    fifo = tmp_path / "fifo.conf"
    os.mkfifo(fifo)
    big = tmp_path / "big.conf"
    with open(big, "wb") as f:
        f.write(b"# " + b"x" * (10 << 20) + b"\n")
    for path, why in ((d, "it is a directory"), (fifo, "not a regular file"), (big, "at most 1048576 bytes")):
        r = subprocess.run([CRIER, "check-config", str(path)], capture_output=True, text=True, timeout=20)
        assert r.returncode == 1, r.stderr
        assert why in r.stderr and "using the defaults for every key" in r.stderr
        assert "audio.device = default" in r.stdout  # what the daemon would run with
        r = subprocess.run([CRIER, "say", "--config", str(path), "--print", "hi"], capture_output=True, text=True, timeout=20)
        assert r.returncode == 1 and why in r.stderr


def mutate(data, rng):
    pieces = [b"\r", b"\n", b"\r\n", b"\0", b"\t", b" ", b'"', b"'", b"#", b"=", b"[audio]", "\ufeff".encode(),
              "\u202e".encode(), "\u0085".encode(), b"\xff", b"\xca\xd5", b"40", b"-1", b"ZH", b"GPIO17",
              b"volume.default", b"audio.buffer_ms = 10"]
    b = bytearray(data)
    for _ in range(rng.randint(1, 10)):
        at = rng.randint(0, len(b))
        op = rng.randrange(5)
        if op == 0:
            b[at:at] = rng.choice(pieces)
        elif op == 1:
            del b[at:at + rng.randint(1, 8)]
        elif op == 2 and at < len(b):
            b[at] = rng.randrange(256)
        elif op == 3:
            lines = bytes(b).split(b"\n")
            b[at:at] = rng.choice(lines) + b"\n"
        else:
            b = bytearray(bytes(b).replace(b"\n", b"\r", rng.randint(1, 50)))
    return bytes(b)


@pytest.mark.parametrize("seed", [1, 2, 3, 4])
def test_what_check_config_prints_is_what_the_daemon_runs(box, seed):
    import random
    from test_daemon import Proc
    rng = random.Random(seed)
    example = subprocess.run([CRIER, "config", "--example"], capture_output=True, text=True).stdout
    example = "\n".join(l[1:] if l.startswith("#") and " = " in l and not l.startswith("# ") else l
                        for l in example.split("\n")).encode()
    # Kept hermetic whatever the mutations did: no server, no serial port, paths in tmp.
    tail = ("\nserver =\nlog.serial =\nlog.level = info\ninput = fifo:%s\nstate.path = %s\ncontrol.socket = %s\n"
            "audio.device = default\n" % (box.tmp / "buttons.fifo", box.tmp / "state", box.tmp / "control.sock")).encode()
    for _ in range(2):
        with open(box.conf, "wb") as f:
            f.write(mutate(example, rng) + tail)
        r = subprocess.run([CRIER, "check-config", box.conf], capture_output=True, text=True, timeout=20)
        assert r.returncode == (1 if "\nerror: " in "\n" + r.stderr else 0), r.stderr
        printed = re.search(r"\(digest ([0-9a-f]{16}),", r.stdout).group(1)
        p = Proc([CRIER, "run", "--config", box.conf], env=box.env)
        try:
            line = p.wait_for(r" INFO config: loaded ")[0]
        finally:
            p.stop()
        assert "digest=" + printed in line, (line, r.stdout)
        errors = len([l for l in r.stderr.splitlines() if l.startswith("error: ")])
        assert "errors=%d " % errors in line


@pytest.mark.parametrize("device_id", ["shop/1", "a+b"])
def test_a_device_id_mqtt_cannot_use_fails_check_config_and_the_daemon_says_the_same(box, device_id):
    """Issue 31: check-config passed `device.id = shop/1` (or `a+b`) with an mqtt:// server;
    only the running link complained. One rule (MQTTConfig.deviceIDProblem), in both places,
    with the same words, and what check-config prints (no server) is what the daemon runs."""
    from test_daemon import Proc
    # Port 9: nothing listens; a link that started anyway would log its connection attempts.
    text = "server = mqtt://127.0.0.1:9\ndevice.id = %s\nstate.path = %s\ninput = fifo:%s\n" % (
        device_id, box.tmp / "state", box.tmp / "buttons.fifo")
    os.mkfifo(box.tmp / "buttons.fifo")
    r = check(box, text)
    assert r.returncode == 1, r.stderr
    errors = [l for l in r.stderr.splitlines() if l.startswith("error: ")]
    assert len(errors) == 1 and errors[0].startswith("error: crier.conf:2: device.id: "), r.stderr
    assert "the MQTT link stays off until it is fixed" in errors[0]
    assert "\nserver = \n" in "\n" + r.stdout or "\nserver =\n" in "\n" + r.stdout, r.stdout
    p = Proc([CRIER, "run", "--config", box.conf], env=box.env)
    try:
        line = p.wait_for(r" INFO config: loaded ")[0]
        time.sleep(1)
    finally:
        p.stop()
    assert "errors=1 " in line
    logged = [l for l in p.lines() if "ERROR config: " in l]
    assert len(logged) == 1 and errors[0][len("error: "):] in logged[0], (logged, errors)
    assert not [l for l in p.lines() if "INFO link: link starting" in l], "the MQTT link started anyway"
