"""`crier voice`: the recording script and pack checks (docs/voice.md, issue 33)."""
import subprocess

from conftest import CRIER


def clips(box, *args):
    r = box.run("voice", "clips", *args)
    assert r.returncode == 0, r.stderr
    rows = [line.split("\t") for line in r.stdout.splitlines()]
    assert all(len(row) == 2 and row[0] and row[1] for row in rows), r.stdout
    return rows


def test_voice_clips_prints_the_recording_script_for_each_language(box):
    zh = clips(box, "--lang", "zh")
    en = clips(box, "--lang", "en")
    for rows in (zh, en):
        names = [n for n, _ in rows]
        texts = [t for _, t in rows]
        assert len(set(names)) == len(names), "names are unique"
        assert len(set(texts)) == len(texts), "each text is recorded once"
        assert all(n.replace("_", "").isalnum() and n == n.lower() and n.isascii() for n in names)
    zh = dict(zh)
    en = dict(en)
    # Template fragments (status prompts too), number words, units, order-code letters.
    assert zh["tpl_new_customer"] == "新客户来了" and zh["tpl_payment"] == "收款"
    assert zh["tpl_link_down_1"] == "服务连接失败" and zh["tpl_link_down_2"] == "请检查网络"
    assert zh["tpl_started"] == "音箱已启动"
    assert (zh["four"], zh["ten"], zh["wan"], zh["two_liang"], zh["one_yao"]) == ("四", "十", "万", "两", "幺")
    assert (zh["number"], zh["yuan"], zh["point"], zh["percent"]) == ("号", "元", "点", "百分之")
    assert (zh["letter_a"], zh["letter_x"]) == ("诶", "艾克斯")
    assert en["tpl_new_customer"] == "New customer" and en["tpl_payment"] == "Payment received"
    assert (en["forty_two"], en["thousand"], en["twenty_first"], en["oclock"]) == ("forty-two", "thousand", "twenty-first", "o'clock")
    assert en["letter_a"] == "A" and en["degrees_celsius"] == "degrees Celsius"
    assert 80 < len(zh) < 150 and 250 < len(en) < 330


def test_voice_clips_follows_the_configs_templates(box):
    box.write_conf("template.zh.new_customer = 欢迎光临，请{number}号桌取餐\n")
    zh = dict(clips(box, "--config", box.conf, "--lang", "zh"))
    assert zh["tpl_new_customer_1"] == "欢迎光临"
    assert zh["tpl_new_customer_2"] == "请"
    assert zh["tpl_new_customer_3"] == "号桌取餐"
    # new_customers still says the default 新客户来了.
    assert zh["tpl_new_customers"] == "新客户来了"


def test_voice_clips_usage_errors(box):
    r = box.run("voice", "clips", "--lang", "fr")
    assert r.returncode == 2 and "--lang expects zh or en" in r.stderr
    r = box.run("voice", "clips")
    assert r.returncode == 2 and "needs --lang" in r.stderr
    r = box.run("voice", "clips", "--lang", "zh", "--config", str(box.tmp / "nope.conf"))
    assert r.returncode == 1 and "nope.conf" in r.stderr
    r = box.run("voice", "nonsense")
    assert r.returncode == 2


def tone(path, hz, seconds=0.3, rate=16000, amplitude=0.5, channels=1):
    """A mono (or multi-channel) 16-bit WAV: a sine of its own frequency."""
    import math
    import struct
    import wave
    # A long file repeats its first second (fast to write; the checker reads no further anyway).
    repeat = int(seconds) if seconds > 5 else 1
    n = int(seconds * rate / repeat)
    frames = bytearray()
    for i in range(n):
        v = max(-1.0, min(1.0, amplitude * math.sin(2 * math.pi * hz * i / rate)))
        frames += struct.pack("<h", int(v * 32767)) * channels
    with wave.open(str(path), "wb") as w:
        w.setnchannels(channels)
        w.setsampwidth(2)
        w.setframerate(rate)
        w.writeframes(bytes(frames) * repeat)


