#!/usr/bin/env python3
"""Seeded chaos run (issue 13 item 18): a scripted order server on loopback, the real `crier run`
with ALSA's file plugin as its sound card, restarted, signalled and starved of its device at
random, then an invariant checker (checker.py) over everything the server saw and the daemon
logged and wrote to its device. docs/chaos.md says what it does and how to replay a seed.

    python3 Tests/chaos/chaos.py                 # CI: a few seeds, ~3-4 minutes
    python3 Tests/chaos/chaos.py --minutes 30    # longer
    python3 Tests/chaos/chaos.py --seed 1234     # replay one seed
"""
import argparse
import array
import json
import os
import random
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import checker  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(HERE))
CRIER = os.path.abspath(os.environ.get("CRIER_BIN") or os.path.join(ROOT, ".build", "debug", "crier"))


# ---------------------------------------------------------------- the scripted order server

class Server:
    """A protocol v1 order server that records every line it sends and receives (wall time),
    redelivers unacked orders after every welcome, and can be told to misbehave."""

    def __init__(self, rec):
        self.rec = rec
        self.lock = threading.RLock()
        self.orders = {}          # id -> order message (dict), in creation order
        self.final = {}           # id -> final status
        self.open = {}            # ids without a final status, in creation order (what sync walks:
                                  # the soak's 100 000 orders would make a walk of `orders` quadratic)
        self.cancelled = set()    # ids the server has cancelled (cancel resent after welcome)
        self.final_conn = {}      # id -> connection its first final ack came on
        self.conns = {}           # n -> Conn
        self.next_conn = 0
        self.port = None
        self.listener = None
        self.up = False
        self.listen()

    def log(self, conn, direction, msg=None, event=None):
        with self.lock:
            self.rec["server"].append({"t": time.time(), "conn": conn, "dir": direction, "msg": msg, "event": event})

    def listen(self):
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        end = time.monotonic() + 10
        while True:
            try:
                s.bind(("127.0.0.1", self.port or 0))
                break
            except OSError:
                if time.monotonic() > end:
                    raise
                time.sleep(0.1)
        s.listen(8)
        self.port = s.getsockname()[1]
        self.listener = s
        self.up = True
        self.log(None, "event", event="listening")
        threading.Thread(target=self._accept, args=(s,), daemon=True).start()

    def _accept(self, s):
        while True:
            try:
                c, _ = s.accept()
            except OSError:
                return
            with self.lock:
                self.next_conn += 1
                n = self.next_conn
                conn = Conn(self, n, c)
                self.conns[n] = conn
            self.log(n, "event", event="accepted")
            threading.Thread(target=conn.run, daemon=True).start()

    def stop(self):
        """A server restart's first half: listener and every connection gone."""
        with self.lock:
            self.up = False
            try:
                # shutdown first: close() alone leaves a thread blocked in accept() accepting.
                self.listener.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            try:
                self.listener.close()
            except OSError:
                pass
            for c in list(self.conns.values()):
                c.close("server_closed")
        self.log(None, "event", event="server_down")

    def close_all(self):
        with self.lock:
            for c in list(self.conns.values()):
                c.close("server_closed")

    def live(self):
        with self.lock:
            return [c for c in self.conns.values() if c.welcomed and not c.closed]

    def add(self, msg):
        with self.lock:
            self.orders[msg["id"]] = msg
            self.open[msg["id"]] = True
            self.rec["orders"][msg["id"]] = {"priority": msg.get("priority", 0), "kind": msg["kind"],
                                             "ttl": msg.get("ttl"), "created": time.time()}
            for c in self.live():
                c.sync()

    def duplicate(self, oid):
        with self.lock:
            for c in self.live():
                c.send(self.orders[oid])

    def cancel(self, oid):
        with self.lock:
            self.cancelled.add(oid)
            for c in self.live():
                c.send({"type": "cancel", "id": oid})

    def unacked(self):
        with self.lock:
            return [i for i in self.open if i not in self.final]

    def on_ack(self, conn, m):
        oid, st = m.get("id"), m.get("status")
        with self.lock:
            if oid not in self.orders:
                return
            if st == "rejected" and m.get("reason") in checker.NOT_FINAL_REASONS:
                # "The server may resend later": after 2 s on this connection.
                def again():
                    time.sleep(2)
                    with self.lock:
                        conn.sent.discard(oid)
                        if not conn.closed and oid not in self.final:
                            conn.sync()
                threading.Thread(target=again, daemon=True).start()
            elif st in checker.FINAL:
                self.final.setdefault(oid, st)
                self.open.pop(oid, None)
                self.final_conn.setdefault(oid, conn.n)


