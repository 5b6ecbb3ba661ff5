"""The daemon end to end: `crier run` + `crier-sim order-sim` (or a raw socket server) on loopback,
ALSA's file plugin as the sound card."""
import json
import os
import re
import select
import signal
import socket
import subprocess
import threading
import time

import pytest

from conftest import CRIER, SIM, first_loud, read_wav, rms


class Proc:
    """A child process whose stdout/stderr lines are collected by threads (no pipe ever fills)."""

    def __init__(self, args, env=None, stdin=False):
        self.p = subprocess.Popen(args, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                  stdin=subprocess.PIPE if stdin else subprocess.DEVNULL, bufsize=1)
        self.out, self.err = [], []
        self.lock = threading.Lock()
        for stream, sink in ((self.p.stdout, self.out), (self.p.stderr, self.err)):
            threading.Thread(target=self._pump, args=(stream, sink), daemon=True).start()

    def _pump(self, stream, sink):
        for line in stream:
            with self.lock:
                sink.append((time.monotonic(), line.rstrip("\n")))

    def lines(self, which="err"):
        with self.lock:
            return [l for _, l in (self.err if which == "err" else self.out)]

    def wait_for(self, pattern, which="err", timeout=20, count=1):
        rx = re.compile(pattern)
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            hits = [l for l in self.lines(which) if rx.search(l)]
            if len(hits) >= count:
                return hits
            if self.p.poll() is not None and which == "err":
                break
            time.sleep(0.02)
        raise AssertionError("timed out waiting for %r (%s); last lines:\n%s" % (
            pattern, which, "\n".join(self.lines("err")[-30:] + self.lines("out")[-30:])))

    def send(self, line):
        self.p.stdin.write(line + "\n")
        self.p.stdin.flush()

    def stop(self, sig=signal.SIGTERM, timeout=10):
        if self.p.poll() is None:
            self.p.send_signal(sig)
        try:
            return self.p.wait(timeout)
        except subprocess.TimeoutExpired:
            self.p.kill()
            return self.p.wait()


def order_sim(*args, state=None):
    a = [SIM, "order-sim", "--host", "127.0.0.1", "--port", "0", "--every", "0", *args]
    if state:
        a += ["--state", state]
    p = Proc(a, stdin=True)
    line = p.wait_for(r"^listening addr=", which="out")[0]
    p.port = int(line.rsplit(":", 1)[1].split()[0])
    return p


def crier_run(box, port, extra=""):
    box.write_conf("server = tcp://127.0.0.1:%d\ndevice.id = test-box\nstatus.on_start = off\n"
                   "status.on_link_up = off\ninput = fifo:%s\nstate.path = %s\ncontrol.socket = %s\n%s" % (
                       port, box.tmp / "buttons.fifo", box.tmp / "state", box.tmp / "control.sock", extra))
    p = Proc([CRIER, "run", "--config", box.conf], env=box.env)
    p.wait_for(r" INFO runtime: ready")
    return p


def test_order_is_spoken_acked_and_heard(box):
    sim = order_sim()
    crier = crier_run(box, sim.port)
    try:
        crier.wait_for(r"INFO link: connected server=tcp://127\.0\.0\.1")
        # The device has taken 250 ms of keep-alive by then: the speech must come after it.
        crier.wait_for(r"INFO audio: opened device=default type=FILE")
        sim.send("42")
        oid = sim.wait_for(r"^order id=\S+ kind=new_customer number=42", which="out")[0].split()[1][3:]
        sim.wait_for(r"^ack id=%s status=spoken" % re.escape(oid), which="out", timeout=30)
        crier.wait_for(r"INFO alert: spoken id=%s text=新客户来了，四十二号" % re.escape(oid))
        st = json.loads(subprocess.run([CRIER, "status", "--config", box.conf, "--json"],
                                       capture_output=True, text=True).stdout)
        assert {c["name"]: c["state"] for c in st["components"]} == {
            "audio": "running", "speech": "running", "link": "running", "buttons": "running"}
        assert st["link"]["state"] == "up" and st["last_alerts"][-1]["id"] == oid
    finally:
        rc = crier.stop()
        sim.stop()
    assert rc == 0
    rate, ch, x = read_wav(box.capture)
    start = first_loud(x)
    assert start is not None and rate == 48000
    assert start > rate * 0.24, "keep-alive silence before the speech"
    assert rms(x[start:start + rate]) > 0.01
    assert max(abs(v) for v in x) < 0.75