def make_pack(box, lang="zh", rate=16000, skip=()):
    """Every clip `crier voice clips` lists, clip k a 0.3 s tone at 200 + 10·k Hz."""
    d = box.tmp / ("pack-" + lang)
    d.mkdir()
    (d / "manifest").write_text("# synthetic test pack\nlanguage = %s\nname = Test tones\nlicence = CC0-1.0\nrate = %d\n" % (lang, rate))
    rows = clips(box, "--lang", lang)
    for k, (name, _) in enumerate(rows):
        if name not in skip:
            tone(d / (name + ".wav"), 200 + 10 * k, rate=rate)
    return d, rows


def test_voice_check_passes_a_complete_pack(box):
    for lang in ("zh", "en"):
        d, rows = make_pack(box, lang)
        r = box.run("voice", "check", str(d))
        assert r.returncode == 0, r.stdout + r.stderr
        assert "coverage: %d of %d clips" % (len(rows), len(rows)) in r.stdout
        assert "name: Test tones; language: %s; licence: CC0-1.0; rate: 16000 Hz" % lang in r.stdout
        assert "ok: the pack says every clip the config needs" in r.stdout
        assert "error:" not in r.stdout and "warning:" not in r.stdout, r.stdout


def test_voice_check_names_every_broken_clip_and_exits_1(box):
    d, rows = make_pack(box, "zh", skip={"five"})
    (d / "four.wav").write_bytes(b"RIFF\x00\x00\x00\x00WAVEjunkjunkjunk")
    tone(d / "six.wav", 440, rate=44100)
    tone(d / "seven.wav", 400, seconds=600)  # 10 minutes, 19 MB
    tone(d / "eight.wav", 440, channels=2)
    tone(d / "yuan.wav", 440, amplitude=2.0)  # clipped
    tone(d / "wan.wav", 440, amplitude=0.05)  # 20 dB below the rest
    tone(d / "nien.wav", 440)  # no such clip
    (d / "README.txt").write_text("recorded by …")
    r = box.run("voice", "check", str(d))
    assert r.returncode == 1, r.stdout + r.stderr
    out = r.stdout
    assert "coverage: %d of %d clips" % (len(rows) - 5, len(rows)) in out
    assert "error: four.wav: " in out and 'espeak-ng says "四"' in out
    assert 'error: five: missing (no five.wav, .flac or .ogg); record "五"' in out
    assert "error: six.wav: 44100 Hz, the manifest says 16000 Hz; resample it" in out
    assert "error: seven.wav: 10.0 min long, a clip is at most 10 s" in out
    assert "error: eight.wav: 2 channels; a clip is mono" in out
    assert "warning: yuan.wav: " in out and "samples at full scale" in out
    assert "warning: wan: level " in out and "softer than the pack's median" in out
    assert "warning: nien.wav: no clip of that name is needed" in out
    assert "README" not in out
    assert "the pack cannot serve alone: 5 clips missing or unusable" in out


def test_voice_check_refuses_what_is_not_a_pack(box):
    r = box.run("voice", "check", str(box.tmp / "nothing"))
    assert r.returncode == 1 and "does not exist" in r.stdout
    d = box.tmp / "nomanifest"
    d.mkdir()
    r = box.run("voice", "check", str(d))
    assert r.returncode == 1 and "error: no manifest in" in r.stdout
    (d / "manifest").write_text("language = zh\nrate = 16000\n")
    r = box.run("voice", "check", str(d))
    assert r.returncode == 1 and "error: manifest: no name" in r.stdout
    # Wrong language for --lang.
    pack, _ = make_pack(box, "zh")
    r = box.run("voice", "check", "--lang", "en", str(pack))
    assert r.returncode == 1 and "the pack's language is zh, not en" in r.stdout


