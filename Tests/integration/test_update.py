"""Updates, crier's side (issue 20, docs/updates.md): `crier update` against a stand-in `rauc`,
and the daemon saying the outcome crier-mark-good recorded, exactly once, only once heard."""
import json
import os
import signal
import subprocess
import time

from conftest import CRIER, SIM, first_loud, read_wav
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


def offer_box(box, rauc, extra="", download="off"):
    # download off: the stand-in rauc is handed the URL itself (RAUC streams it); the download
    # path has tests of its own below.
    srv = RawServer()
    box.write_conf("server = tcp://127.0.0.1:%d\nlink.heartbeat = 60\ndevice.id = shop-7\nupdate.dir = %s\nupdate.rauc = %s\n"
                   "update.reboot_request = %s\nupdate.quiet_seconds = 1\nspeech.lang = en\nstatus.on_start = off\n"
                   "update.download = %s\nstatus.on_link_up = off\ninput = fifo:%s\nstate.path = %s\n%s" % (
                       srv.port, box.tmp, rauc, box.tmp / "reboot-request", download, box.tmp / "b.fifo", box.tmp / "state", extra))
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


def test_order_sim_offers_an_update_that_a_real_crier_installs(box):
    """`crier-sim order-sim --offer-update URL --offer-version V` (what the image boot test serves):
    the offer goes to every box after its hello; a box with update.allow_remote = on installs
    it (stand-in rauc) and asks for the reboot; the version it was offered is in the install."""
    from test_daemon import order_sim
    url = "http://10.0.2.100:8080/crier-amd64-0.9.4+b.raucb"
    sim = order_sim("--offer-update", url, "--offer-version", "0.9.4+b")
    rauc = fake_rauc(box, """
        [ "$1" = install ] || exit 1
        echo "$2" > %s/rauc-url
        echo '100%% Installing done.'
        printf 'version=0.9.4+b\\nslot=B\\nfrom_slot=A\\nfrom_version=0.9.1\\ninstalled_at=1\\n' > %s/update-pending
        """ % (box.tmp, box.tmp))
    box.write_conf("server = tcp://127.0.0.1:%d\ndevice.id = shop-9\nupdate.dir = %s\nupdate.rauc = %s\nupdate.allow_remote = on\nupdate.download = off\n"
                   "update.reboot_request = %s\nupdate.quiet_seconds = 1\nstatus.on_start = off\nstatus.on_link_up = off\n"
                   "input = fifo:%s\nstate.path = %s\n" % (sim.port, box.tmp, rauc, box.tmp / "reboot-request",
                                                          box.tmp / "b.fifo", box.tmp / "state"))
    crier = run(box)
    try:
        sim.wait_for(r"^update offered device=shop-9 version=0\.9\.4\+b url=http://10\.0\.2\.100:8080/", which="out")
        crier.wait_for(r"INFO update: rebooting into the installed update", timeout=30)
    finally:
        assert crier.stop() == 0
        sim.stop()
    assert (box.tmp / "rauc-url").read_text().strip() == url
    assert (box.tmp / "reboot-request").read_text() == "version=0.9.4+b\n"


def test_order_sim_refuses_an_offer_no_box_would_take():
    for args, want in ((["--offer-update", "ftp://h/b.raucb", "--offer-version", "1"], "not ftp://"),
                       (["--offer-update", "http://h/b.raucb", "--offer-version", "1 2"], "without spaces"),
                       (["--offer-update", "http://h/b.raucb"], "go together")):
        r = subprocess.run([SIM, "order-sim", "--no-stdin", "--port", "0", *args], capture_output=True, text=True, timeout=20)
        assert r.returncode == 2 and want in r.stderr, (args, r.stderr)


# ---- downloads (update.download = on, the default): resumable, onto the card, then RAUC ------

import hashlib  # noqa: E402
import http.server  # noqa: E402
import re  # noqa: E402
import threading  # noqa: E402