class Conn:
    def __init__(self, srv, n, sock):
        self.srv, self.n, self.sock = srv, n, sock
        self.welcomed = False
        self.closed = False
        self.quiet = False        # silence: reads but answers nothing
        self.deaf = False         # half-open: neither reads nor writes
        self.sent = set()
        self.cancels_sent = set()
        self.wlock = threading.Lock()

    def send(self, msg):
        if self.closed or self.quiet or self.deaf:
            return
        data = (json.dumps(msg, ensure_ascii=False, separators=(",", ":")) + "\n").encode()
        with self.wlock:
            try:
                self.sock.sendall(data)
            except OSError:
                self.close("device_closed")
                return
        self.srv.log(self.n, "send", msg)
        if msg.get("type") == "order":
            self.sent.add(msg["id"])
        elif msg.get("type") == "cancel":
            self.cancels_sent.add(msg["id"])

    def sync(self):
        """Cancels first (so a late delivery is acked cancelled), then every unacked order this
        connection has not carried yet, in creation order."""
        with self.srv.lock:
            if self.closed or self.quiet or self.deaf or not self.welcomed:
                return
            for oid in list(self.srv.open):
                if oid in self.srv.final or oid in self.sent:
                    continue
                if oid in self.srv.cancelled and oid not in self.cancels_sent:
                    self.send({"type": "cancel", "id": oid})
                self.send(self.srv.orders[oid])

    def close(self, why):
        with self.srv.lock:
            if self.closed:
                return
            self.closed = True
        try:
            self.sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self.sock.close()
        self.srv.log(self.n, "event", event=why)

    def run(self):
        buf = b""
        while not self.closed:
            if self.deaf:
                time.sleep(0.05)
                continue
            try:
                self.sock.settimeout(0.2)
                chunk = self.sock.recv(65536)
            except socket.timeout:
                continue
            except OSError:
                if not self.closed:
                    self.close("device_closed")
                return
            if not chunk:
                if not self.closed:
                    self.close("device_closed")
                return
            buf += chunk
            while b"\n" in buf:
                line, buf = buf.split(b"\n", 1)
                if not line.strip():
                    continue
                try:
                    m = json.loads(line)
                except ValueError:
                    m = {"type": "?", "raw": line.decode("utf-8", "replace")}
                self.srv.log(self.n, "recv", m)
                self.handle(m)

    def handle(self, m):
        t = m.get("type")
        if t == "hello":
            self.send({"type": "welcome"})
            self.welcomed = True
            self.srv.log(self.n, "event", event="welcome")
            self.sync()
        elif t == "ping" and not self.quiet:
            self.send({"type": "pong"})
        elif t == "ack":
            self.srv.on_ack(self, m)


# ---------------------------------------------------------------- the daemon