def test_sigterm_during_an_alert_finishes_it_and_acks(box):
    sim = order_sim()
    crier = crier_run(box, sim.port)
    try:
        crier.wait_for(r"INFO link: connected")
        # Shorter than the 5 s grace period, so it is said in full and acked (one cut by the
        # grace period is not acked: test_speaker.py).
        sim.send("关机前会把这句话说完。")
        oid = sim.wait_for(r"^order id=", which="out")[0].split()[1][3:]
        crier.wait_for(r"INFO alert: saying ids=" + re.escape(oid))
        said = crier.wait_for(r"INFO alert: synthesized ids=" + re.escape(oid))[0]
        assert float(re.search(r"seconds=([\d.]+)", said).group(1)) < 4.5, said
        time.sleep(0.2)
        t0 = time.monotonic()
        rc = crier.stop(signal.SIGTERM)
        took = time.monotonic() - t0
        sim.wait_for(r"^ack id=%s status=spoken" % re.escape(oid), which="out", timeout=5)
    finally:
        sim.stop()
    assert rc == 0
    assert took < 6.0, "exit within 6 s, took %.1f" % took
    err = "\n".join(crier.lines())
    assert "INFO runtime: stopping current=" + oid in err, err
    assert "INFO alert: spoken id=" + oid in err
    assert "INFO audio: closed" in err


def test_order_with_nothing_to_say_is_rejected_not_spoken(box):
    # Issue 13 item 12: zero-width, bidi and emoji only used to be acked `spoken` after 0 s of audio.
    sim = order_sim()
    crier = crier_run(box, sim.port)
    try:
        crier.wait_for(r"INFO link: connected")
        sim.send("\u200b\u202e\u2066😀👍🏽\u2069")
        oid = sim.wait_for(r"^order id=\S+ kind=text", which="out")[0].split()[1][3:]
        sim.wait_for(r"^ack id=%s status=rejected .*reason=nothing_to_say" % re.escape(oid), which="out", timeout=10)
        crier.wait_for(r"WARN alert: rejected id=%s .*reason=nothing_to_say.*kind=text" % re.escape(oid))
        sim.send("7")  # the box goes on speaking what can be said
        oid2 = sim.wait_for(r"^order id=\S+ kind=new_customer number=7", which="out")[0].split()[1][3:]
        sim.wait_for(r"^ack id=%s status=spoken" % re.escape(oid2), which="out", timeout=30)
    finally:
        crier.stop()
        sim.stop()
    assert not [l for l in sim.lines("out") if re.match(r"^ack id=%s status=spoken" % re.escape(oid), l)]
    assert not [l for l in crier.lines() if "spoken id=%s " % oid in l]


class RawServer:
    """A misbehaving order server: scripted per connection."""

    def __init__(self):
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(4)
        self.port = self.sock.getsockname()[1]

    def accept(self, timeout=20):
        self.sock.settimeout(timeout)
        c, _ = self.sock.accept()
        c.settimeout(timeout)
        return Conn(c)


class Conn:
    def __init__(self, c):
        self.c = c
        self.buf = b""

    def send(self, data):
        self.c.sendall(data)

    def read_msg(self, timeout=20):
        end = time.monotonic() + timeout
        while b"\n" not in self.buf:
            left = end - time.monotonic()
            if left <= 0:
                raise AssertionError("no message from client")
            r, _, _ = select.select([self.c], [], [], left)
            if r:
                chunk = self.c.recv(65536)
                if not chunk:
                    raise EOFError
                self.buf += chunk
        line, self.buf = self.buf.split(b"\n", 1)
        return json.loads(line)

    def read_until(self, pred, timeout=20):
        seen = []
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            m = self.read_msg(end - time.monotonic())
            seen.append(m)
            if pred(m):
                return seen
        raise AssertionError("not seen; got %r" % seen)


def order(oid, n):
    return (json.dumps({"type": "order", "id": oid, "kind": "new_customer", "number": n}) + "\n").encode()