def test_voice_check_refuses_a_folder_of_many_thousand_files_quickly(box):
    d = box.tmp / "flood"
    d.mkdir()
    (d / "manifest").write_text("language = zh\nname = x\nlicence = y\nrate = 16000\n")
    for i in range(5000):
        (d / ("x%d.wav" % i)).write_bytes(b"")
    import time
    t0 = time.monotonic()
    r = box.run("voice", "check", str(d))
    assert time.monotonic() - t0 < 5
    assert r.returncode == 1 and "error: the pack has more than 4096 files" in r.stdout
    # voice build reads its --from folder under the same limit.
    t0 = time.monotonic()
    r = box.run("voice", "build", "--from", str(d), "--lang", "zh", "--output", str(box.tmp / "p"))
    assert time.monotonic() - t0 < 5
    assert r.returncode == 1 and "has more than 4096 files; it should hold one recording per clip" in r.stderr, r.stderr


def heard(x, rate, hz, step):
    """The clips heard in x: each 100 ms window's frequency (zero crossings), every 25 ms; a clip
    counts when 3 windows in a row hear it; repeats collapse (as VoiceSpliceTests)."""
    window, hop = rate // 10, rate // 40
    names, last, run = [], None, 0
    for i in range(0, len(x) - window + 1, hop):
        w = x[i:i + window]
        energy = sum(v * v for v in w) / window
        name = None
        if energy > 0.005:
            crossings = sum(1 for a, b in zip(w, w[1:]) if (a < 0) != (b < 0))
            f = crossings * rate / (2 * window)
            best = min(hz, key=lambda n: abs(hz[n] - f))
            if abs(hz[best] - f) < step * 0.36:
                name = best
        run = run + 1 if name is not None and name == last else 1
        last = name
        if run == 3 and name and (not names or names[-1] != name):
            names.append(name)
    return names


def tone_pack(box, lang="zh", skip=()):
    """Clip k a 0.3 s tone at 300 + 37·k Hz, 16 kHz: the frequencies VoiceSpliceTests uses."""
    d = box.tmp / ("tones-" + lang)
    d.mkdir()
    (d / "manifest").write_text("language = %s\nname = tones\nlicence = CC0-1.0\nrate = 16000\n" % lang)
    hz = {}
    for k, (name, _) in enumerate(clips(box, "--lang", lang)):
        hz[name] = 300 + 37 * k
        if name not in skip:
            tone(d / (name + ".wav"), hz[name], rate=16000)
    return d, hz


def test_say_output_splices_the_clips_of_a_voice_pack(box):
    from conftest import read_wav
    d, hz = tone_pack(box)
    out = str(box.tmp / "pack.wav")
    r = box.run("say", "--voice-pack", str(d), "--output", out, "新客户来了，42号")
    assert r.returncode == 0, r.stderr
    assert "INFO speech: said from voice pack clips clips=5" in r.stderr
    rate, ch, x = read_wav(out)
    assert heard(x, rate, hz, 37) == ["tpl_new_customer", "four", "ten", "two", "number"]
    # 5 clips of 0.3 s, less 3 crossfades of 5 ms, and the 200 ms pause at ，: 1.685 s.
    assert abs(len(x) / rate - 1.685) < 0.06, len(x) / rate
    # voice.pack.zh in crier.conf does the same.
    box.write_conf("voice.pack.zh = %s\n" % d)
    out2 = str(box.tmp / "conf.wav")
    r = box.run("say", "--output", out2, "收款100.50元")
    assert r.returncode == 0, r.stderr
    rate, ch, x = read_wav(out2)
    assert heard(x, rate, hz, 37) == ["tpl_payment", "one", "hundred", "point", "five", "yuan"]


