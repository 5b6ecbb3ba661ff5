#!/usr/bin/env python3
"""A year of a busy shop in an hour (issue 35 item 3): ~110 000 orders (300 a day for a year) with
coalescing bursts, ~2 000 link drops and server restarts, ~200 reloads, ~50 SIGKILLs and ~50
device losses, music playing from a file, against the real `crier run`; sampled every minute
(RSS, anonymous memory, descriptors, threads, CPU, log bytes, bytes written to the data
directory); the chaos checker's invariants over everything (every order said once, acked once).
A benchmark: it prints tables and exits non-zero only on a broken invariant or unbounded growth,
never on a time. docs/benchmarks.md ("Soak") says how time is compressed and what is measured.

    scripts/soak.sh                                # the full year: 110 000 orders in 60 min
    scripts/soak.sh --orders 36000 --minutes 20    # a third of it
    scripts/soak.sh --ci                           # CI: ~3 000 orders, ~2.5 min
    scripts/soak.sh --mqtt                         # through mosquitto instead of the v1 server

It reuses chaos.py's scripted v1 order server and daemon runner and checker.py's invariants.
"""
import argparse
import json
import os
import random
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import wave
from collections import deque

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import checker  # noqa: E402
import chaos  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(HERE))
CRIER = chaos.CRIER
# The v1 reference order server: chaos.py's scripted one (records every line it sends and
# receives, redelivers after every welcome). Change it here to try another.
ORDER_SERVER = chaos.Server
MOSQUITTO = os.environ.get("MOSQUITTO", "/usr/sbin/mosquitto")

YEAR_ORDERS = 110_000            # 300 a day
# Per year, scaled to --orders: link drops and server restarts, reloads, power cuts, device losses.
PER_YEAR = {"drop": 1000, "server_restart": 1000, "reload": 200, "sigkill": 50, "device_loss": 50}
# Restarting events stay out of this share of the run, so one process lives through half of the
# orders: a leak cannot hide behind restarts (its RSS is what the growth rule reads).
LONG_LIFE = (0.3, 0.8)
# Link drops and server restarts at real pace need ~12 s each: the reconnect backoff resets only
# after a connection has been up 10 s (ReconnectBackoff.healthyAfter), so drops closer together
# are a link flapping for good (backoff up to 30 s), not a year of separate drops hours apart.
# The soak divides the link's timeline by LINK_SPEED (--link-speed): the daemon's backoff by
# CRIER_TEST_LINK_SPEED (test-only, loopback servers only: LinkTestSpeed), the harness's gap
# between link events and a server's time down (2-15 s at real pace) by the same factor. Each
# event still goes through the whole path (loss seen, refused connects while a server is down,
# backoff, connect, handshake, redelivery, acks sent again); only the waits shrink. At 20:
# first retry within 25 ms, reset after 0.5 s up, events at most one per 0.6 s (the year's
# 2 000 fit an hour: one per 1.8 s); docs/benchmarks.md, "Soak".
LINK_SPEED = 20.0
LINK_GAP_REAL_S = 12.0
SERVER_DOWN_REAL_S = (2.0, 15.0)
# MQTT: after a broker restart the harness publishes again the open orders published from this
# long before the stop on; any order without a final ack this long after its last publish is
# published again (an order server's answer timeout). MQTTServer.listen says why.
REPUBLISH_LOOKBACK_S = 5.0
ANSWER_TIMEOUT_S = 120.0

# "Unbounded" (what fails the run, CI included): over the long-lived process after its first 20 %
# of orders (warm-up: arenas, caches, the first coalesced groups), the median anonymous memory of
# its last quarter of samples is above that of its second quarter by more than
# GROWTH_BASE_KB + GROWTH_PER_10K_KB per 10 000 orders said in between. 4 MB per 10 000 orders
# is ~44 MB a year at 300 orders a day: a box would still run a year on a 512 MB Zero, and a leak
# of 1 KB per order (10 MB per 10 000) fails. The 2 MB base absorbs malloc arenas growing once
# under a burst (seen: +1.1 MB in one step, then flat). Descriptors and threads: at most +4 (a
# link or a music reader in flight at the sample). The data directory: at most DATA_MAX_KB at the
# end (outbox and journals compact).
GROWTH_BASE_KB = 2048
GROWTH_PER_10K_KB = 4096
FD_SLACK = 4
THREAD_SLACK = 4
DATA_MAX_KB = 2048
RSS_MAX_KB = 150_000


def proc_status(pid):
    out = {}
    try:
        with open("/proc/%d/status" % pid) as f:
            for l in f:
                k, _, v = l.partition(":")
                if k in ("VmRSS", "RssAnon", "Threads", "VmHWM"):
                    out[k] = int(v.split()[0])
        with open("/proc/%d/stat" % pid) as f:
            fields = f.read().rsplit(")", 1)[1].split()
        out["ticks"] = int(fields[11]) + int(fields[12])
        with open("/proc/%d/io" % pid) as f:
            for l in f:
                k, _, v = l.partition(":")
                if k in ("write_bytes", "wchar", "cancelled_write_bytes"):
                    out[k] = int(v)
        out["fds"] = len(os.listdir("/proc/%d/fd" % pid))
    except (OSError, ValueError, IndexError):
        return None
    return out


# The one log line the compression itself causes (splicing has to keep up with a clock running
# --speed times real time): left out of the log bytes, counted on its own.
ARTEFACT = "speech synthesis is behind playback"
RESERVE = "crier.reserve"   # the data reserve: preallocated once (4 MB), never rewritten


def device_bytes(dev):
    """Bytes written to a block device so far (/sys/block/DEV/stat: sectors written, 512 B)."""
    if not dev:
        return None
    with open("/sys/block/%s/stat" % dev) as f:
        return int(f.read().split()[6]) * 512