def test_misbehaving_server(box):
    srv = RawServer()
    crier = crier_run(box, srv.port, "link.heartbeat = 1\nspeech.zh.rate = 400\n")
    try:
        # Connection 1: garbage, a bad order, then an over-long line.
        c = srv.accept()
        hello = c.read_msg()
        # no token sent (none configured); software: the version, for the server's fleet view;
        # power and last_start (issue 35: extra fields; temp_c only where there is a sensor)
        health = {k: hello.pop(k) for k in ("power", "temp_c", "last_start") if k in hello}
        assert hello == {"type": "hello", "protocol": 1, "device": "test-box", "software": hello["software"]} and hello["software"]
        assert health.get("last_start") == "first" and health.get("power"), health
        c.send(b'{"type":"welcome"}\n')
        c.send(b"this is not json\n")
        err = c.read_until(lambda m: m.get("type") == "error")[-1]
        assert err["code"] == "bad_message"
        c.send(b'{"type":"order","id":"X-1","kind":"new_customer"}\n')  # no number
        msgs = c.read_until(lambda m: m.get("type") == "ack" and m.get("id") == "X-1")
        assert msgs[-1]["status"] == "rejected"
        c.send(b'{"type":"order","id":"A-1","kind":"new_customer","number":1}\n')
        c.read_until(lambda m: m.get("type") == "ack" and m.get("id") == "A-1", timeout=30)
        c.send(b"x" * 20000 + b"\n")
        # The client closes and reconnects.
        c2 = srv.accept()
        assert c2.read_msg()["type"] == "hello"
        c2.send(b'{"type":"welcome"}\n')
        c2.send(b'{"type":"order","id":"B-\xff","kind":"text","text":"x"}\n')  # invalid UTF-8
        e2 = c2.read_until(lambda m: m.get("type") == "error")[-1]
        assert e2["code"] == "bad_message"
        for b in order("A-2", 2):  # one byte at a time
            c2.send(bytes([b]))
            time.sleep(0.001)
        c2.send(b'{"type":"surprise","x":1}\n')  # unknown type: ignored
        c2.read_until(lambda m: m.get("type") == "ack" and m.get("id") == "A-2", timeout=30)
        # Silence (half-open): heartbeat 1 s, so pings then a reconnect after ~2 s.
        # Usually a ping comes first; on a slow machine the 2 s limit can pass while the client
        # is still busy, so the close may come before any ping. Either way it must reconnect.
        try:
            c2.read_until(lambda m: m.get("type") == "ping", timeout=5)
        except EOFError:
            pass
        c3 = srv.accept(timeout=10)
        assert c3.read_msg()["type"] == "hello"
        c3.send(b'{"type":"welcome"}\n')
        # Redeliver both: acked spoken again, not spoken twice.
        c3.send(order("A-1", 1) + order("A-2", 2))
        # The outbox's unconfirmed acks may come first (right after the welcome): read both.
        acks = c3.read_until(lambda m: m.get("type") == "ack" and m.get("id") == "A-2")
        if not any(m.get("type") == "ack" and m.get("id") == "A-1" for m in acks):
            acks += c3.read_until(lambda m: m.get("type") == "ack" and m.get("id") == "A-1")
        assert {(m["id"], m["status"]) for m in acks if m.get("type") == "ack"} >= {("A-1", "spoken"), ("A-2", "spoken")}
    finally:
        rc = crier.stop()
    assert rc == 0
    err = "\n".join(crier.lines())
    assert err.count("INFO alert: spoken id=A-1") == 1
    assert err.count("INFO alert: spoken id=A-2") == 1
    assert "alert: spoken id=X-1" not in err
    assert re.search(r"ERROR link: bad message from server; closing the connection .*line longer than 16384 bytes", err), err[-3000:]
    assert re.search(r"WARN link: connection lost .*no data from server for 2\.0 s \(heartbeat 1 s\)", err), err[-3000:]


def test_server_killed_before_the_ack_then_restarted(box):
    state = str(box.tmp / "sim-state")
    sim = order_sim(state=state)
    port = sim.port
    crier = crier_run(box, port)
    try:
        crier.wait_for(r"INFO link: connected")
        sim.send("7")
        oid = sim.wait_for(r"^order id=", which="out")[0].split()[1][3:]
        crier.wait_for(r"INFO alert: queued id=" + re.escape(oid))
        sim.stop(signal.SIGKILL)  # dies while the alert is being said: the ack cannot reach it
        crier.wait_for(r"INFO alert: spoken id=" + re.escape(oid), timeout=20)
        sim2 = Proc([SIM, "order-sim", "--host", "127.0.0.1", "--port", str(port), "--every", "0",
                     "--state", state], stdin=True)
        try:
            sim2.wait_for(r"^ack id=%s status=spoken" % re.escape(oid), which="out", timeout=40)
        finally:
            sim2.stop()
    finally:
        crier.stop()
    err = "\n".join(crier.lines())
    assert err.count("INFO alert: spoken id=" + oid) == 1, "spoken exactly once"


def vmrss_kb(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])


