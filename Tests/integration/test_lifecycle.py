"""Process lifecycle of the real binary: every signal a box can get, SIGHUP = reload (re-exec in
place), stop time in every reachable state, the single-instance rule, where the control socket
lives when crier is started by hand, and how `crier status` / `crier say` fail."""
import json
import os
import pwd
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time

import pytest

from conftest import CRIER
from test_daemon import Proc, order_sim

STOP_LIMIT = 6.0
# Stop times measured here are printed (pytest -s) and collected for docs/operations.md.
MEASURED = {}


def conf_text(box, extra="", socket_path=True):
    # One line per key: a duplicate key is a warning of its own.
    s = "device.id = life-box\nstatus.on_link_up = off\ninput = fifo:%s\nstate.path = %s\n" % (
        box.tmp / "buttons.fifo", box.tmp / "state")
    if "status.on_start" not in extra:
        s += "status.on_start = off\n"
    if "device.id" in extra:
        s = s.replace("device.id = life-box\n", "")
    if socket_path:
        s += "control.socket = %s\n" % (box.tmp / "control.sock")
    return s + extra


def start(box, extra="", wait=r" INFO runtime: ready", env=None, socket_path=True):
    box.write_conf(conf_text(box, extra, socket_path))
    p = Proc([CRIER, "run", "--config", box.conf], env=env or box.env)
    if wait:
        p.wait_for(wait)
    return p


def timed_stop(p, sig=signal.SIGTERM, timeout=15):
    t0 = time.monotonic()
    p.p.send_signal(sig)
    try:
        rc = p.p.wait(timeout)
    except subprocess.TimeoutExpired:
        p.p.kill()
        p.p.wait()
        raise AssertionError("did not stop within %.0f s; last lines:\n%s" % (timeout, "\n".join(p.lines()[-20:])))
    return rc, time.monotonic() - t0


def status(box, *extra, env=None):
    return subprocess.run([CRIER, "status", "--config", box.conf, *extra], capture_output=True, text=True,
                          env=env or box.env, timeout=30)


# ---- signals -----------------------------------------------------------------------------

IGNORED = ["SIGUSR1", "SIGUSR2", "SIGALRM", "SIGVTALRM", "SIGPROF", "SIGIO", "SIGPWR", "SIGXCPU", "SIGXFSZ"]


def test_no_signal_kills_it_silently(box):
    """Each signal whose default action would end the process is logged and ignored (SIGPIPE:
    ignored); the daemon still answers, then stops cleanly on SIGTERM."""
    p = start(box, "audio.device = null\n")
    try:
        for name in IGNORED + ["SIGPIPE"]:
            p.p.send_signal(getattr(signal, name))
            time.sleep(0.05)
        rt = [signal.SIGRTMIN + 2, signal.SIGRTMAX]
        for s in rt:
            p.p.send_signal(s)
        for name in IGNORED:
            p.wait_for(r"NOTICE runtime: signal received; it has no meaning for crier, ignored signal=%s$" % name, timeout=5)
        p.wait_for(r"ignored signal=SIGRTMIN\+", count=2, timeout=5)
        assert p.p.poll() is None, "killed by a signal: rc=%s" % p.p.returncode
        st = status(box, "--json")
        assert st.returncode == 0 and json.loads(st.stdout)["device"] == "life-box"
    finally:
        rc, took = timed_stop(p)
    assert rc == 0


def test_sigquit_is_a_graceful_stop(box):
    p = start(box, "audio.device = null\n")
    rc, took = timed_stop(p, signal.SIGQUIT)
    assert rc == 0, "\n".join(p.lines()[-10:])
    assert any("signal received; shutting down signal=SIGQUIT" in l for l in p.lines())


# ---- SIGHUP: reload ----------------------------------------------------------------------

class Notify:
    """A fake $NOTIFY_SOCKET: every datagram with its arrival time."""

    def __init__(self, tmp):
        self.path = str(tmp / "notify.sock")
        self.s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.s.bind(self.path)
        self.s.settimeout(0.1)
        self.got = []
        self.lock = threading.Lock()
        self.done = False
        threading.Thread(target=self._run, daemon=True).start()

    def _run(self):
        while not self.done:
            try:
                m = self.s.recv(4096).decode()
            except socket.timeout:
                continue
            except OSError:
                return
            with self.lock:
                self.got.append((time.monotonic(), m))

    def wait(self, what, after=0.0, timeout=15):
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            with self.lock:
                hit = [t for t, m in self.got if t >= after and what in m.split("\n")]
            if hit:
                return hit[0]
            time.sleep(0.01)
        raise AssertionError("no %s after %.3f; got %r" % (what, after, self.got))

    def close(self):
        self.done = True
        self.s.close()


