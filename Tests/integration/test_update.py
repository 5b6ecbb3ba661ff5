"""Updates, crier's side (issue 20, docs/updates.md): `crier update` against a stand-in `rauc`,
and the daemon saying the outcome crier-mark-good recorded, exactly once, only once heard."""
import json
import os
import signal
import subprocess
import time

from conftest import CRIER, first_loud, read_wav
from test_daemon import Proc

# What crier-mark-good's outcome() writes.
UPDATED = "outcome=updated\nversion=0.9.1+20261203.2\nfrom_version=0.9.0+20261201.1\nslot=B\nat=1796300000\nannounced=0\n"
ROLLED_BACK = "outcome=rolled-back\nversion=0.9.2+bad\nfrom_version=0.9.1+20261203.2\nslot=A\nat=1796300500\nannounced=0\n"


def fake_rauc(box, body):
    p = box.tmp / "rauc"
    p.write_text("#!/bin/sh\n" + body + "\n")
    p.chmod(0o755)
    return str(p)


def conf(box, rauc="off", extra=""):
    box.write_conf("update.dir = %s\nupdate.rauc = %s\nspeech.lang = en\nstatus.on_start = off\ninput = fifo:%s\n"
                   "state.path = %s\n%s" % (box.tmp, rauc, box.tmp / "b.fifo", box.tmp / "state", extra))


def update(box, *args):
    return subprocess.run([CRIER, "update", "--config", box.conf, *args], env=box.env, capture_output=True, text=True, timeout=60)


def test_update_installs_through_rauc_and_says_what_was_installed(box):
    # Stands in for RAUC + crier-rauc-post-install: progress lines, then the pending record.
    rauc = fake_rauc(box, """
        [ "$1" = install ] || exit 9
        echo installing; echo '  0%% Installing'; echo ' 40%% Checking bundle done.'; echo '100%% Installing done.'
        printf 'version=0.9.1+b\\nslot=B\\nfrom_slot=A\\nfrom_version=0.9.0\\ninstalled_at=1\\n' > %s/update-pending
        echo "$2" > %s/installed-from
        """ % (box.tmp, box.tmp))
    conf(box, rauc)
    (box.tmp / "b.raucb").write_bytes(b"bundle")
    r = subprocess.run([CRIER, "update", "--config", box.conf, "b.raucb"], env=box.env, capture_output=True, text=True,
                       timeout=60, cwd=str(box.tmp))
    assert r.returncode == 0, r.stderr
    assert "crier update: rauc:  40% Checking bundle done." in r.stdout
    assert "installed version 0.9.1+b into slot B (running slot A, crier 0.9.0)" in r.stdout
    assert "reboot to run it" in r.stdout
    # RAUC's service runs elsewhere: it gets an absolute path
    assert (box.tmp / "installed-from").read_text().strip() == str(box.tmp / "b.raucb")


def test_a_refused_bundle_gives_raucs_reason_and_exit_1(box):
    rauc = fake_rauc(box, """
        echo ' 40% Checking bundle failed.'
        echo "LastError: Failed to verify bundle signature: unable to get local issuer certificate" >&2
        exit 1""")
    conf(box, rauc)
    (box.tmp / "b.raucb").write_bytes(b"x")
    r = update(box, str(box.tmp / "b.raucb"))
    assert r.returncode == 1
    assert ("RAUC refused: Failed to verify bundle signature: unable to get local issuer certificate (exit status 1); "
            "nothing was changed") in r.stderr
    assert not (box.tmp / "update-pending").exists()


def test_update_without_rauc_missing_bundle_and_bad_source(box):
    conf(box, "/nonexistent/rauc")
    (box.tmp / "b.raucb").write_bytes(b"x")
    r = update(box, str(box.tmp / "b.raucb"))
    assert r.returncode == 3 and "cannot run RAUC ('/nonexistent/rauc': No such file or directory)" in r.stderr
    conf(box, "off")
    r = update(box, str(box.tmp / "b.raucb"))
    assert r.returncode == 3 and "update.rauc = off" in r.stderr
    conf(box, fake_rauc(box, "exit 0"))
    r = update(box, str(box.tmp / "missing.raucb"))
    assert r.returncode == 1 and "missing.raucb: No such file or directory; nothing was changed" in r.stderr
    r = update(box, "ftp://host/b.raucb")
    assert r.returncode == 2 and "not ftp://" in r.stderr
    r = update(box, str(box.tmp))
    assert r.returncode == 1 and "is not a regular file" in r.stderr