def test_burst_of_10000_orders_every_id_acked(box):
    sim = Proc([SIM, "order-sim", "--host", "127.0.0.1", "--port", "0", "--rate", "100000", "--count", "10000",
                "--no-stdin", "--drain-timeout", "120"] if False else
               [SIM, "order-sim", "--host", "127.0.0.1", "--port", "0", "--rate", "100000", "--count", "10000",
                "--no-stdin"])
    line = sim.wait_for(r"^listening addr=", which="out")[0]
    port = int(line.rsplit(":", 1)[1].split()[0])
    crier = crier_run(box, port, "queue.max = 20\nalert.coalesce_max = 20\nspeech.zh.rate = 450\n")
    try:
        before = vmrss_kb(crier.p.pid)
        rc = sim.p.wait(timeout=120)
        after = vmrss_kb(crier.p.pid)
    finally:
        crier.stop()
    done = sim.wait_for(r"^done ", which="out")[0]
    assert "unacked=0" in done, done
    assert rc == 0
    m = dict(kv.split("=") for kv in done.split()[1:])
    assert int(m["orders"]) == 10000
    assert int(m["spoken"]) + int(m["rejected"]) == 10000
    assert int(m["spoken"]) >= 20
    print("\nburst: %s; crier RSS %d kB -> %d kB (+%d kB)" % (done, before, after, after - before))
    assert after - before < 10 * 1024
    err = "\n".join(crier.lines())
    assert "reason=queue_full" in err
    # Limited per reason, not per order: a few lines, and their counts add up to every reject.
    rejected = [l for l in crier.lines() if " WARN alert: rejected " in l]
    accounted = sum(int(x.group(1)) if x else 1
                    for x in (re.search(r"\(repeated (\d+) times?\)", l) for l in rejected))
    print("burst: %d rejects in %d log lines" % (int(m["rejected"]), len(rejected)))
    assert len(rejected) <= 6, rejected
    assert accounted == int(m["rejected"]), rejected


def test_idle_keepalive_cpu_on_null_pcm(box):
    """Prints (does not assert) the CPU of 10 s of keep-alive on the self-paced null PCM; asserts
    the stream ran the whole time at the real rate."""
    box.write_conf("audio.device = null\nstatus.on_start = off\ninput = fifo:%s\nstate.path = %s\n" % (
        box.tmp / "b.fifo", box.tmp / "state"))
    crier = Proc([CRIER, "run", "--config", box.conf], env=box.env)
    crier.wait_for(r"INFO audio: opened device=null type=NULL")
    tick = os.sysconf("SC_CLK_TCK")

    def cpu():
        with open("/proc/%d/stat" % crier.p.pid) as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / tick

    def switches():
        total = 0
        for t in os.listdir("/proc/%d/task" % crier.p.pid):
            try:
                with open("/proc/%d/task/%s/status" % (crier.p.pid, t)) as f:
                    for line in f:
                        if "ctxt_switches" in line:
                            total += int(line.split()[1])
            except FileNotFoundError:
                pass
        return total

    c0, s0, t0 = cpu(), switches(), time.monotonic()
    time.sleep(10)
    c1, s1, t1 = cpu(), switches(), time.monotonic()
    assert crier.p.poll() is None, "still running"
    rc = crier.stop()
    assert rc == 0
    print("\nidle keep-alive on null PCM: %.2f %% of one core, %.0f context switches/s over %.1f s" % (
        100 * (c1 - c0) / (t1 - t0), (s1 - s0) / (t1 - t0), t1 - t0))
    assert (c1 - c0) / (t1 - t0) < 0.5, "nowhere near spinning a core"


def test_link_down_prompt_is_spoken_and_no_order_is_needed_to_start(box):
    # Nothing listens on this port: the link keeps retrying, the box says so.
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    box.write_conf("server = tcp://127.0.0.1:%d\nstatus.link_down_after = 1\ninput = fifo:%s\nstate.path = %s\n" % (
        port, box.tmp / "b.fifo", box.tmp / "state"))
    crier = Proc([CRIER, "run", "--config", box.conf], env=box.env)
    try:
        crier.wait_for(r"INFO runtime: said prompt=started text=音箱已启动")
        crier.wait_for(r"WARN link: cannot reach order server")
        crier.wait_for(r"INFO runtime: said prompt=link_down text=服务连接失败，请检查网络", timeout=20)
    finally:
        rc = crier.stop()
    assert rc == 0
    err = "\n".join(crier.lines())
    assert len(re.findall(r"WARN link: cannot reach", err)) == 1, "logged once, not per retry"
    rate, _, x = read_wav(box.capture)
    assert first_loud(x) is not None