class Daemon:
    """One `crier run` process (a run segment): its log lines with wall times, its capture."""

    def __init__(self, run, index, device_ok=True):
        self.run, self.index = run, index
        # One directory per segment: a restart writes a new WAV, and the device "vanishes" by
        # its directory not being there yet (the file plugin cannot open its file).
        self.devdir = os.path.join(run.tmp, "dev-%d" % index)
        self.capture = os.path.join(self.devdir, "capture.wav")
        if device_ok:
            os.makedirs(self.devdir)
        run.write_alsa(self.capture)
        self.seg = {"index": index, "log": [], "speech": None, "capture_end": None, "start": time.time(), "end": None,
                    "end_kind": None, "kill_t": None, "stop_seconds": None, "rc": None, "sighup": [],
                    "alive_after_sighup": [], "idle": [], "capture": self.capture, "device_ok_at_start": device_ok}
        run.rec["segments"].append(self.seg)
        self.p = subprocess.Popen([CRIER, "run", "--config", run.conf], env=run.env, stdout=subprocess.DEVNULL,
                                  stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True, bufsize=1)
        self.lock = threading.Lock()
        self.exit_t = None
        threading.Thread(target=self._pump, daemon=True).start()
        threading.Thread(target=self._reap, daemon=True).start()

    def _reap(self):
        self.p.wait()
        self.exit_t = time.time()

    def _pump(self):
        for line in self.p.stderr:
            with self.lock:
                self.seg["log"].append(line.rstrip("\n"))

    def alive(self):
        return self.p.poll() is None

    def wait_log(self, pattern, timeout):
        rx = re.compile(pattern)
        end = time.monotonic() + timeout
        while time.monotonic() < end and self.alive():
            with self.lock:
                if any(rx.search(l) for l in self.seg["log"]):
                    return True
            time.sleep(0.05)
        return False

    def has(self, needle):
        with self.lock:
            return any(needle in l for l in self.seg["log"])

    def finish(self, kind, rc):
        for _ in range(100):  # the reaper thread notes the exit time
            if self.exit_t is not None:
                break
            time.sleep(0.01)
        self.seg["end"] = self.exit_t or time.time()
        self.seg["end_kind"] = kind
        self.seg["rc"] = rc

    def sigterm(self):
        if not self.alive():
            return self.finish("exit", self.p.returncode)
        t0 = time.monotonic()
        self.seg["stop_requested"] = time.time()
        self.p.send_signal(signal.SIGTERM)
        try:
            rc = self.p.wait(checker.STOP_S + 4)
            self.seg["stop_seconds"] = time.monotonic() - t0
        except subprocess.TimeoutExpired:
            self.p.kill()
            rc = self.p.wait()
        self.finish("sigterm", rc)

    def sigkill(self):
        if not self.alive():
            return self.finish("exit", self.p.returncode)
        self.seg["stop_requested"] = self.seg["kill_t"] = time.time()
        self.p.kill()
        self.finish("sigkill", self.p.wait())

    def sighup(self):
        if not self.alive():
            return
        self.seg["sighup"].append(time.time())
        self.p.send_signal(signal.SIGHUP)
        time.sleep(1.0)
        alive = self.alive()
        self.seg["alive_after_sighup"].append(alive)
        if not alive:
            self.seg["stop_requested"] = self.seg["sighup"][-1]

    def measure_idle(self, seconds, what):
        """CPU (fraction of one core) and RSS over `seconds`; nothing is asked of the daemon."""
        def sample():
            with open("/proc/%d/stat" % self.p.pid) as f:
                fields = f.read().rsplit(")", 1)[1].split()
            ticks = int(fields[11]) + int(fields[12])
            with open("/proc/%d/status" % self.p.pid) as f:
                rss = next(int(l.split()[1]) for l in f if l.startswith("VmRSS:"))
            return time.monotonic(), ticks, rss
        try:
            a = sample()
            time.sleep(seconds)
            b = sample()
        except (OSError, StopIteration):
            return
        hz = os.sysconf("SC_CLK_TCK")
        self.seg["idle"].append({"t": time.time(), "what": what, "seconds": b[0] - a[0],
                                 "cpu": (b[1] - a[1]) / hz / (b[0] - a[0]), "rss_kb": [a[2], b[2]]})


def read_capture(seg):
    """The segment's WAV as loud intervals in wall time. The timeline starts at the last
    `audio: opened` line (written after the first frames went to the device)."""
    path = seg["capture"]
    opened = [checker.parse_log_line(l) for l in seg["log"] if " audio: opened " in l]
    opened = [p for p in opened if p]
    if not opened or not os.path.exists(path):
        return
    t0 = opened[-1][0]
    with open(path, "rb") as f:
        data = f.read()
    if data[:4] != b"RIFF" or data[8:12] != b"WAVE":
        return
    pos, rate, ch = 12, None, None
    while pos + 8 <= len(data):
        cid, size = data[pos:pos + 4], int.from_bytes(data[pos + 4:pos + 8], "little")
        if cid == b"fmt ":
            ch = int.from_bytes(data[pos + 10:pos + 12], "little")
            rate = int.from_bytes(data[pos + 12:pos + 16], "little")
        elif cid == b"data":
            # The file plugin leaves the size at 0 until close (and a SIGKILL never closes).
            body = data[pos + 8:] if size in (0, 0xFFFFFFFF) or pos + 8 + size > len(data) else data[pos + 8:pos + 8 + size]
            body = body[:len(body) - len(body) % (2 * ch)]
            s = array.array("h")
            s.frombytes(body)
            left = s[0::ch]
            seg["speech"] = checker.speech_intervals(left, rate, t0, threshold=int(0.01 * 32768))
            seg["capture_start"] = t0
            seg["capture_end"] = t0 + len(left) / rate
            seg["capture_seconds"] = len(left) / rate
            return
        pos += 8 + size + (size & 1)