def run(box):
    p = Proc([CRIER, "run", "--config", box.conf], env=box.env)
    p.wait_for(r" INFO runtime: ready")
    return p


def test_the_outcome_is_said_once_heard_then_never_again(box):
    conf(box)
    (box.tmp / "update-outcome").write_text(UPDATED)
    crier = run(box)
    try:
        crier.wait_for(r"INFO update: updated to 0\.9\.1\+20261203\.2 \(from 0\.9\.0\+20261201\.1\), slot B")
        crier.wait_for(r"INFO runtime: said prompt=updated text=\"Updated to version zero point nine point one\"", timeout=30)
        crier.wait_for(r"INFO update: update outcome announced")
        st = json.loads(subprocess.run([CRIER, "status", "--config", box.conf, "--json"], capture_output=True, text=True).stdout)
        assert st["update"]["last"] == {"outcome": "updated", "version": "0.9.1+20261203.2", "from_version": "0.9.0+20261201.1",
                                        "slot": "B", "at": 1796300000, "announced": True}
        assert st["link"]["state"] == "off"
    finally:
        assert crier.stop() == 0
    assert (box.tmp / "update-outcome").read_text() == UPDATED.replace("announced=0", "announced=1")
    rate, _, x = read_wav(box.capture)
    assert first_loud(x) is not None
    # the next start: reported, not said
    crier = run(box)
    try:
        time.sleep(3)
        st = json.loads(subprocess.run([CRIER, "status", "--config", box.conf, "--json"], capture_output=True, text=True).stdout)
        assert st["update"]["last"]["announced"] is True
    finally:
        assert crier.stop() == 0
    assert not [l for l in crier.lines() if "prompt=updated" in l or "update: updated" in l]


def test_a_power_cut_before_the_sentence_ends_says_it_again(box):
    conf(box, extra="status.on_start = on\n")  # "Speaker ready" first: the kill lands before the update is heard
    (box.tmp / "update-outcome").write_text(ROLLED_BACK)
    crier = run(box)
    crier.wait_for(r"WARN update: update to 0\.9\.2\+bad ROLLED BACK: it did not stay up; running 0\.9\.1\+20261203\.2 in slot A again")
    crier.stop(signal.SIGKILL)
    assert "announced=0" in (box.tmp / "update-outcome").read_text()
    crier = run(box)
    try:
        crier.wait_for(r"INFO runtime: said prompt=update_failed text=\"Update to version zero point nine point two failed; back on version zero point nine point one\"",
                       timeout=30)
        crier.wait_for(r"INFO update: update outcome announced")
    finally:
        assert crier.stop() == 0
    assert "announced=1" in (box.tmp / "update-outcome").read_text()


def test_an_outcome_written_while_running_is_said(box):
    # A trial boot: crier starts with only update-pending; crier-mark-good writes the outcome
    # once crier has been healthy long enough.
    conf(box)
    (box.tmp / "update-pending").write_text("version=0.9.1+20261203.2\nslot=B\nfrom_slot=A\nfrom_version=0.9.0\ninstalled_at=1\n")
    crier = run(box)
    try:
        time.sleep(1)
        st = json.loads(subprocess.run([CRIER, "status", "--config", box.conf, "--json"], capture_output=True, text=True).stdout)
        assert st["update"]["pending"]["version"] == "0.9.1+20261203.2" and st["update"]["last"] is None
        tmp = box.tmp / "update-outcome.tmp"
        tmp.write_text(UPDATED)
        os.rename(tmp, box.tmp / "update-outcome")
        os.unlink(box.tmp / "update-pending")
        crier.wait_for(r"INFO runtime: said prompt=updated", timeout=40)
        crier.wait_for(r"INFO update: update outcome announced")
        time.sleep(16)  # one more look at the files: our own rewrite is not a new outcome
    finally:
        assert crier.stop() == 0
    assert len([l for l in crier.lines() if "said prompt=updated" in l]) == 1


