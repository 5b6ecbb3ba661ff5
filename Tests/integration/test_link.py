"""Issue 13, items 7 and 8 with the real binary: the heartbeat under a backlog of acks, and
exactly once across a restart (clean SIGTERM and SIGKILL as a power cut)."""
import json
import re
import subprocess
import os
import re
import signal
import socket
import threading
import time

import pytest

from conftest import CRIER, SIM, read_wav, rms
from test_daemon import Proc, crier_run, order_sim


class PingOnlyServer:
    """Sends `count` orders at `rate`/s after the welcome, then only answers pings (the
    issue's backlog). Counts connections, acks and pings; acks are not answered."""

    def __init__(self, count, rate):
        self.count, self.rate = count, rate
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(4)
        self.port = self.sock.getsockname()[1]
        self.connections = 0
        self.pings = 0
        self.acks = {}
        self.closed_after = []
        self.lock = threading.Lock()
        self.stop = False
        threading.Thread(target=self.run, daemon=True).start()

    def run(self):
        self.sock.settimeout(0.2)
        while not self.stop:
            try:
                c, _ = self.sock.accept()
            except socket.timeout:
                continue
            with self.lock:
                self.connections += 1
            self.serve(c)

    def serve(self, c):
        t0 = time.monotonic()
        c.settimeout(0.01)
        buf = b""
        sent = 0
        welcomed = False
        while not self.stop:
            if welcomed and sent < self.count and sent < (time.monotonic() - t_w) * self.rate:
                sent += 1
                c.sendall(json.dumps({"type": "order", "id": "P-%d" % sent, "kind": "new_customer",
                                      "number": sent % 100}).encode() + b"\n")
                continue
            try:
                data = c.recv(65536)
            except socket.timeout:
                continue
            except OSError:
                data = b""
            if not data:
                with self.lock:
                    self.closed_after.append(time.monotonic() - t0)
                c.close()
                return
            buf += data
            while b"\n" in buf:
                line, buf = buf.split(b"\n", 1)
                m = json.loads(line)
                if m["type"] == "hello":
                    c.sendall(b'{"type":"welcome"}\n')
                    welcomed, t_w = True, time.monotonic()
                elif m["type"] == "ping":
                    with self.lock:
                        self.pings += 1
                    c.sendall(b'{"type":"pong"}\n')
                elif m["type"] == "ack":
                    with self.lock:
                        self.acks[m["id"]] = self.acks.get(m["id"], 0) + 1
        c.close()


def test_backlog_acked_to_a_ping_only_server_keeps_the_link_up(box):
    """Issue 13 item 7: 64 acks, 0 pings, closed at 2x heartbeat. Now: pings go out while the
    box acks, and the one connection stays up until every order is acked."""
    # One order per alert, each said in about a second: an ack goes out more often than the
    # heartbeat, for much longer than 2 x heartbeat (the case that killed the link).
    count = int(os.environ.get("CRIER_BACKLOG", "15"))
    heartbeat = float(os.environ.get("CRIER_BACKLOG_HEARTBEAT", "3"))
    srv = PingOnlyServer(count=count, rate=100)
    t0 = time.monotonic()
    crier = crier_run(box, srv.port, "link.heartbeat = %g\nspeech.zh.rate = 450\nalert.coalesce_max = %s\n"
                      "queue.max = %d\n" % (heartbeat, os.environ.get("CRIER_BACKLOG_COALESCE", "1"), max(256, count)))
    try:
        end = time.monotonic() + 60 + count
        while time.monotonic() < end:
            with srv.lock:
                if len(srv.acks) >= count:
                    break
            time.sleep(0.1)
        took = time.monotonic() - t0
    finally:
        crier.stop()
        srv.stop = True
    err = "\n".join(crier.lines())
    print("\nbacklog of %d: %d acked (%d ack lines), %d pings, %d connection(s), %.1f s" % (
        count, len(srv.acks), sum(srv.acks.values()), srv.pings, srv.connections, took))
    assert len(srv.acks) == count, err[-3000:]
    assert srv.connections == 1, "the link was dropped: %s\n%s" % (srv.closed_after, err[-3000:])
    assert "connection lost" not in err
    # The speech takes several heartbeats: the box must have pinged about once per heartbeat.
    assert took > 2 * heartbeat
    assert srv.pings >= int(took / heartbeat / 2), (srv.pings, took)


