"""image/test-overlays.py against a small fake kernel tree: the Pi audio overlays of the image
(image/raspi/overlays/*.dts) must pass, and the script must refuse what would not bind.

The real check runs in every arm64 image build on the image's own kernel (Debian 13's dtbs and
modules.alias). Here a stand-in tree carries the parts of the upstream Pi dtbs the overlays touch
(/soc/gpio, /soc/i2s@7e203000 disabled, the vchiq mailbox, __symbols__), so the script's logic
and the overlays' structure are tested without downloading a 90 MB kernel package.
"""
import os
import subprocess
import sys

from conftest import ensure_packages

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPT = os.path.join(REPO, "image", "test-overlays.py")
OVERLAYS = os.path.join(REPO, "image", "raspi", "overlays")
BOARDS = ["bcm2837-rpi-3-b", "bcm2837-rpi-3-b-plus", "bcm2711-rpi-4-b", "bcm2837-rpi-zero-2-w"]

BASE_DTS = """/dts-v1/;
/ {
	#address-cells = <1>; #size-cells = <1>;
	compatible = "raspberrypi,3-model-b", "brcm,bcm2837";
	soc {
		compatible = "simple-bus"; #address-cells = <1>; #size-cells = <1>;
		gpio: gpio@7e200000 { compatible = "brcm,bcm2835-gpio"; reg = <0x7e200000 0xb4>;
			gpio-controller; #gpio-cells = <2>; };
		i2s: i2s@7e203000 { compatible = "brcm,bcm2835-i2s"; reg = <0x7e203000 0x24>; status = "disabled"; };
		vchiq: mailbox@7e00b840 { compatible = "brcm,bcm2836-vchiq", "brcm,bcm2835-vchiq"; reg = <0x7e00b840 0x3c>; };
	};
};
"""

ALIASES = """alias of:N*T*Csimple-audio-cardC* snd_soc_simple_card
alias of:N*T*Csimple-audio-card snd_soc_simple_card
alias of:N*T*Cmaxim,max98357aC* snd_soc_max98357a
alias of:N*T*Cti,pcm5102aC* snd_soc_pcm5102a
alias of:N*T*Cbrcm,bcm2835-i2sC* snd_soc_bcm2835_i2s
alias of:N*T*Cbrcm,bcm2835-vchiqC* vchiq
alias vchiq:bcm2835-audio snd_bcm2835
"""

# dtc + fdtoverlay; installed when missing (CI is a fresh Debian 12), never skipped
ensure_packages("device-tree-compiler")


def dtc(src, out):
    subprocess.run(["dtc", "-q", "-@", "-I", "dts", "-O", "dtb", "-o", str(out), str(src)], check=True)


def fake_root(tmp_path, aliases=ALIASES, base=BASE_DTS):
    root = tmp_path / "root"
    dtbs = root / "usr/lib/linux-image-6.12.0-test-arm64/broadcom"
    mods = root / "usr/lib/modules/6.12.0-test-arm64"
    dtbs.mkdir(parents=True)
    mods.mkdir(parents=True)
    (tmp_path / "base.dts").write_text(base)
    for b in BOARDS:
        dtc(tmp_path / "base.dts", dtbs / f"{b}.dtb")
    (mods / "modules.alias").write_text(aliases)
    ovl = root / "boot/firmware/overlays"
    ovl.mkdir(parents=True)
    for name in sorted(os.listdir(OVERLAYS)):
        if name.endswith(".dts"):
            dtc(os.path.join(OVERLAYS, name), ovl / (name[:-4] + ".dtbo"))
    return root


def run(*args):
    return subprocess.run([sys.executable, SCRIPT, *map(str, args)], capture_output=True, text=True)


def test_the_image_overlays_pass_on_every_board(tmp_path):
    root = fake_root(tmp_path)
    r = run(root)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "2 overlay(s) x 4 boards: all checks passed" in r.stdout
    for compat, module in [("maxim,max98357a", "snd_soc_max98357a"), ("ti,pcm5102a", "snd_soc_pcm5102a"),
                           ("simple-audio-card", "snd_soc_simple_card"), ("brcm,bcm2835-i2s", "snd_soc_bcm2835_i2s")]:
        assert f"{compat} -> {module}" in r.stdout


def test_a_kernel_without_the_codec_module_fails(tmp_path):
    # e.g. a module trim (path-exclude) that took sound/soc/codecs away
    root = fake_root(tmp_path, aliases="\n".join(l for l in ALIASES.splitlines() if "max98357a" not in l) + "\n")
    r = run(root)
    assert r.returncode == 1
    assert "compatible ['maxim,max98357a']: no module of this kernel serves it" in r.stdout
    # the other overlay is still judged on its own: it passes
    assert "FAIL crier-pcm5102a.dtbo" not in r.stdout
    assert "ok   crier-pcm5102a.dtbo: Pi 4 B: /crier-pcm5102a ti,pcm5102a -> snd_soc_pcm5102a" in r.stdout


def test_no_jack_driver_fails(tmp_path):
    root = fake_root(tmp_path, aliases="\n".join(l for l in ALIASES.splitlines() if "vchiq" not in l) + "\n")
    r = run(root)
    assert r.returncode == 1
    assert "snd_bcm2835 missing from this kernel" in r.stdout
    assert "no module serves brcm,bcm2835-vchiq" in r.stdout


def test_a_dtb_without_the_i2s_label_is_refused_by_fdtoverlay(tmp_path):
    root = fake_root(tmp_path, base=BASE_DTS.replace("i2s: i2s@7e203000", "i2s@7e203000"))
    r = run(root)
    assert r.returncode == 1
    assert "fdtoverlay refused crier-max98357a.dtbo" in r.stdout


def test_self_test_refuses_unserved_compatibles_and_button_pins(tmp_path):
    root = fake_root(tmp_path)
    r = run("--self-test", root)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "self-test unserved: 4 failed check(s)" in r.stdout or "self-test unserved: 8 failed check(s)" in r.stdout
    assert "self-test button-pin:" in r.stdout and "self-test button-pin: 0 failed" not in r.stdout


def test_an_overlay_that_takes_a_button_line_fails(tmp_path):
    root = fake_root(tmp_path)
    src = open(os.path.join(OVERLAYS, "crier-max98357a.dts")).read().replace("<18 19 21>", "<18 19 21 23>")
    (tmp_path / "bad.dts").write_text(src)
    dtc(tmp_path / "bad.dts", tmp_path / "bad.dtbo")
    r = run(root, tmp_path / "bad.dtbo")
    assert r.returncode == 1
    assert "claims GPIO[23], a button's line" in r.stdout