# ---------------------------------------------------------------- the scenario

ZH_WORDS = "请到前台取餐您的外卖已经送到欢迎光临本店今天特价商品在三号货架会员积分可以兑换礼品"
EN_WORDS = ["please", "come", "to", "the", "counter", "your", "order", "is", "ready", "thank", "you", "for", "waiting"]


def make_config(rng):
    hb = rng.choice([1, 2, 3, 5, 10])
    return {
        "heartbeat": hb,
        # on: every status prompt, link-down after 3 s; off: the shipped link-down prompt only
        # (issue 13 item 1's setting); none: no prompt at all.
        "prompts": rng.choice(["on", "off", "none"]),
        "coalesce_max": rng.choice([1, 3, 10]),
        "queue_max": rng.choice([6, 256]),
        "rate": rng.choice([260, 350, 450]),
        "start_unreachable": rng.random() < 0.4,
    }


class Run:
    def __init__(self, seed, duration, keep):
        self.seed, self.duration, self.keep = seed, duration, keep
        self.rng = random.Random(seed)
        # Picks among ids (a list whose length depends on timing) draw from their own stream, so
        # the script itself (which actions, when, with which parameters) is the seed's alone.
        self.pick = random.Random(seed * 7919 + 1)
        self.cfg = make_config(self.rng)
        self.tmp = tempfile.mkdtemp(prefix="crier-chaos-%d-" % seed)
        os.makedirs(os.path.join(self.tmp, "xdg", "alsa"))
        os.makedirs(os.path.join(self.tmp, "state"))
        self.env = dict(os.environ, XDG_CONFIG_HOME=os.path.join(self.tmp, "xdg"))
        self.env.pop("NOTIFY_SOCKET", None)
        self.rec = {"seed": seed, "config": self.cfg, "orders": {}, "server": [], "segments": [], "actions": []}
        self.srv = Server(self.rec)
        self.conf = os.path.join(self.tmp, "crier.conf")
        self.write_conf()
        self.n = 0
        self.daemon = None

    def write_alsa(self, capture):
        with open(os.path.join(self.tmp, "xdg", "alsa", "asoundrc"), "w") as f:
            f.write('pcm.!default { type file slave.pcm "null" file "%s" format "wav" }\n' % capture)

    def write_conf(self):
        c, t = self.cfg, self.tmp
        p = "on" if c["prompts"] == "on" else "off"
        with open(self.conf, "w") as f:
            f.write("\n".join([
                "server = tcp://127.0.0.1:%d" % self.srv.port,
                "device.id = chaos-box",
                "link.heartbeat = %d" % c["heartbeat"],
                "status.on_start = %s" % p,
                "status.on_link_up = %s" % p,
                "status.on_link_down = %s" % ("off" if c["prompts"] == "none" else "on"),
                "status.link_down_after = %d" % (3 if c["prompts"] == "on" else 30),
                "status.link_down_repeat = 10",
                "alert.coalesce_max = %d" % c["coalesce_max"],
                "queue.max = %d" % c["queue_max"],
                "speech.zh.rate = %d" % c["rate"],
                "speech.en.rate = %d" % c["rate"],
                "input = fifo:%s" % os.path.join(t, "buttons.fifo"),
                "state.path = %s" % os.path.join(t, "state", "state"),
                "control.socket = %s" % os.path.join(t, "control.sock"),
                "",
            ]))

    def act(self, what, **kw):
        e = dict(kw, t=time.time(), what=what)
        self.rec["actions"].append(e)

    def start_daemon(self, device_ok=True):
        self.n += 1
        self.daemon = Daemon(self, self.n - 1, device_ok=device_ok)

    # -- orders
    def new_id(self):
        self.oid = getattr(self, "oid", 0) + 1
        return "C%d-%d" % (self.seed, self.oid)

    def make_order(self, kind=None, priority=None, long=False):
        r = self.rng
        kind = kind or r.choice(["new_customer", "new_customer", "payment", "text"])
        m = {"type": "order", "id": self.new_id(), "kind": kind}
        if kind == "new_customer":
            m["number"] = r.randint(0, 999)
        elif kind == "payment":
            m["amount"] = "%d.%02d" % (r.randint(0, 9999), r.randint(0, 99))
        else:
            if r.random() < 0.5:
                n = r.randint(60, 120) if long else r.randint(4, 14)
                m["text"] = "".join(r.choice(ZH_WORDS) for _ in range(n))
            else:
                n = r.randint(40, 70) if long else r.randint(2, 6)
                m["text"] = " ".join(r.choice(EN_WORDS) for _ in range(n))
                m["lang"] = "en"
        if priority is None:
            priority = r.choice([0, 0, 0, 0, -5, 5, 10])
        if priority:
            m["priority"] = priority
        if r.random() < 0.15 and not long:
            m["ttl"] = r.choice([2, 5, 20])
        return m

    def order(self, **kw):
        m = self.make_order(**kw)
        self.act("order", id=m["id"], priority=m.get("priority", 0))
        self.srv.add(m)
        return m["id"]

    # -- the script
    def step(self):
        r = self.rng
        choices = [
            ("order", 34), ("duplicate", 6), ("cancel_waiting", 4), ("cancel_done", 2), ("cancel_future", 2),
            ("burst", 4), ("long_then_high", 3), ("silence", 2), ("half_open", 2), ("close", 3),
            ("server_restart", 2), ("sigterm", 3), ("sigkill", 3), ("sighup", 1), ("device_vanish", 2),
            ("ack_lost_restart", 2), ("sigterm_mid_long", 2), ("odd_order", 3), ("pause", 6),
        ]
        what = r.choices([c for c, _ in choices], [w for _, w in choices])[0]
        getattr(self, "do_" + what)()

    def do_order(self):
        self.order()

    def do_duplicate(self):
        # Unacked orders, or acked on a connection still up (the same daemon process, which
        # remembers the outcome). Re-sending an order acked to an earlier process is not a
        # redelivery but a reused id, which protocol.md forbids (section 3, `id`).
        live = {c.n for c in self.srv.live()}
        ids = [i for i in self.srv.orders if i not in self.srv.final or self.srv.final_conn.get(i) in live]
        if ids:
            oid = self.pick.choice(ids)
            self.act("duplicate", id=oid)
            self.srv.duplicate(oid)

    def do_cancel_waiting(self):
        ids = self.srv.unacked()
        if ids:
            oid = self.pick.choice(ids)
            self.act("cancel", id=oid)
            self.srv.cancel(oid)

    def do_cancel_done(self):
        # Only ones acked to this daemon process: the outcome memory is not promised to survive
        # a restart, and a server cancels what it believes is still pending.
        live = {c.n for c in self.srv.live()}
        ids = [i for i in self.srv.final if self.srv.final_conn.get(i) in live]
        if ids:
            oid = self.pick.choice(ids)
            self.act("cancel", id=oid)
            self.srv.cancel(oid)

    def do_cancel_future(self):
        """A cancel for an id the device has not seen, then that order: acked cancelled, not said."""
        m = self.make_order()
        self.act("cancel_future", id=m["id"])
        self.srv.cancel(m["id"])
        time.sleep(self.rng.uniform(0, 0.5))
        self.srv.add(m)

    def do_burst(self):
        n = self.rng.randint(4, 12 if self.cfg["coalesce_max"] > 1 else 6)
        self.act("burst", n=n)
        kind = self.rng.choice(["new_customer", None])
        for _ in range(n):
            self.order(kind=kind)

    def do_long_then_high(self):
        self.order(kind="text", priority=-5, long=True)
        time.sleep(self.rng.uniform(1.0, 3.0))
        self.order(priority=50)

    def quiet_seconds(self):
        """Longer than the device's 2 x heartbeat (it must notice) when that fits in a short
        script; with a long heartbeat, 2-8 s (it may keep the link)."""
        hb = self.cfg["heartbeat"]
        return 2 * hb + self.rng.uniform(0.5, 2) if hb <= 5 else self.rng.uniform(2, 8)

    def do_silence(self):
        """The server stops answering (pings included) for longer than the device's 2 × heartbeat:
        the device must notice and reconnect; redelivery follows."""
        d = self.quiet_seconds()
        self.act("silence", seconds=d)
        conns = self.srv.live()
        for c in conns:
            c.quiet = True
            self.srv.log(c.n, "event", event="silence_start")
        time.sleep(d)
        for c in conns:
            self.srv.log(c.n, "event", event="silence_end")
            c.quiet = False
            c.sync()

    def do_half_open(self):
        """Neither reads nor writes (a pulled cable), then closes."""
        d = self.quiet_seconds()
        self.act("half_open", seconds=d)
        conns = self.srv.live()
        for c in conns:
            c.deaf = True
            self.srv.log(c.n, "event", event="silence_start")
        time.sleep(d)
        for c in conns:
            self.srv.log(c.n, "event", event="silence_end")
            c.close("server_closed")

    def do_close(self):
        self.act("close")
        self.srv.close_all()

    def do_server_restart(self):
        d = self.rng.uniform(0.3, 4)
        self.act("server_restart", seconds=d)
        self.srv.stop()
        time.sleep(d)
        self.srv.listen()

    def do_sigterm(self):
        self.act("sigterm")
        self.daemon.sigterm()
        time.sleep(self.rng.uniform(0.1, 1.5))
        self.start_daemon()

    def do_sigkill(self):
        self.act("sigkill")
        self.daemon.sigkill()
        time.sleep(self.rng.uniform(0.1, 1.0))
        self.start_daemon()

    def do_sighup(self):
        self.act("sighup")
        # As `systemctl reload` does: systemd runs ExecReload (kill -HUP) only once the unit is
        # active, i.e. after READY=1. A SIGHUP in the first milliseconds of a process, before any
        # program can install a handler, kills it whatever the program does (seed 75946: sent
        # 0.10 s after a restart, nothing logged yet).
        self.wait_daemon_ready()
        self.daemon.sighup()
        if not self.daemon.alive():
            self.daemon.finish("sighup_death", self.daemon.p.returncode)
            self.start_daemon()

    def do_device_vanish(self):
        """The sound card is gone when the daemon starts (restart with the device directory
        missing), and comes back a few seconds later."""
        d = self.rng.uniform(1.5, 5)
        stop_while_gone = self.rng.random() < 0.4
        self.act("device_vanish", seconds=d, stop_while_gone=stop_while_gone)
        self.daemon.sigterm()
        self.start_daemon(device_ok=False)
        time.sleep(d)
        if stop_while_gone:
            # issue 13 item 3: SIGTERM must stop a daemon whose device is missing, within 6 s
            self.act("sigterm_while_device_gone")
            self.daemon.sigterm()
            self.start_daemon()
        else:
            os.makedirs(self.daemon.devdir, exist_ok=True)
            self.act("device_back")

    def do_ack_lost_restart(self):
        """An order said while the server is away (its ack held), then a clean restart of the
        daemon, then the server back: the redelivery must not be said again (issue 13 item 8)."""
        oid = self.order(kind="new_customer", priority=100)
        back_after = self.rng.uniform(0.2, 1.5)  # drawn first: the script must not depend on timing
        self.act("ack_lost_restart", id=oid)
        if not self.daemon.wait_log(r"saying ids=(\S+,)?%s[, ]" % re.escape(oid), 15):
            return
        self.srv.stop()
        self.daemon.wait_log(r"spoken id=%s " % re.escape(oid), 15)
        self.daemon.sigterm()
        self.start_daemon()
        time.sleep(back_after)
        self.srv.listen()

    def do_sigterm_mid_long(self):
        """SIGTERM about 1 s into a long announcement (issue 13 item 5): what was cut off must not
        be acked spoken."""
        if self.rng.random() < 0.5:
            oid = self.order(kind="text", priority=100, long=True)
        else:
            ids = [self.order(kind="new_customer", priority=100) for _ in range(self.rng.randint(4, 9))]
            oid = ids[0]
        into = self.rng.uniform(0.5, 1.5)
        self.act("sigterm_mid_long", id=oid)
        if self.daemon.wait_log(r"saying ids=(\S+,)?%s[, ]" % re.escape(oid), 15):
            time.sleep(into)
        self.do_sigterm()

    def do_odd_order(self):
        """An order that breaks a rule (acked rejected invalid_order, never said) or whose text
        has nothing to say (zero-width, bidi, emoji: issue 13 item 12)."""
        m = {"type": "order", "id": self.new_id()}
        r = self.rng.random()
        if r < 0.4:
            m.update(kind="new_customer", number=1000000)
        elif r < 0.6:
            m.update(kind="payment", amount="-1")
        else:
            m.update(kind="text", text=self.rng.choice(["\u200b\u200d\u2060", "\u202e\u202c", "\U0001F600\U0001F389", "\ufeff \u200b"]))
        self.act("odd_order", id=m["id"])
        self.srv.add(m)

    def do_pause(self):
        time.sleep(self.rng.uniform(0.5, 3))

    def wait_daemon_ready(self, timeout=20):
        end = time.monotonic() + timeout
        while time.monotonic() < end and self.daemon.alive() and not self.daemon.has(" INFO runtime: ready"):
            time.sleep(0.05)

    def main(self):
        t_start = time.monotonic()
        if self.cfg["start_unreachable"]:
            # Never reachable since start (issue 13 item 1): idle must stay idle.
            self.srv.stop()
            self.act("start_unreachable")
            self.start_daemon()
            self.wait_daemon_ready()
            time.sleep(1)
            self.daemon.measure_idle(4, "order server never reachable")
            self.srv.listen()
        else:
            self.start_daemon()
            self.wait_daemon_ready()
        end = time.monotonic() + self.duration
        while time.monotonic() < end:
            if not self.daemon.alive():
                self.daemon.finish("exit", self.daemon.p.returncode)
                self.act("daemon_died")
                self.start_daemon()
            self.step()
            time.sleep(self.rng.expovariate(1 / 0.8))
        # The final quiet period: the server up and answering, the daemon running, until every
        # order has a final ack (or the time it could take has passed).
        self.act("quiet")
        if not self.srv.up:
            self.srv.listen()
        for c in self.srv.live():
            c.quiet = False
        if not self.daemon.alive():
            self.daemon.finish("exit", self.daemon.p.returncode)
            self.start_daemon()
        limit = time.monotonic() + 45 + 3 * len(self.srv.unacked())
        while time.monotonic() < limit and self.srv.unacked():
            if not self.daemon.alive():
                self.daemon.finish("exit", self.daemon.p.returncode)
                self.start_daemon()
            time.sleep(0.25)
        time.sleep(1.5 + min(2 * self.cfg["heartbeat"], 6))  # late acks, prompts, a ping or two
        self.daemon.measure_idle(4, "after the run, link up, nothing queued")
        self.act("final_sigterm")
        self.daemon.sigterm()
        self.srv.stop()
        for seg in self.rec["segments"]:
            read_capture(seg)
        self.rec["wall_seconds"] = time.monotonic() - t_start
        return checker.check(self.rec)


