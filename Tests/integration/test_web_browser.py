"""The local page in a real browser: headless Chromium (Debian's `chromium`), driven over its
DevTools protocol (a minimal WebSocket client below: nothing to install), against a real
`crier run` on loopback with the capture device. It loads the page in zh and en, pairs with
the code the box said, changes the volume, sends a test announcement (found in the capture),
is refused a change without a CSRF token, ends the session, and locks pairing with wrong
codes. Its screenshots are docs/setup/*.png, shown in docs/setup.md: written there when
CRIER_UPDATE_SCREENSHOTS=1 (so an ordinary run leaves the tree clean), else into the test's
temporary directory."""
import base64
import json
import os
import re
import shutil
import socket
import subprocess
import tempfile
import time
import urllib.parse
import urllib.request

import pytest

from conftest import ROOT, read_wav
from test_web import Web

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
SHOTS = os.path.join(ROOT, "docs", "setup") if os.environ.get("CRIER_UPDATE_SCREENSHOTS") == "1" else None

pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="no chromium (apt install chromium)")


class WebSocket:
    """Just enough RFC 6455 for the DevTools protocol: text frames, masked from the client."""

    def __init__(self, url):
        u = urllib.parse.urlparse(url)
        self.s = socket.create_connection((u.hostname, u.port), timeout=30)
        key = base64.b64encode(os.urandom(16)).decode()
        self.s.sendall(("GET %s HTTP/1.1\r\nHost: %s:%d\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                        "Sec-WebSocket-Key: %s\r\nSec-WebSocket-Version: 13\r\n\r\n" % (u.path, u.hostname, u.port, key)).encode())
        head = b""
        while b"\r\n\r\n" not in head:
            head += self.s.recv(1)
        assert head.startswith(b"HTTP/1.1 101"), head
        self.buf = b""

    def send(self, text):
        data = text.encode()
        mask = os.urandom(4)
        n = len(data)
        head = bytes([0x81]) + (bytes([0x80 | n]) if n < 126 else bytes([0x80 | 126]) + n.to_bytes(2, "big") if n < 65536
                                else bytes([0x80 | 127]) + n.to_bytes(8, "big"))
        self.s.sendall(head + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(data)))

    def _read(self, n):
        while len(self.buf) < n:
            d = self.s.recv(1 << 20)
            if not d:
                raise EOFError
            self.buf += d
        out, self.buf = self.buf[:n], self.buf[n:]
        return out

    def recv(self):
        msg = b""
        while True:
            b0, b1 = self._read(2)
            n = b1 & 0x7F
            if n == 126:
                n = int.from_bytes(self._read(2), "big")
            elif n == 127:
                n = int.from_bytes(self._read(8), "big")
            payload = self._read(n)
            msg += payload
            if b0 & 0x80:
                return msg.decode()


class Browser:
    def __init__(self, tmp):
        self.shots = SHOTS or str(tmp / "screenshots")
        self.profile = tempfile.mkdtemp(dir=str(tmp))
        args = [CHROMIUM, "--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-extensions",
                "--remote-debugging-port=0", "--user-data-dir=" + self.profile, "--window-size=390,844", "about:blank"]
        self.p = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        end = time.monotonic() + 60
        url = None
        while time.monotonic() < end and url is None:
            line = self.p.stderr.readline()
            m = re.search(r"DevTools listening on (ws://\S+)", line)
            if m:
                url = m.group(1)
        assert url, "chromium did not start"
        port = urllib.parse.urlparse(url).port
        pages = json.load(urllib.request.urlopen("http://127.0.0.1:%d/json/list" % port))
        page = [p for p in pages if p["type"] == "page"][0]
        self.ws = WebSocket(page["webSocketDebuggerUrl"])
        self.id = 0
        self.call("Page.enable")
        self.call("Emulation.setDeviceMetricsOverride", width=390, height=844, deviceScaleFactor=1, mobile=True)

    def call(self, method, **params):
        self.id += 1
        self.ws.send(json.dumps({"id": self.id, "method": method, "params": params}))
        while True:
            m = json.loads(self.ws.recv())
            if m.get("id") == self.id:
                assert "error" not in m, m
                return m.get("result", {})

    def eval(self, js):
        r = self.call("Runtime.evaluate", expression=js, returnByValue=True, awaitPromise=True)
        assert "exceptionDetails" not in r, r
        return r["result"].get("value")

    def wait(self, js, timeout=15):
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            v = self.eval(js)
            if v:
                return v
            time.sleep(0.1)
        raise AssertionError("timed out waiting for %s; page says %r" % (js, self.eval("document.getElementById('msg').textContent")))

    def open(self, url):
        self.call("Page.navigate", url=url)
        self.wait("document.readyState === 'complete' && document.getElementById('s-link') && document.getElementById('s-link').textContent !== '…'")

    def shot(self, name, full=True):
        """The whole page (or the first screen), phone width."""
        h = self.eval("Math.max(document.body.scrollHeight, 844)") if full else 844
        self.call("Emulation.setDeviceMetricsOverride", width=390, height=h, deviceScaleFactor=1, mobile=True)
        data = base64.b64decode(self.call("Page.captureScreenshot", format="png")["data"])
        self.call("Emulation.setDeviceMetricsOverride", width=390, height=844, deviceScaleFactor=1, mobile=True)
        os.makedirs(self.shots, exist_ok=True)
        with open(os.path.join(self.shots, name), "wb") as f:
            f.write(data)
        return len(data)

    def close(self):
        self.p.kill()
        self.p.wait()


def test_the_page_in_a_browser_pair_volume_test_announcement_csrf_session_and_lockout(box):
    w = Web(box)
    b = Browser(box.tmp)
    try:
        base = "http://127.0.0.1:%d/" % w.port
        oid = w.order(42)  # one alert for the page's "last alerts"
        w.sim.wait_for(r"^ack id=%s status=spoken" % re.escape(oid), which="out", timeout=30)
        b.open(base + "?lang=zh")
        assert b.eval("document.documentElement.lang") == "zh" and not b.eval("document.getElementById('pair').hidden")
        assert "配对" in b.eval("document.body.innerText")
        b.shot("unpaired-zh.png")
        b.open(base + "?lang=en")
        assert "Pair this phone" in b.eval("document.body.innerText")
        b.shot("unpaired-en.png")
        # Pair: the box says the code; type it as a person would.
        t = time.time() - 1
        b.eval("document.getElementById('ask').click()")
        b.wait("/four digits/.test(document.getElementById('msg').textContent)")
        code, _ = w.spoken_code(t)
        b.eval("var f=document.getElementById('pairf'); f.elements.code.value='%s'; "
               "f.dispatchEvent(new Event('submit', {cancelable: true})); true" % code)
        b.wait("!document.getElementById('paired').hidden")
        # The session cookie is HttpOnly: the page's own script cannot read it.
        assert "crier_session" not in b.eval("document.cookie")
        b.wait("/ \\/ 10/.test(document.getElementById('s-volume').textContent)")
        before = b.eval("document.getElementById('s-volume').textContent")
        b.eval("document.querySelector('[data-do=volume_up]').click()")
        w.crier.wait_for(r"button volume_up: press")
        b.wait("document.getElementById('s-volume').textContent !== %s" % json.dumps(before))
        assert b.eval("document.getElementById('s-volume').textContent").startswith("8 / 10")
        n0 = len(read_wav(box.capture)[2])
        b.eval("document.querySelector('[data-do=test]').click()")
        w.crier.wait_for(r"said on request text=\"?Test announcement")
        b.wait("document.getElementById('log').textContent.indexOf('Test announcement') >= 0")
        b.wait("document.getElementById('settings').elements['speech.lang'].value === 'zh'")
        assert "42" in b.eval("document.getElementById('alerts').textContent") or "四十二" in b.eval("document.getElementById('alerts').textContent")
        b.shot("paired-en.png")
        b.open(base + "?lang=zh")
        b.wait("!document.getElementById('paired').hidden")
        b.shot("paired-zh.png")
        # A change without the CSRF token, from the page's own origin and cookie: refused.
        st = b.eval("new Promise(function(r){var x=new XMLHttpRequest();x.open('POST','/api/action');"
                    "x.setRequestHeader('Content-Type','application/x-www-form-urlencoded');"
                    "x.onload=function(){r(x.status)};x.send('do=mute')})")
        assert st == 403
        # Unpair: the session ends; the page asks to pair again and a change is refused.
        b.eval("document.getElementById('logout').click()")
        b.wait("!document.getElementById('pair').hidden")
        st = b.eval("new Promise(function(r){var x=new XMLHttpRequest();x.open('POST','/api/action');"
                    "x.setRequestHeader('Content-Type','application/x-www-form-urlencoded');"
                    "x.onload=function(){r(x.status)};x.send('do=mute')})")
        assert st == 401
        # Five wrong codes from the page: pairing locked, said on the page.
        t = time.time() - 1
        b.eval("document.getElementById('ask').click()")
        code, _ = w.spoken_code(t)
        wrong = "0000" if code != "0000" else "1111"
        for i in range(5):
            b.eval("document.getElementById('msg').textContent=''; var f=document.getElementById('pairf'); f.elements.code.value='%s'; "
                   "f.dispatchEvent(new Event('submit', {cancelable: true})); true" % wrong)
            b.wait("document.getElementById('msg').textContent !== ''")
        assert "locked" in b.eval("document.getElementById('msg').textContent")
        w.crier.wait_for(r"pairing locked after 5 wrong codes")
    finally:
        b.close()
        w.stop()
    rate, _, x = read_wav(box.capture)
    loud = [i for i in range(n0, len(x)) if abs(x[i]) > 0.01]
    assert loud and (loud[-1] - loud[0]) / rate > 1.0, "the test announcement is not in the capture"


def test_the_setup_portal_in_a_browser_pick_a_network_pair_submit_and_the_outcome(box):
    """The captive portal (docs/setup.md section 6): while the setup hotspot is open the page
    shows the networks the box sees; a tap fills the name; after pairing the form submits it;
    the outcome ("Wi-Fi password wrong") comes back on the page by polling; "Close setup" closes
    it. Screenshots portal-zh.png, portal-en.png."""
    from test_setup_hotspot import SetupSupplicant, setup_cmd
    ctl = box.tmp / "wpa"
    ctl.mkdir()
    sup = SetupSupplicant(str(ctl / "wlan0"))
    sup.outcome = "WRONG_KEY"
    w = Web(box, extra="setup.after_minutes = 0\nsetup.request_file = %s\nwifi.control_dir = %s\nwifi.interface = wlan0\n"
                       % (box.tmp / "setup-ap", ctl))
    b = Browser(box.tmp)
    try:
        assert setup_cmd(box, "open").returncode == 0
        w.crier.wait_for(r"NOTICE setup: setup hotspot open", timeout=20)
        base = "http://127.0.0.1:%d/" % w.port
        b.open(base + "?lang=zh")
        b.wait("!document.getElementById('setup').hidden && document.querySelectorAll('#nets button').length === 2")
        assert "设置无线网络" in b.eval("document.body.innerText")
        assert b.eval("document.getElementById('setupf').hidden") and not b.eval("document.getElementById('su-pair').hidden")
        b.shot("portal-unpaired-zh.png", full=False)
        b.open(base + "?lang=en")
        b.wait("document.querySelectorAll('#nets button').length === 2")
        names = b.eval("[].map.call(document.querySelectorAll('#nets button'), function(x){return x.textContent}).join('|')")
        assert names.index("Shop") < names.index('Cafe "Free"'), names  # strongest first
        t = time.time() - 1
        b.eval("document.getElementById('ask').click()")
        code, _ = w.spoken_code(t)
        b.eval("var f=document.getElementById('pairf'); f.elements.code.value='%s'; "
               "f.dispatchEvent(new Event('submit', {cancelable: true})); true" % code)
        b.wait("!document.getElementById('setupf').hidden")
        b.eval("document.querySelector('#nets button').click(); true")
        assert b.eval("document.getElementById('setupf').elements.ssid.value") == "Shop"
        assert not b.eval("document.getElementById('su-cc').hidden")  # no wifi.country in crier.conf
        b.eval("var f=document.getElementById('setupf'); f.elements.psk.value='not the password'; f.elements.country.value='GB'; "
               "f.dispatchEvent(new Event('submit', {cancelable: true})); true")
        w.crier.wait_for(r"WARN setup: network tried: Wi-Fi password wrong", timeout=20)
        b.wait("/Wi-Fi password wrong/.test(document.getElementById('su-out').textContent)", timeout=30)
        b.shot("portal-en.png", full=False)
        b.open(base + "?lang=zh")
        b.wait("/无线网络密码错误/.test(document.getElementById('su-out').textContent)", timeout=30)
        b.shot("portal-zh.png", full=False)
        assert "not the password" not in "\n".join(w.crier.lines())
        # "Close setup" (paired, with the page's token): setup closes as the idle timer closes
        # it, and the portal view goes at the next poll
        assert b.eval("document.getElementById('su-close').textContent") == "关闭设置"
        b.eval("document.getElementById('su-close').click(); true")
        w.crier.wait_for(r"NOTICE setup: setup hotspot closed by=page", timeout=10)
        b.wait("/设置已关闭/.test(document.getElementById('msg').textContent)")
        b.wait("document.getElementById('setup').hidden", timeout=10)
        assert not (box.tmp / "setup-ap").exists()
    finally:
        b.close()
        w.stop()
