#!/usr/bin/python3
"""Crier vs the shell peer (socat + espeak-ng | aplay), side by side. Run through scripts/bench.sh.

Prints the table and writes docs/benchmarks.md. Never fails because of a time: exits non-zero only
when something broke (a process died, an order was never acked, no audio reached the detector).
Python 3 stdlib only.
"""
import argparse
import datetime
import json
import os
import platform
import re
import resource
import select
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
PY = "/usr/bin/python3"

# Same voice settings for Crier (crier.conf) and the peer (espeak-ng flags). The rate is raised from
# the default 175 so one order ("四十二号", ~0.42 s) is said well within the 1 s between orders: a
# queue building up would measure queueing, not reaction time.
VOICE = "cmn-latn-pinyin"
RATE = 350
PITCH = 40
AMPLITUDE = 100


class Broken(Exception):
    """Something did not work (as opposed to: something was slow)."""


def mono_ns():
    return time.monotonic_ns()


def probe_onsets(path, kind="loud"):
    """The writei probe's stamps of one kind (`loud`, `rx`, `synth`), CLOCK_MONOTONIC ns, in the
    order written; none before the file exists."""
    if not os.path.exists(path):
        return []
    with open(path) as f:
        return [int(l.split()[1]) for l in f if l.startswith(kind + " ")]


def load():
    return "%.2f %.2f %.2f" % os.getloadavg()


class Proc:
    """A child whose stdout/stderr lines are collected with their CLOCK_MONOTONIC arrival time."""

    def __init__(self, args, env=None, stdin=False, cwd=None):
        self.args = args
        self.p = subprocess.Popen(args, env=env, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                  stdin=subprocess.PIPE if stdin else subprocess.DEVNULL, bufsize=0)
        self.pid = self.p.pid
        self.out, self.err = [], []
        self.lock = threading.Lock()
        self.cond = threading.Condition(self.lock)
        self.threads = []
        for stream, sink in ((self.p.stdout, self.out), (self.p.stderr, self.err)):
            t = threading.Thread(target=self._pump, args=(stream, sink), daemon=True)
            t.start()
            self.threads.append(t)

    def _pump(self, stream, sink):
        buf = b""
        while True:
            b = os.read(stream.fileno(), 65536)
            t = mono_ns()
            if not b:
                break
            buf += b
            *lines, buf = buf.split(b"\n")
            if lines:
                with self.cond:
                    for l in lines:
                        sink.append((t, l.decode("utf-8", "replace")))
                    self.cond.notify_all()
        with self.cond:
            self.cond.notify_all()

    def lines(self, which="err"):
        with self.lock:
            return list(self.err if which == "err" else self.out)

    def wait_for(self, pattern, which="err", timeout=20.0, count=1, start=0):
        """Waits until `count` lines (from index `start`) match; returns [(t_ns, line)]."""
        rx = re.compile(pattern)
        end = time.monotonic() + timeout
        with self.cond:
            while True:
                src = self.err if which == "err" else self.out
                hits = [(t, l) for t, l in src[start:] if rx.search(l)]
                if len(hits) >= count:
                    return hits
                left = end - time.monotonic()
                if left <= 0 or (self.p.poll() is not None and not any(t.is_alive() for t in self.threads)):
                    break
                self.cond.wait(min(left, 0.2))
        tail = [l for _, l in (self.err[-15:] + self.out[-15:])]
        raise Broken("timed out after %.0f s waiting for %r from %s; last lines:\n  %s" % (
            timeout, pattern, os.path.basename(self.args[0]) + " " + " ".join(self.args[1:3]), "\n  ".join(tail)))

    def send(self, line):
        self.p.stdin.write((line + "\n").encode())
        self.p.stdin.flush()

    def stop(self, sig=signal.SIGTERM, timeout=15):
        if self.p.poll() is None:
            try:
                self.p.send_signal(sig)
            except ProcessLookupError:
                pass
        try:
            return self.p.wait(timeout)
        except subprocess.TimeoutExpired:
            self.p.kill()
            return self.p.wait()


class OrderServer:
    """A minimal protocol-1 order server (docs/protocol.md) that timestamps each order right before
    it is written to the socket. The one order source for both Crier and the peer."""

    def __init__(self, port=0):
        self.ls = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.ls.bind(("127.0.0.1", port))
        self.ls.listen(4)
        self.port = self.ls.getsockname()[1]
        self.conn = None
        self.hello_at = []  # ns of each hello
        self.acks = {}  # id -> (ns, status)
        self.lock = threading.Lock()
        self.cond = threading.Condition(self.lock)
        self.closed = False
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while not self.closed:
            try:
                c, _ = self.ls.accept()
            except OSError:
                return
            c.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            threading.Thread(target=self._serve, args=(c,), daemon=True).start()

    def _serve(self, c):
        buf = b""
        while True:
            try:
                b = c.recv(65536)
            except OSError:
                b = b""
            t = mono_ns()
            if not b:
                break
            buf += b
            *lines, buf = buf.split(b"\n")
            for l in lines:
                if not l.strip():
                    continue
                try:
                    m = json.loads(l)
                except ValueError:
                    continue
                ty = m.get("type")
                if ty == "hello":
                    c.sendall(b'{"type":"welcome"}\n')
                    with self.cond:
                        self.conn = c
                        self.hello_at.append(t)
                        self.cond.notify_all()
                elif ty == "ping":
                    c.sendall(b'{"type":"pong"}\n')
                elif ty == "ack":
                    with self.cond:
                        self.acks.setdefault(m.get("id"), (t, m.get("status")))
                        self.cond.notify_all()
        with self.cond:
            if self.conn is c:
                self.conn = None
            self.cond.notify_all()
        c.close()

    def wait_hello(self, count=1, timeout=20):
        end = time.monotonic() + timeout
        with self.cond:
            while len(self.hello_at) < count or self.conn is None:
                left = end - time.monotonic()
                if left <= 0:
                    raise Broken("no device connected to the order server within %d s" % timeout)
                self.cond.wait(left)
            return self.hello_at[count - 1]

    def send_order(self, order):
        data = (json.dumps(order, ensure_ascii=False, separators=(",", ":")) + "\n").encode()
        with self.lock:
            c = self.conn
        if c is None:
            raise Broken("device not connected")
        t = mono_ns()
        c.sendall(data)
        return t

    def wait_acks(self, ids, timeout):
        end = time.monotonic() + timeout
        with self.cond:
            while not all(i in self.acks for i in ids):
                left = end - time.monotonic()
                if left <= 0:
                    return False
                self.cond.wait(left)
            return True

    def close(self):
        self.closed = True
        with self.lock:
            c = self.conn
        for s in (self.ls, c):
            if s is not None:
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
                s.close()


# ---------------------------------------------------------------------------------------------
# helpers