def _step_name(a):
    w = a["what"]
    if w == "order":
        return "order(p%d)" % a.get("priority", 0)
    if w == "burst":
        return "burst(%d)" % a["n"]
    if "seconds" in a:
        return "%s(%.1fs)" % (w, a["seconds"])
    return w


def run_one(seed, duration, keep, out):
    run = Run(seed, duration, keep)
    c = run.cfg
    print("== seed %d: heartbeat=%ds prompts=%s coalesce_max=%d queue.max=%d rate=%d start_unreachable=%s" % (
        seed, c["heartbeat"], c["prompts"], c["coalesce_max"], c["queue_max"], c["rate"],
        c["start_unreachable"]), flush=True)
    try:
        fails = run.main()
    except Exception as e:  # the harness itself: report, do not hide
        if run.daemon and run.daemon.alive():
            run.daemon.p.kill()
        run.srv.stop()
        fails = [checker.Failure("harness", None, "%s: %s" % (type(e).__name__, e))]
    acts = {}
    for a in run.rec["actions"]:
        acts[a["what"]] = acts.get(a["what"], 0) + 1
    finals = {}
    for st in run.srv.final.values():
        finals[st] = finals.get(st, 0) + 1
    print("   %d orders (%s), %d segments, %.0f s; actions: %s" % (
        len(run.rec["orders"]), ", ".join("%s %d" % kv for kv in sorted(finals.items())) or "none acked",
        len(run.rec["segments"]), run.rec.get("wall_seconds", 0),
        " ".join("%s=%d" % kv for kv in sorted(acts.items()))), flush=True)
    print("   script: " + " ".join(_step_name(a) for a in run.rec["actions"]), flush=True)
    path = os.path.join(out, "chaos-%d.json" % seed)
    with open(path, "w") as f:
        json.dump(run.rec, f, ensure_ascii=False, indent=None, default=str)
    by_inv = {}
    for fl in fails:
        by_inv.setdefault(fl.invariant, []).append(fl)
    for inv, fl in sorted(by_inv.items()):
        for x in fl[:3]:
            print("   " + x.render().replace("\n", "\n   "))
        if len(fl) > 3:
            print("   … and %d more %s failures" % (len(fl) - 3, inv))
    verdict = "FAIL [%s]" % ", ".join("%s×%d" % (k, len(v)) for k, v in sorted(by_inv.items())) if fails else "ok"
    print("-- seed %d: %s (record: %s; replay: scripts/chaos.sh --seed %d)" % (seed, verdict, path, seed), flush=True)
    if not keep and not fails:
        shutil.rmtree(run.tmp, ignore_errors=True)
    else:
        print("   files kept in %s" % run.tmp)
    return not fails, sorted(by_inv)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seed", type=int, action="append", help="run this seed (repeatable); default: seeds from the clock")
    ap.add_argument("--minutes", type=float, default=3.5, help="total budget; seeds are run until it is spent (default 3.5)")
    ap.add_argument("--scenario-seconds", type=float, default=30, help="chaos phase of one seed, before its quiet period")
    ap.add_argument("--keep", action="store_true", help="keep every run's files, not only failed ones")
    ap.add_argument("--out", default=None, help="directory for the JSON records (default: a temp dir)")
    ap.add_argument("--check", metavar="RECORD", action="append",
                    help="re-check a JSON record written by an earlier run (no daemon is started)")
    a = ap.parse_args()
    if a.check:
        bad = 0
        for path in a.check:
            with open(path) as f:
                fails = checker.check(json.load(f))
            bad += bool(fails)
            for x in fails:
                print(x.render())
            print("-- %s: %s" % (path, "FAIL [%s]" % ", ".join(sorted({x.invariant for x in fails})) if fails else "ok"))
        print("%d passed, %d failed" % (len(a.check) - bad, bad))
        sys.exit(1 if bad else 0)
    if not os.access(CRIER, os.X_OK):
        sys.exit("no crier binary at %s (swift build, or set CRIER_BIN)" % CRIER)
    out = a.out or tempfile.mkdtemp(prefix="crier-chaos-records-")
    os.makedirs(out, exist_ok=True)
    results = []
    if a.seed:
        for s in a.seed:
            results.append((s,) + run_one(s, a.scenario_seconds, a.keep, out))
    else:
        base = int(time.time()) % 100000
        end = time.monotonic() + a.minutes * 60
        k = 0
        # A seed takes the chaos phase plus its quiet period (~60-80 s): start one only if it fits.
        while not results or time.monotonic() + a.scenario_seconds + 30 < end:
            results.append((base + k,) + run_one(base + k, a.scenario_seconds, a.keep, out))
            k += 1
    passed = sum(1 for _, ok, _ in results if ok)
    failed = len(results) - passed
    for s, ok, invs in results:
        if not ok:
            print("failed: seed %d: %s" % (s, ", ".join(invs)))
    print("%d passed, %d failed" % (passed, failed))
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
