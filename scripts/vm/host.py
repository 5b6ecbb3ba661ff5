#!/usr/bin/env python3
"""Host side of one VM scenario run (called by scripts/vm-test.sh).

Creates a run directory, starts the scenario's optional host part (scenarios/NAME.host: a shell
script, e.g. the order server, with $PORT free on 127.0.0.1 for the guest's 10.0.2.100:7000),
listens on the unix sockets QEMU connects ttyS1/ttyS2 to, boots QEMU, relays the control channel,
then runs the optional host-side check (scenarios/NAME.check.py RUN_DIR) and prints timings.
Exit code: the guest scenario's, else the check's.
"""
import argparse, os, re, select, shutil, signal, socket, subprocess, sys, threading, time

p = argparse.ArgumentParser()
p.add_argument("--kdir", required=True)
p.add_argument("--repo", required=True)
p.add_argument("--scenario", required=True)
a = p.parse_args()

VMDIR = os.path.join(a.repo, "scripts", "vm")
SC = os.path.join(VMDIR, "scenarios", a.scenario)
cache = os.environ["CRIER_CACHE"]
crier_bin = os.path.abspath(os.environ.get("CRIER_BIN", os.path.join(a.repo, ".build/debug/crier")))
host_bin = os.path.abspath(os.environ.get("CRIER_HOST_BIN") or crier_bin)
# The order server (`crier-sim order-sim`; not in crier since issue 32): CRIER_SIM_BIN, else
# NAME-sim beside the host's crier (crier-sim; fake-crier-sim for the harness's stand-in), else
# the debug build's.
sim_bin = os.environ.get("CRIER_SIM_BIN") or host_bin + "-sim"
if not os.environ.get("CRIER_SIM_BIN") and not os.access(sim_bin, os.X_OK):
    sim_bin = os.path.join(a.repo, ".build/debug/crier-sim")
sim_bin = os.path.abspath(sim_bin)
if not os.access(sim_bin, os.X_OK):
    print(f"vm-test: no crier-sim at {sim_bin} (swift build, or set CRIER_SIM_BIN): the order server will not start",
          file=sys.stderr)
# CRIER_VM_TIMEOUT if set; else the scenario's own "# vm-timeout: SECONDS" line; else 180.
timeout = 180.0
try:
    m = re.search(r"^# vm-timeout: *([0-9]+)", open(SC + ".sh").read(), re.M)
    if m:
        timeout = float(m.group(1))
except OSError:
    pass
timeout = float(os.environ.get("CRIER_VM_TIMEOUT") or timeout)
verbose = os.environ.get("CRIER_VM_VERBOSE") == "1"

runs = os.path.join(cache, "runs")
os.makedirs(runs, exist_ok=True)
# keep the last 10 runs
old = sorted(os.listdir(runs))
for d in old[:-9]:
    shutil.rmtree(os.path.join(runs, d), ignore_errors=True)
run = os.path.join(runs, time.strftime("%Y%m%dT%H%M%S") + f"-{os.getpid()}-" + a.scenario.replace("/", "_"))
res = os.path.join(run, "results")
os.makedirs(res)
os.chmod(res, 0o777)
T0 = time.monotonic()
LOAD0 = open("/proc/loadavg").read().split()[0]


def note(msg):
    print(f"vm-test[{a.scenario}] {time.monotonic() - T0:6.1f}s {msg}", flush=True)


# libgpiod 2 for the guest (CRIER_VM_GPIOD=2): the prefix lives under /var/cache, which the
# guest covers with tmpfs, so the library is copied into the results share and put on the
# guest's LD_LIBRARY_PATH from there.
guest_ld = ""
if os.environ.get("CRIER_VM_LD_LIBRARY_PATH"):
    import glob, shutil
    libdir = os.path.join(res, "lib")
    os.makedirs(libdir)
    for f in glob.glob(os.path.join(os.environ["CRIER_VM_LD_LIBRARY_PATH"], "libgpiod.so*")):
        shutil.copy(f, libdir)  # follows symlinks: plain files on the share
    guest_ld = "/run/crier-vm/results/lib"

# mac80211_hwsim and its modules for the Wi-Fi scenario (vm-test.sh prepare_wifi): the cache is
# under /var/cache, covered by tmpfs in the guest, so they travel in the results share too.
if os.environ.get("CRIER_VM_WIFI_MODULES"):
    shutil.copytree(os.environ["CRIER_VM_WIFI_MODULES"], os.path.join(res, "wifi-modules"))

