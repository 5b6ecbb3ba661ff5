import os
import subprocess

from conftest import CRIER, SIM, ROOT, first_loud, last_loud, read_wav, rms


def test_say_output_writes_speech_to_wav(box):
    out = str(box.tmp / "say.wav")
    r = box.run("say", "--output", out, "新客户来了 42")
    assert r.returncode == 0, r.stderr
    rate, ch, x = read_wav(out)
    assert (rate, ch) == (48000, 2)
    seconds = len(x) / rate
    assert 1.0 < seconds < 5.0
    assert rms(x) > 0.02
    peak = max(abs(v) for v in x)
    assert peak < 0.75, "3 dB headroom: peak %.3f" % peak
    assert abs(x[0]) < 0.001 and abs(x[-1]) < 0.001, "fades at both edges"
    assert "INFO say: wrote file=" in r.stderr


def test_say_plays_through_the_configured_device(box):
    r = box.run("say", "New customer 42", "--lang", "en")
    assert r.returncode == 0, r.stderr
    rate, ch, x = read_wav(box.capture)
    start = first_loud(x)
    end = last_loud(x)
    assert start is not None, "speech reached ALSA"
    assert end - start > rate * 0.8
    assert "INFO audio: opened device=default type=FILE" in r.stderr
    assert "INFO audio: closed device=default" in r.stderr


def test_say_print_spells_numbers_per_language(box):
    r = box.run("say", "--print", "新客户来了，42号，收款100.50元")
    assert r.stdout.strip() == "新客户来了，四十二号，收款一百点五元"
    r = box.run("say", "--print", "--lang", "en", "Order 42 paid 100.50")
    assert r.stdout.strip() == "Order forty-two paid one hundred point five"


def test_say_strips_control_characters(box):
    r = box.run("say", "--print", "a\x07b\x1bc\u202ed")
    assert r.stdout.strip() == "a b c d"


def test_usage_errors_exit_2(box):
    for args in (["say"], ["nosuchcommand"], ["say", "--lang", "fr", "x"], ["say", "--bogus", "x"], []):
        r = subprocess.run([CRIER, *args], capture_output=True, text=True)
        assert r.returncode == 2, (args, r.stderr)
        assert "usage:" in r.stderr


def test_help_and_version():
    r = subprocess.run([CRIER, "--help"], capture_output=True, text=True)
    assert r.returncode == 0 and "usage: crier <command>" in r.stdout
    r = subprocess.run([CRIER, "say", "--help"], capture_output=True, text=True)
    assert r.returncode == 0 and "--output FILE.wav" in r.stdout
    r = subprocess.run([CRIER, "--version"], capture_output=True, text=True)
    assert r.stdout.startswith("crier ")


def test_missing_named_config_is_a_runtime_error(box):
    r = box.run("say", "--config", str(box.tmp / "nope.conf"), "--print", "x")
    assert r.returncode == 1
    assert "nope.conf: no such file" in r.stderr


def test_bad_espeak_data_path_is_an_error_not_an_exit(box):
    box.write_conf("speech.data_path = /nonexistent/espeak-data\n")
    r = box.run("say", "--output", str(box.tmp / "x.wav"), "hello")
    assert r.returncode == 1
    assert "espeak-ng could not start (data directory '/nonexistent/espeak-data'" in r.stderr
    assert "speech.data_path in crier.conf" in r.stderr


def test_demo_speaks_orders_from_its_own_order_server(box):
    # TMPDIR: the demo's button FIFO and state (no crier.conf) are this test's own.
    env = dict(box.env, TMPDIR=str(box.tmp))
    for run in (1, 2):
        r = subprocess.run([SIM, "demo", "--seconds", "9", "--every", "2-3"], env=env, cwd=str(box.tmp),
                           capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
        assert r.returncode == 0, r.stderr[-2000:]
        assert "playing on audio device 'default'" in r.stderr
        assert "ack id=D-1 status=spoken device=demo" in r.stdout
        # A second demo speaks its orders too (its D-1 is not the first run's D-1).
        assert "already spoken" not in r.stdout + r.stderr, (run, r.stdout[-1500:])
        rate, _, x = read_wav(box.capture)
        assert first_loud(x) is not None


def test_the_simulators_left_crier_and_it_says_where_they_went(box):
    # Issue 32: the reference servers, the fleet bench and the demo are crier-sim's, not in the
    # box's binary; an integrator's old `crier order-sim ...` gets one line naming the new
    # command and a usage exit.
    for cmd in ("order-sim", "mqtt-fleet", "demo"):
        r = box.run(cmd, "--port", "0", timeout=20)
        assert r.returncode == 2, (cmd, r.returncode, r.stderr)
        assert r.stdout == ""
        assert len(r.stderr.strip().splitlines()) == 1, r.stderr
        assert "run `crier-sim %s`" % cmd in r.stderr and "package crier-sim" in r.stderr, r.stderr
    data = open(CRIER, "rb").read()
    for name in (b"CrierSim", b"OrderServerConfig", b"MQTTOrderSim", b"MQTTFleetOptions"):
        assert name not in data, "%s is linked into crier" % name.decode()


def test_nothing_to_say_is_a_usage_error(box):
    # Issue 13 item 12: empty or unspeakable text is not a success with 0 s of audio.
    for args in ([""], ["\u200b\u200d\u202e"], ["😀", "👍🏽"], ["--print", ""], ["--output", str(box.tmp / "x.wav"), "\u2066😀\u2069"]):
        r = box.run("say", *args)
        assert r.returncode == 2, (args, r.returncode, r.stderr)
        assert "crier say: nothing to say: TEXT has no letter or digit" in r.stderr, r.stderr
        assert r.stdout == ""
    assert not (box.tmp / "x.wav").exists()
    assert not os.path.exists(box.capture) or first_loud(read_wav(box.capture)[2]) is None


def test_say_print_reads_shop_text_like_a_native_speaker(box):
    r = box.run("say", "--print", "等候3-5分钟，12:30取餐，电话13800138000，合计¥3,500，优惠50%")
    assert r.stdout.strip() == "等候三到五分钟，十二点三十分取餐，电话幺三八，零零幺三，八零零零，合计三千五百元，优惠百分之五十"
    r = box.run("say", "--print", "--lang", "en", "Ready at 12:30, total $3.50 for 3,500 points")
    assert r.stdout.strip() == "Ready at twelve thirty, total three dollars fifty for three thousand five hundred points"