def acks_file(box):
    return str(box.tmp / "state") + ".acks"


def outbox_state(box):
    """The outbox file replayed (it is a log, protocol §6a): the acks the server has not
    confirmed, id -> record, and the confirmed outcomes, id -> status. A confirmation
    (`"delivered":true`) removes its id from the acks; the last record of an id wins."""
    acks, delivered = {}, {}
    with open(acks_file(box)) as f:
        for line in f.read().splitlines():
            m = json.loads(line)
            m.pop("crc", None)
            acks.pop(m["id"], None)
            if m.get("delivered"):
                if m["status"] != "rejected":
                    delivered[m["id"]] = m["status"]
            else:
                acks[m["id"]] = m
    return acks, delivered


def undelivered(box):
    """The outbox file's acks the server has not confirmed (confirmed outcomes stay in it, for
    the dedupe after a restart)."""
    return list(outbox_state(box)[0].values())


@pytest.mark.parametrize("how", ["sigterm", "sigkill"])
def test_spoken_while_the_server_was_down_then_restart_is_said_once_and_acked_once(box, how):
    """Issue 13 item 8: an order spoken while the link was down (ack in the outbox), then a
    clean SIGTERM or a SIGKILL (power cut) after the ack was queued, restart, redelivery →
    exactly one spoken, exactly one ack."""
    state = str(box.tmp / "sim-state")
    sim = order_sim(state=state)
    port = sim.port
    crier = crier_run(box, port, "link.heartbeat = 1\n")
    try:
        crier.wait_for(r"INFO link: connected")
        sim.send("7")
        oid = sim.wait_for(r"^order id=", which="out")[0].split()[1][3:]
        crier.wait_for(r"INFO alert: queued id=" + oid)
        sim.stop(signal.SIGKILL)  # the server is gone while the order is said
        crier.wait_for(r"INFO alert: spoken id=" + oid, timeout=20)
        if how == "sigkill":
            # "After the ack is queued": once it is in the outbox file (written within one
            # fsync of the end of the speech: a power cut inside that window is the one case
            # exactly-once cannot cover, docs/protocol.md).
            end = time.monotonic() + 5
            while time.monotonic() < end:
                if os.path.exists(acks_file(box)) and oid in open(acks_file(box)).read():
                    break
                time.sleep(0.005)
    finally:
        rc = crier.stop(signal.SIGTERM if how == "sigterm" else signal.SIGKILL)
    first = "\n".join(crier.lines())
    assert rc == (0 if how == "sigterm" else -9), first[-2000:]
    with open(acks_file(box)) as f:
        saved = f.read()
    assert '"id":"%s","status":"spoken"' % oid in saved, saved

    # Restart: the server comes back first, with its journal (the order is still unacked).
    os.unlink(box.capture)
    sim2 = Proc([SIM, "order-sim", "--host", "127.0.0.1",
                 "--port", str(port), "--every", "0", "--state", state], stdin=True)
    try:
        sim2.wait_for(r"^listening addr=", which="out")
        crier2 = crier_run(box, port, "link.heartbeat = 1\n")
        try:
            crier2.wait_for(r"INFO link: acks from before the restart: .*acks=1 ")
            sim2.wait_for(r"^redeliver id=%s" % oid, which="out")
            sim2.wait_for(r"^ack id=%s status=spoken" % oid, which="out", timeout=20)
            # Long enough for a second ack or a second speaking to show up.
            time.sleep(3)
        finally:
            crier2.stop()
    finally:
        sim2.stop()
    second = "\n".join(crier2.lines())
    out2 = sim2.lines("out")
    assert (first + second).count("INFO alert: spoken id=" + oid) == 1, second[-2000:]
    # The redelivery crosses the outbox's ack: read before the pong that confirms that ack, it is
    # answered from it ("acked again"); read after it, not again (protocol §6a). Which one depends
    # on the scheduler (seen under pytest -n 2); either way one ack reaches the server.
    # (Since 2026-12-05 a redelivery the outbox answers never reaches the speaker: the link's line.)
    assert ("INFO alert: acked again: spoken id=%s" % oid in second
            or "INFO alert: not acked again: spoken id=%s" % oid in second
            or "INFO link: redelivered order answered from the ack outbox; not said again id=%s" % oid in second), second[-2000:]
    assert len([l for l in out2 if l.startswith("ack id=%s " % oid)]) == 1, out2
    _, _, x = read_wav(box.capture)
    assert rms(x) < 1e-4, "the second run said something (%.4f)" % rms(x)
    # Delivered (ponged) before the stop: nothing undelivered is left, and the outcome is
    # remembered for the dedupe.
    assert undelivered(box) == []
    assert outbox_state(box)[1].get(oid) == "spoken", open(acks_file(box)).read()