def fds(pid):
    return sorted(os.listdir("/proc/%d/fd" % pid), key=int)


def test_a_reload_keeps_the_process_name_and_pets_systemds_watchdog_at_once(box):
    """Under systemd (the amd64 boot test): a reload re-executes /proc/self/exe, which the kernel
    made the process's name ("exe" in ps, pidof, ss -p); and systemd's watchdog timer runs on
    through it from the last pet before the reload, while the new image first petted half an
    interval after its start: crier was restarted ~5 s after a reload there. Now the name is
    crier's again and WATCHDOG=1 comes with RELOADING=1 and at once from the new image."""
    notify = Notify(box.tmp)
    env = dict(box.env, NOTIFY_SOCKET=notify.path, WATCHDOG_USEC="10000000")
    p = start(box, "audio.device = null\n", env=env)
    pid = p.p.pid
    try:
        notify.wait("READY=1")
        assert open("/proc/%d/comm" % pid).read().strip() == os.path.basename(CRIER)[:15]
        box.write_conf(conf_text(box, "audio.device = null\ndevice.id = other-box\n"))
        t0 = time.monotonic()
        p.p.send_signal(signal.SIGHUP)
        reloading = notify.wait("RELOADING=1", after=t0)
        ready = notify.wait("READY=1", after=reloading)
        p.wait_for(r"INFO runtime: reloaded: running with the new configuration")
        assert p.p.poll() is None and p.p.pid == pid
        with notify.lock:
            pets = [t for t, m in notify.got if t >= reloading and "WATCHDOG=1" in m.split("\n")]
        # with RELOADING=1, before the exec, and the new image's first within a second of READY=1
        assert pets and pets[0] == reloading, (reloading, notify.got[-8:])
        first_after_exec = notify.wait("WATCHDOG=1", after=ready, timeout=8)
        assert first_after_exec - ready < 1.0, (ready, notify.got[-8:])
        assert open("/proc/%d/comm" % pid).read().strip() == os.path.basename(CRIER)[:15]
    finally:
        notify.close()
        timed_stop(p)


def test_sighup_reload_unchanged_invalid_and_changed(box):
    notify = Notify(box.tmp)
    env = dict(box.env, NOTIFY_SOCKET=notify.path)
    p = start(box, "audio.device = null\n", env=env)
    pid = p.p.pid
    try:
        notify.wait("READY=1")
        # Unchanged: said so, nothing restarts.
        p.p.send_signal(signal.SIGHUP)
        p.wait_for(r"INFO runtime: reload: configuration unchanged; nothing to do")
        # Invalid: every error with its line, the running configuration stays.
        box.write_conf(conf_text(box, "audio.device = null\ndevice.id = other-box\nvolume.default = banana\n"))
        p.p.send_signal(signal.SIGHUP)
        p.wait_for(r"ERROR runtime: reload refused: 1 error\(s\)")
        assert any(re.search(r"ERROR runtime: reload: .*crier\.conf:\d+", l) for l in p.lines()), "\n".join(p.lines()[-8:])
        assert json.loads(status(box, "--json").stdout)["device"] == "life-box"
        assert not any("reload: starting again" in l for l in p.lines())
        # Changed: the same process (same pid) runs the new configuration; systemd hears
        # RELOADING=1, then READY=1 again.
        box.write_conf(conf_text(box, "audio.device = null\ndevice.id = other-box\n"))
        times = []
        for i in range(3):
            if i:
                box.write_conf(conf_text(box, "audio.device = null\ndevice.id = box-%d\n" % i))
            t0 = time.monotonic()
            p.p.send_signal(signal.SIGHUP)
            notify.wait("RELOADING=1", after=t0)
            ready = notify.wait("READY=1", after=t0)
            times.append(ready - t0)
            p.wait_for(r"INFO runtime: reloaded: running with the new configuration", count=i + 1)
            assert p.p.poll() is None and p.p.pid == pid
            if i == 0:
                # The steady count after the first reload: the most seen over 1 s (a link or
                # outbox descriptor may open a moment later); a leak grows with each reload.
                time.sleep(0.5)
                before = fds(pid)
                end = time.monotonic() + 1
                while time.monotonic() < end:
                    now_fds = fds(pid)
                    if len(now_fds) > len(before):
                        before = now_fds
                    time.sleep(0.1)
        MEASURED["reload (SIGHUP -> READY=1)"] = max(times)
        print("\nreload SIGHUP -> READY=1: %s s" % ", ".join("%.2f" % t for t in times))
        assert max(times) < STOP_LIMIT + 2
        st = json.loads(status(box, "--json").stdout)
        assert st["device"] == "box-2"
        # No growth across re-execs (transient ones, a status request's, may come and go). One
        # descriptor is present after some starts and not others (seen 1 run in 5 under load,
        # not yet identified; docs/operations.md): allowed once. A per-reload leak still fails,
        # since `before` is taken after the first of the three reloads: two more add two.
        end = time.monotonic() + 3
        while len(fds(pid)) > len(before) and time.monotonic() < end:
            time.sleep(0.1)
        assert len(fds(pid)) <= len(before) + 1, "no descriptor leaks across re-execs: %r -> %r" % (before, fds(pid))
        # A reload is not a power-on: the "started" prompt is not said again.
        assert not any("prompt=started" in l for l in p.lines())
    finally:
        rc, took = timed_stop(p)
        notify.close()
    assert rc == 0