def zh_number(n):
    d = "零一二三四五六七八九"
    if n < 10:
        return d[n]
    if n < 20:
        return "十" + (d[n % 10] if n % 10 else "")
    if n < 100:
        return d[n // 10] + "十" + (d[n % 10] if n % 10 else "")
    h, r = d[n // 100] + "百", n % 100
    if r == 0:
        return h
    if r < 10:
        return h + "零" + d[r]
    return h + d[r // 10] + "十" + (d[r % 10] if r % 10 else "")


def pct(values, p):
    """Nearest-rank percentile."""
    s = sorted(values)
    k = max(0, min(len(s) - 1, int(-(-p * len(s) // 100)) - 1))
    return s[k]


def smaps(pid):
    """{Rss, Pss, Anonymous, ...} in kB from /proc/PID/smaps_rollup (None if gone)."""
    try:
        with open("/proc/%d/smaps_rollup" % pid) as f:
            out = {}
            for line in f:
                parts = line.split()
                if len(parts) >= 3 and parts[0].endswith(":") and parts[2] == "kB":
                    out[parts[0][:-1]] = int(parts[1])
            return out
    except (FileNotFoundError, PermissionError):
        return None


def proc_status(pid, key):
    try:
        with open("/proc/%d/status" % pid) as f:
            for line in f:
                if line.startswith(key + ":"):
                    return int(line.split()[1])
    except FileNotFoundError:
        return None


def thread_counters(pid):
    """{tid: (CPU ns from schedstat, voluntary switches, involuntary switches)} for every thread."""
    out = {}
    for t in os.listdir("/proc/%d/task" % pid):
        try:
            with open("/proc/%d/task/%s/schedstat" % (pid, t)) as f:
                cpu = int(f.read().split()[0])
            vol = invol = 0
            with open("/proc/%d/task/%s/status" % (pid, t)) as f:
                for line in f:
                    if line.startswith("voluntary_ctxt_switches"):
                        vol = int(line.split()[1])
                    elif line.startswith("nonvoluntary_ctxt_switches"):
                        invol = int(line.split()[1])
            out[t] = (cpu, vol, invol)
        except (FileNotFoundError, ProcessLookupError):
            pass
    return out


def sample_idle(pid, seconds):
    """CPU % of one core and switches/s over `seconds`, summed over threads (a thread that ends
    in the window counts from 0 if it started in it, and is dropped if it ended: idle has none)."""
    l0 = os.getloadavg()[0]
    a = thread_counters(pid)
    t0 = mono_ns()
    time.sleep(seconds)
    b = thread_counters(pid)
    t1 = mono_ns()
    dt = (t1 - t0) / 1e9
    d = [tuple(y - x for x, y in zip(a.get(tid, (0, 0, 0)), v)) for tid, v in b.items()]
    return {"cpu_pct": 100.0 * sum(x[0] for x in d) / (t1 - t0), "wakeups": sum(x[1] for x in d) / dt,
            "invol": sum(x[2] for x in d) / dt, "seconds": dt, "threads": len(b),
            "load": "%.2f→%.2f" % (l0, os.getloadavg()[0])}


def sim_beside(crier):
    """crier-sim (the order server; not in crier since issue 32) from the same build as crier."""
    return os.path.join(os.path.dirname(crier), "crier-sim")


class Bench:
    def __init__(self, crier, quick, work):
        self.crier = crier
        self.sim = sim_beside(crier)
        self.quick = quick
        self.work = work
        self.results = {}
        self.alerts_n = 0
        self.firstsound_n = 0
        self.loaded_configs = ["shipped", "audio", "other", "peer"]
        self.voice_pack = None
        self.voice_pack_en = None
        self.notes = []
        self.children = []
        self.n = 0

    def probe(self):
        """Builds the LD_PRELOAD writei probe once; None if there is no C compiler."""
        if not hasattr(self, "_probe"):
            so = os.path.join(self.work, "writei_probe.so")
            cc = shutil.which("gcc") or shutil.which("cc")
            r = subprocess.run([cc, "-O2", "-shared", "-fPIC", "-o", so, os.path.join(HERE, "writei_probe.c"), "-ldl", "-lasound"],
                               capture_output=True, text=True) if cc else None
            self._probe = so if r is not None and r.returncode == 0 else None
            if self._probe is None:
                self.notes.append("writei probe not built: %s" % (r.stderr[-300:] if r else "no C compiler"))
        return self._probe

    def dir(self, name):
        self.n += 1
        d = os.path.join(self.work, "%02d-%s" % (self.n, name))
        os.makedirs(os.path.join(d, "xdg", "alsa"))
        return d

    def env(self, d, pcm_line):
        with open(os.path.join(d, "xdg", "alsa", "asoundrc"), "w") as f:
            f.write(pcm_line + "\n")
        e = dict(os.environ, XDG_CONFIG_HOME=os.path.join(d, "xdg"), LC_ALL="C.UTF-8")
        e.pop("NOTIFY_SOCKET", None)
        return e

    def conf(self, d, server_port=None, extra=""):
        path = os.path.join(d, "crier.conf")
        with open(path, "w") as f:
            f.write("device.id = bench\nstatus.on_start = off\nstatus.on_link_up = off\n"
                    "input = fifo:%s/buttons.fifo\nstate.path = %s/state\ncontrol.socket = %s/control.sock\nspeech.lang = zh\n"
                    "speech.zh.voice = %s\nspeech.zh.rate = %d\nspeech.zh.pitch = %d\nspeech.zh.volume = %d\n" % (
                        d, d, d, VOICE, RATE, PITCH, AMPLITUDE))
            if server_port:
                f.write("server = tcp://127.0.0.1:%d\n" % server_port)
            f.write(extra)
        return path

    def crier_run(self, d, env, conf, binary=None, nice=0):
        # nice: as crier.service's Nice=-5 (needs root; otherwise nice(1) warns and runs it at 0)
        p = Proc((["nice", "-n", str(nice)] if nice else []) + [binary or self.crier, "run", "--config", conf], env=env)
        self.children.append(p)
        p.wait_for(r" INFO runtime: ready", timeout=30)
        return p

    def check_alive(self, p, what):
        if p.p.poll() is not None:
            raise Broken("%s exited with %s; last lines:\n  %s" % (what, p.p.returncode, "\n  ".join(
                l for _, l in p.lines()[-20:])))

    def log(self, msg):
        print("[bench %s] %s" % (time.strftime("%H:%M:%S"), msg), flush=True)

    # -----------------------------------------------------------------------------------------
    # latency: order sent -> first loud sample leaving ALSA

    def latency(self, who):
        n = 20 if self.quick else 100
        d = self.dir("latency-" + who)
        fifo = os.path.join(d, "pcm.fifo")
        os.mkfifo(fifo)
        env = self.env(d, 'pcm.!default { type file slave.pcm "null" file "%s" format "raw" }' % fifo)
        probe_out = os.path.join(d, "writei.events")
        if self.probe():
            env = dict(env, LD_PRELOAD=self.probe(), WRITEI_PROBE_OUT=probe_out, WRITEI_PROBE_GAP_MS="100")
        det = Proc([PY, os.path.join(HERE, "detector.py"), "--gap-ms", "100", fifo])
        self.children.append(det)
        srv = OrderServer()
        proc = None
        dry = None  # crier only: streamed clips that ran dry, counted from its log
        l0 = os.getloadavg()[0]
        try:
            if who == "crier":
                conf = self.conf(d, srv.port)
                proc = self.crier_run(d, env, conf)
                srv.wait_hello()
                proc.wait_for(r"INFO audio: opened device=default type=FILE", timeout=20)
            else:
                penv = dict(env, PEER_VOICE=VOICE, PEER_RATE=str(RATE), PEER_PITCH=str(PITCH),
                            PEER_AMPLITUDE=str(AMPLITUDE), PEER_DEVICE="default")
                proc = Proc(["bash", os.path.join(HERE, "peer.sh"), "127.0.0.1", str(srv.port)], env=penv)
                self.children.append(proc)
                srv.wait_hello()
            time.sleep(1.0)
            run = "%x" % (int(time.time() * 1000) & 0xFFFFFF)
            warm = 2  # same warm-up for both: page cache, voice data, first synthesis
            sends = []
            t_next = time.monotonic()
            for i in range(warm + n):
                num = 1 + (i % 999)
                oid = "L%s-%s-%d" % (run, who, i)
                ts = srv.send_order({"type": "order", "id": oid, "kind": "text", "text": zh_number(num) + "号"})
                sends.append((oid, ts))
                t_next += 1.0
                time.sleep(max(0.0, t_next - time.monotonic()))
            ok = srv.wait_acks([i for i, _ in sends], timeout=30)
            time.sleep(0.3)
        finally:
            if proc is not None and who == "crier":
                proc.stop()
                # Kept for reading a slow order's story; a streamed clip that ran dry is counted.
                lines = [l for _, l in proc.lines()]
                with open(os.path.join(d, "crier.log"), "w") as f:
                    f.write("\n".join(lines) + "\n")
                gaps = sum(1 for l in lines if "speech synthesis is behind playback" in l)
                self.log("latency crier: %d clips ran dry after they started (crier.log in %s)" % (gaps, d))
                dry = gaps
            srv.close()
            if proc is not None and who != "crier":
                proc.stop()
            time.sleep(0.3)
            det.stop()
        if not ok:
            raise Broken("%s: %d of %d orders never acked" % (who, sum(1 for i, _ in sends if i not in srv.acks), len(sends)))
        louds = sorted(int(l.split()[1]) for _, l in det.lines("out") if l.startswith("loud "))
        prio = next((l.split()[1] for _, l in det.lines("out") if l.startswith("priority ")), "?")
        with open(os.path.join(d, "events.txt"), "w") as f:
            ev = [(ts, "send %s" % oid) for oid, ts in sends] + [(int(l.split()[1]), l) for _, l in det.lines("out")
                                                              if not l.startswith("priority")]
            ev += [(t, "ack %s %s" % (i, st)) for i, (t, st) in srv.acks.items()]
            for t, what in sorted(ev):
                f.write("%.3f %s\n" % ((t - sends[0][1]) / 1e6, what))

        def match(onsets):
            """Order k's onset: the first one in [max(send_k, ack_{k-1} - 0.1 s), ack_k]. Both Crier and
            the peer say orders one after the other and ack each once it has been played, so this
            window holds order k's sound even when a stall made it start after order k+1 was sent."""
            lat, missed = [], 0
            prev_ack = None
            used = -1
            for k, (oid, ts) in enumerate(sends):
                ack = srv.acks[oid][0] if oid in srv.acks else ts + int(5e9)
                lo = ts if prev_ack is None else max(ts, prev_ack - int(0.1e9))
                # +0.3 s: an observer may stamp the sound after the ack (aplay can write, exit and
                # be acked before the FIFO reader runs)
                hit = next(((j, t) for j, t in enumerate(onsets) if j > used and lo <= t <= ack + int(0.3e9)), None)
                prev_ack = ack
                if hit is not None:
                    used = hit[0]
                if k < warm:
                    continue
                if hit is None:
                    missed += 1
                else:
                    lat.append((hit[1] - ts) / 1e6)
            return lat, missed

        lat, missed = match(louds)
        wlat = []
        if os.path.exists(probe_out):
            wlat, _ = match(sorted(probe_onsets(probe_out)))
        if len(lat) < n * 0.9:
            raise Broken("%s: only %d of %d orders reached the detector as a loud onset" % (who, len(lat), n))
        acks = [(srv.acks[i][0] - ts) / 1e6 for i, ts in sends[warm:]]
        r = {"n": n, "got": len(lat), "missed": missed, "p50": pct(lat, 50), "p90": pct(lat, 90),
             "p99": pct(lat, 99), "max": max(lat), "mean": statistics.mean(lat), "ack_p50": pct(acks, 50),
             "load": "%.2f→%.2f" % (l0, os.getloadavg()[0]), "detector_priority": prio}
        r["all"] = [round(x, 2) for x in lat]
        r["w_all"] = [round(x, 2) for x in wlat]
        if len(wlat) >= n * 0.9:
            r.update({"w_got": len(wlat), "w_p50": pct(wlat, 50), "w_p90": pct(wlat, 90), "w_p99": pct(wlat, 99),
                      "w_max": max(wlat)})
        if dry is not None:
            r["dry"] = dry
        self.results["latency_" + who] = r
        self.log("latency %s: p50 %.1f p90 %.1f p99 %.1f max %.1f ms (%d/%d detected), load %s" % (
            who, r["p50"], r["p90"], r["p99"], r["max"], r["got"], n, r["load"]))
        if "w_p50" in r:
            self.log("  at snd_pcm_writei %s: p50 %.1f p90 %.1f p99 %.1f max %.1f ms (%d/%d)" % (
                who, r["w_p50"], r["w_p90"], r["w_p99"], r["w_max"], r["w_got"], n))

    # -----------------------------------------------------------------------------------------
    # idle keep-alive on the self-paced null PCM

    def idle(self):
        secs = 10 if self.quick else 60
        d = self.dir("idle")
        env = self.env(d, "")
        conf = self.conf(d, None, "audio.device = null\n")
        p = self.crier_run(d, env, conf)
        p.wait_for(r"INFO audio: opened device=null type=NULL", timeout=20)
        time.sleep(2)
        r = sample_idle(p.pid, secs)
        self.check_alive(p, "crier")
        r["hwm_kb"] = proc_status(p.pid, "VmHWM")
        rc = p.stop()
        if rc != 0:
            raise Broken("crier exited %s after the idle run" % rc)
        self.results["idle_crier"] = r
        self.log("idle crier (null PCM, %.0f s): %.3f %% CPU, %.1f wakeups/s (+%.1f involuntary), VmHWM %d kB, load %s" % (
            r["seconds"], r["cpu_pct"], r["wakeups"], r["invol"], r["hwm_kb"], r["load"]))

    # -----------------------------------------------------------------------------------------
    # memory: idle, after 1000 alerts

    def alerts(self):
        """Memory idle and after many short alerts: peak RSS, and anonymous memory and PSS from
        smaps_rollup sampled along the way (anonymous memory must stay flat). Runs alongside the
        other steps (it is mostly paced playback), with children of its own."""
        n = self.alerts_n or (300 if self.quick else 10000)
        d = self.dir("alerts")
        env = self.env(d, "")
        kids = []
        try:
            sim = Proc([self.sim, "order-sim", "--host", "127.0.0.1", "--port", "0", "--every", "0"], stdin=True)
            kids.append(sim)
            port = int(sim.wait_for(r"^listening addr=", which="out")[0][1].rsplit(":", 1)[1].split()[0])
            conf = self.conf(d, port, "audio.device = null\nspeech.lang = en\nspeech.en.rate = 450\nqueue.max = %d\n" % (n + 50))
            p = Proc([self.crier, "run", "--config", conf], env=env)
            kids.append(p)
            p.wait_for(r" INFO runtime: ready", timeout=30)
            p.wait_for(r"INFO link: connected", timeout=20)
            p.wait_for(r"INFO audio: opened device=null", timeout=20)
            time.sleep(3)
            idle_hwm = proc_status(p.pid, "VmHWM")
            idle_rss = proc_status(p.pid, "VmRSS")
            idle_anon, idle_file = proc_status(p.pid, "RssAnon"), proc_status(p.pid, "RssFile")
            idle_sm = smaps(p.pid) or {}
            samples = [(0, idle_sm.get("Anonymous"), idle_sm.get("Pss"))]
            t0 = mono_ns()
            for _ in range(n):
                sim.send("a")
            step = max(1, n // 10)
            for k in range(step, n + 1, step):
                sim.wait_for(r"^ack id=\S+ status=spoken", which="out", count=k, timeout=step * 1.5 + 60)
                sm = smaps(p.pid) or {}
                samples.append((k, sm.get("Anonymous"), sm.get("Pss")))
                self.log("alerts: %d of %d spoken; anonymous %s kB, PSS %s kB, VmHWM %s kB" % (
                    k, n, sm.get("Anonymous"), sm.get("Pss"), proc_status(p.pid, "VmHWM")))
            sim.wait_for(r"^ack id=\S+ status=spoken", which="out", count=n, timeout=60)
            t1 = mono_ns()
            self.check_alive(p, "crier")
            hwm = proc_status(p.pid, "VmHWM")
            rss = proc_status(p.pid, "VmRSS")
            sm = smaps(p.pid) or {}
            said = len([1 for _, l in p.lines() if "INFO alert: saying" in l])
        finally:
            for k in kids:
                k.stop()
        r = {"n": n, "idle_hwm_kb": idle_hwm, "idle_rss_kb": idle_rss, "hwm_kb": hwm, "rss_kb": rss,
             "idle_anon_kb": idle_anon, "idle_file_kb": idle_file,
             "idle_smaps_anon_kb": idle_sm.get("Anonymous"), "idle_pss_kb": idle_sm.get("Pss"),
             "smaps_anon_kb": sm.get("Anonymous"), "pss_kb": sm.get("Pss"), "samples": samples,
             "seconds": (t1 - t0) / 1e9, "utterances": said}
        self.results["alerts"] = r
        self.log("memory: idle RSS %d kB = %d anon + %d file-backed (shared libraries)" % (idle_rss, idle_anon, idle_file))
        self.log("memory: idle VmHWM %d kB; after %d alerts VmHWM %d kB (RSS %d kB), %d utterances in %.0f s" % (
            idle_hwm, n, hwm, rss, said, r["seconds"]))
        self.log("memory: anonymous / PSS kB along the way: %s" % " ".join("%d:%s/%s" % x for x in samples))

    # -----------------------------------------------------------------------------------------
    # first sound against text length (issue 16): at snd_pcm_writei, Crier vs the peer

    FIRST_SOUND_TEXTS = None

    def textpath(self, exe):
        """The text path's stages before the first sound (Benchmarks/textpath): its table as printed."""
        l0 = load()
        out = subprocess.run([exe, "--runs", "100" if self.quick else "500"], capture_output=True, text=True, timeout=600)
        if out.returncode != 0:
            raise Broken("crier-textpath-bench: exit %d: %s" % (out.returncode, out.stderr[-300:]))
        rows = [l for l in out.stdout.splitlines() if l.startswith("|")]
        self.results["textpath"] = {"title": out.stdout.splitlines()[0], "rows": rows, "load": "%s→%s" % (str(l0).split()[0], str(load()).split()[0])}
        self.log("textpath: %d rows" % (len(rows) - 2))

    @staticmethod
    def first_sound_texts():
        order = "新客户来了，四十二号"
        ten = "新客户来了，" + "、".join(zh_number(41 + i) + "号" for i in range(10))
        base = "请各位顾客注意，本店今日推出新品，欢迎品尝。取餐时请出示取餐码，谢谢合作。"
        long = (base * 20)[:500]
        return [("one order", order, True), ("ten-number alert", ten, True),
                ("text, 100 chars", long[:100], False), ("text, 250 chars", long[:250], False),
                ("500-character text", long, True)]

    def first_sound(self, who, key=None, extra="", nice=0, every_text_n=False):
        """First loud sample at snd_pcm_writei for each text: `who` is crier or peer; `key` names
        the result (first_sound_<key>, default `who`); `extra` is added to Crier's config.
        `every_text_n`: every text gets the full count (the loaded step, whose target holds
        for every text), not only the three judged texts."""
        key = key or who
        main_n = self.firstsound_n or (8 if self.quick else 30)
        d = self.dir("firstsound-" + key)
        env = self.env(d, 'pcm.!default { type null }')
        probe_out = os.path.join(d, "writei.events")
        if not self.probe():
            raise Broken("first sound needs the writei probe (a C compiler)")
        env = dict(env, LD_PRELOAD=self.probe(), WRITEI_PROBE_OUT=probe_out, WRITEI_PROBE_GAP_MS="100")
        srv = OrderServer()
        proc = None
        l0 = os.getloadavg()[0]
        res = {}

        def onsets(kind="loud"):
            return probe_onsets(probe_out, kind)
        try:
            if who == "crier":
                proc = self.crier_run(d, env, self.conf(d, srv.port, extra), nice=nice)
                srv.wait_hello()
                proc.wait_for(r"INFO audio: opened device=default type=NULL", timeout=20)
                # SCHED_FIFO 30, or SCHED_OTHER and why (docs/audio.md, "Real-time priority")
                pol = [l for _, l in proc.lines() if "audio: audio thread:" in l]
                res["_policy"] = pol[0].split("audio: audio thread: ", 1)[1][:120] if pol else "?"
                sp = [l for _, l in proc.lines() if "speech: speech thread:" in l]
                res["_speech_policy"] = sp[0].split("speech: speech thread: ", 1)[1][:60].split(" while")[0] if sp else "SCHED_OTHER"
            else:
                penv = dict(env, PEER_VOICE=VOICE, PEER_RATE=str(RATE), PEER_PITCH=str(PITCH),
                            PEER_AMPLITUDE=str(AMPLITUDE), PEER_DEVICE="default")
                proc = Proc(["bash", os.path.join(HERE, "peer.sh"), "127.0.0.1", str(srv.port)], env=penv)
                self.children.append(proc)
                srv.wait_hello()
            time.sleep(1.0)
            run = "%x" % (int(time.time() * 1000) & 0xFFFFFF)
            for ti, (label, text, main) in enumerate(self.first_sound_texts()):
                n = main_n if main or every_text_n else max(4, main_n // 2)
                lat, split = [], []
                for i in range(2 + n):  # two warm-up orders per text, not counted
                    oid = "F%s-%s-%d-%d" % (run, who, ti, i)
                    seen = len(onsets())
                    ts = srv.send_order({"type": "order", "id": oid, "kind": "text", "text": text})
                    end = time.monotonic() + 5
                    hit = None
                    while time.monotonic() < end:
                        new = [t for t in onsets()[seen:] if t >= ts]
                        if new:
                            hit = new[0]
                            break
                        time.sleep(0.005)
                    if who == "crier":
                        # Long texts would play for a minute: cut once the first sound is out.
                        time.sleep(0.3)
                        srv.send_order({"type": "cancel", "id": oid})
                    if not srv.wait_acks([oid], timeout=30):
                        raise Broken("%s: order %s never acked" % (who, oid))
                    time.sleep(0.4)
                    if i >= 2:
                        if hit is None:
                            raise Broken("%s: no sound at snd_pcm_writei for %r within 5 s" % (who, label))
                        lat.append((hit - ts) / 1e6)
                        # Where the time went (Crier only; the probe's rx and synth stamps):
                        # send -> recv returned in crier, -> espeak_Synth entered, -> loud writei.
                        rx = [t for t in onsets("rx") if ts <= t <= hit]
                        sy = [t for t in onsets("synth") if rx and rx[0] <= t <= hit]
                        if rx and sy:
                            split.append(((hit - ts) / 1e6, (rx[0] - ts) / 1e6, (sy[0] - rx[0]) / 1e6, (hit - sy[0]) / 1e6))
                res[label] = {"chars": len(text), "n": n, "p50": pct(lat, 50), "p90": pct(lat, 90), "p99": pct(lat, 99),
                              "max": max(lat), "all": [round(x, 2) for x in lat]}
                self.log("first sound %s, %s (%d chars): p50 %.2f p90 %.2f p99 %.2f max %.2f ms" % (
                    key, label, len(text), res[label]["p50"], res[label]["p90"], res[label]["p99"], res[label]["max"]))
                if split:
                    split.sort(reverse=True)
                    res[label]["split"] = [[round(x, 3) for x in row] for row in split]
                    med = [pct([r[k] for r in split], 50) for k in (1, 2, 3)]
                    self.log("  split p50: send->rx %.3f, rx->synth %.3f, synth->loud %.3f ms; slowest: %s" % (
                        med[0], med[1], med[2], "; ".join("%.2f = %.2f + %.2f + %.2f" % r for r in split[:3])))
        finally:
            if proc is not None:
                if who == "crier" and proc.p.poll() is None:
                    # The daemon's memory after every text (docs/voice.md compares packs with espeak-ng).
                    try:
                        with open("/proc/%d/status" % proc.p.pid) as f:
                            st = dict(l.split(":", 1) for l in f if ":" in l)
                        res["_rss_mb"] = round(int(st["VmRSS"].split()[0]) / 1024, 1)
                        res["_hwm_mb"] = round(int(st["VmHWM"].split()[0]) / 1024, 1)
                    except (OSError, KeyError, ValueError):
                        pass
                    packs = [l.split("INFO speech: ", 1)[1] for _, l in proc.lines() if "INFO speech: voice pack loaded" in l]
                    if packs:
                        res["_pack"] = packs[0][:200]
                    res["_from_pack"] = sum(1 for _, l in proc.lines() if "said from voice pack clips" in l)
                proc.stop()
            srv.close()
        res["_load"] = "%.2f→%.2f" % (l0, os.getloadavg()[0])
        self.results["first_sound_" + key] = res
        if "_rss_mb" in res:
            self.log("first sound %s: RSS %.1f MB, peak %.1f MB, %d alerts from the pack %s" % (
                key, res["_rss_mb"], res["_hwm_mb"], res.get("_from_pack", 0), res.get("_pack", "")))

    def first_sound_pack(self):
        """The first-sound step with a voice pack (docs/voice.md, issue 33): the same daemon with
        and without `voice.pack.zh`, one after the other. The pack covers the two order texts;
        the shop texts have words no clip covers and go to espeak-ng in both runs."""
        if not self.voice_pack:
            raise Broken("firstsoundpack needs --voice-pack-zh PACK (e.g. one made by `crier voice render`)")
        self.first_sound("crier", key="nopack_crier")
        extra = "voice.pack.zh = %s\n" % self.voice_pack
        if self.voice_pack_en:  # loaded too (memory), never used: the texts are zh
            extra += "voice.pack.en = %s\n" % self.voice_pack_en
        self.first_sound("crier", key="pack_crier", extra=extra)

    # The documented load of the loaded first-sound step (docs/benchmarks.md): one stress-ng CPU
    # worker per core (all of them busy, nice 0) and a music decoder (sox decoding a FLAC to
    # nowhere, in a loop), started before and stopped after the three runs.
    def start_load(self):
        if not shutil.which("stress-ng"):
            raise Broken("the loaded first-sound step needs stress-ng (apt-get install -y stress-ng; scripts/bench.sh does)")
        if not shutil.which("sox"):
            raise Broken("the loaded first-sound step needs sox for its music decoding (apt-get install -y sox)")
        d = self.dir("load")
        flac = os.path.join(d, "music.flac")
        subprocess.run(["sox", "-n", "-r", "44100", "-c", "2", "-b", "16", flac, "synth", "60", "pinknoise", "vol", "0.3"],
                       check=True, capture_output=True)
        cores = os.cpu_count() or 1
        procs = [Proc(["stress-ng", "--cpu", str(cores), "--cpu-method", "all", "--timeout", "0", "--quiet"]),
                 Proc(["bash", "-c", 'while :; do sox -q "$1" -t null - || exit 1; done', "music", flac])]
        self.children.extend(procs)
        time.sleep(2)   # the workers are all running, the load average starts to show it
        for p in procs:
            if p.p.poll() is not None:
                raise Broken("load generator exited at once: %s" % " ".join(p.p.args))
        self.log("load: stress-ng --cpu %d --cpu-method all + a sox FLAC decode loop (load %s)" % (cores, load()))
        return procs, "stress-ng --cpu %d + sox FLAC decoding" % cores

    def first_sound_loaded(self):
        """The first-sound step with every core kept busy (issue 36): Crier as shipped (audio
        thread SCHED_FIFO 30, speech thread FIFO 20 until each first chunk, when allowed), Crier
        with the audio thread's only, Crier with neither (before issue 36), and the peer, one
        after the other under the same load."""
        procs, what = self.start_load()
        try:
            # Crier at the unit's Nice=-5 in all three: the priorities are what differs.
            # --loaded-configs picks some (a longer run of the shipped one against the peer).
            want = set(self.loaded_configs)
            if "shipped" in want:
                self.first_sound("crier", key="loaded_crier", nice=-5, every_text_n=True)
            if "audio" in want:
                self.first_sound("crier", key="loaded_crier_audio", extra="speech.realtime_priority = 0\n", nice=-5, every_text_n=True)
            if "other" in want:
                self.first_sound("crier", key="loaded_crier_other", extra="audio.realtime_priority = 0\nspeech.realtime_priority = 0\n",
                                 nice=-5, every_text_n=True)
            if "peer" in want:
                self.first_sound("peer", key="loaded_peer", every_text_n=True)
        finally:
            for p in procs:
                p.stop()
        self.results["first_sound_loaded_what"] = what

    def button_click(self, key, nice=0):
        """A button press to the click's first loud sample at snd_pcm_writei: `volume_up` and
        `volume_down` in turn, the level 0 (pressed) then 1 after 80 ms written to the daemon's
        `input = fifo:` pipe, as a wired button's edges would arrive. The click follows the
        debounced press (`debounce_ms`, 20 ms by default: a level counts once it has lasted that
        long), so what is Crier's is the time beyond it."""
        n = self.firstsound_n or (20 if self.quick else 60)
        d = self.dir("button-" + key)
        probe_out = os.path.join(d, "writei.events")
        if not self.probe():
            raise Broken("the button step needs the writei probe (a C compiler)")
        env = dict(self.env(d, 'pcm.!default { type null }'), LD_PRELOAD=self.probe(), WRITEI_PROBE_OUT=probe_out,
                   WRITEI_PROBE_GAP_MS="100")
        proc = self.crier_run(d, env, self.conf(d), nice=nice)
        lat = []
        fd = -1
        try:
            proc.wait_for(r"INFO audio: opened device=default type=NULL", timeout=20)
            proc.wait_for(r"INFO buttons: reading input=fifo", timeout=20)
            fd = os.open(os.path.join(d, "buttons.fifo"), os.O_WRONLY)
            time.sleep(0.5)
            for i in range(n + 2):  # two warm-up presses, not counted
                action = b"volume_up" if i % 2 == 0 else b"volume_down"
                seen = len(probe_onsets(probe_out))
                ts = mono_ns()
                os.write(fd, action + b" 0\n")
                time.sleep(0.08)
                os.write(fd, action + b" 1\n")
                end, hit = time.monotonic() + 2, None
                while time.monotonic() < end and hit is None:
                    new = [t for t in probe_onsets(probe_out)[seen:] if t >= ts]
                    hit = new[0] if new else None
                    time.sleep(0.005)
                if hit is None:
                    raise Broken("button %s: no click at snd_pcm_writei within 2 s (press %d)" % (key, i))
                time.sleep(0.25)
                if i >= 2:
                    lat.append((hit - ts) / 1e6)
            self.check_alive(proc, "crier (button step)")
        finally:
            if fd >= 0:
                os.close(fd)
            proc.stop()
        res = {"n": len(lat), "p50": pct(lat, 50), "p99": pct(lat, 99), "max": max(lat), "all": [round(x, 2) for x in lat]}
        self.results["button_" + key] = res
        self.log("button %s: press -> click p50 %.2f p99 %.2f max %.2f ms (%d presses; 20 ms of it the debounce)" % (
            key, res["p50"], res["p99"], res["max"], res["n"]))

    def buttons(self):
        """The button step idle, then with every core busy (the loaded first-sound step's load,
        crier at the unit's Nice=-5)."""
        self.button_click("idle")
        procs, what = self.start_load()
        try:
            self.button_click("loaded", nice=-5)
        finally:
            for p in procs:
                p.stop()
        self.results["button_loaded_what"] = what

    def vm_loaded(self):
        """VM scenario 14-loaded for 10 minutes (5 with --quick): music and orders on hw:Loopback
        with both vCPUs kept busy by stress-ng in the guest; the product's 80 ms buffer; the
        release binary. Underrun lines, clips that ran dry, first sound in the capture."""
        secs = 300 if self.quick else 600
        env = dict(os.environ, CRIER_BIN=self.crier, CRIER_VM_BENCH_N=str(secs), CRIER_VM_BUFFER_MS="80",
                   CRIER_VM_TIMEOUT=str(secs + 600), CRIER_VM_RETRY="0")
        l0 = os.getloadavg()[0]
        # The emulator at nice -20 when we may (root): other host work would starve TCG's vCPUs
        # and the underruns would be the host's, not the guest's.
        nice = ["nice", "-n", "-20"] if os.geteuid() == 0 else []
        r = subprocess.run(nice + ["bash", os.path.join(ROOT, "scripts", "vm-test.sh"), "14-loaded"], env=env,
                           capture_output=True, text=True, timeout=secs + 900)
        m = re.search(r"run dir (\S+)", r.stdout + r.stderr)
        path = os.path.join(m.group(1), "results", "loaded.txt") if m else ""
        fs, got = [], {}
        if path and os.path.exists(path):
            for line in open(path):
                f = line.split()
                if len(f) == 3 and f[0] == "firstsound":
                    fs.append(float(f[2]))
                elif len(f) == 2:
                    got[f[0]] = int(f[1])
                elif len(f) == 4 and f[0] == "orders":
                    got["orders"], got["heard"] = int(f[1]), int(f[3])
        if not fs or "underruns" not in got:
            raise Broken("VM loaded run gave no figures (exit %s):\n  %s" % (r.returncode, "\n  ".join((r.stdout + r.stderr).splitlines()[-25:])))
        res = dict(got, seconds=secs, p50=pct(fs, 50), p99=pct(fs, 99), max=max(fs), n=len(fs), all=fs,
                   passed=r.returncode == 0, run_dir=m.group(1), load="%.2f→%.2f" % (l0, os.getloadavg()[0]))
        self.results["vm_loaded"] = res
        self.log("VM loaded %d s: %d orders, %d heard, %d underrun lines (%d Crier's, %d during a vCPU stall; %d stalls, longest %d ms), "
                 "%d dry; first sound p50 %.0f p99 %.0f max %.0f ms" % (
                     secs, got.get("orders", 0), got.get("heard", 0), got["underruns"], got.get("underruns_crier", got["underruns"]),
                     got.get("underruns_emulator", 0), got.get("stalls", 0), got.get("stall_max_ms", 0), got.get("dry", 0),
                     res["p50"], res["p99"], res["max"]))

    def vm_firstsound(self):
        """Order → first sound in the hw:Loopback capture of the QEMU VM, Crier and the peer in one
        VM run (scripts/bench/vm/firstsound.sh); under TCG the ratio is the figure."""
        n = 3 if self.quick else 5
        env = dict(os.environ, CRIER_BIN=self.crier, CRIER_VM_BENCH_N=str(n), CRIER_VM_TIMEOUT="900")
        l0 = os.getloadavg()[0]
        r = subprocess.run(["bash", os.path.join(ROOT, "scripts", "vm-test.sh"), "../../bench/vm/firstsound"], env=env,
                           capture_output=True, text=True, timeout=1200)
        m = re.search(r"run dir (\S+)", r.stdout + r.stderr)
        got = {}
        dry = None
        path = os.path.join(m.group(1), "results", "bench.txt") if m else ""
        if path and os.path.exists(path):
            for line in open(path):
                f = line.split()
                if len(f) == 4 and f[0] == "firstsound":
                    got.setdefault(f[1], {}).setdefault(f[2], []).append(float(f[3]))
                elif len(f) == 4 and f[0] == "dry":
                    dry = {"dry": int(f[2]), "underruns": int(f[3])}
        if r.returncode != 0 or "crier" not in got or "peer" not in got:
            raise Broken("VM first-sound run failed (exit %s):\n  %s" % (r.returncode, "\n  ".join((r.stdout + r.stderr).splitlines()[-25:])))
        res = {who: {lab: {"p50": pct(v, 50), "max": max(v), "n": len(v), "all": v} for lab, v in d.items()} for who, d in got.items()}
        res["run_dir"] = m.group(1)
        res["load"] = "%.2f→%.2f" % (l0, os.getloadavg()[0])
        self.results["vm_firstsound"] = res
        if dry is not None:
            res["crier_dry"] = dry
            self.log("VM first sound: crier logged %d clips that ran dry and %d underrun lines" % (dry["dry"], dry["underruns"]))
        for lab in ("one", "ten", "long"):
            c, q = res["crier"].get(lab), res["peer"].get(lab)
            if c and q:
                self.log("VM first sound %s: crier p50 %.0f ms, peer p50 %.0f ms (%.1f×)" % (lab, c["p50"], q["p50"], q["p50"] / max(c["p50"], 1e-9)))

    def static(self):
        """Idle memory and the burst again with the binary as the .deb ships it (--static-swift-stdlib)."""
        if not self.static_bin:
            return
        d = self.dir("static-idle")
        env = self.env(d, "")
        sim = Proc([self.sim, "order-sim", "--host", "127.0.0.1", "--port", "0", "--every", "0", "--no-stdin"])
        self.children.append(sim)
        port = int(sim.wait_for(r"^listening addr=", which="out")[0][1].rsplit(":", 1)[1].split()[0])
        p = self.crier_run(d, env, self.conf(d, port, "audio.device = null\n"), self.static_bin)
        p.wait_for(r"INFO link: connected", timeout=20)
        p.wait_for(r"INFO audio: opened device=null", timeout=20)
        time.sleep(3)
        r = {k: proc_status(p.pid, k) for k in ("VmHWM", "VmRSS", "RssAnon", "RssFile")}
        self.check_alive(p, "crier (static)")
        p.stop()
        sim.stop()
        self.results["static_idle"] = r
        self.log("static binary idle: VmHWM %d kB, RSS %d kB = %d anon + %d file" % (r["VmHWM"], r["VmRSS"], r["RssAnon"], r["RssFile"]))
        self.burst(self.static_bin, "burst_static")

    # -----------------------------------------------------------------------------------------
    # burst: 10000 orders at once

    def burst(self, binary=None, key="burst"):
        n = 10000
        l0 = os.getloadavg()[0]
        binary = binary or self.crier
        d = self.dir(key)
        env = self.env(d, "")
        sim = Proc([sim_beside(binary), "order-sim", "--host", "127.0.0.1", "--port", "0", "--rate", "100000",
                    "--count", str(n), "--no-stdin"])
        self.children.append(sim)
        port = int(sim.wait_for(r"^listening addr=", which="out")[0][1].rsplit(":", 1)[1].split()[0])
        conf = self.conf(d, port, "audio.device = null\nqueue.max = 20\nalert.coalesce_max = 20\nspeech.zh.rate = 450\n")
        p = self.crier_run(d, env, conf, binary)
        hwm0 = proc_status(p.pid, "VmHWM")
        t0 = sim.wait_for(r"^device connected", which="out", timeout=20)[0][0]
        t1, done = sim.wait_for(r"^done ", which="out", timeout=300)[0]
        self.check_alive(p, "crier")
        hwm = proc_status(p.pid, "VmHWM")
        said = len([1 for _, l in p.lines() if "INFO alert: saying" in l])
        p.stop()
        rc = sim.stop()
        m = dict(kv.split("=", 1) for kv in done.split()[1:] if "=" in kv)
        if m.get("unacked") != "0":
            raise Broken("burst: not every order acked: " + done)
        r = {"n": n, "seconds": (t1 - t0) / 1e9, "utterances": said, "hwm_kb": hwm, "hwm0_kb": hwm0, "done": done,
             "load": "%.2f→%.2f" % (l0, os.getloadavg()[0]),
             "spoken": int(m.get("spoken", 0)), "rejected": int(m.get("rejected", 0))}
        self.results[key] = r
        self.log("%s: %s in %.2f s, %d utterances, VmHWM %d kB" % (key, done, r["seconds"], said, hwm))

    # -----------------------------------------------------------------------------------------
    # exec -> ready (sd_notify READY=1 if the daemon sends it, else the `runtime: ready` log line)

    def start(self):
        n = 20
        l0 = os.getloadavg()[0]
        d = self.dir("start")
        env = self.env(d, "")
        srv = OrderServer()
        conf = self.conf(d, srv.port, "audio.device = null\n")
        sock_path = os.path.join(d, "notify.sock")
        ns = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        ns.bind(sock_path)
        env["NOTIFY_SOCKET"] = sock_path
        ready, logready, hello = [], [], []
        ns.setblocking(False)
        for i in range(n):
            while True:  # drop whatever the previous process sent (STOPPING=1, …)
                try:
                    ns.recv(4096)
                except BlockingIOError:
                    break
            t0 = mono_ns()
            p = Proc([self.crier, "run", "--config", conf], env=env)
            got_ready = None
            seen_log = None
            end = time.monotonic() + 20
            while got_ready is None and time.monotonic() < end:
                rl, _, _ = select.select([ns], [], [], 0.02)
                if rl and b"READY=1" in ns.recv(4096).split(b"\n"):
                    got_ready = mono_ns()
                    break
                if seen_log is None and any(" INFO runtime: ready" in l for _, l in p.lines()):
                    seen_log = time.monotonic()
                if seen_log is not None and time.monotonic() - seen_log > 0.3:
                    break  # the log line came and no READY=1 followed within 0.3 s
            tl = p.wait_for(r" INFO runtime: ready", timeout=20)[0][0]
            th = srv.wait_hello(count=i + 1, timeout=20)
            logready.append((tl - t0) / 1e6)
            hello.append((th - t0) / 1e6)
            if got_ready is not None:
                ready.append((got_ready - t0) / 1e6)
            rc = p.stop()
            if rc != 0:
                raise Broken("crier exited %s on SIGTERM during the start benchmark" % rc)
        ns.close()
        srv.close()
        # the peer's "start": exec -> its hello reaches the server (socat connected, bash loop running)
        srv = OrderServer()
        peer = []
        for i in range(n):
            t0 = mono_ns()
            pp = Proc(["bash", os.path.join(HERE, "peer.sh"), "127.0.0.1", str(srv.port)])
            th = srv.wait_hello(count=i + 1, timeout=20)
            peer.append((th - t0) / 1e6)
            with srv.lock:
                c = srv.conn
            c.shutdown(socket.SHUT_RDWR)
            pp.stop(timeout=10)
        srv.close()
        r = {"n": n, "ready": statistics.median(ready) if ready else None, "ready_n": len(ready),
             "log": statistics.median(logready), "log_max": max(logready), "hello": statistics.median(hello),
             "peer_hello": statistics.median(peer), "load": "%.2f→%.2f" % (l0, os.getloadavg()[0])}
        self.results["start"] = r
        self.log("start: exec→READY=1 %s, exec→'runtime: ready' %.1f ms (max %.1f), exec→hello %.1f ms; peer exec→hello %.1f ms" % (
            "%.1f ms" % r["ready"] if ready else "not sent", r["log"], r["log_max"], r["hello"], r["peer_hello"]))

    # -----------------------------------------------------------------------------------------
    # reconnect after an order-sim restart

    def reconnect(self):
        k = 3 if self.quick else 5
        l0 = os.getloadavg()[0]
        d = self.dir("reconnect")
        env = self.env(d, "")
        state = os.path.join(d, "sim-state")
        sim = Proc([self.sim, "order-sim", "--host", "127.0.0.1", "--port", "0", "--every", "0", "--state", state], stdin=True)
        port = int(sim.wait_for(r"^listening addr=", which="out")[0][1].rsplit(":", 1)[1].split()[0])
        conf = self.conf(d, port, "audio.device = null\n")
        p = self.crier_run(d, env, conf)
        sim.wait_for(r"^device connected", which="out", timeout=20)
        from_listen, from_exec = [], []
        for i in range(k):
            # keep the link up past Crier's healthyAfter (10 s) so each restart starts from a reset
            # backoff; a link that flaps sooner keeps backing off (up to 30 s) by design
            time.sleep(11)
            sim.stop()
            time.sleep(1.0)  # the server is down for 1 s
            t_exec = mono_ns()
            sim = Proc([self.sim, "order-sim", "--host", "127.0.0.1", "--port", str(port), "--every", "0",
                        "--state", state], stdin=True)
            self.children.append(sim)
            t_listen = sim.wait_for(r"^listening addr=", which="out", timeout=20)[0][0]
            t_conn = sim.wait_for(r"^device connected", which="out", timeout=60)[0][0]
            from_listen.append((t_conn - t_listen) / 1e6)
            from_exec.append((t_conn - t_exec) / 1e6)
        self.check_alive(p, "crier")
        p.stop()
        sim.stop()
        r = {"k": k, "median": statistics.median(from_listen), "max": max(from_listen),
             "exec_median": statistics.median(from_exec), "all": from_listen, "load": "%.2f→%.2f" % (l0, os.getloadavg()[0])}
        self.results["reconnect"] = r
        self.log("reconnect (server down 1 s): listening→device connected median %.0f ms max %.0f ms (%s)" % (
            r["median"], r["max"], ", ".join("%.0f" % x for x in from_listen)))

    # -----------------------------------------------------------------------------------------
    # the peer's memory: what runs per order

    def peer_memory(self):
        d = self.dir("peer-mem")
        env = self.env(d, 'pcm.!default { type file slave.pcm "null" file "/dev/null" format "raw" }')
        wav = os.path.join(d, "o.wav")

        def maxrss(cmd, **kw):
            # GNU time forks from its own small process: a wait4 from this Python process would
            # count the forked interpreter's pages in the child's peak.
            r = subprocess.run(["/usr/bin/time", "-f", "maxrss=%M", *cmd], env=env, stderr=subprocess.PIPE, text=True,
                               stdout=kw.get("stdout", subprocess.DEVNULL))
            if r.returncode != 0:
                raise Broken("peer memory: %s exited %s: %s" % (cmd[0], r.returncode, r.stderr[-300:]))
            return int(re.findall(r"maxrss=(\d+)", r.stderr)[-1])

        with open(wav, "wb") as f:
            e = maxrss(["espeak-ng", "-v", VOICE, "-s", str(RATE), "-p", str(PITCH), "--stdout", "四十二号"], stdout=f)
        a = maxrss(["aplay", "-q", "-D", "default", wav])
        # the resident part: socat + the bash loop, waiting for orders
        srv = OrderServer()
        pp = Proc(["bash", os.path.join(HERE, "peer.sh"), "127.0.0.1", str(srv.port)], env=env)
        srv.wait_hello()
        time.sleep(0.5)
        pids = [pp.pid] + [int(x) for x in subprocess.run(["pgrep", "-P", str(pp.pid)], capture_output=True,
                                                           text=True).stdout.split()]
        resident = sum(proc_status(x, "VmRSS") or 0 for x in pids)
        srv.close()
        pp.stop()
        r = {"espeak_kb": e, "aplay_kb": a, "resident_kb": resident, "procs": len(pids)}
        self.results["peer_mem"] = r
        self.log("peer memory: socat+bash %d kB resident; per order espeak-ng %d kB + aplay %d kB peak" % (resident, e, a))

    # -----------------------------------------------------------------------------------------
    # VM: idle keep-alive on a clock-driven device (scripts/vm-test.sh, scenario in scripts/bench/vm)

    def vm(self):
        name = "../../bench/vm/idle-quick" if self.quick else "../../bench/vm/idle"
        env = dict(os.environ, CRIER_BIN=self.crier, CRIER_VM_TIMEOUT="420")
        l0 = os.getloadavg()[0]
        r = subprocess.run(["bash", os.path.join(ROOT, "scripts", "vm-test.sh"), name], env=env,
                           capture_output=True, text=True, timeout=600)
        m = re.search(r"run dir (\S+)", r.stdout + r.stderr)
        res = {}
        if m and os.path.exists(os.path.join(m.group(1), "results", "bench.txt")):
            for line in open(os.path.join(m.group(1), "results", "bench.txt")):
                k, _, rest = line.strip().partition(" ")
                if k.endswith("_params"):
                    res[k] = rest
                else:
                    res[k] = {kv.split("=")[0]: float(kv.split("=")[1]) for kv in rest.split()}
        if r.returncode != 0 or "crier" not in res:
            raise Broken("VM run failed (exit %s):\n  %s" % (r.returncode, "\n  ".join((r.stdout + r.stderr).splitlines()[-25:])))
        res["run_dir"] = m.group(1)
        res["load"] = "%.2f→%.2f" % (l0, os.getloadavg()[0])
        res["buffer_ms"] = os.environ.get("CRIER_VM_BUFFER_MS", "400")
        self.results["vm"] = res
        c, a, d = res["crier"], res.get("aplay_same", {}), res.get("aplay_default", {})
        self.log("VM idle (hw:Loopback, TCG, %.0f s): crier %.2f %% %.1f wakeups/s; aplay same period %.2f %% %.1f/s; aplay default %.2f %% %.1f/s" % (
            c["seconds"], c["cpu_pct"], c["wakeups"], a.get("cpu_pct", -1), a.get("wakeups", -1), d.get("cpu_pct", -1), d.get("wakeups", -1)))

    def cleanup(self):
        for p in self.children:
            if p.p.poll() is None:
                p.stop(signal.SIGKILL, timeout=5)


# ---------------------------------------------------------------------------------------------
# report


def mb(kb):
    return "%.1f MB" % (kb / 1024.0) if kb is not None else "n/a"


def verdict(ok):
    return "met" if ok else "**not met**"


def machine_info(crier):
    def sh(*cmd):
        try:
            return subprocess.run(cmd, capture_output=True, text=True, timeout=20).stdout.strip()
        except Exception:
            return ""
    cpu = ""
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    mem = proc_status(os.getpid(), "VmRSS") and open("/proc/meminfo").readline().split()[1]
    osr = ""
    if os.path.exists("/etc/os-release"):
        for line in open("/etc/os-release"):
            if line.startswith("PRETTY_NAME="):
                osr = line.split("=", 1)[1].strip().strip('"')
    commit = sh("git", "-C", ROOT, "rev-parse", "--short", "HEAD")
    dirty = sh("git", "-C", ROOT, "status", "--porcelain", "--untracked-files=no", "--", "Sources", "Package.swift")
    swift = sh("swift", "--version").splitlines()
    return {
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "host": "%s, %s, %d cores, %.1f GB RAM, kernel %s" % (osr, cpu, os.cpu_count(), int(mem) / 1024 / 1024, platform.release()),
        "commit": commit + (" (Sources modified)" if dirty else ""),
        "swift": swift[0] if swift else "?",
        "espeak": sh("espeak-ng", "--version"),
        "alsa": sh("dpkg-query", "-W", "-f", "${Version}", "libasound2"),
        "binary": crier,
    }


def render(b, info, load_start, load_end, elapsed):
    R = b.results
    rows = []

    def row(metric, crier, peer, target, ok, load=""):
        rows.append((metric, crier, peer, target, ok, load))

    fc, fp = R.get("first_sound_crier"), R.get("first_sound_peer")
    if fc and fp:
        for label, text, main in Bench.first_sound_texts():
            if not main or label not in fc or label not in fp:
                continue
            c, q = fc[label], fp[label]
            for k in ("p50", "p99"):
                ratio = q[k] / c[k] if c[k] > 0 else float("inf")
                row("first loud sample at `snd_pcm_writei`, %s (%d chars), %s%s" % (
                    label, c["chars"], k, " (%d orders)" % c["n"] if k == "p50" else ""),
                    "%.2f ms" % c[k], "%.1f ms (%s×)" % (q[k], ("%.0f" if ratio >= 10 else "%.1f") % ratio), "≥ 10× lower than the peer",
                    verdict(ratio >= 10), fc["_load"] + " / " + fp["_load"] if k == "p50" and label == "one order" else "")
        one, big = fc.get("one order"), fc.get("500-character text")
        if one and big:
            ratio = big["p50"] / one["p50"] if one["p50"] > 0 else float("inf")
            row("Crier first sound, 500-character text p50 / one order p50", "%.2f×" % ratio, "%.2f× (peer)" % (
                fp["500-character text"]["p50"] / fp["one order"]["p50"]), "≤ 1.5×", verdict(ratio <= 1.5))
    lc, lo, lp = R.get("first_sound_loaded_crier"), R.get("first_sound_loaded_crier_other"), R.get("first_sound_loaded_peer")
    la = R.get("first_sound_loaded_crier_audio")
    if lc and lp:
        what = R.get("first_sound_loaded_what", "load")
        for label, text, main in Bench.first_sound_texts():  # every text: issue 36's target holds for each
            if label not in lc or label not in lp:
                continue
            c, q, o, a = lc[label], lp[label], (lo or {}).get(label), (la or {}).get(label)
            for k in ("p50", "p99"):
                ratio = q[k] / c[k] if c[k] > 0 else float("inf")
                row("under load (%s): first loud sample at `snd_pcm_writei`, %s (%d chars), %s%s" % (
                    what, label, c["chars"], k, " (%d orders)" % c["n"] if k == "p50" else ""),
                    "%.2f ms%s%s" % (c[k], "; audio thread only %.2f ms" % a[k] if a else "",
                                     "; all SCHED_OTHER %.2f ms" % o[k] if o else ""),
                    "%.1f ms (%s×)" % (q[k], ("%.0f" if ratio >= 10 else "%.1f") % ratio), "≥ 10× lower than the peer",
                    verdict(ratio >= 10),
                    "%s / %s / %s" % (lc["_load"], (lo or {}).get("_load", "-"), lp["_load"]) if k == "p50" and label == "one order" else "")
        row("under load: Crier's audio thread", lc.get("_policy", "?"), "-", "SCHED_FIFO 30", verdict(lc.get("_policy", "").startswith("SCHED_FIFO")))
        row("under load: Crier's speech thread (waiting, until each first chunk)", lc.get("_speech_policy", "?"), "-", "SCHED_FIFO 20",
            verdict(lc.get("_speech_policy", "").startswith("SCHED_FIFO")))
    vf = R.get("vm_firstsound")
    if vf:
        names = {"one": "one order", "ten": "ten-number alert", "long": "500-character text"}
        for lab in ("one", "ten", "long"):
            c, q = vf["crier"].get(lab), vf["peer"].get(lab)
            if not c or not q:
                continue
            ratio = q["p50"] / c["p50"] if c["p50"] > 0 else float("inf")
            row("VM (hw:Loopback, TCG): order → first sound in the capture, %s, p50 (%d orders)" % (names[lab], c["n"]),
                "%.0f ms" % c["p50"], "%.0f ms (%.1f×)" % (q["p50"], ratio), "the ratio (TCG times the emulator)", "",
                vf["load"] if lab == "one" else "")
        if vf.get("crier_dry"):
            row("VM (hw:Loopback, TCG): Crier's streamed clips that ran dry / underrun log lines, whole run",
                "%d / %d" % (vf["crier_dry"]["dry"], vf["crier_dry"]["underruns"]), "", "", "", "")
    for k, label in (("button_idle", "idle"), ("button_loaded", "every core busy (%s)" % R.get("button_loaded_what", "load"))):
        bt = R.get(k)
        if bt:
            row("Button press → click at snd_pcm_writei, %s: p50 / p99 / max (%d presses; 20 ms of it the debounce)" % (label, bt["n"]),
                "%.2f / %.2f / %.2f ms" % (bt["p50"], bt["p99"], bt["max"]), "", "", "")
    vl = R.get("vm_loaded")
    if vl:
        crier_u = vl.get("underruns_crier", vl["underruns"])
        row("VM under load (hw:Loopback, TCG, stress-ng --cpu 2 in the guest, music on, 80 ms buffer): underruns over %d s, "
            "Crier's / during a vCPU stall (vCPU stalls ≥ 20 ms, longest)" % vl["seconds"],
            "%d / %d (%d, %d ms)" % (crier_u, vl.get("underruns_emulator", 0), vl.get("stalls", 0), vl.get("stall_max_ms", 0)),
            "", "0 Crier's", verdict(crier_u == 0), vl["load"])
        row("VM under load: orders said / heard in the capture, clips that ran dry",
            "%d / %d, %d dry" % (vl.get("orders", 0), vl.get("heard", 0), vl.get("dry", 0)), "", "all heard", verdict(vl.get("orders") == vl.get("heard")))
        row("VM under load: order → first sound in the capture, p50 / p99 / max (%d orders)" % vl["n"],
            "%.0f / %.0f / %.0f ms" % (vl["p50"], vl["p99"], vl["max"]), "", "(TCG times the emulator)", "")
    lc, lp = R.get("latency_crier"), R.get("latency_peer")
    if lc and lp:
        n = lc["n"]
        for pre, where in (("", "order → first loud sample leaving ALSA (FIFO)"),
                           ("w_", "order → first loud sample handed to `snd_pcm_writei`")):
            if pre + "p50" not in lc or pre + "p50" not in lp:
                continue
            for k in ("p50", "p90", "p99", "max"):
                c, q = lc[pre + k], lp[pre + k]
                ratio = q / c if c > 0 else float("inf")
                tgt, ok = "", ""
                if k == "p99":
                    tgt = "≤ 10 ms, ≥ 10× lower than the peer"
                    ok = verdict(c <= 10 and ratio >= 10) + " (≤ 10 ms: %s; 10×: %s)" % (
                        "yes" if c <= 10 else "no", "yes" if ratio >= 10 else "no")
                row("latency %s, %s%s" % (where, k, " (%d orders, 1 s apart)" % n if k == "p50" else ""),
                    "%.1f ms" % c, "%.1f ms (%.1f×)" % (q, ratio), tgt, ok,
                    lc["load"] + " / " + lp["load"] if k == "p50" and not pre else "")
        row("order sent → ack received, p50 (reference only: the peer's aplay is not paced)",
            "%.0f ms" % lc["ack_p50"], "%.0f ms" % lp["ack_p50"], "", "")
        if "dry" in lc:
            row("streamed clips that ran dry after they started (`speech synthesis is behind playback`), of %d" % n,
                "%d" % lc["dry"], "", "", "")
    ic = R.get("idle_crier")
    if ic:
        row("idle keep-alive CPU, null PCM (self-paced), %.0f s" % ic["seconds"], "%.2f %% of one core" % ic["cpu_pct"],
            "n/a on the host (see below)", "≤ 0.5 %", verdict(ic["cpu_pct"] <= 0.5), ic["load"])
        row("idle wakeups/s (voluntary context switches, all threads)", "%.1f /s (+%.1f involuntary)" % (ic["wakeups"], ic["invol"]),
            "n/a on the host", "≤ 50 /s", verdict(ic["wakeups"] <= 50), "")
    vm = R.get("vm")
    if vm:
        c, q, dflt = vm["crier"], vm.get("aplay_same"), vm.get("aplay_default")
        peer = "%.2f %% (aplay, same 20 ms period); %.2f %% (aplay's default %s)" % (
            q["cpu_pct"], dflt["cpu_pct"], "125 ms period" if "6000" in vm.get("aplay_default_params", "") else "period") if q and dflt else ""
        row("VM idle keep-alive CPU on hw:Loopback (clock-driven, QEMU TCG ≈ 100× slower), %.0f s" % c["seconds"],
            "%.2f %% of one vCPU" % c["cpu_pct"], peer, "(judged on the host row)", "", vm["load"])
        peerw = "%.1f /s (same period); %.1f /s (default)" % (q["wakeups"], dflt["wakeups"]) if q and dflt else ""
        row("VM idle wakeups/s on hw:Loopback", "%.1f /s" % c["wakeups"], peerw, "≤ 50 /s", verdict(c["wakeups"] <= 50), "")
    a = R.get("alerts")
    pm = R.get("peer_mem")
    if a:
        peer_idle = "%s (socat + bash loop)" % mb(pm["resident_kb"]) if pm else ""
        row("peak RSS (VmHWM) idle, connected", mb(a["idle_hwm_kb"]), peer_idle, "≤ 16 MB", verdict(a["idle_hwm_kb"] <= 16 * 1024))
        peer_said = "+ %s espeak-ng + %s aplay per order" % (mb(pm["espeak_kb"]), mb(pm["aplay_kb"])) if pm else ""
        row("peak RSS after %d short text alerts" % a["n"], mb(a["hwm_kb"]), peer_said, "", "")
        if a.get("idle_smaps_anon_kb") is not None and a.get("smaps_anon_kb") is not None:
            sam = [x for x in a.get("samples", []) if x[1] is not None]
            # Flat: what the second half of the run added (the first alerts warm caches up).
            mid = sam[len(sam) // 2][1] if len(sam) > 2 else a["idle_smaps_anon_kb"]
            growth = a["smaps_anon_kb"] - mid
            row("anonymous memory (smaps_rollup) idle → after %d alerts" % a["n"],
                "%s → %s (second half of the run: %+d kB)" % (mb(a["idle_smaps_anon_kb"]), mb(a["smaps_anon_kb"]), growth),
                "", "flat (second half grows < 512 kB)", verdict(growth < 512))
            row("PSS (smaps_rollup) idle → after %d alerts" % a["n"], "%s → %s" % (mb(a["idle_pss_kb"]), mb(a["pss_kb"])),
                "", "", "")
    si = R.get("static_idle")
    if si:
        row("peak RSS idle, connected — static binary (`--static-swift-stdlib`, as the .deb ships)", mb(si["VmHWM"]),
            "", "≤ 16 MB", verdict(si["VmHWM"] <= 16 * 1024))
    bs = R.get("burst_static")
    if bs:
        row("peak RSS after the 10 000-order burst — static binary", mb(bs["hwm_kb"]), "", "≤ 24 MB",
            verdict(bs["hwm_kb"] <= 24 * 1024))
    bu = R.get("burst")
    if bu:
        row("peak RSS after the 10 000-order burst", mb(bu["hwm_kb"]), "", "≤ 24 MB", verdict(bu["hwm_kb"] <= 24 * 1024))
        row("burst: 10 000 orders at once → every id acked", "%.1f s (%d spoken in %d utterances, %d rejected queue_full)" % (
            bu["seconds"], bu["spoken"], bu["utterances"], bu["rejected"]),
            "n/a: one espeak-ng \\| aplay per order, in sequence", "", "", bu.get("load", ""))
    st = R.get("start")
    if st:
        if st["ready"] is not None:
            row("exec → READY=1 on a notify socket, median of %d" % st["n"], "%.0f ms" % st["ready"], "", "≤ 200 ms",
                verdict(st["ready"] <= 200), st["load"])
        else:
            row("exec → `runtime: ready` log line, median of %d (no READY=1 sent yet)" % st["n"], "%.0f ms" % st["log"], "",
                "≤ 200 ms (READY)", verdict(st["log"] <= 200) + " (log line)", st["load"])
        row("exec → hello reaches the order server, median of %d" % st["n"], "%.0f ms" % st["hello"],
            "%.0f ms" % st["peer_hello"], "", "")
    rc = R.get("reconnect")
    if rc:
        row("reconnect: restarted server listening → device connected (server down 1 s), median of %d" % rc["k"],
            "%.0f ms (max %.0f)" % (rc["median"], rc["max"]), "never: socat exits with the connection", "", "", rc["load"])

    head = "| measurement | Crier | shell peer (ratio peer/Crier) | target | verdict | load (1 min) |\n|---|---|---|---|---|---|\n"
    table = head + "".join("| %s | %s | %s | %s | %s | %s |\n" % r for r in rows)
    return table


def make_summary(R):
    out = []
    fc, fp = R.get("first_sound_crier"), R.get("first_sound_peer")
    if fc and fp and "one order" in fc and "500-character text" in fc:
        out.append("- **First sound (issue 16).** Speech is mixed from espeak's first chunk on: at `snd_pcm_writei` "
                   "Crier's first loud sample comes %.2f ms (p50) after the order for one order, %.2f ms for the "
                   "ten-number alert and %.2f ms for the 500-character text; the peer needs %.1f, %.1f and %.1f ms "
                   "(it starts two processes per order, and espeak-ng's CLI writes only once it has a buffer). "
                   "Chart: [first sound against text length](bench-first-sound.svg)." % (
                       fc["one order"]["p50"], fc["ten-number alert"]["p50"], fc["500-character text"]["p50"],
                       fp["one order"]["p50"], fp["ten-number alert"]["p50"], fp["500-character text"]["p50"]))
    lc, lp = R.get("latency_crier"), R.get("latency_peer")
    if lc and lp and "w_p50" in lc and "w_p50" in lp:
        out.append("- **Latency.** Crier hands the first loud sample to ALSA %.1f ms (median) after the order "
                   "was sent, the peer %.1f ms (%.0f×). Through the FIFO harness the medians are %.1f vs %.1f ms "
                   "(%.1f×): the `file` plugin holds back one buffer (80 ms) and lets audio out only as more is "
                   "written after it, so a writer that paces itself like a sound card (Crier) releases its "
                   "first loud sample one to three 20 ms periods later, in steps, while aplay, which dumps the "
                   "whole clip at once, pays nothing; on a real device the listener hears both at stream "
                   "time. Tails: p99 %.0f / %.0f ms at writei (see the caveats below for what this run's "
                   "slowest orders were)." % (
                       lc["w_p50"], lp["w_p50"], lp["w_p50"] / lc["w_p50"], lc["p50"], lp["p50"], lp["p50"] / lc["p50"],
                       lc["w_p99"], lp["w_p99"]))
    ic = R.get("idle_crier")
    if ic:
        out.append("- **Idle.** %.2f %% of a core and %.1f wakeups/s on the null PCM (idle, silence goes out four periods at a time; docs/audio.md)." % (
            ic["cpu_pct"], ic["wakeups"]))
    vm = R.get("vm")
    if vm and vm.get("aplay_same"):
        out.append("- **Idle, clock-driven (VM).** Crier %.2f %% vs aplay playing silence %.2f %% with the same "
                   "20 ms period (%.1f×) and %.2f %% with aplay's default 125 ms period; wakeups %.1f vs %.1f /s." % (
                       vm["crier"]["cpu_pct"], vm["aplay_same"]["cpu_pct"], vm["crier"]["cpu_pct"] / max(vm["aplay_same"]["cpu_pct"], 1e-9),
                       vm["aplay_default"]["cpu_pct"], vm["crier"]["wakeups"], vm["aplay_same"]["wakeups"]))
    a, si = R.get("alerts"), R.get("static_idle")
    if a:
        t = "- **Memory.** Idle %s peak RSS, of which %s anonymous and %s file-backed (mapped code: the " \
            "Swift runtime, libespeak-ng and what it links (PulseAudio, X11), libcrypto, libasound)" % (mb(a["idle_hwm_kb"]), mb(a["idle_anon_kb"]), mb(a["idle_file_kb"]))
        if si:
            t += "; the static build %s (%s anonymous, %s file-backed)" % (mb(si["VmHWM"]), mb(si["RssAnon"]), mb(si["RssFile"]))
        t += ". %d alerts add %s; the burst's peak is %s." % (a["n"], mb(a["hwm_kb"] - a["idle_hwm_kb"]),
                                                               mb(R["burst"]["hwm_kb"]) if R.get("burst") else "?")
        out.append(t)
    return ("\n" + "\n".join(out) + "\n") if out else ""


def first_sound_svg(R, path):
    """docs/bench-first-sound.svg: first-sound time (p50, bar to p90) against text length, Crier and
    the peer, on a log time axis. Plain SVG written by hand (no plotting package needed)."""
    fc, fp = R.get("first_sound_crier"), R.get("first_sound_peer")
    if not (fc and fp):
        return False
    import math
    W, H, L, T, Rm, B = 800, 420, 80, 40, 240, 60  # Rm: room for the legend's longest name
    pw, ph = W - L - Rm, H - T - B
    series = [("Crier", fc, "#1f77b4"), ("espeak-ng | aplay (peer)", fp, "#d62728")]
    pts = [(v["chars"], v["p50"], v["p90"]) for _, d, _ in series for k, v in d.items() if not k.startswith("_")]
    xmax = max(c for c, _, _ in pts) * 1.05
    lo = 10 ** math.floor(math.log10(max(1e-3, min(p for _, p, _ in pts))))
    hi = 10 ** math.ceil(math.log10(max(q for _, _, q in pts)))

    def X(c):
        return L + pw * c / xmax

    def Y(ms):
        return T + ph * (1 - (math.log10(max(ms, lo)) - math.log10(lo)) / (math.log10(hi) - math.log10(lo)))
    o = ['<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="12">' % (W, H, W, H),
         '<rect width="100%" height="100%" fill="white"/>',
         '<text x="%d" y="22" font-size="14" font-weight="bold">Order → first loud sample at snd_pcm_writei (p50, bar to p90)</text>' % L]
    dec = lo
    while dec <= hi * 1.0001:
        y = Y(dec)
        o.append('<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#ddd"/>' % (L, y, L + pw, y))
        o.append('<text x="%d" y="%.1f" text-anchor="end">%s ms</text>' % (L - 6, y + 4, ("%g" % dec)))
        dec *= 10
    for c in range(0, int(xmax) + 1, 100):
        o.append('<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#eee"/>' % (X(c), T, X(c), T + ph))
        o.append('<text x="%.1f" y="%d" text-anchor="middle">%d</text>' % (X(c), T + ph + 16, c))
    o.append('<rect x="%d" y="%d" width="%d" height="%d" fill="none" stroke="#333"/>' % (L, T, pw, ph))
    o.append('<text x="%.1f" y="%d" text-anchor="middle">text length (characters)</text>' % (L + pw / 2, H - 18))
    for i, (name, d, color) in enumerate(series):
        p = sorted((v["chars"], v["p50"], v["p90"]) for k, v in d.items() if not k.startswith("_"))
        o.append('<polyline fill="none" stroke="%s" stroke-width="2" points="%s"/>' % (
            color, " ".join("%.1f,%.1f" % (X(c), Y(m)) for c, m, _ in p)))
        for c, m, q in p:
            o.append('<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s"/>' % (X(c), Y(m), X(c), Y(q), color))
            o.append('<circle cx="%.1f" cy="%.1f" r="4" fill="%s"/>' % (X(c), Y(m), color))
            o.append('<text x="%.1f" y="%.1f" fill="%s" font-size="10">%.2g</text>' % (X(c) + 6, Y(m) - 6, color, m))
        ly = T + 20 + 20 * i
        o.append('<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="%s" stroke-width="2"/>' % (L + pw + 14, ly, L + pw + 34, ly, color))
        o.append('<text x="%d" y="%d">%s</text>' % (L + pw + 40, ly + 4, name))
    o.append('</svg>')
    with open(path, "w") as f:
        f.write("\n".join(o) + "\n")
    return True


def textpath_section(R):
    tp = R.get("textpath")
    if not tp:
        return ""
    return ("**The text path, stage by stage (issue 16).** `crier-textpath-bench` (Benchmarks/textpath, release build, "
            "in-process, load %s): %s. *Admission* is the nothing-to-say check when the order is queued (it renders the "
            "words); *render for the speaker* is the same text rendered again when the speaker loop takes the alert; "
            "espeak-ng's times are from the call on its thread to its first chunk and to its last. The first-sound figures "
            "above include all of it plus the socket, the daemon's hops between threads and the audio period.\n\n%s\n\n"
            % (tp["load"], tp["title"].rstrip(":"), "\n".join(tp["rows"])))


def write_doc(path, b, info, table, load_start, load_end, elapsed, quick):
    R = b.results
    lc = R.get("latency_crier", {})
    lp = R.get("latency_peer", {})
    a = R.get("alerts", {})
    st = R.get("start", {})
    vm = R.get("vm")
    si = R.get("static_idle")
    notes = "".join("- %s\n" % n for n in b.notes)
    notes_section = ("\n## Not measured / caveats\n\n" + notes) if notes else ""
    summary = make_summary(R)
    fs = Bench.first_sound_texts()
    fs_texts = ["「%s」, %d characters" % (t, len(t)) for _, t, _ in fs]
    fc = R.get("first_sound_crier", {})
    fs_n = fc.get("one order", {}).get("n", "?")
    fs_n2 = fc.get("text, 100 chars", {}).get("n", "?")
    first_sound_svg(R, os.path.join(os.path.dirname(path), "bench-first-sound.svg"))
    if vm:
        vm_line = ("in the QEMU VM of `scripts/vm-test.sh` (TCG, Debian 12 kernel, `snd-aloop`), run `%s`; "
                   "crier's `audio.buffer_ms = %s` there (the VM harness's setting, see docs/vm-tests.md)" % (
                       os.path.basename(vm["run_dir"]), vm["buffer_ms"]))
    else:
        vm_line = ("not in this run (`--quick` skips the VM; `--vm on` adds it)" if quick else
                   "not in this run (`--vm off`; `--vm on` or a full run with `auto` adds them)")
    mem_note = ""
    if si:
        mem_note = (" The dynamically linked build maps the Swift runtime as shared libraries; "
                    "idle it had %s resident of which %s file-backed; the static build (what the .deb ships) "
                    "is measured in its own rows." % (mb(a.get("idle_rss_kb")), mb(a.get("idle_file_kb"))))
    doc = f"""# Benchmarks: Crier vs the shell script a shop would write

Produced by `scripts/bench.sh{' --quick' if quick else ''}` (a benchmark, not a test: it prints and never fails on a
time). Re-run it to refresh this page. {"**This is a `--quick` run (20 orders, 10 s idle windows, 100 alerts, no VM).**" if quick else ""}

- **Date**: {info['date']}; the measurements took {elapsed / 60:.1f} min (builds not counted)
- **Machine**: {info['host']}
- **Load average** (1, 5, 15 min): {load_start} at the start, {load_end} at the end. The 2 cores are
  shared with other jobs (other agents building and testing at the same time), so every figure is
  noisy and the tails (p90/p99/max) most of all; the last column shows the 1-minute load during
  each measurement. Compare runs only at similar load.
- **Commit**: `{info['commit']}`; `swift build -c release` (dynamic Swift runtime) unless a row says
  static; {info['swift']}
- espeak-ng: {info['espeak']}; libasound2 {info['alsa']}
- Clock-driven figures: {vm_line}.

## Results

{table}
Target verdicts are for this run on this machine; "n/a" means the peer has no such thing.
{summary}
## The peer

`scripts/bench/peer.sh`: `socat TCP:host:port EXEC:"bash peer.sh --loop"`; the loop sends a hello,
and for every order line cuts `id` and `text` out with bash parameter expansion, runs
`espeak-ng -v {VOICE} -s {RATE} -p {PITCH} -a {AMPLITUDE} --stdout "$text" | aplay -q -D default`, then sends the ack.
It is generous to the peer: no jq/sed processes, no reconnect, no queue, no keep-alive (so on a real
DAC it would also pop and lose the first syllable, which no number here shows).

## How each number is measured

**Latency.** One order source for both: a minimal protocol-1 server in `scripts/bench/bench.py`
that timestamps (CLOCK_MONOTONIC) each order right before writing it to the socket. Orders are
`{{"kind":"text","text":"四十二号"}}` with the numbers 1…N in Chinese words, so Crier and the peer say
the identical string with the identical voice ({VOICE}, rate {RATE}, pitch {PITCH}; the rate is raised
from 175 so one order, ~0.42 s of speech, ends well within the 1 s between orders: otherwise a
queue builds and the figure measures queueing). Two warm-up orders first, not counted, for both.
Both write to the same ALSA `default`: `type file`, `slave.pcm "null"`, `file` = a FIFO.
Two observation points, both timestamping the first sample above 1 % of full scale after ≥ 100 ms
without one (or the first of a new writer); order k's onset is the first one between its send
(or 0.1 s before order k−1's ack, if later) and its own ack: both sides say orders one at a time
and ack each after playing it, so a stalled order is still matched to its own sound:

1. *Leaving ALSA* (what the issue asks for): `scripts/bench/detector.py`, a persistent reader of
   the FIFO (reopened for each aplay) running at SCHED_FIFO priority ({lc.get('detector_priority', '?')} in this run)
   so that its own scheduling delay stays out, stamps the read that returned the sample. A persistent
   reader rather than `file "|program"` because the peer opens the device per order: a detector
   process started per order would add its own start-up to the peer's figure.
2. *Handed to ALSA*: `scripts/bench/writei_probe.c`, an LD_PRELOAD shim around `snd_pcm_writei`
   in both Crier and aplay, stamps the return of the call that carried the sample.

Why both: ALSA's `file` plugin holds back one buffer of frames before writing them to its file
(`snd_pcm_file_add_frames` writes only what exceeds `buffer_bytes`). A writer that paces itself
in real time, as Crier does on this self-paced PCM, therefore reaches the FIFO up to a period
later than it called `snd_pcm_writei`, while aplay, unpaced on the null PCM, dumps the whole clip
at once and is flushed at once. Point 1 is the harness the issue specifies; point 2 isolates
what Crier itself does. Neither includes a DAC's buffer: on real hardware Crier rewinds its
queued silence (about ¼ period stays ahead) and aplay has to open, configure and prefill the
device per order (see the VM rows for a clock-driven device).
Crier onsets matched: {lc.get('got', '?')}/{lc.get('n', '?')} (point 1), {lc.get('w_got', '?')}/{lc.get('n', '?')} (point 2); peer
{lp.get('got', '?')}/{lp.get('n', '?')} and {lp.get('w_got', '?')}/{lp.get('n', '?')}.

**First sound against text length (issue 16).** The same order server and the same writei probe
(point 2 above) in Crier and in the peer's aplay; ALSA `default` is `type null` here. Texts, each
sent as a `text` order with the same words for both: one order ({fs_texts[0]}), a ten-number alert
({fs_texts[1]}, the words of a coalesced `new_customers` alert of ten numbers), and the first 100,
250 and 500 characters of a long shop announcement (the 500-character one is `speech.max_chars`).
{fs_n} orders per main text ({fs_n2} for the 100 and 250 character texts), two warm-up orders each
not counted, one at a time: the next is sent once the previous is acked. The figure is the send
(CLOCK_MONOTONIC, right before the socket write) → the return of the `snd_pcm_writei` call that
carried the first sample above 1 % of full scale. Crier's clip is cancelled 0.3 s after it started
(otherwise the 500-character text plays for a minute per order); the peer's aplay on the null PCM
is not paced and finishes by itself. The chart (`docs/bench-first-sound.svg`, drawn by bench.py) shows
p50 with a bar to p90. Before streaming (commit `88d20d2`), Crier synthesized a whole utterance
before mixing its first sample, so its first sound grew with the text (4-7 ms for one order, 31-42 ms
for ten numbers, more for 500 characters); now the first chunk (~0.25 ms of espeak work) is mixed
while the rest is synthesized.

**First sound under load (issue 36).** The same step, texts and probe as above
(`--only firstsoundload`), with every core kept busy for the whole step by a documented load,
started 2 s before the first order and stopped after the last: `stress-ng --cpu N --cpu-method all`
(Debian's stress-ng; N = the number of cores, one busy worker each, nice 0) and a music decoder,
`sox` decoding a 60 s 44.1 kHz stereo FLAC of pink noise to nowhere in a loop. `scripts/bench.sh`
installs stress-ng and sox when they are missing. Four runs under the same load, one after the
other: Crier as shipped (its audio thread at SCHED_FIFO 30, its speech thread at FIFO 20 while it
waits and until each first chunk, when the kernel allows it; the rows "Crier's audio thread" and
"speech thread" say what they got, from the start log), Crier with `speech.realtime_priority = 0`
(the audio thread's priority only: second number in the Crier column), Crier with both at 0
(everything SCHED_OTHER, the figure before issue 36: third number), and the peer. All three
Crier runs are at the unit's `Nice=-5` (as crier.service runs it, before issue 36 too); the peer
at nice 0, as a shop's script runs. `--firstsound-n N` sets the orders per text (1-2 to check that the step runs).

{textpath_section(R)}**Idle (host).** `crier run` with `audio.device = null`, no order server, status prompts off; from
2 s after the device opened, CPU time summed over all threads (`/proc/PID/task/*/schedstat`, ns
resolution) and voluntary context switches (≈ wakeups; involuntary ones are preemptions by other
load, shown separately) over the window. "aplay playing silence" is not measured on the host:
the null PCM is not clock-driven, so aplay would not sleep at all.

**Idle (VM).** `scripts/bench/vm/idle.sh`, run through `scripts/vm-test.sh ../../bench/vm/idle`:
crier (connected to order-sim on the host, prompts off) on `hw:Loopback,0`, then
`aplay -D hw:Loopback,0 -t raw /dev/zero` in the same format, once with aplay's default buffer
and once with crier's 20 ms period and buffer; same counters as on the host, from inside the
guest. TCG emulation makes every CPU figure there ~100× a native one (docs/vm-tests.md), so only
the ratio between the rows and the wakeup counts mean something.

**Memory.** VmHWM (peak RSS) from `/proc/PID/status`. *Idle*: `crier run` connected to
`crier-sim order-sim`, null PCM, 3 s after the link came up. *After {a.get('n', 1000)} alerts*: the same
process after {a.get('n', 1000)} text orders "a" typed into order-sim's stdin at once (English voice
at rate 450, ~0.16 s each, `queue.max` raised so none is rejected), measured after the last ack
`spoken` ({a.get('utterances', '?')} utterances in {a.get('seconds', 0):.0f} s; this step runs alongside the others, it is
mostly paced playback). Anonymous memory and PSS come from `/proc/PID/smaps_rollup`, idle and after
every tenth of the alerts ({' '.join('%d: %s/%s kB' % tuple(x) for x in a.get('samples', []))}, alerts: anonymous/PSS);
"flat" is judged on the second half of the run, after the first alerts have warmed the allocator
and espeak's caches. *After the burst*: the burst process below.{mem_note}
Peer: VmRSS of socat + the bash loop while waiting, and the peak RSS of one `espeak-ng` and one
`aplay` (GNU time), which exist once per order.

**Burst.** `crier-sim order-sim --rate 100000 --count 10000 --no-stdin` (every order written at once)
against `crier run` with the settings of the project's burst test: `queue.max = 20`,
`alert.coalesce_max = 20`, zh rate 450, null PCM. Time from order-sim's `device connected` line to
its `done` line (every id acked: spoken, or rejected `queue_full`, which order-sim counts as
final). Utterances = `alert: saying` log lines. The peer says every order on its own, in sequence.

**Start.** 20 × exec of `crier run` (null PCM, an order server on loopback) with `NOTIFY_SOCKET`
set to a datagram socket the benchmark binds: exec → `READY=1` if the daemon sends one
({'received on %d of %d starts' % (st.get('ready_n', 0), st.get('n', 20)) if st else ''}), otherwise exec → arrival of the
`runtime: ready` log line on stderr; also exec → its hello at the order server. Peer: exec of
peer.sh → its hello at the server. Each process is stopped (SIGTERM) before the next start.

**Reconnect.** `crier run` connected to `crier-sim order-sim --state F`; after the link has been up
11 s, order-sim is stopped (SIGTERM), left down 1 s, and started again on the same port; time
from its `listening` line to its `device connected` line. That is Crier's reconnect backoff,
not work: full jitter, a delay drawn from [0, 0.5 s × 2^attempt] capped at 30 s, reset only after
a connection stayed up 10 s (so with 1 s down the retry after the restart comes 0-2 s later; a
link that flaps faster keeps backing off, by design). The peer has no reconnect: socat exits
with the connection.

## Targets (issue 9, issue 16)

- First sound at `snd_pcm_writei`, p50 and p99, ≥ 10× lower than the peer for one order, a
  ten-number alert and a 500-character text; Crier's p50 for the 500-character text within 1.5× of
  its p50 for one order. Anonymous memory flat over 10 000 alerts.
- Latency p99 ≤ 10 ms on this machine's pipe harness and ≥ 10× lower than the peer.
- Idle keep-alive ≤ 0.5 % of one core; wakeups ≤ 50/s.
- Peak RSS ≤ 16 MB idle, ≤ 24 MB after the burst.
- Exec → READY ≤ 200 ms.

The verdict column of the table says met / not met for each, from this run.
{notes_section}"""
    # The soak's section (scripts/soak.sh, measured apart) is kept as it is.
    try:
        with open(path) as f:
            old = f.read()
        if SOAK_MARK in old:
            doc = doc.rstrip("\n") + "\n\n" + old[old.index(SOAK_MARK):]
    except OSError:
        pass
    with open(path, "w") as f:
        f.write(doc)


SOAK_MARK = "<!-- soak: written by hand from scripts/soak.sh runs; bench.py keeps this section -->"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--crier", required=True)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--crier-static", help="the same sources built with --static-swift-stdlib (as the .deb ships)")
    ap.add_argument("--textpath-bench", help="crier-textpath-bench (release): the text path's stages, in-process")
    ap.add_argument("--out", default=os.path.join(ROOT, "docs", "benchmarks.md"))
    ap.add_argument("--only", default="", help="comma list: firstsound,firstsoundload,latency,idle,alerts,burst,start,reconnect,peermem,buttons,vm,vmfirstsound,vmloaded")
    ap.add_argument("--keep", action="store_true", help="keep the work directory")
    ap.add_argument("--vm", choices=("auto", "on", "off"), default="auto",
                    help="idle figures on hw:Loopback in the QEMU VM (auto: full runs only)")
    ap.add_argument("--render", help="only rewrite --out from a results.json of an earlier run")
    ap.add_argument("--merge", action="append", default=[],
                    help="with --render: also take the results of these results.json files (e.g. an alerts run)")
    ap.add_argument("--skip", default="", help="comma list of steps not to run")
    ap.add_argument("--note", action="append", default=[], help="with --render: a caveat to add to the page")
    ap.add_argument("--alerts", type=int, default=0, help="alerts in the memory step (default 10000; 300 with --quick)")
    ap.add_argument("--voice-pack-zh", help="firstsoundpack: a zh voice pack folder (crier voice render makes one)")
    ap.add_argument("--voice-pack-en", help="firstsoundpack: an en pack loaded beside it (memory of a 300-clip pack)")
    ap.add_argument("--loaded-configs", default="shipped,audio,other,peer",
                    help="firstsoundload: which of shipped,audio,other,peer to run (default all)")
    ap.add_argument("--firstsound-n", type=int, default=0,
                    help="orders per text in the first-sound steps (default 30; 8 with --quick); 1-2 to check the step runs")
    a = ap.parse_args()
    if a.render:
        j = json.load(open(a.render))
        b = Bench(os.path.abspath(a.crier), j["quick"], os.path.dirname(a.render))
        b.results, b.notes = j["results"], j["notes"]
        for m in a.merge:
            mj = json.load(open(m))
            b.results.update(mj["results"])
            b.notes += [n for n in mj["notes"] if n not in b.notes]
        b.notes = a.note + b.notes
        table = render(b, j["info"], j["load_start"], j["load_end"], j["elapsed"])
        write_doc(a.out, b, j["info"], table, j["load_start"], j["load_end"], j["elapsed"], j["quick"])
        print(table)
        print("wrote %s" % a.out)
        return 0
    work = tempfile.mkdtemp(prefix="crier-bench-")
    b = Bench(os.path.abspath(a.crier), a.quick, work)
    b.alerts_n = a.alerts
    b.firstsound_n = a.firstsound_n
    b.loaded_configs = [c for c in a.loaded_configs.split(",") if c]
    b.voice_pack = os.path.abspath(a.voice_pack_zh) if a.voice_pack_zh else None
    b.voice_pack_en = os.path.abspath(a.voice_pack_en) if a.voice_pack_en else None
    b.static_bin = os.path.abspath(a.crier_static) if a.crier_static and os.path.exists(a.crier_static) else None
    only = set(x for x in a.only.split(",") if x)
    skip = set(x for x in a.skip.split(",") if x)
    steps = [("firstsound", lambda: (b.first_sound("crier"), b.first_sound("peer"))),
             ("firstsoundload", b.first_sound_loaded),
             ("latency", lambda: (b.latency("crier"), b.latency("peer"))), ("idle", b.idle),
             ("start", b.start), ("reconnect", b.reconnect), ("peermem", b.peer_memory),
             ("burst", b.burst), ("static", b.static), ("buttons", b.buttons)]
    if b.voice_pack:  # only when asked for: a pack is made beforehand (docs/voice.md)
        steps.insert(2, ("firstsoundpack", b.first_sound_pack))
    if a.textpath_bench and os.path.exists(a.textpath_bench):
        steps.insert(1, ("textpath", lambda: b.textpath(os.path.abspath(a.textpath_bench))))
    vm_script = os.path.join(ROOT, "scripts", "vm-test.sh")
    use_vm = a.vm == "on" or (a.vm == "auto" and not a.quick)
    if use_vm and os.path.exists(vm_script):
        steps.append(("vm", b.vm))
        steps.append(("vmfirstsound", b.vm_firstsound))
        steps.append(("vmloaded", b.vm_loaded))
    elif use_vm:
        b.notes.append("scripts/vm-test.sh not found: no clock-driven (VM) figures")
    info = machine_info(b.crier)
    load_start = load()
    t0 = time.monotonic()
    failures = []
    # The alerts step (10 000 paced utterances, ~25 min) runs alongside the others: it is mostly
    # waiting for paced playback, a few % of one core.
    bg = None
    if (not only or "alerts" in only) and "alerts" not in skip:
        def run_alerts():
            try:
                b.alerts()
            except Exception as e:  # noqa: BLE001 - reported like a step failure
                failures.append("alerts: %r" % (e,))
                b.log("BROKEN alerts: %s" % (e,))
        bg = threading.Thread(target=run_alerts, daemon=True)
        b.log("alerts … in the background (load %s)" % load())
        bg.start()
    for name, fn in steps:
        if (only and name not in only) or name in skip:
            continue
        b.log("%s … (load %s)" % (name, load()))
        try:
            fn()
        except Broken as e:
            failures.append("%s: %s" % (name, e))
            b.log("BROKEN %s: %s" % (name, e))
        except Exception as e:  # a bug in the benchmark itself: report it, go on with the rest
            import traceback
            traceback.print_exc()
            failures.append("%s: %r" % (name, e))
        finally:
            b.cleanup()
    if bg is not None:
        b.log("waiting for the alerts step")
        bg.join()
    elapsed = time.monotonic() - t0
    load_end = load()
    st = b.results.get("start")
    if st and st.get("ready") is None:
        b.notes.append("Exec → READY: the daemon sent no `READY=1` to `NOTIFY_SOCKET` at this commit, so the "
                       "start row is exec → the `runtime: ready` log line; it switches to READY by itself once "
                       "sd_notify support lands.")
    if "vm_firstsound" in b.results:
        b.notes.append("First sound in the VM (`hw:Loopback` capture, scripts/bench/vm/firstsound.sh): Crier and the peer "
                       "take the same text orders from the same host order server in one VM run; under TCG every "
                       "instruction costs ~100× a native one, so the absolute times measure the emulator and the ratio is the figure.")
    if "vm_loaded" in b.results:
        b.notes.append("VM under load (scripts/vm/scenarios/14-loaded.sh, issue 36): the release binary in the QEMU guest "
                       "(TCG, 2 vCPUs) with `stress-ng --cpu 2 --cpu-method all` (nice 0) running in the guest the whole time, "
                       "music from a file, the product's 80 ms buffer (the VM tier's other scenarios use 400 ms), an order "
                       "each time the capture has been quiet for 1 s; the capture (arecord) at SCHED_FIFO 10, below crier's "
                       "audio thread, so the instrument does not drop what crier wrote. Underruns are crier's own "
                       "`underrun, recovered` lines. The emulator runs at nice -20 on the host (as root), so other host work does not starve the vCPUs.")
    b.notes.append("The peer's idle CPU on the host is not measured: the null PCM is not clock-driven, aplay would "
                   "not sleep. Its clock-driven figure is the VM row.")
    b.notes.append("Burst for the peer is not run: it would say 10 000 orders one by one (hours).")
    table = render(b, info, load_start, load_end, elapsed)
    print()
    print(table)
    if not only and not skip:
        write_doc(a.out, b, info, table, load_start, load_end, elapsed, a.quick)
        print("wrote %s" % a.out)
    with open(os.path.join(work, "results.json"), "w") as f:
        json.dump({"results": b.results, "notes": b.notes, "info": info, "load_start": load_start,
                   "load_end": load_end, "elapsed": elapsed, "quick": a.quick}, f, indent=1, default=str)
    print("raw results: %s/results.json" % work)
    if not a.keep:
        for entry in os.listdir(work):
            if entry != "results.json":
                shutil.rmtree(os.path.join(work, entry), ignore_errors=True)
    if failures:
        print("\nBROKEN:\n  " + "\n  ".join(failures), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