class ScriptedConn:
    """One accepted connection, read line by line with a deadline."""

    def __init__(self, listener, timeout=15):
        listener.settimeout(timeout)
        self.c, _ = listener.accept()
        self.buf = b""

    def send(self, *msgs):
        self.c.sendall(b"".join(json.dumps(m).encode() + b"\n" for m in msgs))

    def line(self, timeout):
        end = time.monotonic() + timeout
        while b"\n" not in self.buf:
            left = end - time.monotonic()
            if left <= 0:
                return None
            self.c.settimeout(left)
            try:
                data = self.c.recv(65536)
            except socket.timeout:
                return None
            if not data:
                return None
            self.buf += data
        line, self.buf = self.buf.split(b"\n", 1)
        return json.loads(line)

    def close(self):
        self.c.close()

    def acks(self, into, seconds, until=lambda acks: False):
        """Reads for `seconds` (or until `until(into)`), answering pings, appending acks to `into`."""
        end = time.monotonic() + seconds
        while not until(into) and time.monotonic() < end:
            m = self.line(min(1, max(0.01, end - time.monotonic())))
            if m and m["type"] == "ack":
                into.append(m)
            elif m and m["type"] == "ping":
                self.send({"type": "pong"})


def loopback_listener():
    """A listening socket on a free loopback port, and that port."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(4)
    return listener, listener.getsockname()[1]


def test_a_redelivery_on_the_same_connection_after_the_pong_is_not_acked_twice_and_the_log_says_so(box):
    """Issue 31 item 3, v1 side: an order sent again on the connection whose pong already
    confirmed its ack crossed that ack on the wire (section 6a): no second ack line. The log
    used to say `acked again: spoken` all the same; it must say nothing was sent."""
    listener, port = loopback_listener()
    order = {"type": "order", "id": "SC-1", "kind": "new_customer", "number": 5}
    got = []
    crier = crier_run(box, port, "link.heartbeat = 2\n")
    try:
        c = ScriptedConn(listener)
        assert c.line(10)["type"] == "hello"
        c.send({"type": "welcome"}, order)
        c.acks(got, 30, until=lambda a: len(a) >= 1)
        assert got == [{"type": "ack", "id": "SC-1", "status": "spoken"}], got
        # the ping after the ack, answered: the ack is confirmed on this connection
        while True:
            m = c.line(10)
            assert m is not None, "no ping after the ack"
            if m["type"] == "ping":
                c.send({"type": "pong"})
                break
        time.sleep(0.3)
        c.send(order)
        crier.wait_for(r"INFO alert: not acked again: spoken id=SC-1 .*sent=\"no: the server confirmed this ack on this connection\"")
        c.acks(got, 2)
        c.close()
    finally:
        crier.stop()
        listener.close()
    assert got == [{"type": "ack", "id": "SC-1", "status": "spoken"}], got
    log = "\n".join(crier.lines())
    assert "INFO alert: acked again: spoken id=SC-1" not in log, log[-2000:]
    assert log.count("INFO alert: spoken id=SC-1") == 1


@pytest.mark.parametrize("redeliver", [False, True])
def test_an_ack_written_before_a_drop_is_not_resent_and_a_redelivery_is_answered_once(box, redeliver):
    """Issue 13 item 18 (chaos seeds 66466, 67856): the ack is written, the connection ends
    before its pong; after the reconnect it is not written again, unless the server redelivers
    the order: then exactly one ack, and the order is not said again."""
    listener, port = loopback_listener()
    order = {"type": "order", "id": "X-1", "kind": "new_customer", "number": 5}
    second = []
    crier = crier_run(box, port, "link.heartbeat = 2\n")
    try:
        c1 = ScriptedConn(listener)
        assert c1.line(10)["type"] == "hello"
        c1.send({"type": "welcome"}, order)
        while True:  # never a pong on this connection
            m = c1.line(30)
            assert m is not None, "no ack on the first connection"
            if m["type"] == "ack":
                assert m == {"type": "ack", "id": "X-1", "status": "spoken"}
                break
        c1.close()
        c2 = ScriptedConn(listener)
        assert c2.line(10)["type"] == "hello"
        c2.send({"type": "welcome"}, *([order] if redeliver else []))
        end = time.monotonic() + 4
        while time.monotonic() < end:
            m = c2.line(max(0.05, end - time.monotonic()))
            if m is None:
                continue
            second.append(m)
            if m["type"] == "ping":
                c2.send({"type": "pong"})
        c2.close()
    finally:
        crier.stop()
        listener.close()
    log = "\n".join(crier.lines())
    acks = [m for m in second if m["type"] == "ack"]
    if redeliver:
        assert acks == [{"type": "ack", "id": "X-1", "status": "spoken"}], second
        # Answered from the outbox by the link; the speaker never sees the redelivery.
        assert "INFO link: redelivered order answered from the ack outbox; not said again id=X-1" in log, log[-2000:]
        assert "acked again" not in log, log[-2000:]
    else:
        assert acks == [], second
    assert {"type": "ping"} in second, "a ping right after the welcome settles the earlier ack"
    assert log.count("INFO alert: spoken id=X-1") == 1, log[-2000:]
    assert undelivered(box) == [], "confirmed by the second connection's pong"


def test_a_cancel_of_a_rejected_order_gets_the_rejection_again(box):
    """Chaos seed 75107: an order rejected for good (malformed at the link, or nothing to say in
    the daemon), then cancelled: the cancel is answered with the same rejection, never a
    second, different final status (`cancelled`)."""
    listener, port = loopback_listener()
    acks = []
    crier = crier_run(box, port, "link.heartbeat = 5\n")
    try:
        c = ScriptedConn(listener)
        assert c.line(10)["type"] == "hello"
        c.send({"type": "welcome"},
               {"type": "order", "id": "R-1", "kind": "new_customer", "number": 1000000},
               {"type": "order", "id": "R-2", "kind": "text", "text": "\u200b\u200d"})
        c.acks(acks, 20, until=lambda a: len(a) >= 2)
        c.send({"type": "cancel", "id": "R-1"}, {"type": "cancel", "id": "R-2"})
        c.acks(acks, 10, until=lambda a: len(a) >= 4)
        c.close()
    finally:
        crier.stop()
        listener.close()
    by_id = {}
    for a in acks:
        by_id.setdefault(a["id"], []).append((a["status"], a.get("reason")))
    assert by_id.get("R-1") == [("rejected", "invalid_order")] * 2, acks
    assert by_id.get("R-2") == [("rejected", "nothing_to_say")] * 2, acks


def test_a_cancel_sent_before_its_malformed_order_keeps_its_answer(box):
    """Chaos seed 34641: the server cancels an order and then sends it, malformed (or with
    nothing to say), in the same write. The cancel is answered `cancelled`; the order that
    follows, and its redelivery, are answered `cancelled` again, never `rejected` beside it
    (the link used to answer malformed orders itself, ahead of the cancel's answer)."""
    listener, port = loopback_listener()
    acks = []
    crier = crier_run(box, port, "link.heartbeat = 5\n")
    bad = {"type": "order", "id": "CB-1", "kind": "new_customer", "number": 1000000}
    mute = {"type": "order", "id": "CB-2", "kind": "text", "text": "\u200b\u200d"}
    try:
        c = ScriptedConn(listener)
        assert c.line(10)["type"] == "hello"
        c.send({"type": "welcome"}, {"type": "cancel", "id": "CB-1"}, bad, {"type": "cancel", "id": "CB-2"}, mute)
        crier.wait_for(r"INFO alert: acked again: cancelled id=CB-2 ", timeout=20)
        c.acks(acks, 1)
        c.send(bad, mute)  # redelivered
        # on this connection, after the pong confirmed the acks: answered from the dedupe, and
        # logged as not sent again (section 6a; issue 31)
        crier.wait_for(r"INFO alert: (not )?acked again: cancelled id=CB-2 ", timeout=20, count=2)
        c.acks(acks, 1)
        c.close()
    finally:
        crier.stop()
        listener.close()
    by_id = {}
    for a in acks:
        by_id.setdefault(a["id"], set()).add(a["status"])
    # The outbox sends one ack per id while the server has not confirmed it: one or more here.
    assert by_id == {"CB-1": {"cancelled"}, "CB-2": {"cancelled"}}, acks
    log = "\n".join(crier.lines())
    assert len(re.findall(r"INFO alert: (?:not )?acked again: cancelled id=CB-1 ", log)) == 2, log[-3000:]
    assert "rejected id=CB-" not in log, log[-3000:]


@pytest.mark.parametrize("how", ["sighup", "sigterm"])
def test_an_order_redelivered_after_its_ack_was_confirmed_is_not_said_again_after_a_reload_or_restart(box, how):
    """Issue 31 item 4: the order is said, acked, and the ack confirmed by a pong (it leaves the
    outbox). Then the box reloads (SIGHUP: re-exec, same PID) or restarts (SIGTERM, a new
    process), and the server redelivers that order (it lost the ack after it read it: a crash
    before its own commit). The box answers it from its dedupe memory, which survives both:
    said once, acked again."""
    listener, port = loopback_listener()
    order = {"type": "order", "id": "K-1", "kind": "new_customer", "number": 8}
    extra = "link.heartbeat = 2\n"
    crier = crier_run(box, port, extra)
    second = []
    try:
        c1 = ScriptedConn(listener)
        assert c1.line(10)["type"] == "hello"
        c1.send({"type": "welcome"}, order)
        acks = []
        c1.acks(acks, 30, until=lambda a: len(a) >= 1)
        assert acks == [{"type": "ack", "id": "K-1", "status": "spoken"}], acks
        # The pong that confirms it: the outbox forgets the ack (nothing undelivered left).
        m = c1.line(10)
        assert m == {"type": "ping"}, m
        c1.send({"type": "pong"})
        crier.wait_for(r"INFO alert: spoken id=K-1")
        end = time.monotonic() + 5
        while time.monotonic() < end and (not os.path.exists(acks_file(box)) or undelivered(box)):
            time.sleep(0.02)
        assert undelivered(box) == [], "the pong did not confirm the ack"
        if how == "sighup":
            box.write_conf(open(box.conf).read() + "volume.default = 5\n")
            crier.p.send_signal(signal.SIGHUP)
            crier.wait_for(r"INFO runtime: reloaded")
        else:
            assert crier.stop() == 0
            first = crier.lines()
            crier = crier_run(box, port, extra)
        c1.close()
        c2 = ScriptedConn(listener)
        assert c2.line(10)["type"] == "hello"
        c2.send({"type": "welcome"}, order)
        end = time.monotonic() + 6
        while time.monotonic() < end:
            m = c2.line(max(0.05, end - time.monotonic()))
            if m is None:
                continue
            second.append(m)
            if m["type"] == "ping":
                c2.send({"type": "pong"})
        c2.close()
    finally:
        crier.stop()
        listener.close()
    log = "\n".join((first if how == "sigterm" else []) + crier.lines())
    assert log.count("INFO alert: spoken id=K-1") == 1, log[-3000:]
    # Answered again: by the outbox (the link's line) or, once the outbox let it go, by the
    # speaker's memory; either way one ack on the wire (checked below).
    assert ("INFO alert: acked again: spoken id=K-1" in log
            or "INFO link: redelivered order answered from the ack outbox; not said again id=K-1" in log), log[-3000:]
    assert [(m["id"], m["status"]) for m in second if m["type"] == "ack"] == [("K-1", "spoken")], second


def mount_tmpfs(path, size):
    """A tiny tmpfs at `path` standing in for a full crier-data (root only; skipped otherwise)."""
    if os.geteuid() != 0:
        pytest.skip("needs root to mount a tmpfs")
    os.makedirs(path, exist_ok=True)
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=%s,mode=0755" % size, "tmpfs", path],
                       capture_output=True, text=True)
    if r.returncode != 0:
        pytest.skip("cannot mount a tmpfs: %s" % r.stderr.strip())