def test_announce_off_logs_and_reports_but_says_nothing(box):
    conf(box, extra="update.announce = off\n")
    (box.tmp / "update-outcome").write_text(UPDATED)
    crier = run(box)
    try:
        crier.wait_for(r"INFO update: updated to 0\.9\.1")
        time.sleep(2)
    finally:
        assert crier.stop() == 0
    assert not [l for l in crier.lines() if "prompt=updated" in l]
    assert (box.tmp / "update-outcome").read_text() == UPDATED


# ---- offers from the order server ------------------------------------------------------------

from test_daemon import RawServer  # noqa: E402

OFFER = {"type": "update", "url": "https://updates.example.com/crier-0.9.3.raucb", "version": "0.9.3+20261210.1"}


def offer_box(box, rauc, extra=""):
    srv = RawServer()
    box.write_conf("server = tcp://127.0.0.1:%d\nlink.heartbeat = 60\ndevice.id = shop-7\nupdate.dir = %s\nupdate.rauc = %s\n"
                   "update.reboot_request = %s\nupdate.quiet_seconds = 1\nspeech.lang = en\nstatus.on_start = off\n"
                   "status.on_link_up = off\ninput = fifo:%s\nstate.path = %s\n%s" % (
                       srv.port, box.tmp, rauc, box.tmp / "reboot-request", box.tmp / "b.fifo", box.tmp / "state", extra))
    crier = run(box)
    conn = srv.accept()
    hello = conn.read_msg()
    conn.send(b'{"type":"welcome"}\n')
    crier.wait_for(r"INFO link: connected")
    return srv, conn, hello, crier


def send(conn, msg):
    conn.send((json.dumps(msg) + "\n").encode())


def test_an_offer_is_ignored_unless_allowed(box):
    rauc = fake_rauc(box, "touch %s/rauc-ran" % box.tmp)
    srv, conn, hello, crier = offer_box(box, rauc)
    try:
        assert hello["software"] and hello["device"] == "shop-7"
        send(conn, OFFER)
        crier.wait_for(r"WARN update: update offer ignored: update\.allow_remote is off in crier\.conf .* version=0\.9\.3\+20261210\.1")
        send(conn, OFFER)  # said once, not per offer
        time.sleep(1)
    finally:
        assert crier.stop() == 0
    assert len([l for l in crier.lines() if "update offer ignored" in l]) == 1
    assert not (box.tmp / "rauc-ran").exists()


def test_an_offer_installs_after_the_alert_and_reboots_when_quiet(box):
    rauc = fake_rauc(box, """
        [ "$1" = install ] || exit 1
        date +%%s.%%N > %s/install-started
        echo "$1 $2" > %s/rauc-args
        echo '  0%% Installing'; sleep 0.3; echo '100%% Installing done.'
        printf 'version=0.9.3+20261210.1\\nslot=B\\nfrom_slot=A\\nfrom_version=0.9.1\\ninstalled_at=1\\n' > %s/update-pending
        """ % (box.tmp, box.tmp, box.tmp))
    srv, conn, hello, crier = offer_box(box, rauc, "update.allow_remote = on\n")
    try:
        conn.send(b'{"type":"order","id":"o-1","kind":"text","text":"The kitchen closes in ten minutes, please order now"}\n')
        crier.wait_for(r"INFO alert: saying ids=o-1")
        send(conn, OFFER)
        crier.wait_for(r"INFO update: update offered version=0\.9\.3")
        acks = conn.read_until(lambda m: m.get("type") == "ack" and m.get("id") == "o-1", timeout=30)
        assert acks[-1]["status"] == "spoken"
        crier.wait_for(r"INFO update: installed version=0\.9\.3\+20261210\.1 reboot=\"when quiet\"", timeout=20)
        crier.wait_for(r"INFO update: rebooting into the installed update", timeout=20)
        st = json.loads(subprocess.run([CRIER, "status", "--config", box.conf, "--json"], capture_output=True, text=True).stdout)
        assert st["update"]["pending"]["version"] == "0.9.3+20261210.1"
        assert st["update"]["activity"] == "rebooting into version 0.9.3+20261210.1"
    finally:
        assert crier.stop() == 0
    lines = crier.lines()
    spoken_at = next(i for i, l in enumerate(lines) if "INFO alert: spoken id=o-1" in l)
    installing_at = next(i for i, l in enumerate(lines) if "INFO update: installing" in l)
    assert installing_at > spoken_at, "never installed while the alert played"
    assert (box.tmp / "rauc-args").read_text().strip() == "install " + OFFER["url"]
    assert (box.tmp / "reboot-request").read_text() == "version=0.9.3+20261210.1\n"
    assert any("INFO update: rauc: 100% Installing done." in l for l in lines)


