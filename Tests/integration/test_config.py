import os
import subprocess

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