def fill(path):
    """Writes `path` until the file system is full; returns the bytes written."""
    n = 0
    with open(path, "wb", buffering=0) as f:
        chunk = b"\0" * 65536
        while True:
            try:
                n += f.write(chunk)
            except OSError:
                break
        # The last partial block.
        try:
            while True:
                n += f.write(b"\0" * 512)
        except OSError:
            pass
    # The last free pages, one small file each (a journal's small rewrite would fit there).
    for i in range(1000):
        try:
            with open("%s.%d" % (path, i), "wb", buffering=0) as f:
                n += f.write(b"\0")
        except OSError:
            break
    return n


def unfill(path):
    os.unlink(path)
    for i in range(1000):
        if not os.path.exists("%s.%d" % (path, i)):
            break
        os.unlink("%s.%d" % (path, i))


def test_a_full_data_partition_never_says_an_order_twice_and_loses_none(box):
    """Issue 31 item 1: crier-data fills while the box runs. The order being said is recorded
    (the reserve makes room), the next one waits unsaid and unacked (the server keeps it), the
    box restarts on the full partition, the server redelivers both: the first is acked again,
    the second still waits; once space is freed it is said, without a restart. Each said once."""
    data = str(box.tmp / "data")
    mount_tmpfs(data, "8m")
    listener, port = loopback_listener()
    conf = ("server = tcp://127.0.0.1:%d\ndevice.id = full-box\nstatus.on_start = off\nstatus.on_link_up = off\n"
            "input = fifo:%s\nstate.path = %s/state\ncontrol.socket = %s\nlink.heartbeat = 2\n" % (
                port, box.tmp / "buttons.fifo", data, box.tmp / "control.sock"))
    o1 = {"type": "order", "id": "F-1", "kind": "new_customer", "number": 1}
    o2 = {"type": "order", "id": "F-2", "kind": "new_customer", "number": 2}
    acks1, acks2 = [], []
    logs = []
    crier = None
    try:
        box.write_conf(conf)
        crier = Proc([CRIER, "run", "--config", box.conf], env=box.env)
        crier.wait_for(r" INFO runtime: ready")
        c1 = ScriptedConn(listener)
        assert c1.line(10)["type"] == "hello"
        c1.send({"type": "welcome"})
        crier.wait_for(r"INFO link: connected")
        filled = fill(data + "/filler")
        c1.send(o1)
        crier.wait_for(r"INFO alert: spoken id=F-1", timeout=30)

        def read(conn, into, seconds, pong, until=lambda: False):
            end = time.monotonic() + seconds
            while time.monotonic() < end and not until():
                m = conn.line(0.2)
                if m and m["type"] == "ack":
                    into.append((m["id"], m["status"]))
                elif m and m["type"] == "ping" and pong:
                    conn.send({"type": "pong"})
        read(c1, acks1, 1.5, pong=False)  # never confirmed: a restart must not forget F-1
        c1.send(o2)
        read(c1, acks1, 3, pong=False)
        assert crier.stop() == 0
        logs += crier.lines()
        c1.close()

        crier = Proc([CRIER, "run", "--config", box.conf], env=box.env)
        crier.wait_for(r" INFO runtime: ready")
        c2 = ScriptedConn(listener)
        assert c2.line(10)["type"] == "hello"
        c2.send({"type": "welcome"}, o1, o2)
        read(c2, acks2, 3, pong=True)
        held = list(acks2)
        unfill(data + "/filler")
        read(c2, acks2, 20, pong=True, until=lambda: ("F-2", "spoken") in acks2)
        c2.close()
    finally:
        if crier is not None:
            crier.stop()
            logs += crier.lines()
        listener.close()
        subprocess.run(["umount", "-l", data])
    log = "\n".join(logs)
    print("\nfiller %d bytes; first run acks %s; after restart, before space came back %s, after %s" % (
        filled, acks1, held, acks2))
    for line in logs:
        if "storage:" in line:
            print(line)
    assert log.count("INFO alert: spoken id=F-1") == 1, log[-4000:]
    assert log.count("INFO alert: spoken id=F-2") == 1, log[-4000:]
    assert acks1 == [("F-1", "spoken")], acks1
    assert held == [("F-1", "spoken")], "F-1 acked again from the outbox file, F-2 held: %s" % held
    assert acks2 == [("F-1", "spoken"), ("F-2", "spoken")], acks2
    assert re.search(r"ERROR storage: the data partition is full \(\d+\.\d MiB free in %s\)" % re.escape(data), log), log[-4000:]
    assert "NOTICE storage: the data partition has room again" in log, log[-4000:]
    assert re.search(r"INFO alert: queued id=F-2 .*held=", log), log[-4000:]