def test_sighup_mid_alert_finishes_it_acks_once_then_reloads(box):
    sim = order_sim()
    p = start(box, "server = tcp://127.0.0.1:%d\n" % sim.port)
    try:
        p.wait_for(r"INFO link: connected")
        # Shorter than the 5 s grace, so it is finished (an alert longer than that is cut,
        # left unacked and said again after the reload, as on SIGTERM).
        sim.send("请注意，三号桌需要服务。")
        oid = sim.wait_for(r"^order id=", which="out")[0].split()[1][3:]
        p.wait_for(r"INFO alert: saying ids=" + re.escape(oid))
        box.write_conf(conf_text(box, "server = tcp://127.0.0.1:%d\nvolume.default = 5\n" % sim.port))
        time.sleep(0.2)
        p.p.send_signal(signal.SIGHUP)
        try:
            sim.wait_for(r"^ack id=%s status=spoken" % re.escape(oid), which="out", timeout=10)
        except AssertionError:
            raise AssertionError("\n".join(p.lines()[-40:]))
        p.wait_for(r"INFO runtime: reloaded")
        p.wait_for(r"INFO link: connected", count=2)
        time.sleep(1.5)
        acks = [l for l in sim.lines("out") if l.startswith("ack id=%s " % oid)]
        assert len(acks) == 1, acks
        assert len([l for l in p.lines() if "INFO alert: spoken id=" + oid in l]) == 1
        assert p.p.poll() is None
    finally:
        rc, took = timed_stop(p)
        sim.stop()
    assert rc == 0


def test_signals_during_startup_do_not_kill_or_hang(box):
    """A SIGHUP as soon as the process exists (before the config is read) and a SIGUSR1 right
    after the re-exec of a reload: neither kills it; a SIGTERM during start-up still stops it."""
    box.write_conf(conf_text(box, "audio.device = null\n"))
    # Not earlier: before main() runs (dynamic loading, ~0.05 s in a debug build) no process
    # can have a handler; the handlers are the first thing crier installs.
    for delay in (0.15, 0.3, 0.6):
        p = Proc([CRIER, "run", "--config", box.conf], env=box.env)
        time.sleep(delay)
        p.p.send_signal(signal.SIGHUP)
        p.wait_for(r" INFO runtime: ready", timeout=10)
        time.sleep(0.2)
        assert p.p.poll() is None, (delay, p.lines()[-5:])
        rc, took = timed_stop(p)
        assert rc == 0
    # SIGTERM during start-up.
    for delay in (0.05, 0.2):
        p = Proc([CRIER, "run", "--config", box.conf], env=box.env)
        time.sleep(delay)
        rc, took = timed_stop(p)
        assert took < STOP_LIMIT, took
        MEASURED.setdefault("during start-up", took)
    # Signals right after a reload's re-exec, while the new image starts.
    p = start(box, "audio.device = null\n")
    box.write_conf(conf_text(box, "audio.device = null\nvolume.default = 4\n"))
    p.p.send_signal(signal.SIGHUP)
    p.wait_for(r"reload: starting again in place")
    for _ in range(20):
        p.p.send_signal(signal.SIGUSR1)
        time.sleep(0.005)
    p.wait_for(r"INFO runtime: reloaded")
    time.sleep(0.3)
    assert p.p.poll() is None, p.lines()[-5:]
    rc, took = timed_stop(p)
    assert rc == 0