def dir_bytes(path):
    """(apparent bytes, allocated bytes, files) under path, the data reserve left out."""
    a = b = n = 0
    for d, _, files in os.walk(path):
        for fn in files:
            if fn == RESERVE:
                continue
            try:
                st = os.lstat(os.path.join(d, fn))
            except OSError:
                continue
            a += st.st_size
            b += st.st_blocks * 512
            n += 1
    return a, b, n


def make_pack(tmp, crier, env):
    """A zh voice pack from espeak-ng (docs/voice.md): every clip the default templates need, one
    WAV each, trimmed. Orders are then spliced from clips (no synthesis per order), as on a box
    with a pack; texts the pack does not cover still go to espeak-ng."""
    pack = os.path.join(tmp, "voice-zh")
    os.makedirs(pack)
    clips = subprocess.run([crier, "voice", "clips", "--lang", "zh"], capture_output=True, text=True, env=env, check=True).stdout
    rate = 22050
    for line in clips.splitlines():
        if "\t" not in line:
            continue
        name, text = line.split("\t", 1)
        # The daemon's own espeak-ng settings for zh (speech.zh.voice, speech.zh.rate defaults).
        raw = subprocess.run(["espeak-ng", "-v", "cmn-latn-pinyin", "-s", "175", "--stdout", text], capture_output=True, check=True).stdout
        # espeak-ng's WAV: 22050 Hz mono 16-bit; its header's sizes are wrong on stdout: skip 44 bytes.
        import array
        s = array.array("h")
        body = raw[44:]
        s.frombytes(body[:len(body) - len(body) % 2])
        loud = [i for i, v in enumerate(s) if abs(v) > 300]
        if loud:
            s = s[max(0, loud[0] - 200):loud[-1] + 200]
        with wave.open(os.path.join(pack, name + ".wav"), "wb") as w:
            w.setnchannels(1)
            w.setsampwidth(2)
            w.setframerate(rate)
            w.writeframes(s.tobytes())
    with open(os.path.join(pack, "manifest"), "w") as f:
        f.write("language = zh\nname = espeak-ng soak pack\nlicence = GPL-3.0 (espeak-ng)\nrate = %d\n" % rate)
    return pack