def test_say_with_a_pack_that_lacks_words_uses_espeak_for_the_whole_text(box):
    d, hz = tone_pack(box, skip={"four"})
    out = str(box.tmp / "gap.wav")
    r = box.run("say", "--voice-pack", str(d), "--output", out, "新客户来了，42号")
    assert r.returncode == 0, r.stderr
    assert 'ERROR speech: voice pack %s: four: missing (no four.wav, .flac or .ogg); record "四"' % d in r.stderr, r.stderr
    assert "INFO speech: the voice pack has no clip for some words; espeak-ng says the whole text missing=四" in r.stderr, r.stderr
    from conftest import read_wav
    rate, ch, x = read_wav(out)
    assert len(x) / rate > 1.0, "espeak-ng said it"
    # Shop words no clip covers: espeak-ng too.
    r = box.run("say", "--voice-pack", str(d), "--output", out, "请到3号窗口取餐")
    assert r.returncode == 0 and "espeak-ng says the whole text missing=\"请 | 窗口取餐\"" in r.stderr, r.stderr
    # A pack that is not one: the log says so and espeak-ng speaks.
    r = box.run("say", "--voice-pack", str(box.tmp / "none"), "--output", out, "42号")
    assert r.returncode == 0 and "does not exist" in r.stderr and "voice pack not used" in r.stderr


def test_daemon_says_an_order_from_the_voice_pack_and_acks_it(box):
    import re
    from conftest import read_wav
    from test_daemon import crier_run, order_sim
    d, hz = tone_pack(box)
    sim = order_sim()
    crier = crier_run(box, sim.port, extra="voice.pack.zh = %s\n" % d)
    try:
        crier.wait_for(r"INFO speech: voice pack loaded pack=%s name=tones lang=zh clips=(\d+) needed=\1 " % re.escape(str(d)))
        crier.wait_for(r"INFO link: connected server=tcp://127\.0\.0\.1")
        crier.wait_for(r"INFO audio: opened device=default type=FILE")
        sim.send("42")
        oid = sim.wait_for(r"^order id=\S+ kind=new_customer number=42", which="out")[0].split()[1][3:]
        sim.wait_for(r"^ack id=%s status=spoken" % re.escape(oid), which="out", timeout=30)
        crier.wait_for(r"INFO speech: said from voice pack clips clips=5")
        crier.wait_for(r"INFO alert: spoken id=%s text=新客户来了，四十二号" % re.escape(oid))
        said = crier.wait_for(r"INFO alert: synthesized ids=%s seconds=1\.7 " % re.escape(oid))[0]
        print("\nfrom the pack: " + said.split("INFO ")[1])
    finally:
        rc = crier.stop()
        sim.stop()
    assert rc == 0
    rate, ch, x = read_wav(box.capture)
    assert heard(x, rate, hz, 37) == ["tpl_new_customer", "four", "ten", "two", "number"]