# ---- stop time in every state --------------------------------------------------------------

def blackhole_server():
    """A listener that never accepts, its backlog full: connects hang in SYN_SENT-like state
    (on loopback: the kernel drops the SYN), like a server behind a dead route."""
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.bind(("127.0.0.1", 0))
    s.listen(0)
    port = s.getsockname()[1]
    fillers = []
    for _ in range(4):
        c = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        c.setblocking(False)
        try:
            c.connect(("127.0.0.1", port))
        except BlockingIOError:
            pass
        fillers.append(c)
    return s, port, fillers


@pytest.mark.parametrize("state", ["device-missing", "device-retrying", "link-blackhole", "link-unroutable",
                                   "mid-prompt", "mid-alert", "second-sigterm", "sigint-device-missing"])
def test_stop_within_the_limit_in_every_state(box, state):
    keep = []
    sim = None
    extra = ""
    sig = signal.SIGTERM
    if state in ("device-missing", "device-retrying", "sigint-device-missing"):
        extra = "audio.device = nosuchpcm\nstatus.on_start = on\n"
        if state == "sigint-device-missing":
            sig = signal.SIGINT
    elif state == "link-blackhole":
        s, port, fillers = blackhole_server()
        keep += [s] + fillers
        extra = "audio.device = null\nserver = tcp://127.0.0.1:%d\n" % port
    elif state == "link-unroutable":
        extra = "audio.device = null\nserver = tcp://10.255.255.1:7700\n"
    elif state == "mid-prompt":
        extra = "status.on_start = on\n"
    else:
        sim = order_sim()
        extra = "server = tcp://127.0.0.1:%d\n" % sim.port
    p = start(box, extra)
    try:
        if state == "device-retrying":
            time.sleep(7)  # the retry delay has grown to its maximum
        elif state in ("link-blackhole", "link-unroutable"):
            time.sleep(1.5)
        elif state == "mid-prompt":
            p.wait_for(r"INFO audio: opened")
            time.sleep(0.2)
        elif sim:
            p.wait_for(r"INFO link: connected")
            sim.send("这是一条很长很长的提醒，" * 6)
            p.wait_for(r"INFO alert: saying ids=")
            time.sleep(0.3)
        else:
            time.sleep(1)
        if state == "second-sigterm":
            t0 = time.monotonic()
            p.p.send_signal(signal.SIGTERM)
            time.sleep(0.5)
            rc, took = timed_stop(p)
            took += 0.5
        else:
            rc, took = timed_stop(p, sig)
    finally:
        if p.p.poll() is None:
            p.p.kill()
        if sim:
            sim.stop()
        for k in keep:
            k.close()
    MEASURED[state] = took
    print("\nstop %s: %.2f s" % (state, took))
    assert rc == 0, "\n".join(p.lines()[-15:])
    assert took < STOP_LIMIT, "stop took %.2f s in state %s:\n%s" % (took, state, "\n".join(p.lines()[-15:]))
    if state == "second-sigterm":
        assert took < 2.5, "a second SIGTERM cuts the grace period"
        assert any("signal received while stopping" in l for l in p.lines())
    if state == "mid-alert":
        assert any("INFO audio: closed" in l for l in p.lines())


# ---- single instance ---------------------------------------------------------------------

def test_second_daemon_refuses_and_a_stale_socket_does_not_block(box):
    sim = order_sim()
    first = start(box, "server = tcp://127.0.0.1:%d\n" % sim.port)
    try:
        first.wait_for(r"INFO link: connected")
        t0 = time.monotonic()
        second = subprocess.run([CRIER, "run", "--config", box.conf], env=box.env, capture_output=True, text=True, timeout=20)
        assert second.returncode == 1, second.stderr
        assert time.monotonic() - t0 < 5
        assert re.search(r"ERROR runtime: refusing to start: another crier daemon is already running \(it answers at \S+control\.sock\)",
                         second.stderr), second.stderr
        # It refused before touching anything the first one owns.
        assert "audio: opened" not in second.stderr and "order link starting" not in second.stderr
        assert "link: connected" not in second.stderr
        time.sleep(0.5)
        devices = [l for l in sim.lines("out") if l.startswith("device ")]
        assert len(devices) <= 1, devices
        assert status(box).returncode == 0, "the first one still answers"
        # SIGKILL leaves the socket file behind: the next start must not be blocked by it.
        first.p.kill()
        first.p.wait()
        assert os.path.exists(str(box.tmp / "control.sock"))
        third = Proc([CRIER, "run", "--config", box.conf], env=box.env)
        third.wait_for(r"INFO control: control socket listening")
        third.wait_for(r"INFO link: connected")
        assert status(box).returncode == 0
        rc, _ = timed_stop(third)
        assert rc == 0
    finally:
        if first.p.poll() is None:
            first.p.kill()
        sim.stop()