class BundleServer:
    """A bundle over HTTP that misbehaves on purpose: `cuts` = bytes after which each successive
    connection is dropped (None: send it all), `ranges` = whether Range is honoured,
    `status` = a forced error status, `length` = a Content-Length to announce instead."""

    def __init__(self, body, cuts=(), ranges=True, status=None, length=None):
        self.body, self.cuts, self.ranges, self.status, self.length = body, list(cuts), ranges, status, length
        self.requests = []
        self.released = threading.Event()
        outer = self

        class H(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *a):
                pass

            def do_GET(self):
                rng = self.headers.get("Range")
                outer.requests.append(rng)
                if outer.status:
                    self.send_response(outer.status)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                lo = 0
                m = re.fullmatch(r"bytes=(\d+)-", rng or "")
                if m and outer.ranges:
                    lo = int(m.group(1))
                    if lo >= len(outer.body):
                        self.send_response(416)
                        self.send_header("Content-Range", "bytes */%d" % len(outer.body))
                        self.send_header("Content-Length", "0")
                        self.end_headers()
                        return
                    self.send_response(206)
                    self.send_header("Content-Range", "bytes %d-%d/%d" % (lo, len(outer.body) - 1, len(outer.body)))
                else:
                    self.send_response(200)
                self.send_header("Content-Length", str(outer.length or len(outer.body) - lo))
                self.end_headers()
                cut = outer.cuts.pop(0) if outer.cuts else None
                data = outer.body[lo:]
                if isinstance(cut, tuple):  # ("hold", n): n bytes, then silence with the connection open
                    self.wfile.write(data[:cut[1]])
                    self.wfile.flush()
                    outer.released.wait(30)
                    return
                if cut is not None:
                    self.wfile.write(data[:cut])
                    self.wfile.flush()
                    self.close_connection = True
                    self.connection.shutdown(2)
                    return
                self.wfile.write(data)

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
        self.url = "http://127.0.0.1:%d/crier-0.9.5.raucb" % self.httpd.server_address[1]
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self):
        self.released.set()
        self.httpd.shutdown()


def copying_rauc(box):
    """A stand-in rauc that keeps what it was asked to install (path and bytes)."""
    return fake_rauc(box, """
        [ "$1" = install ] || exit 9
        echo "$2" > %s/rauc-arg
        cp "$2" %s/rauc-got || exit 7
        echo '100%% Installing done.'
        printf 'version=0.9.5\\nslot=B\\nfrom_slot=A\\nfrom_version=0.9.0\\ninstalled_at=1\\n' > %s/update-pending
        """ % (box.tmp, box.tmp, box.tmp))


def update_from(box, srv):
    """`crier update` of the server's URL; the server is closed afterwards whatever happened."""
    try:
        return update(box, srv.url)
    finally:
        srv.close()


def test_a_download_cut_twice_is_resumed_and_rauc_installs_the_whole_file_from_the_card(box):
    body = os.urandom(3 << 20)
    srv = BundleServer(body, cuts=[700_000, 1_200_000])
    conf(box, copying_rauc(box))
    r = update_from(box, srv)
    assert r.returncode == 0, r.stdout + r.stderr
    # The second and third connections asked for the rest, from where the last one stopped.
    assert srv.requests == [None, "bytes=700000-", "bytes=1900000-"], srv.requests
    got = (box.tmp / "rauc-got").read_bytes()
    assert hashlib.sha256(got).digest() == hashlib.sha256(body).digest()
    assert (box.tmp / "rauc-arg").read_text().strip() == str(box.tmp / "update-download.raucb")
    assert "crier update: download: resuming at 0.7 MiB of 3.0 MiB (connection 2)" in r.stdout, r.stdout
    assert "crier update: downloaded 3.0 MiB" in r.stdout
    # Nothing left on the card once RAUC is done with it.
    assert leftovers(box.tmp) == []


def test_a_server_without_ranges_is_downloaded_again_from_the_start(box):
    body = os.urandom(1 << 20)
    srv = BundleServer(body, cuts=[300_000], ranges=False)
    conf(box, copying_rauc(box))
    r = update_from(box, srv)
    assert r.returncode == 0, r.stdout + r.stderr
    assert srv.requests == [None, "bytes=300000-"]
    assert (box.tmp / "rauc-got").read_bytes() == body


