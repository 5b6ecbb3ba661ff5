"""Process-level tests: the real `crier` binary, real sockets on loopback, and ALSA's own
`file` plugin standing in for a sound card (every frame written to ALSA lands in a WAV)."""
import array
import os
import shutil
import subprocess
import tempfile
import wave

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CRIER = os.path.abspath(os.environ.get("CRIER_BIN") or os.path.join(ROOT, ".build", "debug", "crier"))
# The reference servers and the demo (`crier-sim order-sim`, `crier-sim demo`; not in the box's
# binary since issue 32): CRIER_SIM_BIN, else the crier-sim beside CRIER_BIN (one `swift build`
# makes both).
SIM = os.path.abspath(os.environ.get("CRIER_SIM_BIN") or os.path.join(os.path.dirname(CRIER), "crier-sim"))


def pytest_configure(config):
    # scripts/test.sh runs the tier two at a time (pytest-xdist, `-n 2 -m "not serial"`), then
    # the tests marked serial one at a time with nothing beside them.
    config.addinivalue_line("markers", "serial: measures time on the machine (audio continuity, "
                            "preemption or fade latency, a cadence); run alone, not beside another test")


@pytest.fixture
def box(tmp_path):
    return Box(tmp_path)


class Box:
    """A hermetic environment for one crier process: its own ALSA config and crier.conf."""

    def __init__(self, tmp):
        self.tmp = tmp
        self.capture = str(tmp / "capture.wav")
        alsa = tmp / "xdg" / "alsa"
        alsa.mkdir(parents=True)
        # XDG_CONFIG_HOME/alsa/asoundrc is read after the system alsa.conf: only `default` changes.
        (alsa / "asoundrc").write_text(
            'pcm.!default { type file slave.pcm "null" file "%s" format "wav" }\n' % self.capture)
        self.env = dict(os.environ, XDG_CONFIG_HOME=str(tmp / "xdg"))
        self.env.pop("NOTIFY_SOCKET", None)
        # voice.pack.* = auto looks in these (test only; /boot/firmware/voice and
        # /usr/share/crier/voice on a box): none here unless a test makes them.
        self.env["CRIER_VOICE_PACK_DIRS"] = "%s:%s" % (tmp / "boot-voice", tmp / "image-voice")
        self.conf = str(tmp / "crier.conf")
        self.write_conf("")

    def write_conf(self, text):
        # The default control socket is a fixed path (/run/crier, created when root): every
        # test gets its own unless it names one, so concurrent runs never reach each other.
        # Appended, so the line numbers a test checks stay where it wrote them.
        # The same for the other paths whose defaults are shared by every daemon on the machine
        # (/var/lib/crier/state and its .acks outbox, /var/lib/crier for update downloads):
        # tests run side by side (pytest -n 2, scripts/test.sh) must not read each other's.
        for key, value in (("control.socket", self.tmp / "box-control.sock"),
                           ("state.path", self.tmp / "box-state"),
                           ("update.dir", self.tmp)):
            if key not in text:
                text += ("" if text.endswith("\n") or not text else "\n") + "%s = %s\n" % (key, value)
        with open(self.conf, "w") as f:
            f.write(text)

    def run(self, *args, timeout=60, conf=True, input=None):
        cmd = [CRIER, *args]
        if conf and args and args[0] in ("say", "run") and "--config" not in args:
            cmd[2:2] = ["--config", self.conf]
        return subprocess.run(cmd, env=self.env, capture_output=True, text=True, timeout=timeout, input=input)

    def popen(self, *args, **kw):
        return subprocess.Popen([CRIER, *args], env=self.env, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True, **kw)


def read_wav(path):
    """(rate, channels, left channel as floats in -1..1)."""
    with open(path, "rb") as f:
        data = f.read()
    # ALSA's file plugin leaves the size fields at 0 until close; read to the end regardless.
    assert data[:4] == b"RIFF" and data[8:12] == b"WAVE", "not a WAV"
    pos = 12
    rate = channels = None
    while pos + 8 <= len(data):
        cid = data[pos:pos + 4]
        size = int.from_bytes(data[pos + 4:pos + 8], "little")
        if cid == b"fmt ":
            channels = int.from_bytes(data[pos + 10:pos + 12], "little")
            rate = int.from_bytes(data[pos + 12:pos + 16], "little")
        elif cid == b"data":
            body = data[pos + 8:] if size in (0, 0xFFFFFFFF) or pos + 8 + size > len(data) else data[pos + 8:pos + 8 + size]
            body = body[:len(body) - len(body) % (2 * channels)]
            samples = array.array("h")
            samples.frombytes(body)
            return rate, channels, [s / 32768 for s in samples[0::channels]]
        pos += 8 + size + (size & 1)
    raise AssertionError("no data chunk")


def rms(x):
    return (sum(v * v for v in x) / len(x)) ** 0.5 if x else 0.0


def first_loud(x, threshold=0.01, start=0):
    for i in range(start, len(x)):
        if abs(x[i]) > threshold:
            return i
    return None


def last_loud(x, threshold=0.01):
    for i in range(len(x) - 1, -1, -1):
        if abs(x[i]) > threshold:
            return i
    return None