# ---- the control socket of a daemon started by hand --------------------------------------

def test_default_socket_for_a_user_without_run_crier(tmp_path):
    """Not root, not under systemd: /run/crier cannot be made, so the daemon listens under
    $XDG_RUNTIME_DIR/crier and `crier status` / `crier say` (no --config) find it there."""
    try:
        nobody = pwd.getpwnam("nobody")
    except KeyError:
        pytest.skip("no user nobody")
    if os.geteuid() != 0 or not shutil.which("setpriv"):
        pytest.skip("needs root and setpriv to run as another user")
    if os.path.exists("/run/crier/control.sock"):
        pytest.skip("a system crier runs here")
    if not os.access(CRIER, os.X_OK) or any(
            not (os.stat(d).st_mode & 0o001) for d in [os.path.dirname(CRIER)]):
        pytest.skip("binary not reachable by nobody")
    base = tempfile.mkdtemp(prefix="crier-hand-")
    try:
        os.chmod(base, 0o755)
        xdg = os.path.join(base, "xdg-run")
        os.mkdir(xdg, 0o700)
        os.chown(xdg, nobody.pw_uid, nobody.pw_gid)
        work = os.path.join(base, "work")
        os.mkdir(work, 0o700)
        os.chown(work, nobody.pw_uid, nobody.pw_gid)
        conf = os.path.join(work, "crier.conf")
        with open(conf, "w") as f:
            f.write("audio.device = null\nstatus.on_start = off\ndevice.id = by-hand\ninput = fifo:%s/b.fifo\n"
                    "state.path = %s/state\n" % (work, work))
        os.chown(conf, nobody.pw_uid, nobody.pw_gid)
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "XDG_RUNTIME_DIR": xdg, "HOME": work}
        as_nobody = ["setpriv", "--reuid=%d" % nobody.pw_uid, "--regid=%d" % nobody.pw_gid, "--clear-groups"]
        p = Proc(as_nobody + [CRIER, "run", "--config", conf], env=env)
        try:
            p.wait_for(r"INFO control: control socket listening path=%s/crier/control\.sock" % re.escape(xdg))
            p.wait_for(r" INFO runtime: ready")
            st = subprocess.run(as_nobody + [CRIER, "status", "--json"], env=env, capture_output=True, text=True, timeout=20)
            assert st.returncode == 0, st.stderr
            assert json.loads(st.stdout)["device"] == "by-hand"
            # Without XDG_RUNTIME_DIR the client cannot know the path: it says where it looked.
            st2 = subprocess.run(as_nobody + [CRIER, "status"], env={"PATH": env["PATH"]}, capture_output=True, text=True, timeout=20)
            assert st2.returncode == 1 and "/run/crier/control.sock" in st2.stderr
        finally:
            rc, _ = timed_stop(p)
        assert rc == 0
        assert not os.path.exists(os.path.join(xdg, "crier", "control.sock")), "removed at stop"
    finally:
        shutil.rmtree(base, ignore_errors=True)


def test_default_socket_as_root_creates_run_crier(tmp_path):
    """Root by hand (no RuntimeDirectory= from systemd): /run/crier is created. Run in a private
    mount namespace with its own /run, so no other test or daemon on this machine is touched."""
    if os.geteuid() != 0 or not shutil.which("unshare"):
        pytest.skip("needs root and unshare")
    probe = subprocess.run(["unshare", "-m", "sh", "-c", "mount -t tmpfs tmpfs /run"], capture_output=True)
    if probe.returncode != 0:
        pytest.skip("no mount namespaces here: %s" % probe.stderr)
    conf = tmp_path / "crier.conf"
    conf.write_text("audio.device = null\nstatus.on_start = off\ndevice.id = root-hand\ninput = fifo:%s/b.fifo\n"
                    "state.path = %s/state\n" % (tmp_path, tmp_path))
    script = """
set -e
mount --make-rprivate / 2>/dev/null || true
mount -t tmpfs tmpfs /run
"$CRIER" run --config "$CONF" 2>"$LOG" &
pid=$!
for i in $(seq 100); do grep -q 'runtime: ready' "$LOG" && break; sleep 0.05; done
"$CRIER" status --json > "$OUT"
stat -c '%a %F' /run/crier >> "$OUT"
kill -TERM $pid
wait $pid
"""
    env = dict(os.environ, CRIER=CRIER, CONF=str(conf), LOG=str(tmp_path / "log"), OUT=str(tmp_path / "out"))
    r = subprocess.run(["unshare", "-m", "sh", "-c", script], env=env, capture_output=True, text=True, timeout=60)
    log = (tmp_path / "log").read_text()
    assert r.returncode == 0, r.stderr + log
    out = (tmp_path / "out").read_text().splitlines()
    assert json.loads(out[0])["device"] == "root-hand"
    assert out[1] == "750 directory"
    assert "control socket listening path=/run/crier/control.sock" in log