with open(os.path.join(res, "job.env"), "w") as f:
    f.write(f"SCENARIO='{a.scenario}'\nREPO='{a.repo}'\nCRIER_BIN='{crier_bin}'\n"
            # crier-sim, for a scenario that runs the order server in the guest (8-wifi)
            f"CRIER_SIM_BIN='{sim_bin}'\n"
            f"CRIER_VM_BUFFER_MS='{os.environ.get('CRIER_VM_BUFFER_MS', '400')}'\n"
            # the libgpiod API crier was built for (vm-test.sh's CRIER_VM_GPIOD) and, for v2,
            # where the guest finds libgpiod.so.3 (the bookworm-backports prefix, over 9p)
            f"CRIER_VM_GPIOD='{os.environ.get('CRIER_VM_GPIOD', '')}'\n"
            f"CRIER_VM_LD_LIBRARY_PATH='{guest_ld}'\n"
            # 8-wifi: 1 = the AP offers WPA3-SAE only (default WPA2-PSK)
            f"CRIER_VM_WIFI_SAE='{os.environ.get('CRIER_VM_WIFI_SAE', '')}'\n"
            # benchmark scenarios (scripts/bench/vm): repetitions per measurement, empty = their default
            f"CRIER_VM_BENCH_N='{os.environ.get('CRIER_VM_BENCH_N', '')}'\n")

lock = threading.Lock()
ctl_conn = None
marks = open(os.path.join(run, "marks"), "w")

# --- host part -------------------------------------------------------------------------------
host_proc = None
port = None
if os.path.exists(SC + ".host"):
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    env = dict(os.environ, PORT=str(port), RUN=run, RESULTS=res, CRIER_BIN=crier_bin, REPO=a.repo,
               CRIER_HOST_BIN=host_bin, CRIER_SIM_BIN=sim_bin)
    host_err = open(os.path.join(run, "host.err"), "w")
    host_proc = subprocess.Popen(["bash", SC + ".host"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                 stderr=host_err, env=env, text=True, bufsize=1, start_new_session=True)

    def host_out():
        with open(os.path.join(run, "host.out"), "w") as out:
            for line in host_proc.stdout:
                out.write(f"{time.monotonic():.6f} {line}")
                out.flush()
                with lock:
                    if ctl_conn:
                        try:
                            ctl_conn.sendall(("out " + line.rstrip("\n") + "\n").encode())
                        except OSError:
                            pass
    threading.Thread(target=host_out, daemon=True).start()

    # QEMU's guestfwd connects to the server once, when it starts: wait until it listens.
    def listening():
        for t in ("/proc/net/tcp", "/proc/net/tcp6"):
            try:
                for l in open(t).readlines()[1:]:
                    f = l.split()
                    if f[1].endswith(f":{port:04X}") and f[3] == "0A":
                        return True
            except OSError:
                pass
        return False
    end = time.monotonic() + 30
    while not listening():
        if host_proc.poll() is not None or time.monotonic() > end:
            note("host part did not start listening on 127.0.0.1:%d" % port)
            print(open(os.path.join(run, "host.err")).read())
            sys.exit(1)
        time.sleep(0.05)
    note(f"host part up, listening on 127.0.0.1:{port}")


# --- serial sockets --------------------------------------------------------------------------
def listen(name):
    path = os.path.join(run, name + ".sock")
    s = socket.socket(socket.AF_UNIX)
    s.bind(path)
    s.listen(1)
    return s, path


s1, s1path = listen("ttyS1")
s2, s2path = listen("ttyS2")


def serve_ttyS1():
    c, _ = s1.accept()
    buf = b""
    with open(os.path.join(run, "ttyS1.log"), "ab") as log:
        while True:
            d = c.recv(4096)
            if not d:
                return
            log.write(d)
            log.flush()
            buf += d
            while b"\n" in buf:
                line, buf = buf.split(b"\n", 1)
                if line.startswith(b"ping "):  # only these: an echoing tty must not loop
                    try:
                        c.sendall(b"pong " + line[5:].rstrip(b"\r") + b"\n")
                    except OSError:
                        pass


def serve_ctl():
    global ctl_conn
    c, _ = s2.accept()
    with lock:
        ctl_conn = c
    buf = b""
    with open(os.path.join(run, "ctl.log"), "w") as log:
        while True:
            d = c.recv(4096)
            if not d:
                return
            buf += d
            while b"\n" in buf:
                raw, buf = buf.split(b"\n", 1)
                line = raw.decode(errors="replace").rstrip("\r")
                now = time.monotonic()
                log.write(f"{now:.6f} {line}\n")
                log.flush()
                cmd, _, arg = line.partition(" ")
                if cmd == "stdin" and host_proc:
                    try:
                        host_proc.stdin.write(arg + "\n")
                        host_proc.stdin.flush()
                    except OSError:
                        pass
                elif cmd == "mark":
                    marks.write(f"{arg} {now:.6f}\n")
                    marks.flush()


threading.Thread(target=serve_ttyS1, daemon=True).start()
threading.Thread(target=serve_ctl, daemon=True).start()

# --- QEMU --------------------------------------------------------------------------------------
kdir = a.kdir
nic = "user,model=virtio-net-pci,restrict=on"
if port:
    if os.environ.get("CRIER_VM_GUESTFWD", "cmd") == "tcp":
        # QEMU's own chardev: ONE connection to the server, made when QEMU starts and kept across
        # guest connections (the server never sees the box reconnect).
        nic += f",guestfwd=tcp:10.0.2.100:7000-tcp:127.0.0.1:{port}"
    else:
        # default: slirp runs socat per guest connection, so the server sees each connect/close.
        nic += f",guestfwd=tcp:10.0.2.100:7000-cmd:socat - TCP:127.0.0.1:{port}"
accel = "kvm" if os.environ.get("CRIER_VM_KVM") == "1" else "tcg"
kernel = os.path.join(kdir, "vmlinux")
bios = ["-bios", "/usr/share/qemu/qboot.rom"]
if os.environ.get("CRIER_VM_BZIMAGE") == "1":
    kernel, bios = os.path.join(kdir, "vmlinuz"), []
console = os.path.join(run, "console.log")
cmd = ["qemu-system-x86_64", "-accel", accel, "-M", "pc", "-cpu", "max" if accel == "tcg" else "host",
       "-m", os.environ.get("CRIER_VM_MEM", "1024"), "-smp", os.environ.get("CRIER_VM_SMP", "2"),
       *bios, "-nographic", "-monitor", "none", "-no-reboot", "-nodefaults",
       "-kernel", kernel, "-initrd", os.path.join(kdir, "initramfs.gz"),
       "-append", "console=ttyS0,115200 quiet panic=-1 mitigations=off",
       "-serial", "file:" + console,
       "-chardev", f"socket,id=s1,path={s1path}", "-serial", "chardev:s1",
       "-chardev", f"socket,id=s2,path={s2path}", "-serial", "chardev:s2",
       "-nic", nic,
       "-virtfs", "local,path=/,mount_tag=hostroot,security_model=none,readonly=on,multidevs=remap",
       "-virtfs", f"local,path={res},mount_tag=results,security_model=none",
       "-virtfs", f"local,path={a.repo},mount_tag=repo,security_model=none,readonly=on,multidevs=remap"]
with open(os.path.join(run, "qemu.cmd"), "w") as f:
    f.write(" ".join(cmd) + "\n")
qerr = open(os.path.join(run, "qemu.err"), "w")
note(f"booting ({accel}), run dir {run}")
tq = time.monotonic()
q = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=qerr, stderr=qerr)
tail = None
if verbose:
    open(console, "a").close()
    tail = subprocess.Popen(["tail", "-n", "+1", "-f", console])