def test_a_coalesced_alert_from_the_pack_cut_by_sigterm_acks_only_the_orders_heard(box):
    """As test_sigterm_in_a_coalesced_announcement_acks_only_the_orders_heard, with the nine
    orders said from a voice pack: each order's part ends where its clips end."""
    import re
    import signal
    import time
    from test_daemon import RawServer
    from test_speaker import Acks, assert_log_matches_acks, connect, run_crier, send_order
    d, hz = tone_pack(box)
    srv = RawServer()
    crier = run_crier(box, srv.port, "status.on_start = off\nstatus.on_link_up = off\nvoice.pack.zh = %s\n" % d)
    try:
        c = connect(srv)
        acks = Acks(c)
        crier.wait_for(r"INFO audio: opened")
        send_order(c, "T-0", text="请稍候")  # no clips for it: espeak-ng
        crier.wait_for(r"INFO alert: saying ids=T-0")
        for i in range(1, 10):
            send_order(c, "N-%d" % i, kind="new_customer", number=100 + i * 11)
        crier.wait_for(r"INFO alert: saying ids=N-1,N-2,N-3,N-4,N-5,N-6,N-7,N-8,N-9 ", timeout=30)
        said = crier.wait_for(r"INFO alert: synthesized ids=N-1,N-2,N-3,N-4,N-5,N-6,N-7,N-8,N-9 ", timeout=30)[0]
        seconds = float(re.search(r"seconds=([\d.]+)", said).group(1))
        assert seconds > 8, said
        time.sleep(1)
        crier.p.send_signal(signal.SIGTERM)
        acks.drain(timeout=10)
        rc = crier.stop()
    finally:
        crier.stop()
    assert rc == 0
    err = "\n".join(crier.lines())
    assert "the voice pack has no clip for some words; espeak-ng says the whole text missing=请稍候" in err
    assert re.search(r"INFO speech: said from voice pack clips clips=55$", err, re.M), err[-3000:]
    spoken = [i for i in range(1, 10) if acks.status("N-%d" % i) == ["spoken"]]
    assert all(acks.status("N-%d" % i) == [] for i in range(1, 10) if i not in spoken)
    assert spoken == list(range(1, len(spoken) + 1)), spoken
    assert 1 <= len(spoken) < 9, "cut after ~6 s of %.1f s: acked %r" % (seconds, spoken)
    heard = re.search(r"INFO alert: not heard in full ids=(\S+) heard_s=([\d.]+)", err)
    assert heard, err[-2000:]
    assert heard.group(1) == ",".join("N-%d" % i for i in range(len(spoken) + 1, 10))
    heard_s = float(heard.group(2))
    assert len(spoken) <= 9 * heard_s / seconds + 1.5
    assert_log_matches_acks(err, acks)


def recording(path, hz, seconds, rate, amplitude, lead=0.5, tail=0.8, channels=1, noise=0.0005):
    """A take as a microphone gives it: room noise (about -66 dBFS), a tone, room noise."""
    import array
    import math
    import random
    import wave
    rnd = random.Random(hz)
    n_lead, n_tone, n_tail = int(lead * rate), int(seconds * rate), int(tail * rate)
    x = array.array("h")
    for i in range(n_lead + n_tone + n_tail):
        v = rnd.uniform(-noise, noise)
        if n_lead <= i < n_lead + n_tone:
            v += amplitude * math.sin(2 * math.pi * hz * (i - n_lead) / rate)
        s = int(max(-1.0, min(1.0, v)) * 32767)
        for _ in range(channels):
            x.append(s)
    with wave.open(str(path), "wb") as w:
        w.setnchannels(channels)
        w.setsampwidth(2)
        w.setframerate(rate)
        w.writeframes(x.tobytes())


def recordings(box, lang="zh", skip=(), name="takes"):
    """Every clip recorded at its own level (-40...-3 dBFS peak) and rate (16, 44.1, 48 kHz),
    0.15-0.6 s long, with half a second of room before and 0.8 s after."""
    d = box.tmp / name
    d.mkdir()
    rows = clips(box, "--lang", lang)
    rates = [16000, 44100, 48000]
    for k, (clip, _) in enumerate(rows):
        if clip not in skip:
            amp = 10 ** (-(3 + (k * 7) % 38) / 20)
            recording(d / (clip + ".wav"), 200 + 10 * k, 0.15 + (k % 10) * 0.05, rates[k % 3], amp)
    return d, rows


def clip_loudness(out):
    import re
    return {m.group(1): float(m.group(2)) for m in re.finditer(r"^clip (\w+): (-?[\d.]+) LUFS", out, re.M)}