# serial: asserts the watchdog cadence (0.3-0.8 of WATCHDOG_USEC).
@pytest.mark.serial
def test_systemd_notify_ready_status_watchdog_stopping_and_status_socket(box):
    sock_path = str(box.tmp / "notify.sock")
    ns = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    ns.bind(sock_path)
    ns.settimeout(0.2)
    ctl = str(box.tmp / "control.sock")
    box.write_conf("audio.device = null\nstatus.on_start = off\ninput = fifo:%s\nstate.path = %s\ncontrol.socket = %s\n" % (
        box.tmp / "b.fifo", box.tmp / "state", ctl))
    env = dict(box.env, NOTIFY_SOCKET=sock_path, WATCHDOG_USEC="1000000")
    t0 = time.monotonic()
    crier = Proc([CRIER, "run", "--config", box.conf], env=env)
    got = []
    try:
        end = time.monotonic() + 20
        while time.monotonic() < end and sum(1 for _, m in got if "WATCHDOG=1" in m) < 4:
            try:
                got.append((time.monotonic(), ns.recv(4096).decode()))
            except socket.timeout:
                pass
        status = subprocess.run([CRIER, "status", "--config", box.conf, "--json"], capture_output=True, text=True)
        say = subprocess.run([CRIER, "say", "--config", box.conf, "你好"], capture_output=True, text=True, env=box.env)
        crier.wait_for(r"INFO runtime: said on request text=你好")
        crier.p.send_signal(signal.SIGTERM)
        end = time.monotonic() + 10
        while time.monotonic() < end and not any("STOPPING=1" in m for _, m in got):
            try:
                got.append((time.monotonic(), ns.recv(4096).decode()))
            except socket.timeout:
                pass
    finally:
        rc = crier.stop()
        ns.close()
    msgs = [m for _, m in got]
    ready = [t for t, m in got if "READY=1" in m]
    assert ready, msgs
    print("\nexec -> READY=1: %.0f ms" % ((ready[0] - t0) * 1000))
    assert any("STATUS=" in m for m in msgs)
    pets = [t for t, m in got if "WATCHDOG=1" in m]
    assert len(pets) >= 4, msgs
    first = pets[:4]  # received while the test was only listening
    gaps = [b - a for a, b in zip(first, first[1:])]
    assert all(0.3 < g < 0.8 for g in gaps), gaps  # half of WATCHDOG_USEC
    assert "STOPPING=1" in msgs[-1] or any("STOPPING=1" in m for m in msgs)
    assert rc == 0
    st = json.loads(status.stdout)
    assert st["healthy"] is True and {c["name"] for c in st["components"]} == {"audio", "speech", "buttons"}
    assert say.returncode == 0 and "sent to the running daemon" in say.stderr


def test_stalled_audio_thread_is_replaced_then_the_process_gives_up(box):
    """An ALSA device that stops taking data (a pipe nobody reads: writei blocks forever) stalls
    the audio thread. The supervisor notices within the stall deadline, starts a fresh engine,
    and when stalls go on past the restart intensity the process exits non-zero for systemd."""
    alsa = box.tmp / "xdg" / "alsa" / "asoundrc"
    # A sleep only this test starts (its length names it), so the clean-up kills nothing else's.
    stuck = "sleep 600.%d" % os.getpid()
    alsa.write_text(alsa.read_text() + 'pcm.stuck { type file slave.pcm "null" file "|exec %s" format "raw" }\n' % stuck)
    box.write_conf("audio.device = stuck\nstatus.on_start = off\ninput = fifo:%s\nstate.path = %s\n"
                   "control.socket = %s\nsupervisor.max_restarts = 2\nsupervisor.restart_window = 120\n" % (
                       box.tmp / "b.fifo", box.tmp / "state", box.tmp / "c.sock"))
    t0 = time.monotonic()
    crier = Proc([CRIER, "run", "--config", box.conf], env=box.env)
    try:
        crier.wait_for(r"WARN supervisor: restarting component=audio reason=stalled", timeout=30)
        crier.wait_for(r"ERROR runtime: audio thread stalled; starting a new audio engine")
        rc = crier.p.wait(timeout=90)
    finally:
        crier.stop(signal.SIGKILL)
        subprocess.run(["pkill", "-f", "^" + stuck.replace(".", "[.]") + "$"], capture_output=True)
    took = time.monotonic() - t0
    err = "\n".join(crier.lines())
    print("\nstall → exit after %.1f s; restarts logged: %d" % (took, err.count("restarting component=audio")))
    assert rc == 1, err[-2000:]
    assert "ERROR supervisor: restart intensity exceeded" in err, err[-2000:]
    assert "giving up; exiting so systemd restarts the whole process" in err, err[-2000:]