try:
    q.wait(timeout=timeout)
except subprocess.TimeoutExpired:
    note(f"TIMEOUT after {timeout:.0f} s: killing QEMU")
    q.kill()
    q.wait()
wall = time.monotonic() - tq
if tail:
    time.sleep(0.2)
    tail.terminate()

if host_proc:
    try:
        os.killpg(host_proc.pid, signal.SIGTERM)
        host_proc.wait(timeout=5)
    except (subprocess.TimeoutExpired, ProcessLookupError):
        try:
            os.killpg(host_proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
marks.close()

# --- verdict -----------------------------------------------------------------------------------
timing = {}
try:
    for l in open(os.path.join(res, "timing")):
        k, _, v = l.strip().partition("=")
        timing[k] = v
except OSError:
    pass
rc = None
try:
    rc = int(open(os.path.join(res, "rc")).read().strip())
except (OSError, ValueError):
    pass
if rc is None:
    note("guest recorded no exit code (crashed, hung or failed to boot)")
    rc = 1
if rc == 0 and os.path.exists(SC + ".check.py"):
    note("host check " + os.path.basename(SC) + ".check.py")
    rc = subprocess.call([sys.executable, SC + ".check.py", run])
note(f"timings: guest boot {timing.get('boot_s', '?')} s (kernel start → scenario), "
     f"scenario {timing.get('scenario_s', '?')} s, QEMU wall {wall:.1f} s, total {time.monotonic() - T0:.1f} s; "
     f"host load {LOAD0} → {open('/proc/loadavg').read().split()[0]} on {os.cpu_count()} CPUs")
if rc != 0:
    note(f"FAILED (exit {rc}); guest console ({console}):")
    sys.stdout.write("".join(open(console, errors="replace").readlines()[-150:]) if os.path.exists(console) else "")
    for f in ("qemu.err", "host.err"):
        path = os.path.join(run, f)
        if os.path.exists(path) and os.path.getsize(path):
            print(f"--- {f}")
            print(open(path, errors="replace").read()[-4000:])
sys.exit(rc)
