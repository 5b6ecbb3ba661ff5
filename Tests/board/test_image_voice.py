"""Voice packs in the image (scripts/build-image.sh --voice-pack LANG=DIR; docs/voice.md, "Where
packs live"): the argument checks of build-image.sh and the hook that copies and checks a pack,
run in a temporary root. No image is built."""
import math
import os
import re
import stat
import struct
import subprocess
import wave

from conftest import ROOT

HOOK = ROOT / "image" / "hooks" / "voice-packs.sh"
BUILD = ROOT / "scripts" / "build-image.sh"


def tone(path, hz, rate=16000, seconds=0.3):
    with wave.open(str(path), "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(rate)
        w.writeframes(b"".join(struct.pack("<h", int(0.5 * 32767 * math.sin(2 * math.pi * hz * i / rate)))
                               for i in range(int(seconds * rate))))


def make_pack(crier, d, lang, skip=()):
    """Every clip `crier voice clips` lists for the default config, each a tone."""
    d.mkdir()
    (d / "manifest").write_text("language = %s\nname = Tones %s\nlicence = CC0-1.0\nrate = 16000\n" % (lang, lang))
    rows = subprocess.run([crier, "voice", "clips", "--lang", lang], capture_output=True, text=True, check=True).stdout
    for k, line in enumerate(rows.splitlines()):
        name = line.split("\t")[0]
        if name not in skip:
            tone(d / (name + ".wav"), 300 + 37 * k)
    return d


def image_root(tmp_path):
    """A root with the image's crier.conf on its boot partition (what customize-crier.sh leaves)."""
    root = tmp_path / "root"
    (root / "boot" / "firmware").mkdir(parents=True)
    (root / "boot" / "firmware" / "crier.conf").write_text((ROOT / "board" / "crier.conf").read_text())
    return root


def hook(root, *args, crier=None):
    env = dict(os.environ, SOURCE_DATE_EPOCH="1764892800")
    env.pop("CRIER_VOICE_CHECK_BIN", None)
    if crier:
        env["CRIER_VOICE_CHECK_BIN"] = crier
    return subprocess.run(["sh", str(HOOK), str(root), *args], capture_output=True, text=True, env=env, timeout=120)


def test_build_image_refuses_bad_voice_pack_arguments_before_building_anything(tmp_path):
    ok = tmp_path / "zh"
    ok.mkdir()
    (ok / "manifest").write_text("language = zh\nname = x\nlicence = x\nrate = 16000\n")
    cases = [
        (["--voice-pack", "fr=%s" % ok], 2, "the language is zh or en, not 'fr'"),
        (["--voice-pack", str(ok)], 2, "expected LANG=DIR"),
        (["--voice-pack", "zh=%s" % ok, "--voice-pack", "zh=%s" % ok], 2, "--voice-pack zh given twice"),
        (["--voice-pack", "zh=%s" % (tmp_path / "none")], 1, "is not a folder"),
        (["--voice-pack", "en=%s" % ok], 1, "does not say language = en"),
    ]
    empty = tmp_path / "empty"
    empty.mkdir()
    cases.append((["--voice-pack", "zh=%s" % empty], 1, "no manifest in"))
    for args, rc, message in cases:
        # Not root or root: the voice packs are checked first (a build takes minutes).
        r = subprocess.run(["bash", str(BUILD), "--arch", "amd64", *args], capture_output=True, text=True, timeout=60)
        assert r.returncode == rc and message in r.stderr, (args, r.returncode, r.stderr)
        assert "must run as root" not in r.stderr and "host packages" not in r.stdout
    r = subprocess.run(["bash", str(BUILD), "--help"], capture_output=True, text=True, timeout=60)
    assert "--voice-pack LANG=DIR" in r.stdout and "Needs root" in r.stdout


def test_the_hook_copies_and_checks_each_pack_into_the_read_only_root(crier, tmp_path):
    root = image_root(tmp_path)
    zh = make_pack(crier, tmp_path / "zh", "zh")
    en = make_pack(crier, tmp_path / "en", "en")
    (zh / "README.txt").write_text("recorded by ...")
    (zh / ".DS_Store").write_text("junk")
    (zh / "takes").mkdir()                      # the recordings a pack was built from: not copied
    (zh / "link.wav").symlink_to("/etc/passwd")  # never followed into the image
    old = root / "usr" / "share" / "crier" / "voice" / "zh"
    old.mkdir(parents=True)
    (old / "stale.wav").write_text("from an older build")
    r = hook(root, "zh=%s" % zh, "en=%s" % en, crier=crier)
    assert r.returncode == 0, r.stdout + r.stderr
    for lang in ("zh", "en"):
        assert re.search(r"^voice-packs: %s: coverage: (\d+) of \1 clips .* ok: the pack says every clip the config needs$" % lang, r.stdout, re.M), r.stdout
    for lang, src in (("zh", zh), ("en", en)):
        dest = root / "usr" / "share" / "crier" / "voice" / lang
        want = sorted(p.name for p in src.iterdir() if p.is_file() and not p.is_symlink() and not p.name.startswith("."))
        assert sorted(p.name for p in dest.iterdir()) == want
        assert "manifest" in want and len(want) > 90
        for p in dest.iterdir():
            st = p.stat()
            assert stat.S_IMODE(st.st_mode) == 0o644 and st.st_mtime == 1764892800
        assert stat.S_IMODE(dest.stat().st_mode) == 0o755
        assert "voice-packs: %s: %s -> /usr/share/crier/voice/%s (%d files" % (lang, src, lang, len(want)) in r.stdout
    assert not (root / "usr/share/crier/voice/zh/stale.wav").exists(), "the old pack is replaced whole"
    # What crier on the box reads: auto finds the image's pack (no boot-partition folder).
    env = dict(os.environ, CRIER_VOICE_PACK_DIRS="%s:%s" % (root / "boot/firmware/voice", root / "usr/share/crier/voice"))
    out = tmp_path / "say.wav"
    s = subprocess.run([crier, "say", "--config", str(root / "boot/firmware/crier.conf"), "--output", str(out), "新客户来了，42号"],
                       capture_output=True, text=True, env=env, timeout=60)
    assert s.returncode == 0 and "voice pack chosen lang=zh pack=%s" % (root / "usr/share/crier/voice/zh") in s.stderr, s.stderr
    assert "said from voice pack clips clips=5" in s.stderr


def test_the_hook_fails_the_build_for_a_pack_that_cannot_serve_the_image(crier, tmp_path):
    root = image_root(tmp_path)
    zh = make_pack(crier, tmp_path / "zh", "zh", skip={"four", "wan"})
    r = hook(root, "zh=%s" % zh, crier=crier)
    assert r.returncode == 1, r.stdout + r.stderr
    assert 'error: four: missing (no four.wav, .flac or .ogg); record "四"' in r.stderr
    assert "cannot serve the image's crier.conf (crier voice check failed); fix the pack or leave --voice-pack zh out" in r.stderr


def test_without_crier_in_the_root_the_pack_is_copied_unchecked(tmp_path):
    root = image_root(tmp_path)
    zh = tmp_path / "zh"
    zh.mkdir()
    (zh / "manifest").write_text("language = zh   # Mandarin\nname = x\nlicence = x\nrate = 16000\n")
    tone(zh / "four.wav", 440)
    r = hook(root, "zh=%s" % zh)
    assert r.returncode == 0, r.stderr
    assert "voice-packs: zh: not checked (no crier in the root)" in r.stdout
    assert (root / "usr/share/crier/voice/zh/four.wav").is_file()