def test_reloads_at_random_moments_never_say_a_redelivered_order_twice(box):
    """Issue 31 item 4, seeded: four reloads (SIGHUP) at random moments relative to an order's
    arrival, speech, ack and pong; a hostile server redelivers every order it ever sent on every
    connection. Each order is said exactly once."""
    import random
    seed = int(os.environ.get("CRIER_SEED", "31"))
    rng = random.Random(seed)
    listener, port = loopback_listener()
    crier = crier_run(box, port, "link.heartbeat = 2\n")
    sent, acks, delays = [], [], []
    try:
        for i in range(5):
            c = ScriptedConn(listener)
            assert c.line(10)["type"] == "hello"
            if i < 4:
                sent.append({"type": "order", "id": "R-%d" % i, "kind": "new_customer", "number": i})
            c.send({"type": "welcome"}, *sent)
            if i == 4:
                c.acks(acks, 15, until=lambda a: {m["id"] for m in a if m["status"] == "spoken"} >= {o["id"] for o in sent})
                c.close()
                break
            d = rng.uniform(0, 3)
            delays.append(round(d, 2))
            c.acks(acks, d)
            box.write_conf(open(box.conf).read() + "volume.default = %d\n" % (i + 2))
            crier.p.send_signal(signal.SIGHUP)
            while True:  # until the old image closes the connection
                try:
                    m = c.line(10)
                except OSError:  # reset: the old image is gone
                    m = None
                if m is None:
                    break
                if m["type"] == "ack":
                    acks.append(m)
                elif m["type"] == "ping":
                    c.send({"type": "pong"})
            crier.wait_for(r"INFO runtime: reloaded", count=i + 1)
            c.close()
    finally:
        crier.stop()
        listener.close()
    log = "\n".join(crier.lines())
    print("\nseed %d: SIGHUP %s s after each connection's welcome; acks %s" % (
        seed, delays, [(m["id"], m["status"]) for m in acks]))
    for o in sent:
        said = log.count("INFO alert: spoken id=%s " % o["id"])
        assert said == 1, "%s said %d times\n%s" % (o["id"], said, log[-3000:])
        assert (o["id"], "spoken") in [(m["id"], m["status"]) for m in acks], acks