def test_a_version_that_was_rolled_back_is_not_installed_again(box):
    (box.tmp / "update-outcome").write_text(ROLLED_BACK.replace("0.9.2+bad", OFFER["version"]).replace("announced=0", "announced=1"))
    rauc = fake_rauc(box, "touch %s/rauc-ran" % box.tmp)
    srv, conn, hello, crier = offer_box(box, rauc, "update.allow_remote = on\n")
    try:
        assert hello["last_update"] == "rolled-back " + OFFER["version"]
        send(conn, OFFER)
        crier.wait_for(r"WARN update: update offer ignored: version 0\.9\.3\+20261210\.1 was rolled back on this box")
        time.sleep(1)
    finally:
        assert crier.stop() == 0
    assert not (box.tmp / "rauc-ran").exists()


def test_a_failed_install_is_logged_reported_and_not_retried_at_once(box):
    rauc = fake_rauc(box, """
        [ "$1" = install ] || exit 1
        echo "$1" >> %s/rauc-calls
        echo 'LastError: Failed to download bundle: HTTP 404' >&2; exit 1""" % box.tmp)
    srv, conn, hello, crier = offer_box(box, rauc, "update.allow_remote = on\n")
    try:
        send(conn, OFFER)
        crier.wait_for(r"ERROR update: install of version 0\.9\.3\+20261210\.1 failed: RAUC refused: Failed to download bundle: HTTP 404")
        send(conn, OFFER)
        crier.wait_for(r"INFO update: update offer ignored: its install failed less than 10 minutes ago")
        st = json.loads(subprocess.run([CRIER, "status", "--config", box.conf, "--json"], capture_output=True, text=True).stdout)
        assert st["update"]["activity"].startswith("install of version 0.9.3+20261210.1 failed")
    finally:
        assert crier.stop() == 0
    assert (box.tmp / "rauc-calls").read_text() == "install\n"
    assert not (box.tmp / "reboot-request").exists()


def test_malformed_offers_are_refused_by_the_codec(box):
    srv, conn, hello, crier = offer_box(box, fake_rauc(box, "touch %s/rauc-ran" % box.tmp), "update.allow_remote = on\n")
    try:
        for bad in ({"type": "update", "version": "1"}, {"type": "update", "url": "ftp://x/b", "version": "1"},
                    {"type": "update", "url": "https://x/b", "version": "a b"}, {"type": "update", "url": "https://x/b"}):
            send(conn, bad)
        send(conn, {"type": "ping"})
        conn.read_until(lambda m: m.get("type") == "pong")
        time.sleep(0.5)
    finally:
        assert crier.stop() == 0
    assert not (box.tmp / "rauc-ran").exists()
    assert crier.p.returncode == 0


def test_an_outcome_recorded_while_connected_is_in_the_next_hello(box):
    # crier-mark-good writes the outcome minutes after boot, long after the first hello: the
    # server must still learn which version runs here without a restart of crier.
    rauc = fake_rauc(box, "exit 1")
    srv, conn, hello, crier = offer_box(box, rauc, "update.announce = off\n")
    try:
        assert "last_update" not in hello
        tmp = box.tmp / "update-outcome.tmp"
        tmp.write_text(UPDATED)
        os.rename(tmp, box.tmp / "update-outcome")
        crier.wait_for(r"INFO update: updated to 0\.9\.1\+20261203\.2", timeout=40)
        conn.c.close()  # the server drops the link; crier reconnects with a new hello
        conn = srv.accept(timeout=30)
        hello2 = conn.read_msg()
        assert hello2["type"] == "hello" and hello2["last_update"] == "updated 0.9.1+20261203.2", hello2
        assert hello2["software"] == hello["software"]
    finally:
        assert crier.stop() == 0