def test_voice_build_trims_matches_loudness_and_resamples(box):
    import wave
    d, rows = recordings(box)
    out = box.tmp / "pack"
    r = box.run("voice", "build", "--from", str(d), "--lang", "zh", "--output", str(out), "--name", "Takes", "--licence", "CC0-1.0")
    assert r.returncode == 0, r.stdout + r.stderr
    print("\n" + "\n".join(line for line in r.stdout.splitlines() if not line.startswith("clip ")))
    assert "built %s: %d clips, 24000 Hz" % (out, len(rows)) in r.stdout
    assert "ok: the pack says every clip the config needs" in r.stdout
    # Every clip of the built pack within 1 LU of the target (the check measures with libebur128).
    lufs = clip_loudness(r.stdout)
    assert set(lufs) == {n for n, _ in rows}
    assert all(abs(v - -20) <= 1 for v in lufs.values()), sorted(lufs.items(), key=lambda kv: kv[1])[:3]
    assert "warning:" not in r.stdout, r.stdout
    # Trimmed: the tone with 20 ms before and 40 ms after (a 10 ms window of slack each side).
    for k, (clip, _) in enumerate(rows):
        with wave.open(str(out / (clip + ".wav"))) as w:
            assert (w.getnchannels(), w.getframerate(), w.getsampwidth()) == (1, 24000, 2)
            seconds = w.getnframes() / 24000
        tone_s = 0.15 + (k % 10) * 0.05
        assert tone_s + 0.05 <= seconds <= tone_s + 0.08, (clip, seconds)
    m = (out / "manifest").read_text()
    assert "language = zh\nname = Takes\nlicence = CC0-1.0\nrate = 24000\n" in m
    # The same check again, as its own command.
    r = box.run("voice", "check", str(out))
    assert r.returncode == 0 and "loudness: " in r.stdout and "(spread 0." in r.stdout, r.stdout
    # Never into an existing folder.
    r = box.run("voice", "build", "--from", str(d), "--lang", "zh", "--output", str(out))
    assert r.returncode == 1 and "already exists; remove it or choose another --output" in r.stderr


def test_voice_build_names_every_problem_and_writes_nothing(box):
    d, rows = recordings(box, skip={"five", "four", "six", "seven", "eight"})
    (d / "four.wav").write_bytes(b"RIFF\x00\x00\x00\x00WAVEjunkjunkjunk")
    tone(d / "six.wav", 440, seconds=600, rate=8000)  # 10 minutes
    recording(d / "seven.wav", 440, 0.3, 16000, 0.5, channels=2)
    recording(d / "eight.wav", 440, 0.3, 16000, 0.0)  # the room only
    recording(d / "nien.wav", 440, 0.3, 16000, 0.5)  # misspelt
    (d / "notes.txt").write_text("take 3 was best")
    out = box.tmp / "pack"
    r = box.run("voice", "build", "--from", str(d), "--lang", "zh", "--output", str(out))
    assert r.returncode == 1, r.stdout + r.stderr
    err = r.stderr
    assert 'error: five: no recording (five.wav or .flac); record "五"' in err
    assert "error: nien.wav: no clip is called nien (`crier voice clips` lists the names); rename or remove it" in err
    assert "error: four.wav: " in err and 'record "四" again or export it as WAV/FLAC' in err
    assert 'error: six.wav: 10.0 min long; a recording is one word or phrase ("六"), at most 30 s with its silence' in err
    assert "error: seven.wav: 2 channels; record mono (or export one channel)" in err
    assert "error: eight.wav: silence only (loudest 10 ms at -7" in err and "is it the right file, was the microphone on?" in err
    assert "notes.txt" not in err
    assert "6 problems in %s; nothing written to %s" % (d, out) in err
    assert not out.exists()
    assert [p.name for p in box.tmp.iterdir() if "building" in p.name] == []
    r = box.run("voice", "build", "--from", str(box.tmp / "nope"), "--lang", "zh", "--output", str(out))
    assert r.returncode == 1 and "--from: %s does not exist" % (box.tmp / "nope") in r.stderr
    r = box.run("voice", "build", "--lang", "zh", "--output", str(out))
    assert r.returncode == 2 and "needs --from DIR" in r.stderr