def test_a_killed_download_leaves_only_its_part_which_the_next_run_removes(box):
    body = os.urandom(1 << 20)
    # The first connection stalls after 600 000 bytes; crier is killed (a power cut) meanwhile.
    srv = BundleServer(body, cuts=[("hold", 600_000)])
    conf(box, copying_rauc(box))
    part = box.tmp / "update-download.raucb.part"
    try:
        p = subprocess.Popen([CRIER, "update", "--config", box.conf, srv.url], env=box.env,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        end = time.monotonic() + 20
        while time.monotonic() < end and not (part.exists() and part.stat().st_size == 600_000):
            time.sleep(0.01)
        p.kill()
        p.wait(10)
        assert part.stat().st_size == 600_000
        assert not (box.tmp / "rauc-arg").exists()
        # The next run starts over (a leftover is never resumed: it may be what filled the card).
        srv.requests.clear()
        r = update(box, srv.url)
        assert r.returncode == 0, r.stderr
        assert srv.requests == [None], srv.requests
        assert (box.tmp / "rauc-got").read_bytes() == body
    finally:
        srv.close()
    assert leftovers(box.tmp) == []


def test_hostile_servers_get_a_precise_refusal_and_rauc_never_runs(box):
    conf(box, copying_rauc(box))
    for kw, want in ((dict(status=404), "the server answered HTTP 404; the partial download was removed"),
                     (dict(length=3 << 30), "the bundle is 3072 MiB, more than the 1024 MiB a bundle may be (update.max_download_mib)")):
        srv = BundleServer(b"x" * 1000, **kw)
        r = update_from(box, srv)
        assert r.returncode == 1, (kw, r.stdout, r.stderr)
        assert "crier update: download of %s failed: " % srv.url in r.stderr and want in r.stderr, (kw, r.stderr)
        assert "nothing was changed" in r.stderr
        assert not (box.tmp / "rauc-arg").exists()
        assert leftovers(box.tmp) == []


def test_an_offered_bundle_is_downloaded_then_installed_from_the_card(box):
    body = os.urandom(1 << 20)
    srv = BundleServer(body, cuts=[200_000])
    rauc = copying_rauc(box)
    s, conn, hello, crier = offer_box(box, rauc, "update.allow_remote = on\n", download="on")
    try:
        send(conn, {"type": "update", "url": srv.url, "version": "0.9.5"})
        crier.wait_for(r"INFO update: download: resuming at 0\.2 MiB of 1\.0 MiB \(connection 2\)", timeout=20)
        crier.wait_for(r"INFO update: installed version=0\.9\.5", timeout=20)
        crier.wait_for(r"INFO update: rebooting into the installed update", timeout=20)
    finally:
        assert crier.stop() == 0
        srv.close()
    assert (box.tmp / "rauc-got").read_bytes() == body
    assert not (box.tmp / "update-download.raucb").exists()


# ---- hostile downloads (issue 31): no length, full disk, stalls, trickles, redirects ---------

import shutil  # noqa: E402
import socketserver  # noqa: E402

import pytest  # noqa: E402


class EndlessServer:
    """Never ends its body: `mode` "close" (no Content-Length, close-delimited, HTTP/1.0 style)
    or "chunked" (Transfer-Encoding: chunked, no last chunk); 64 KiB as fast as it can."""

    def __init__(self, mode):
        outer = self
        self.sent = 0

        class H(socketserver.BaseRequestHandler):
            def handle(self):
                self.request.recv(65536)
                if mode == "close":
                    head = b"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n"
                else:
                    head = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
                block = os.urandom(65536)
                if mode == "chunked":
                    block = b"10000\r\n" + block + b"\r\n"
                try:
                    self.request.sendall(head)
                    while True:
                        self.request.sendall(block)
                        outer.sent += 65536
                except OSError:
                    pass

        socketserver.ThreadingTCPServer.allow_reuse_address = True
        self.srv = socketserver.ThreadingTCPServer(("127.0.0.1", 0), H)
        self.srv.daemon_threads = True
        self.url = "http://127.0.0.1:%d/crier-endless.raucb" % self.srv.server_address[1]
        threading.Thread(target=self.srv.serve_forever, daemon=True).start()

    def close(self):
        self.srv.shutdown()
        self.srv.server_close()


class RawServer1:
    """A loopback server whose every connection gets `handler(sock, path)`; counts connections."""

    def __init__(self, handler):
        self.connections = 0
        self.socks = []
        outer = self

        class H(socketserver.BaseRequestHandler):
            def handle(self):
                outer.connections += 1
                outer.socks.append(self.request)
                req = b""
                while b"\r\n\r\n" not in req:
                    d = self.request.recv(4096)
                    if not d:
                        return
                    req += d
                path = req.split(b" ")[1].decode()
                try:
                    handler(self.request, path)
                except OSError:
                    pass

        socketserver.ThreadingTCPServer.allow_reuse_address = True
        self.srv = socketserver.ThreadingTCPServer(("127.0.0.1", 0), H)
        self.srv.daemon_threads = True
        self.port = self.srv.server_address[1]
        self.base = "http://127.0.0.1:%d" % self.port
        threading.Thread(target=self.srv.serve_forever, daemon=True).start()

    def close(self):
        self.srv.shutdown()
        for s in self.socks:
            try:
                s.close()
            except OSError:
                pass
        self.srv.server_close()


def leftovers(d):
    return sorted(p.name for p in d.iterdir() if p.name.startswith("update-download") and p.name != "update-download.lock")


def short_bounds(box, extra=""):
    # 1 s without 1 KiB/s drops a connection, 5 s for the whole download (the defaults are 30 s
    # and 3600 s; the tests measure the same rules in seconds).
    conf(box, copying_rauc(box), "update.stall_seconds = 1\nupdate.download_limit_seconds = 5\n" + extra)


@pytest.mark.parametrize("mode", ["close", "chunked"])
def test_a_download_without_a_length_stops_at_the_reserve_on_a_small_file_system(box, mode):
    """Issue 31, 1: no Content-Length (close-delimited or chunked, never ending) on a 40 MiB
    tmpfs with 24 MiB kept free: the download stops with at least 24 MiB free, the whole time,
    says why, and leaves nothing behind."""
    if os.geteuid() != 0 or shutil.which("unshare") is None:
        pytest.skip("needs root and unshare for a private tmpfs")
    dl = box.tmp / "dl"
    dl.mkdir()
    conf(box, copying_rauc(box), "update.keep_free_mib = 24\n")
    with open(box.conf) as f:
        text = f.read().replace("update.dir = %s\n" % box.tmp, "update.dir = %s\n" % dl)
    with open(box.conf, "w") as f:
        f.write(text)
    srv = EndlessServer(mode)
    size = 40 << 20
    p = subprocess.Popen(["unshare", "-m", "sh", "-c", 'mount -t tmpfs -o size=%d tmpfs "$1" && exec "$2" update --config "$3" "$4"' % size,
                          "sh", str(dl), CRIER, box.conf, srv.url], env=box.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    lowest = None
    seen = "/proc/%d/root%s" % (p.pid, dl)
    try:
        end = time.monotonic() + 60
        while p.poll() is None and time.monotonic() < end:
            try:
                st = os.statvfs(seen)
            except OSError:
                continue
            if st.f_blocks * st.f_frsize == size:  # the tmpfs, seen through crier's mount namespace
                free = st.f_bavail * st.f_frsize
                lowest = free if lowest is None else min(lowest, free)
        out, err = p.communicate(timeout=30)
    finally:
        if p.poll() is None:
            p.kill()
        srv.close()
    assert p.returncode == 1, out + err
    print("lowest free space seen: %.2f MiB (%s)" % ((lowest or 0) / 1048576, mode))
    assert lowest is not None and lowest >= 24 << 20, (lowest, out, err)
    # Not stopped early: crier says where it stopped (40 - 24 = 16 MiB was the room), and how much
    # was free then (the poller above may miss those last milliseconds before the .part goes).
    assert "download of %s failed: stopped at " % srv.url in err, err
    assert re.search(r"failed: stopped at 1\d\.\d MiB: writing on would leave less than the 24 MiB kept free in %s for crier's state "
                     r"\(update\.keep_free_mib; 24\.\d MiB free now\); the bundle does not fit" % re.escape(str(dl)), err), err
    assert "the partial download was removed" in err and "nothing was changed" in err
    assert srv.sent >= 14 << 20
    assert not (box.tmp / "rauc-arg").exists()
    # the tmpfs went with the namespace; what crier removed is the .part (checked by the message)


def test_a_download_without_a_length_stops_at_the_cap_and_leaves_nothing(box):
    srv = EndlessServer("chunked")
    conf(box, copying_rauc(box), "update.max_download_mib = 3\n")
    t0 = time.monotonic()
    r = update_from(box, srv)
    assert r.returncode == 1, r.stdout + r.stderr
    assert "the server sent more than 3.0 MiB, the most a bundle may be (update.max_download_mib); stopped there; the partial download was removed" in r.stderr
    assert leftovers(box.tmp) == []
    assert time.monotonic() - t0 < 20


def test_leftovers_of_an_earlier_run_are_removed_and_never_resumed(box):
    # A power cut mid-download left a .part, the old .url and a finished bundle RAUC never got.
    body = os.urandom(300_000)
    for name, data in (("update-download.raucb.part", b"x" * 500_000), ("update-download.raucb.url", b"http://old/b"),
                       ("update-download.raucb", b"y" * 100_000)):
        (box.tmp / name).write_bytes(data)
    # The daemon removes them at start.
    conf(box)
    crier = run(box)
    try:
        crier.wait_for(r"INFO update: removed a bundle download left by an earlier run \(0\.6 MiB in %s\)" % re.escape(str(box.tmp)))
    finally:
        assert crier.stop() == 0
    assert leftovers(box.tmp) == []
    # `crier update` starts from the first byte whatever is there.
    (box.tmp / "update-download.raucb.part").write_bytes(body[:1000])
    srv = BundleServer(body)
    conf(box, copying_rauc(box))
    r = update_from(box, srv)
    assert r.returncode == 0, r.stderr
    assert srv.requests == [None]
    assert (box.tmp / "rauc-got").read_bytes() == body
    assert leftovers(box.tmp) == []


def test_a_second_download_at_the_same_time_is_refused(box):
    body = os.urandom(1 << 20)
    srv = BundleServer(body, cuts=[("hold", 100_000)])
    conf(box, copying_rauc(box))
    p = subprocess.Popen([CRIER, "update", "--config", box.conf, srv.url], env=box.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        part = box.tmp / "update-download.raucb.part"
        end = time.monotonic() + 20
        while time.monotonic() < end and not (part.exists() and part.stat().st_size == 100_000):
            time.sleep(0.01)
        r = update(box, srv.url)
        assert r.returncode == 1
        assert "another download or install is running (%s is held); try again when it is done" % (box.tmp / "update-download.lock") in r.stderr
        assert part.stat().st_size == 100_000
    finally:
        p.kill()
        p.wait(10)
        srv.close()


def timed_update(box, url):
    t0 = time.monotonic()
    r = update(box, url)
    return r, time.monotonic() - t0


def test_a_redirect_loop_gives_up_at_once(box):
    def h(sock, path):
        sock.sendall(b"HTTP/1.1 302 Found\r\nLocation: /%s\r\nContent-Length: 0\r\n\r\n" % (b"b" if path == "/a" else b"a"))
    srv = RawServer1(h)
    short_bounds(box)
    try:
        r, took = timed_update(box, srv.base + "/a")
    finally:
        srv.close()
    assert r.returncode == 1
    assert "the server redirected more than 5 times (a redirect loop?); not retried; the partial download was removed" in r.stderr, r.stderr
    assert took < 3, took
    assert srv.connections <= 6  # one connection's worth of redirects, not six
    assert leftovers(box.tmp) == [] and not (box.tmp / "rauc-arg").exists()


def test_a_redirect_to_file_is_refused_at_once(box):
    def h(sock, path):
        sock.sendall(b"HTTP/1.1 302 Found\r\nLocation: file:///etc/passwd\r\nContent-Length: 0\r\n\r\n")
    srv = RawServer1(h)
    short_bounds(box)
    try:
        r, took = timed_update(box, srv.base + "/b.raucb")
    finally:
        srv.close()
    assert r.returncode == 1
    assert "the server redirected to a file:// URL; only http and https redirects are followed; not retried" in r.stderr, r.stderr
    assert took < 3, took
    assert srv.connections == 1
    assert leftovers(box.tmp) == [] and not (box.tmp / "rauc-arg").exists()


def _trickle(sock, path):
    sock.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 1000000\r\n\r\n")
    for _ in range(60):
        sock.sendall(b"x")
        time.sleep(1)


@pytest.mark.parametrize("handler,why", [
    # accepts, reads the request, never answers
    (lambda sock, path: time.sleep(30), "the server accepted the connection but sent no answer for 1 s"),
    (_trickle, "the server sent less than 1 KiB a second for 1 s (update.stall_seconds)"),
], ids=["stalled", "trickling"])
def test_a_stalled_or_trickling_server_is_given_up_within_the_limit(box, handler, why):
    srv = RawServer1(handler)
    short_bounds(box)
    try:
        r, took = timed_update(box, srv.base + "/b.raucb")
    finally:
        srv.close()
    assert r.returncode == 1
    assert why in r.stdout + r.stderr, r.stdout + r.stderr
    assert "(update.download_limit_seconds = 5)" in r.stderr, r.stderr
    assert took < 5 + 2, took
    assert leftovers(box.tmp) == []


def test_credentials_in_a_bundle_url_are_never_printed(box):
    def h(sock, path):
        sock.sendall(b"HTTP/1.1 302 Found\r\nLocation: /x\r\nContent-Length: 0\r\n\r\n")
    srv = RawServer1(h)
    short_bounds(box)
    url = "http://shopuser:s3cr3t-pw@127.0.0.1:%d/b.raucb?X-Amz-Signature=abcdef123456&v=1" % srv.port
    try:
        r = update(box, url)
        assert r.returncode == 1
        out = r.stdout + r.stderr
        assert "http://***@127.0.0.1:%d/b.raucb?X-Amz-Signature=***&v=1" % srv.port in out, out
        for secret in ("s3cr3t", "shopuser", "abcdef123456"):
            assert secret not in out
        # The daemon's offer: the log lines and the status.
        s, conn, hello, crier = offer_box(box, copying_rauc(box), "update.allow_remote = on\nupdate.stall_seconds = 1\n"
                                          "update.download_limit_seconds = 5\n", download="on")
        try:
            send(conn, {"type": "update", "url": url, "version": "0.9.6"})
            crier.wait_for(r"ERROR update: install of version 0\.9\.6 failed: download of http://\*\*\*@127", timeout=20)
            st = subprocess.run([CRIER, "status", "--config", box.conf, "--json"], capture_output=True, text=True).stdout
        finally:
            assert crier.stop() == 0
        text = "\n".join(crier.lines()) + st
        assert "update offered" in text
        for secret in ("s3cr3t", "shopuser", "abcdef123456"):
            assert secret not in text, [l for l in text.splitlines() if secret in l]
    finally:
        srv.close()


def test_an_offer_without_a_length_leaves_the_journals_their_space(box):
    """Issue 31, 1, as the daemon sees it: crier-data is a 40 MiB tmpfs holding the state and the
    ack outbox; an offered bundle with no length never ends. The download stops with the
    reserve free, nothing is left, and an order after it is said and acked once."""
    if os.geteuid() != 0 or shutil.which("unshare") is None:
        pytest.skip("needs root and unshare for a private tmpfs")
    dl = box.tmp / "data"
    dl.mkdir()
    endless = EndlessServer("close")
    srv = RawServer()
    box.write_conf("server = tcp://127.0.0.1:%d\nlink.heartbeat = 60\ndevice.id = shop-7\nupdate.dir = %s\nupdate.rauc = %s\n"
                   "update.allow_remote = on\nupdate.keep_free_mib = 24\nupdate.reboot_request = off\nspeech.lang = en\n"
                   "status.on_start = off\nstatus.on_link_up = off\ninput = fifo:%s\nstate.path = %s\n" % (
                       srv.port, dl, copying_rauc(box), box.tmp / "b.fifo", dl / "state"))
    size = 40 << 20
    crier = Proc(["unshare", "-m", "sh", "-c", 'mount -t tmpfs -o size=%d tmpfs "$1" && exec "$2" run --config "$3"' % size,
                  "sh", str(dl), CRIER, box.conf], env=box.env)
    seen = "/proc/%d/root%s" % (crier.p.pid, dl)
    lowest = []
    done = threading.Event()

    def watch():
        while not done.is_set():
            try:
                st = os.statvfs(seen)
            except OSError:
                continue
            if st.f_blocks * st.f_frsize == size:
                free = st.f_bavail * st.f_frsize
                lowest[:] = [min(lowest + [free])]
    threading.Thread(target=watch, daemon=True).start()
    try:
        crier.wait_for(r" INFO runtime: ready")
        conn = srv.accept()
        conn.read_msg()
        conn.send(b'{"type":"welcome"}\n')
        crier.wait_for(r"INFO link: connected")
        send(conn, {"type": "update", "url": endless.url, "version": "0.9.7"})
        crier.wait_for(r"ERROR update: install of version 0\.9\.7 failed: download of .* failed: stopped at 1\d\.\d MiB: writing on would "
                       r"leave less than the 24 MiB kept free .*; the partial download was removed; the running slot is unchanged", timeout=60)
        conn.send(b'{"type":"order","id":"o-9","kind":"text","text":"Order nine"}\n')
        acks = conn.read_until(lambda m: m.get("type") == "ack" and m.get("id") == "o-9", timeout=30)
        assert acks[-1]["status"] == "spoken"
        assert [f for f in os.listdir(seen) if f.startswith("update-download.raucb")] == []
    finally:
        done.set()
        assert crier.stop() == 0
        endless.close()
    assert lowest and min(lowest) >= 24 << 20, lowest