def make_music(tmp, rate=16000, seconds=30):
    """A 30 s WAV of slow tones: music.source, looped."""
    import array
    import math
    path = os.path.join(tmp, "music", "loop.wav")
    os.makedirs(os.path.dirname(path))
    s = array.array("h")
    notes = [262, 294, 330, 349, 392, 440, 494, 523]
    for i in range(rate * seconds):
        f = notes[(i // (rate // 2)) % len(notes)]
        s.append(int(6000 * math.sin(2 * math.pi * f * i / rate)))
    with wave.open(path, "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(rate)
        w.writeframes(s.tobytes())
    return path


class Proxy:
    """A TCP proxy between the box and mosquitto (MQTT mode): `cut()` drops the box's link
    without touching the broker, as a flaky shop network does."""

    def __init__(self, target_port):
        self.target = target_port
        self.s = socket.socket()
        self.s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.s.bind(("127.0.0.1", 0))
        self.s.listen(8)
        self.port = self.s.getsockname()[1]
        self.lock = threading.Lock()
        self.pairs = []
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while True:
            try:
                c, _ = self.s.accept()
            except OSError:
                return
            try:
                u = socket.create_connection(("127.0.0.1", self.target))
            except OSError:
                c.close()
                continue
            with self.lock:
                self.pairs.append((c, u))
            for a, b in ((c, u), (u, c)):
                threading.Thread(target=self._pipe, args=(a, b), daemon=True).start()

    @staticmethod
    def _pipe(a, b):
        try:
            while True:
                d = a.recv(65536)
                if not d:
                    break
                b.sendall(d)
        except OSError:
            pass
        for x in (a, b):
            try:
                x.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def cut(self):
        with self.lock:
            pairs, self.pairs = self.pairs, []
        for c, u in pairs:
            for x in (c, u):
                try:
                    x.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
                x.close()


class MQTTServer:
    """The order server's side over mosquitto, recorded like chaos.Server (send: an order
    published; recv: an ack the persistent subscriber got). Publisher and subscriber are
    mosquitto_pub -l and mosquitto_sub (QoS 1, clean session off), connected straight to the
    broker; the box goes through Proxy. Redelivery is the broker's (the box's persistent
    session), so 'drop' cuts the proxy and 'server_restart' restarts the broker with persistence."""

    def __init__(self, rec, tmp, device):
        self.rec, self.tmp, self.device = rec, tmp, device
        self.lock = threading.RLock()
        self.orders, self.final, self.open = {}, {}, {}
        self.dup_acks = 0
        self.sent_at = {}         # id -> monotonic time of its last publish
        self.stopped_at = None
        self.republished = 0
        self.dir = os.path.join(tmp, "broker")
        os.makedirs(self.dir)
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.bport = s.getsockname()[1]
        with open(os.path.join(self.dir, "mosquitto.conf"), "w") as f:
            f.write("listener %d 127.0.0.1\nallow_anonymous true\npersistence true\npersistence_location %s/\n"
                    "max_queued_messages 0\nuser root\n" % (self.bport, self.dir))
        self.broker = None
        self.start_broker()
        self.proxy = Proxy(self.bport)
        self.port = self.proxy.port
        self.pub = self.sub = None
        self.start_clients()
        self.closed = False
        threading.Thread(target=self._stale_loop, daemon=True).start()

    def _stale_loop(self):
        while not self.closed:
            time.sleep(5)
            if self.up:
                self.resend_stale()

    def start_broker(self):
        self.broker = subprocess.Popen([MOSQUITTO, "-c", os.path.join(self.dir, "mosquitto.conf")],
                                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        end = time.monotonic() + 10
        while time.monotonic() < end:
            try:
                socket.create_connection(("127.0.0.1", self.bport), timeout=0.5).close()
                return
            except OSError:
                time.sleep(0.05)
        raise RuntimeError("mosquitto did not start")

    def start_clients(self):
        topic = "crier/%s/" % self.device
        self.sub = subprocess.Popen(["mosquitto_sub", "-h", "127.0.0.1", "-p", str(self.bport), "-q", "1", "-c",
                                     "-i", "soak-acker", "-t", topic + "acks"], stdout=subprocess.PIPE, text=True,
                                    stderr=subprocess.DEVNULL)
        threading.Thread(target=self._acks, args=(self.sub,), daemon=True).start()
        self.pub = subprocess.Popen(["mosquitto_pub", "-h", "127.0.0.1", "-p", str(self.bport), "-q", "1", "-l",
                                     "-i", "soak-orders", "-t", topic + "orders"], stdin=subprocess.PIPE, text=True,
                                    stderr=subprocess.DEVNULL)
        time.sleep(0.3)

    def _acks(self, p):
        for line in p.stdout:
            try:
                m = json.loads(line)
            except ValueError:
                continue
            with self.lock:
                self.rec["server"].append({"t": time.time(), "conn": 0, "dir": "recv", "msg": m, "event": None})
                oid, st = m.get("id"), m.get("status")
                if m.get("type") == "ack" and st == "rejected" and m.get("reason") in checker.NOT_FINAL_REASONS:
                    # "The server may resend later" (queue_full): published again 2 s later, as
                    # chaos.py's v1 server does.
                    def again(oid=oid):
                        with self.lock:
                            if oid in self.open and oid in self.orders:
                                self.send(self.orders[oid])
                    threading.Timer(2.0, again).start()
                elif m.get("type") == "ack" and st in checker.FINAL and not (
                        st == "rejected" and m.get("reason") in checker.NOT_FINAL_REASONS):
                    if oid in self.final:
                        self.dup_acks += 1
                    self.final.setdefault(oid, st)
                    self.open.pop(oid, None)

    def send(self, m):
        data = json.dumps(m, ensure_ascii=False, separators=(",", ":"))
        with self.lock:
            for _ in range(3):
                try:
                    self.pub.stdin.write(data + "\n")
                    self.pub.stdin.flush()
                    break
                except (OSError, ValueError):
                    time.sleep(0.5)
            self.rec["server"].append({"t": time.time(), "conn": 0, "dir": "send", "msg": m, "event": None})
            if m.get("type") == "order":
                self.sent_at[m["id"]] = time.monotonic()

    def add(self, m):
        with self.lock:
            self.orders[m["id"]] = m
            self.open[m["id"]] = True
            self.rec["orders"][m["id"]] = {"priority": 0, "kind": m["kind"], "ttl": None, "created": time.time()}
        self.send(m)

    def duplicate(self, oid):
        self.send(self.orders[oid])

    def cancel(self, oid):
        self.send({"type": "cancel", "id": oid})

    def unacked(self):
        with self.lock:
            return list(self.open)

    def close_all(self):
        self.proxy.cut()

    def stop(self):
        with self.lock:
            self.stopped_at = time.monotonic()
            self.broker.send_signal(signal.SIGTERM)
            self.broker.wait(10)

    def listen(self):
        """The broker back, publisher and subscriber reconnected; every order without a final ack
        that the old broker may not have taken is published again: those published from
        REPUBLISH_LOOKBACK_S before the stop on (still in mosquitto_pub's pipe, or published into
        the dead connection), as an order server does after losing its broker. Older ones are in
        the broker's persisted queue for the box (persistence, QoS 1, the box's persistent
        session); an order left without an answer is published again after ANSWER_TIMEOUT_S
        (`resend_stale`). Republishing every open order at each restart (the first harness)
        turned the compressed year's backlog into a redelivery storm: docs/benchmarks.md, "Soak"."""
        with self.lock:
            self.start_broker()
            for p in (self.pub, self.sub):
                p.kill()
                p.wait()
            self.start_clients()
            since = (self.stopped_at or 0) - REPUBLISH_LOOKBACK_S
            for oid in list(self.open):
                if self.sent_at.get(oid, 0) >= since:
                    self.republished += 1
                    self.send(self.orders[oid])

    def resend_stale(self):
        """An order server's answer timeout: an order with no final ack ANSWER_TIMEOUT_S after it
        was last published is published again (a lost publish, a lost ack)."""
        now = time.monotonic()
        with self.lock:
            for oid in list(self.open):
                if now - self.sent_at.get(oid, now) > ANSWER_TIMEOUT_S:
                    self.republished += 1
                    self.send(self.orders[oid])

    @property
    def up(self):
        return self.broker.poll() is None

    def shutdown(self):
        self.closed = True
        for p in (self.pub, self.sub, self.broker):
            if p and p.poll() is None:
                p.kill()
                p.wait()


class Soak:
    def __init__(self, a):
        self.a = a
        self.rng = random.Random(a.seed)
        self.tmp = tempfile.mkdtemp(prefix="crier-soak-")
        os.makedirs(os.path.join(self.tmp, "xdg/alsa"))
        # --data-dir: the state on a file system of its own (e.g. an ext4 made like the image's
        # crier-data), whose block device --block-dev counts what reaches the "card".
        self.data = a.data_dir or os.path.join(self.tmp, "data")
        os.makedirs(self.data, exist_ok=True)
        self.env = dict(os.environ, XDG_CONFIG_HOME=os.path.join(self.tmp, "xdg"),
                        CRIER_TEST_AUDIO_SPEED=str(a.speed), CRIER_TEST_LINK_SPEED=str(a.link_speed))
        self.env.pop("NOTIFY_SOCKET", None)
        self.rec = {"seed": a.seed, "config": {"soak": True, "speed": a.speed, "link_speed": a.link_speed}, "orders": {}, "server": [],
                    "segments": [], "actions": []}
        self.conf = os.path.join(self.tmp, "crier.conf")
        self.pack = make_pack(self.tmp, CRIER, self.env)
        self.music = make_music(self.tmp)
        self.srv = MQTTServer(self.rec, self.tmp, "soak-box") if a.mqtt else ORDER_SERVER(self.rec)
        self.write_conf()
        self.daemon = None
        self.n = 0
        self.oid = 0
        self.recent = deque(maxlen=64)
        self.dlock = threading.Lock()
        self.samples = []
        self.procs = {}        # pid -> last /proc figures (cumulative per process)
        self.logbytes = {}     # segment index -> (lines counted, bytes)
        self.counts = {}
        self.done = threading.Event()

    # chaos.Daemon's run interface: tmp, conf, env, rec, write_alsa
    def write_alsa(self, capture):
        """The file plugin into a symlink to /dev/null in the segment's own directory: no capture
        is kept (a year of audio), and the device 'vanishes' with its directory, as in chaos.py."""
        d = os.path.dirname(capture)
        with open(os.path.join(self.tmp, "xdg", "alsa", "asoundrc"), "w") as f:
            f.write('pcm.!default { type file slave.pcm "null" file "%s" format "raw" }\n' % os.path.join(d, "sink"))
        if os.path.isdir(d):
            self.device_back(d)

    @staticmethod
    def device_back(d):
        os.makedirs(d, exist_ok=True)
        if not os.path.lexists(os.path.join(d, "sink")):
            os.symlink("/dev/null", os.path.join(d, "sink"))

    def write_conf(self):
        t = self.tmp
        lines = ["device.id = soak-box",
                 ("server = mqtt://127.0.0.1:%d" if self.a.mqtt else "server = tcp://127.0.0.1:%d") % self.srv.port,
                 "audio.rate = 16000", "audio.channels = 1",
                 "voice.pack.zh = %s" % self.pack,
                 "music.source = %s" % self.music,
                 "input = fifo:%s" % os.path.join(t, "buttons.fifo"),
                 "state.path = %s" % os.path.join(self.data, "state"),
                 "control.socket = %s" % os.path.join(t, "control.sock"), ""]
        with open(self.conf, "w") as f:
            f.write("\n".join(lines))

    def act(self, what, **kw):
        self.rec["actions"].append(dict(kw, t=time.time(), what=what))
        self.counts[what] = self.counts.get(what, 0) + 1

    def start_daemon(self, device_ok=True):
        self.n += 1
        d = chaos.Daemon(self, self.n - 1, device_ok=device_ok)
        d.seg["audio_speed"] = self.a.speed
        with self.dlock:
            self.daemon = d

    def wait_ready(self, timeout=30):
        end = time.monotonic() + timeout
        while time.monotonic() < end and self.daemon.alive() and not self.daemon.has(" INFO runtime: ready"):
            time.sleep(0.05)

    # -- orders
    def make_order(self, kind=None):
        r = self.rng
        self.oid += 1
        m = {"type": "order", "id": "S%d-%d" % (self.a.seed, self.oid)}
        kind = kind or r.choices(["new_customer", "payment", "text", "odd"], [70, 26, 3, 1])[0]
        if kind == "new_customer":
            m.update(kind=kind, number=r.randint(1, 999))
        elif kind == "payment":
            m.update(kind=kind, amount="%d.%02d" % (r.randint(1, 500), r.randint(0, 99)))
        elif kind == "text":
            m.update(kind=kind, text="".join(r.choice(chaos.ZH_WORDS) for _ in range(r.randint(4, 10))))
        else:
            m.update(kind="new_customer", number=1000000)   # breaks a rule: acked rejected, never said
        return m

    def order(self, kind=None):
        m = self.make_order(kind)
        self.srv.add(m)
        self.recent.append(m["id"])
        self.counts["orders"] = self.counts.get("orders", 0) + 1

    def orders_thread(self, t0, active):
        """Orders at the year's pace compressed into `active` seconds: single orders, and bursts of
        3-10 new customers (coalesced into one alert), now and then a duplicate or a cancel."""
        r = random.Random(self.a.seed * 31 + 7)
        n, total = 0, self.a.orders
        while n < total and not self.done.is_set():
            due = t0 + active * n / total
            wait = due - time.monotonic()
            if wait > 0:
                time.sleep(wait)
            x = r.random()
            if x < 0.08:
                k = min(total - n, r.randint(3, 10))
                self.act("burst", n=k) if k > 1 else None
                for _ in range(k):
                    self.order("new_customer")
                n += k
                continue
            if x < 0.09 and self.recent:
                oid = r.choice(list(self.recent))
                if oid not in self.srv.final:
                    self.act("duplicate", id=oid)
                    self.srv.duplicate(oid)
            elif x < 0.10 and self.recent:
                oid = r.choice(list(self.recent))
                if oid not in self.srv.final:
                    self.act("cancel", id=oid)
                    self.srv.cancel(oid)
            self.order()
            n += 1

    # -- the events
    def schedule(self, active):
        scale = self.a.orders / YEAR_ORDERS
        ev = []
        # Link events on a jittered grid at least LINK_GAP_REAL_S / --link-speed apart, drops and
        # restarts alternating at random.
        want = round((PER_YEAR["drop"] + PER_YEAR["server_restart"]) * scale)
        n_link = max(2, min(want, int(active / (LINK_GAP_REAL_S / self.a.link_speed))))
        self.link_plan = (want, n_link)
        step = active / n_link
        for i in range(n_link):
            t = (i + 0.5 + self.rng.uniform(-0.08, 0.08)) * step
            ev.append((t, self.rng.choice(["drop", "server_restart"]), self.rng.random()))
        for what, per_year in PER_YEAR.items():
            if what in ("drop", "server_restart"):
                continue
            k = max(2, round(per_year * scale))
            for _ in range(k):
                if what in ("sigkill", "device_loss"):
                    # outside the long-lived window
                    u = self.rng.uniform(0.02, 1 - (LONG_LIFE[1] - LONG_LIFE[0]) - 0.02)
                    t = u if u < LONG_LIFE[0] else u + (LONG_LIFE[1] - LONG_LIFE[0])
                else:
                    t = self.rng.uniform(0.01, 0.99)
                ev.append((t * active, what, self.rng.random()))
        return sorted(ev)

    def events_thread(self, t0, active):
        for at, what, x in self.schedule(active):
            if self.done.is_set():
                return
            wait = t0 + at - time.monotonic()
            if wait > 0:
                time.sleep(wait)
            if not self.daemon.alive():
                self.daemon.finish("exit", self.daemon.p.returncode)
                self.act("daemon_died")
                self.start_daemon()
            if what == "drop":
                self.act("drop")
                self.srv.close_all()
            elif what == "server_restart":
                lo, hi = SERVER_DOWN_REAL_S
                d = (lo + (hi - lo) * x) / self.a.link_speed
                self.act("server_restart", seconds=d)
                self.srv.stop()
                time.sleep(d)
                self.srv.listen()
            elif what == "reload":
                self.wait_ready()
                self.act("reload")
                self.daemon.sighup()
                if not self.daemon.alive():
                    self.daemon.finish("sighup_death", self.daemon.p.returncode)
                    self.start_daemon()
            elif what == "sigkill":
                self.act("sigkill")
                self.poll_procs()
                self.daemon.sigkill()
                time.sleep(0.1 + 0.9 * x)
                self.start_daemon()
                self.wait_ready()
            elif what == "device_loss":
                d = 1 + 2 * x
                self.act("device_loss", seconds=d)
                self.poll_procs()
                self.daemon.sigterm()
                self.start_daemon(device_ok=False)
                time.sleep(d)
                self.device_back(self.daemon.devdir)
                self.wait_ready()

    # -- measurements
    def poll_procs(self):
        d = self.daemon
        if d is None:
            return
        st = proc_status(d.p.pid)
        if st:
            st["orders_at"] = len(self.srv.final)
            prev = self.procs.get(d.p.pid)
            st["first"] = prev["first"] if prev else dict(st)
            self.procs[d.p.pid] = st

    def log_bytes(self):
        total = 0
        for seg in self.rec["segments"]:
            n, b = self.logbytes.get(seg["index"], (0, 0))
            lines = seg["log"]
            m = len(lines)
            b += sum(len(l.encode()) + 1 for l in lines[n:m] if ARTEFACT not in l)
            self.logbytes[seg["index"]] = (m, b)
            total += b
        return total

    def totals(self):
        ticks = sum(p["ticks"] for p in self.procs.values())
        wb = sum(p.get("write_bytes", 0) for p in self.procs.values())
        wc = sum(p.get("wchar", 0) for p in self.procs.values())
        return ticks, wb, wc

    def sampler_thread(self, t0):
        hz = os.sysconf("SC_CLK_TCK")
        last_t, last_ticks = time.monotonic(), 0
        next_row = t0 + self.a.sample_seconds
        print("%6s %7s %7s %6s %7s %7s %7s %4s %4s %6s %8s %9s %9s %5s %5s" % (
            "min", "sent", "final", "days", "pid", "RSS MB", "anon MB", "fds", "thr", "CPU %", "log KB",
            "wrote KB", "data KB", "segs", "load"), flush=True)
        while not self.done.is_set():
            self.poll_procs()
            now = time.monotonic()
            if now >= next_row:
                next_row += self.a.sample_seconds
                self.row(now, t0, hz, last_t, last_ticks)
                last_t, last_ticks = now, self.totals()[0]
            time.sleep(1)

    def row(self, now, t0, hz, last_t, last_ticks, phase="orders"):
        d = self.daemon
        st = self.procs.get(d.p.pid) if d else None
        ticks, wb, wc = self.totals()
        app, alloc, files = dir_bytes(self.data)
        s = {"t": now - t0, "phase": phase, "sent": len(self.srv.orders), "final": len(self.srv.final),
             "pid": d.p.pid if d else None, "rss_kb": st and st.get("VmRSS"), "anon_kb": st and st.get("RssAnon"),
             "fds": st and st.get("fds"), "threads": st and st.get("Threads"),
             "cpu": (ticks - last_ticks) / hz / max(1e-9, now - last_t), "log_bytes": self.log_bytes(),
             "write_bytes": wb, "wchar": wc, "data_bytes": app, "data_alloc": alloc, "data_files": files,
             "segments": len(self.rec["segments"]), "load": os.getloadavg()[0]}
        self.samples.append(s)
        print("%6.1f %7d %7d %6.0f %7s %7s %7s %4s %4s %6.1f %8.0f %9.0f %9.1f %5d %5.1f" % (
            s["t"] / 60, s["sent"], s["final"], s["final"] / 300, s["pid"],
            "%.1f" % (s["rss_kb"] / 1024) if s["rss_kb"] else "-", "%.1f" % (s["anon_kb"] / 1024) if s["anon_kb"] else "-",
            s["fds"] or "-", s["threads"] or "-", 100 * s["cpu"], s["log_bytes"] / 1024, s["write_bytes"] / 1024,
            s["data_bytes"] / 1024, s["segments"], s["load"]), flush=True)
        return s

    # -- the run
    def main(self):
        a = self.a
        t0 = time.monotonic()
        self.start_daemon()
        self.wait_ready()
        time.sleep(1)
        active = a.minutes * 60
        threads = [threading.Thread(target=f, args=(time.monotonic(), active), daemon=True)
                   for f in (self.orders_thread, self.events_thread)]
        sampler = threading.Thread(target=self.sampler_thread, args=(time.monotonic(),), daemon=True)
        sampler.start()
        for th in threads:
            th.start()
        for th in threads:
            th.join()
        self.act("quiet")
        if not self.srv.up:
            self.srv.listen()
        limit = time.monotonic() + 120 + len(self.srv.unacked()) / 20
        while time.monotonic() < limit and self.srv.unacked():
            if not self.daemon.alive():
                self.daemon.finish("exit", self.daemon.p.returncode)
                self.act("daemon_died")
                self.start_daemon()
            time.sleep(0.5)
        t_orders = time.monotonic() - t0
        self.done.set()
        sampler.join()
        hz = os.sysconf("SC_CLK_TCK")
        self.poll_procs()
        end_orders = self.row(time.monotonic(), t0 + 0, hz, time.monotonic() - 1, self.totals()[0])
        # Card wear per order at a shop's pace: one order every --paced-gap seconds, each acked and
        # its ack confirmed (the device pings after writing acks) before the next, with the outbox
        # file as full as a box's is after its first 1024 orders.
        paced = None
        if a.paced_orders > 0 and self.daemon.alive():
            time.sleep(2)
            self.poll_procs()
            pid = self.daemon.p.pid
            before = dict(self.procs[pid])
            time.sleep(6)   # the file system's commit (ext4: 5 s) of what came before
            dev0 = device_bytes(a.block_dev)
            tt = time.monotonic()
            for _ in range(a.paced_orders):
                self.order("new_customer")
                time.sleep(a.paced_gap)
            limit = time.monotonic() + 30
            while time.monotonic() < limit and self.srv.unacked():
                time.sleep(0.2)
            time.sleep(6)
            self.poll_procs()
            after = self.procs.get(pid)
            dev1 = device_bytes(a.block_dev)
            if after and after is not before:
                outbox = os.path.join(self.data, "state.acks")
                paced = {"orders": a.paced_orders, "gap_s": a.paced_gap, "seconds": time.monotonic() - tt,
                         "write_bytes": after.get("write_bytes", 0) - before.get("write_bytes", 0),
                         "outbox_bytes": os.path.getsize(outbox) if os.path.exists(outbox) else 0,
                         "device_bytes": dev1 - dev0 if dev0 is not None else None}
        # Idle: link up, music on, nothing to say.
        idle = None
        if a.idle_seconds > 0 and self.daemon.alive():
            time.sleep(6)
            self.poll_procs()
            pid = self.daemon.p.pid
            before = dict(self.procs[pid])
            d0 = dir_bytes(self.data)
            dev0 = device_bytes(a.block_dev)
            tt = time.monotonic()
            mt = {}
            for root, _, files in os.walk(self.data):
                for fn in files:
                    mt[fn] = os.stat(os.path.join(root, fn)).st_mtime
            time.sleep(a.idle_seconds)
            self.poll_procs()
            after = self.procs.get(pid)
            touched = []
            for root, _, files in os.walk(self.data):
                for fn in files:
                    m = os.stat(os.path.join(root, fn)).st_mtime
                    if mt.get(fn) != m:
                        touched.append(fn)
            if after:
                dt = time.monotonic() - tt
                dev1 = device_bytes(a.block_dev)
                idle = {"seconds": dt, "write_bytes": after.get("write_bytes", 0) - before.get("write_bytes", 0),
                        "device_bytes": dev1 - dev0 if dev0 is not None else None,
                        "wchar": after.get("wchar", 0) - before.get("wchar", 0),
                        "cpu": (after["ticks"] - before["ticks"]) / hz / dt,
                        "data_growth": dir_bytes(self.data)[0] - d0[0], "files_touched": sorted(touched),
                        "rss_kb": [before.get("VmRSS"), after.get("VmRSS")], "anon_kb": [before.get("RssAnon"), after.get("RssAnon")]}
        self.act("final_sigterm")
        self.daemon.sigterm()
        if a.mqtt:
            self.srv.shutdown()
        else:
            self.srv.stop()
        self.rec["wall_seconds"] = time.monotonic() - t0
        self.rec["idle"] = idle
        self.paced = paced
        fails = checker.check(self.rec, skip=("priority_not_blocked",))
        if a.mqtt:
            # QoS 1 is at least once on both legs, and the broker's redeliveries to the box are not
            # in this record (only what the harness published): an order answered more often than
            # the harness published it is counted, not judged. One final status per order, a final
            # ack for every order, never said twice: judged as over v1.
            self.answered_again = [x for x in fails if x.invariant == "acked_exactly_once" and "acks for" in x.detail]
            fails = [x for x in fails if x not in self.answered_again]
        fails += self.growth_failures(end_orders)
        return fails, t_orders, idle, end_orders

    def long_lived(self):
        """The samples of the process that said the most orders."""
        by = {}
        for s in self.samples:
            if s["phase"] == "orders" and s["pid"] and s["anon_kb"]:
                by.setdefault(s["pid"], []).append(s)
        if not by:
            return []
        return max(by.values(), key=lambda v: v[-1]["final"] - v[0]["final"])

    def growth(self):
        """(warm-up anon kB, end anon kB, orders between, allowed kB, slope kB per 10k, fds, threads)."""
        ss = self.long_lived()
        if len(ss) < 8:
            return None
        first, last = ss[0]["final"], ss[-1]["final"]
        warm = [s for s in ss if s["final"] >= first + 0.2 * (last - first)]
        if len(warm) < 6:
            return None
        q = len(warm) // 4 or 1
        mid = warm[q:2 * q] or warm[:q]
        end = warm[-q:]
        a0 = statistics.median(s["anon_kb"] for s in mid)
        a1 = statistics.median(s["anon_kb"] for s in end)
        orders = statistics.median(s["final"] for s in end) - statistics.median(s["final"] for s in mid)
        xs = [s["final"] for s in warm]
        ys = [s["anon_kb"] for s in warm]
        mx, my = statistics.mean(xs), statistics.mean(ys)
        den = sum((x - mx) ** 2 for x in xs)
        slope = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / den * 10000 if den else 0.0
        return {"pid": ss[0]["pid"], "orders_in_process": last - first, "anon_mid_kb": a0, "anon_end_kb": a1,
                "orders_between": orders, "allowed_kb": GROWTH_BASE_KB + GROWTH_PER_10K_KB * orders / 10000,
                "slope_kb_per_10k": slope, "fds": [warm[0]["fds"], max(s["fds"] for s in warm[-q:])],
                "threads": [warm[0]["threads"], max(s["threads"] for s in warm[-q:])],
                "rss_kb": [warm[0]["rss_kb"], warm[-1]["rss_kb"], max(s["rss_kb"] for s in ss)]}

    def growth_failures(self, end):
        F = checker.Failure
        fails = []
        g = self.growth()
        if g is None:
            fails.append(F("bounded_growth", None, "too few samples of one process to judge growth (%d); "
                           "a shorter --sample-seconds or a longer run" % len(self.long_lived())))
        else:
            if g["anon_end_kb"] - g["anon_mid_kb"] > g["allowed_kb"]:
                fails.append(F("bounded_growth", None, "anonymous memory of pid %d grew %d kB over %d orders (allowed %d kB)" % (
                    g["pid"], g["anon_end_kb"] - g["anon_mid_kb"], g["orders_between"], g["allowed_kb"])))
            if g["fds"][1] > g["fds"][0] + FD_SLACK:
                fails.append(F("bounded_growth", None, "descriptors %d -> %d" % tuple(g["fds"])))
            if g["threads"][1] > g["threads"][0] + THREAD_SLACK:
                fails.append(F("bounded_growth", None, "threads %d -> %d" % tuple(g["threads"])))
            if g["rss_kb"][2] > RSS_MAX_KB:
                fails.append(F("bounded_growth", None, "RSS peaked at %d kB" % g["rss_kb"][2]))
        if end["data_bytes"] > DATA_MAX_KB * 1024:
            fails.append(F("bounded_growth", None, "the data directory holds %d kB after the run" % (end["data_bytes"] / 1024)))
        return fails


def report(s, fails, t_orders, idle, end):
    a = s.a
    finals = {}
    for st in s.srv.final.values():
        finals[st] = finals.get(st, 0) + 1
    segs = s.rec["segments"]
    kinds = {}
    for seg in segs:
        kinds[seg.get("end_kind")] = kinds.get(seg.get("end_kind"), 0) + 1
    spoken = sum(1 for seg in segs for l in seg["log"] if " alert: spoken id=" in l)
    sayings = sum(1 for seg in segs for l in seg["log"] if " alert: saying ids=" in l)
    n = max(1, len(s.srv.orders))
    print()
    print("soak summary: %s, seed %d, speed %gx, %d orders in %.1f min (+ quiet), load %.1f at the end" % (
        "mqtt (mosquitto)" if a.mqtt else "v1 (chaos.py server)", a.seed, a.speed, len(s.srv.orders),
        t_orders / 60, os.getloadavg()[0]))
    print("  finals: %s; %d spoken lines in %d alerts (%.1f orders per alert)" % (
        ", ".join("%s %d" % kv for kv in sorted(finals.items())), spoken, sayings, spoken / max(1, sayings)))
    print("  events: %s" % " ".join("%s=%d" % kv for kv in sorted(s.counts.items())))
    print("  daemon runs: %d (%s)" % (len(segs), ", ".join("%s %d" % (k, v) for k, v in sorted(kinds.items(), key=str))))
    print("  per order: %.0f B written to storage by crier (/proc/PID/io write_bytes: pages dirtied, fsynced), %.0f B of log "
          "(stderr, the journal's input)" % (end["write_bytes"] / n, end["log_bytes"] / n))
    print("  data directory at the end: %d B in %d files (%d B allocated; %s, preallocated once, not counted)" % (
        end["data_bytes"], end["data_files"], end["data_alloc"], RESERVE))
    want, n_link = s.link_plan
    print("  link events: %d drops and server restarts (%d for this share of the year; at most one per %.2f s of wall time: "
          "the link's timeline %gx, see LINK_SPEED)" % (n_link, want, LINK_GAP_REAL_S / a.link_speed, a.link_speed))
    gaps = sum(1 for seg in segs for l in seg["log"] if ARTEFACT in l)
    print("  '%s' warnings: %d (the compression: splicing must keep up with a clock %gx real time; not in the log "
          "bytes)" % (ARTEFACT, gaps, a.speed))
    g = s.growth()
    if g:
        print("  long-lived pid %d: %d orders; anon %.1f -> %.1f MB (second vs last quarter after warm-up, %d orders apart; "
              "allowed +%.1f MB); slope %+.2f MB per 10 000 orders; RSS %.1f -> %.1f MB (peak %.1f); fds %s; threads %s" % (
                  g["pid"], g["orders_in_process"], g["anon_mid_kb"] / 1024, g["anon_end_kb"] / 1024, g["orders_between"],
                  g["allowed_kb"] / 1024, g["slope_kb_per_10k"] / 1024, g["rss_kb"][0] / 1024, g["rss_kb"][1] / 1024,
                  g["rss_kb"][2] / 1024, "%d -> %d" % tuple(g["fds"]), "%d -> %d" % tuple(g["threads"])))
    ss = [x for x in s.samples if x["phase"] == "orders"]
    if len(ss) >= 3:
        f, l = ss[0], ss[-2] if len(ss) > 3 else ss[-1]
        print("  first vs last sample: RSS %s -> %s MB, anon %s -> %s MB, fds %s -> %s, threads %s -> %s, CPU %.0f%% -> %.0f%%" % (
            f["rss_kb"] and round(f["rss_kb"] / 1024, 1), l["rss_kb"] and round(l["rss_kb"] / 1024, 1),
            f["anon_kb"] and round(f["anon_kb"] / 1024, 1), l["anon_kb"] and round(l["anon_kb"] / 1024, 1),
            f["fds"], l["fds"], f["threads"], l["threads"], 100 * f["cpu"], 100 * l["cpu"]))
    if idle:
        h = 3600 / idle["seconds"]
        print("  idle %.0f s (link up, music on): %d B written to storage (%.0f B per idle hour), data dir %+d B, files touched: %s; "
              "CPU %.1f%%; RSS %s -> %s kB" % (idle["seconds"], idle["write_bytes"], idle["write_bytes"] * h, idle["data_growth"],
                                               ", ".join(idle["files_touched"]) or "none", 100 * idle["cpu"], idle["rss_kb"][0],
                                               idle["rss_kb"][1]))
        if idle.get("device_bytes") is not None:
            print("  idle: the device (%s) took %d B (%.0f B per idle hour; anything else on that file system counts too)" % (
                a.block_dev, idle["device_bytes"], idle["device_bytes"] * h))
    p = getattr(s, "paced", None)
    if p:
        print("  at a shop's pace (%d orders, one every %.0f s, outbox file %d B): %.0f B written to storage per order%s" % (
            p["orders"], p["gap_s"], p["outbox_bytes"], p["write_bytes"] / p["orders"],
            "; the device (%s) took %.0f B per order, file system journal included" % (a.block_dev, p["device_bytes"] / p["orders"])
            if p.get("device_bytes") is not None else ""))
    if a.mqtt:
        print("  mqtt: %d final acks received again; %d orders answered more often than the harness published them "
              "(QoS 1 redeliveries by the broker: counted, not judged); %d orders published again by the harness" % (s.srv.dup_acks, len(getattr(s, "answered_again", [])), s.srv.republished))
    by = {}
    for fl in fails:
        by.setdefault(fl.invariant, []).append(fl)
    for inv, fl in sorted(by.items()):
        for x in fl[:3]:
            print("  " + x.render().replace("\n", "\n  "))
        if len(fl) > 3:
            print("  … and %d more %s failures" % (len(fl) - 3, inv))
    print("soak: %s" % ("FAIL [%s]" % ", ".join("%s×%d" % (k, len(v)) for k, v in sorted(by.items())) if fails else "ok"))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--orders", type=int, default=YEAR_ORDERS)
    ap.add_argument("--minutes", type=float, default=60, help="the order phase (then a quiet period and the idle measurement)")
    ap.add_argument("--mqtt", action="store_true", help="through mosquitto (a broker of its own on loopback)")
    ap.add_argument("--seed", type=int, default=None)
    ap.add_argument("--speed", type=float, default=100, help="CRIER_TEST_AUDIO_SPEED (default 100)")
    ap.add_argument("--link-speed", type=float, default=LINK_SPEED,
                    help="CRIER_TEST_LINK_SPEED: the reconnect backoff, the gap between link events and a server's "
                         "time down divided by this (default %g; 1: real pace, one link event per 12 s)" % LINK_SPEED)
    ap.add_argument("--sample-seconds", type=float, default=60)
    ap.add_argument("--idle-seconds", type=float, default=300, help="the idle measurement at the end (card wear)")
    ap.add_argument("--paced-orders", type=int, default=30, help="card wear at a shop's pace: orders said one by one at the end")
    ap.add_argument("--paced-gap", type=float, default=4.0, help="seconds between those orders")
    ap.add_argument("--ci", action="store_true", help="the CI step: 3000 orders in 2 min, samples every 5 s, 5 paced orders, 20 s idle")
    ap.add_argument("--data-dir", help="the daemon's data directory (state.path's); default: in the run's temp dir")
    ap.add_argument("--block-dev", help="block device under --data-dir (e.g. loop3): its written sectors are reported")
    ap.add_argument("--json", help="write the samples, summary and failures here")
    ap.add_argument("--keep", action="store_true")
    a = ap.parse_args()
    if a.ci:
        a.orders, a.minutes, a.sample_seconds, a.idle_seconds, a.paced_orders = 3000, 2, 5, 20, 5
    if a.seed is None:
        a.seed = int(time.time()) % 100000
    if not os.access(CRIER, os.X_OK):
        sys.exit("no crier binary at %s (swift build, or set CRIER_BIN)" % CRIER)
    if a.mqtt and not os.path.exists(MOSQUITTO):
        sys.exit("mosquitto is not installed (%s)" % MOSQUITTO)
    print("soak: %d orders over %.1f min (%.1f orders/s, %.0f days of a 300-a-day shop), speed %gx, seed %d, %s, %s, load %.1f" % (
        a.orders, a.minutes, a.orders / a.minutes / 60, a.orders / 300, a.speed, a.seed,
        "mqtt" if a.mqtt else "v1", CRIER, os.getloadavg()[0]), flush=True)
    s = Soak(a)
    try:
        fails, t_orders, idle, end = s.main()
    except BaseException:
        s.done.set()
        if s.daemon and s.daemon.alive():
            s.daemon.p.kill()
        if a.mqtt:
            s.srv.shutdown()
        raise
    report(s, fails, t_orders, idle, end)
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"args": vars(a), "samples": s.samples, "idle": idle, "paced": getattr(s, "paced", None), "counts": s.counts, "growth": s.growth(),
                       "finals": len(s.srv.final), "orders": len(s.srv.orders),
                       "segments": [{k: seg.get(k) for k in ("index", "end_kind", "rc", "stop_seconds")} for seg in s.rec["segments"]],
                       "failures": [x.render() for x in fails]}, f, indent=1, default=str)
    if fails or a.keep:
        rec = os.path.join(s.tmp, "soak-record.json")
        with open(rec, "w") as f:
            json.dump(s.rec, f, ensure_ascii=False, default=str)
        print("files kept in %s (record: %s; re-check: python3 Tests/chaos/chaos.py --check %s)" % (s.tmp, rec, rec))
    else:
        shutil.rmtree(s.tmp, ignore_errors=True)
        if a.data_dir:
            shutil.rmtree(a.data_dir, ignore_errors=True)
    sys.exit(1 if fails else 0)


if __name__ == "__main__":
    main()