def test_voice_render_with_espeak_ng(box):
    out = box.tmp / "espeak-zh"
    r = box.run("voice", "render", "--tts", "espeak-ng -v cmn -w {out} {text}", "--lang", "zh", "--output", str(out), timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    rows = clips(box, "--lang", "zh")
    assert "rendered %d clips with espeak-ng" % len(rows) in r.stdout
    lufs = clip_loudness(r.stdout)
    assert len(lufs) == len(rows) and all(abs(v - -20) <= 1 for v in lufs.values()), r.stdout
    print("\n" + "\n".join(line for line in r.stdout.splitlines() if not line.startswith("clip ")))
    assert "name = rendered with espeak-ng\n" in (out / "manifest").read_text()
    # The pack speaks: the words of `say --print`, from clips.
    r = box.run("say", "--voice-pack", str(out), "--output", str(box.tmp / "a.wav"), "新客户来了，42号")
    assert r.returncode == 0 and "said from voice pack clips clips=5" in r.stderr, r.stderr


FAKE_TTS = r'''
import math, struct, sys, time, wave
out, text = sys.argv[1], sys.argv[2]
assert len(sys.argv) == 3, sys.argv  # the text is one argument, whatever it holds
if text == FAIL:
    sys.stderr.write("fake-tts: no voice for %s\n" % text)
    sys.exit(3)
if text == SLOW:
    time.sleep(30)
with wave.open(out, "wb") as w:
    w.setnchannels(1); w.setsampwidth(2); w.setframerate(16000)
    w.writeframes(b"".join(struct.pack("<h", int(8000 * math.sin(i / 5))) for i in range(4000)))
'''


def fake_tts(box, fail="", slow=""):
    p = box.tmp / "fake_tts.py"
    p.write_text("FAIL = %r\nSLOW = %r\n" % (fail, slow) + FAKE_TTS)
    return "python3 %s {out} {text}" % p


def test_voice_render_names_the_clip_that_fails_and_writes_nothing(box):
    out = box.tmp / "pack"
    r = box.run("voice", "render", "--tts", fake_tts(box, fail="五"), "--lang", "zh", "--output", str(out))
    assert r.returncode == 1, r.stdout + r.stderr
    assert 'error' not in r.stdout
    assert 'crier voice render: clip five ("五"): python3 exited with status 3: fake-tts: no voice for 五; nothing written to %s' % out in r.stderr, r.stderr
    assert not out.exists() and [p.name for p in box.tmp.iterdir() if "rendering" in p.name] == []
    # A clip that hangs is killed after --timeout.
    r = box.run("voice", "render", "--timeout", "1", "--tts", fake_tts(box, slow="四"), "--lang", "zh", "--output", str(out))
    assert r.returncode == 1 and 'clip four ("四"): python3 did not finish in 1 s (--timeout); killed' in r.stderr, r.stderr
    # A command that is not there; a template without {out}.
    r = box.run("voice", "render", "--tts", "no-such-tts-here -o {out} {text}", "--lang", "zh", "--output", str(out))
    assert r.returncode == 1 and "cannot run no-such-tts-here" in r.stderr, r.stderr
    r = box.run("voice", "render", "--tts", "espeak-ng {text}", "--lang", "zh", "--output", str(out))
    assert r.returncode == 2 and "--tts: no {out}" in r.stderr
    # A working fake: every clip passes through argv as one argument (o'clock, degrees Celsius).
    r = box.run("voice", "render", "--tts", fake_tts(box), "--lang", "en", "--output", str(out), timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr


def place(box, pack, where, lang="zh"):
    """Copies a pack folder to where `auto` looks: "boot" (the shop's) or "image"."""
    import shutil
    dest = box.tmp / ("%s-voice" % where) / lang
    shutil.copytree(pack, dest)
    return dest


def test_auto_takes_the_shops_copy_over_the_images(box):
    """voice.pack.zh = auto (the default): the boot partition's folder wins over the image's when
    both are complete; the image's is not even read."""
    from conftest import read_wav
    d, hz = tone_pack(box)
    shop = place(box, d, "boot")
    # The image's pack: the same clips an octave up, so what was heard tells which pack spoke.
    image = place(box, d, "image")
    for name, f in hz.items():
        tone(image / (name + ".wav"), 2 * f, rate=16000)
    out = str(box.tmp / "auto.wav")
    r = box.run("say", "--output", out, "新客户来了，42号")
    assert r.returncode == 0, r.stderr
    import re
    assert re.search(r'INFO speech: voice pack chosen lang=zh pack=%s why="voice\.pack\.zh = auto: %s has every clip \(\d+\); it wins over the later %s"'
                     % (re.escape(str(shop)), re.escape(str(shop)), re.escape(str(image))), r.stderr), r.stderr
    assert "pack=%s" % image not in r.stderr, "the image's pack is not loaded"
    assert "INFO speech: said from voice pack clips clips=5" in r.stderr
    rate, ch, x = read_wav(out)
    assert heard(x, rate, hz, 37) == ["tpl_new_customer", "four", "ten", "two", "number"]
    # off: espeak-ng, nothing read.
    box.write_conf("voice.pack.zh = off\n")
    r = box.run("say", "--output", out, "新客户来了，42号")
    assert r.returncode == 0 and "lang=zh" not in r.stderr and "said from voice pack" not in r.stderr, r.stderr


def test_the_daemon_with_auto_speaks_from_the_images_pack_past_a_broken_shop_copy_then_espeak(box):
    """The shop's folder was cut short while copying (no manifest): the image's pack speaks the
    order; with the image's pack broken too, espeak-ng does, and the order is acked either way."""
    import re
    from conftest import read_wav
    from test_daemon import crier_run, order_sim
    d, hz = tone_pack(box)
    shop = place(box, d, "boot")
    (shop / "manifest").unlink()
    image = place(box, d, "image")

    def one_order(number):
        sim = order_sim()
        crier = crier_run(box, sim.port)
        try:
            crier.wait_for(r"INFO link: connected server=tcp://127\.0\.0\.1")
            crier.wait_for(r"INFO audio: opened device=default type=FILE")
            sim.send(str(number))
            oid = sim.wait_for(r"^order id=\S+ kind=new_customer number=%d" % number, which="out")[0].split()[1][3:]
            sim.wait_for(r"^ack id=%s status=spoken" % re.escape(oid), which="out", timeout=30)
            crier.wait_for(r"INFO alert: spoken id=%s " % re.escape(oid))
        finally:
            rc = crier.stop()
            sim.stop()
        assert rc == 0
        return "\n".join(crier.lines())

    err = one_order(42)
    assert "ERROR speech: voice pack %s: no manifest in %s" % (shop, shop) in err, err
    assert re.search(r'INFO speech: voice pack chosen lang=zh pack=%s why="voice\.pack\.zh = auto: %s has every clip \(\d+\); %s refused \(no manifest in '
                     % (re.escape(str(image)), re.escape(str(image)), re.escape(str(shop))), err), err
    assert "INFO speech: said from voice pack clips clips=5" in err
    rate, ch, x = read_wav(box.capture)
    assert heard(x, rate, hz, 37) == ["tpl_new_customer", "four", "ten", "two", "number"]

    # The image's pack for the wrong language too: no pack, espeak-ng says the order.
    (image / "manifest").write_text("language = en\nname = tones\nlicence = CC0-1.0\nrate = 16000\n")
    err = one_order(43)
    assert "ERROR speech: voice pack %s: the pack's language is en, not zh" % image in err, err
    assert re.search(r'INFO speech: no voice pack lang=zh why="voice\.pack\.zh = auto: no pack \(%s refused \(no manifest in .*\); %s refused \(the pack.s language is en'
                     % (re.escape(str(shop)), re.escape(str(image))), err), err
    assert "said from voice pack clips" not in err
    assert re.search(r"INFO alert: spoken id=\S+ text=新客户来了，四十三号", err)
    rate, ch, x = read_wav(box.capture)
    assert len(x) / rate > 1.0 and heard(x, rate, hz, 37) != ["tpl_new_customer", "four", "ten", "three", "number"]