# ---- how `crier status` and `crier say` fail ---------------------------------------------

class FakeControl:
    """A control socket answering every request with `answer`."""

    def __init__(self, path, answer):
        self.s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.s.bind(path)
        self.s.listen(8)
        self.answer = answer
        threading.Thread(target=self._run, daemon=True).start()

    def _run(self):
        while True:
            try:
                c, _ = self.s.accept()
            except OSError:
                return
            c.recv(4096)
            c.sendall(self.answer.encode())
            c.close()

    def close(self):
        self.s.close()


@pytest.mark.parametrize("answer", ["error busy: too many control connections; try again\n",
                                    "error something broke\n", "", "not json at all\n"])
def test_status_errors_go_to_stderr_with_exit_1_and_json_stays_json(box, answer):
    box.write_conf("control.socket = %s\n" % (box.tmp / "control.sock"))
    fake = FakeControl(str(box.tmp / "control.sock"), answer)
    try:
        text = status(box)
        js = status(box, "--json")
    finally:
        fake.close()
    if answer == "not json at all\n":
        # Text mode prints what the daemon says; only --json insists on JSON.
        assert text.returncode == 0
    else:
        assert text.returncode == 1 and text.stdout == "", (text.stdout, text.stderr)
        assert text.stderr.startswith("crier status: ")
    assert js.returncode == 1, js.stdout
    obj = json.loads(js.stdout)
    assert obj["error"] and js.stderr.startswith("crier status: ")
    if answer.startswith("error busy"):
        assert "busy" in obj["error"] and obj["running"] is True


def test_status_without_daemon_and_with_a_bad_config(box):
    box.write_conf("control.socket = %s\n" % (box.tmp / "none.sock"))
    for args in ([], ["--json"]):
        r = status(box, *args)
        assert r.returncode == 1 and "no crier daemon is running" in r.stderr
        if args:
            assert json.loads(r.stdout) == {"error": r.stderr.strip()[len("crier status: "):], "running": False}
        else:
            assert r.stdout == ""
    r = subprocess.run([CRIER, "status", "--config", str(box.tmp / "missing.conf"), "--json"], capture_output=True, text=True)
    assert r.returncode == 1 and json.loads(r.stdout)["error"]
    r = subprocess.run([CRIER, "status", "--bogus"], capture_output=True, text=True)
    assert r.returncode == 2 and r.stdout == ""


def test_say_without_daemon_or_device_fails_after_a_bounded_wait(box):
    box.write_conf("audio.device = nosuchpcm\ncontrol.socket = %s\n" % (box.tmp / "none.sock"))
    t0 = time.monotonic()
    r = box.run("say", "你好", timeout=30)
    took = time.monotonic() - t0
    assert r.returncode == 1, r.stderr
    assert took < 10, took
    assert re.search(r"ERROR say: cannot speak: audio device 'nosuchpcm' did not open within 5 s", r.stderr), r.stderr
    assert r.stdout == ""


def test_say_through_a_busy_daemon_fails_on_stderr(box):
    box.write_conf("control.socket = %s\n" % (box.tmp / "control.sock"))
    fake = FakeControl(str(box.tmp / "control.sock"), "error busy: too many control connections; try again\n")
    try:
        r = box.run("say", "你好", timeout=30)
    finally:
        fake.close()
    assert r.returncode == 1 and "busy" in r.stderr and r.stdout == ""


def test_print_measured_stop_times():
    # Runs last in this file: the numbers docs/operations.md quotes.
    if MEASURED:
        print("\n" + "\n".join("%-28s %.2f s" % kv for kv in sorted(MEASURED.items())))
