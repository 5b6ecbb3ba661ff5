"""board/systemd: the unit verifies, its hardening scores an exposure <= 2.0, and the
sysusers/tmpfiles entries do what the unit relies on. No running systemd needed."""
import os
import re
import shutil
import shlex
import subprocess
import sys
import time

import pytest

from conftest import ROOT, ensure_packages

SYSTEMD = ROOT / "board/systemd"
UNIT = SYSTEMD / "crier.service"
MAX_EXPOSURE = 2.0


@pytest.fixture(scope="module", autouse=True)
def tools():
    ensure_packages("systemd")   # systemd-analyze, systemd-sysusers, systemd-tmpfiles


def unit_settings():
    out = {}
    section = None
    for line in UNIT.read_text().splitlines():
        line = line.strip()
        if not line or line.startswith(("#", ";")):
            continue
        if line.startswith("["):
            section = line.strip("[]")
            continue
        k, v = line.split("=", 1)
        out.setdefault((section, k), []).append(v)
    return out


@pytest.fixture
def unit_with_real_binary(tmp_path):
    """The unit, with ExecStart pointing at an executable that exists on this machine (the
    installed path /usr/bin/crier only exists once the .deb is installed)."""
    fake = tmp_path / "bin" / "crier"
    fake.parent.mkdir()
    fake.write_text("#!/bin/sh\nexit 0\n")
    fake.chmod(0o755)
    text = UNIT.read_text()
    assert "ExecStart=/usr/bin/crier run --config /boot/firmware/crier.conf" in text
    d = tmp_path / "units"
    d.mkdir()
    u = d / "crier.service"
    u.write_text(text.replace("ExecStart=/usr/bin/crier ", "ExecStart=%s " % fake))
    for name in ("crier-reboot.path", "crier-reboot.service", "crier-config.path", "crier-config.service",
                 "crier.socket"):  # crier.service Wants= the path units
        (d / name).write_text((UNIT.parent / name).read_text().replace("/usr/bin/crier ", "%s " % fake))
    return u


def test_the_reboot_units_verify_and_watch_crier_s_runtime_directory(unit_with_real_binary):
    d = unit_with_real_binary.parent
    r = subprocess.run(["systemd-analyze", "verify", "--man=no", str(d / "crier-reboot.path"), str(d / "crier-reboot.service")],
                       capture_output=True, text=True)
    assert r.returncode == 0 and r.stdout.strip() == "" and r.stderr.strip() == "", r.stdout + r.stderr
    path = (d / "crier-reboot.path").read_text()
    assert "PathExists=/run/crier/reboot-request" in path and "Wants=crier-reboot.path" in unit_with_real_binary.read_text()
    # the default of update.reboot_request is the file the path unit watches
    assert re.search(r"^#? ?update\.reboot_request = /run/crier/reboot-request$", (ROOT / "board" / "crier.conf").read_text(), re.M)


def essential_or_none(path):
    """The package that owns PATH (also under its /bin <-> /usr/bin alias) and whether it is
    Essential; None when no package owns it."""
    alias = path.replace("/usr/bin/", "/bin/", 1) if path.startswith("/usr/bin/") else path.replace("/bin/", "/usr/bin/", 1)
    for p in (path, alias):
        r = subprocess.run(["dpkg", "-S", p], capture_output=True, text=True)
        owners = [l for l in r.stdout.splitlines() if not l.startswith("diversion by ")]
        if r.returncode == 0 and owners:
            pkg = owners[0].split(":")[0].split(",")[0].strip()
            ess = subprocess.run(["dpkg-query", "-W", "-f=${Essential}", pkg], capture_output=True, text=True).stdout.strip()
            return pkg, ess == "yes"
    return None


def test_the_packaged_units_run_only_crier_systemd_and_essential_programs():
    """Every Exec*= of the .deb's units runs crier, systemd's own tools or a program of an
    Essential package: the image is Debian's minbase, where anything else may be missing. Its
    ExecReload= was /bin/kill (procps, not in minbase): every `systemctl reload crier` on the
    image failed, and with it every save of the local page (crier-config.service's
    ExecStartPost=), found by the amd64 boot test."""
    if subprocess.run(["dpkg", "-S", "/bin/sh"], capture_output=True).returncode != 0:
        pytest.skip("needs dpkg's database (a Debian host)")
    bad = []
    for unit in sorted(SYSTEMD.glob("*.service")):
        for line in unit.read_text().splitlines():
            m = re.match(r"(Exec\w+)=[-@:+!]*(\S+)", line)
            if not m:
                continue
            prog = m.group(2)
            if prog == "/usr/bin/crier" or prog in ("/usr/bin/systemctl", "/bin/systemctl"):
                continue
            owner = essential_or_none(prog)
            if owner is None or not owner[1]:
                bad.append("%s %s: %s (%s)" % (unit.name, m.group(1), prog, owner[0] + ", not Essential" if owner else "no package"))
    assert bad == [], bad


def test_reload_sends_sighup_to_the_main_pid(tmp_path):
    """crier.service's ExecReload=, run as systemd runs it (its expansion of $MAINPID and $$,
    MAINPID in the environment), delivers SIGHUP to the main process."""
    cmd = [v for (sec, k), vs in unit_settings().items() if k == "ExecReload" for v in vs]
    assert len(cmd) == 1, cmd
    argv = None
    got = tmp_path / "got"
    main = subprocess.Popen([sys.executable, "-c",
                             "import signal, sys, time\n"
                             "signal.signal(signal.SIGHUP, lambda *a: (open(sys.argv[1], 'w').write('HUP'), sys.exit(0)))\n"
                             "open(sys.argv[1] + '.ready', 'w').close()\n"
                             "time.sleep(30)\n", str(got)])
    try:
        deadline = time.monotonic() + 10
        while not (tmp_path / "got.ready").exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        # systemd's expansion: a word "$MAINPID", "${MAINPID}" anywhere, then "$$" -> "$"
        argv = [str(main.pid) if w == "$MAINPID" else w.replace("${MAINPID}", str(main.pid)).replace("$$", "$")
                for w in shlex.split(cmd[0])]
        r = subprocess.run(argv, env=dict(os.environ, MAINPID=str(main.pid)), capture_output=True, text=True, timeout=10)
        assert r.returncode == 0, r.stderr
        assert main.wait(timeout=10) == 0 and got.read_text() == "HUP"
    finally:
        if main.poll() is None:
            main.kill()


def test_unit_verifies_cleanly(unit_with_real_binary):
    r = subprocess.run(["systemd-analyze", "verify", "--man=no", str(unit_with_real_binary)],
                       capture_output=True, text=True)
    # verify only warns (exit 0) about unknown keys and bad values: any output is a failure
    assert r.returncode == 0 and r.stdout.strip() == "" and r.stderr.strip() == "", \
        "systemd-analyze verify:\n" + r.stdout + r.stderr


def test_unit_with_the_kiosk_dropin_verifies(unit_with_real_binary):
    d = unit_with_real_binary.parent / "crier.service.d"
    d.mkdir()
    (d / "kiosk.conf").write_text((SYSTEMD / "kiosk.conf").read_text())
    r = subprocess.run(["systemd-analyze", "verify", "--man=no", str(unit_with_real_binary)],
                       capture_output=True, text=True)
    assert r.returncode == 0 and r.stderr.strip() == "", r.stderr
    # and the drop-in is really read: a typo in it is reported
    (d / "kiosk.conf").write_text("[Unit]\nStartLimitActin=reboot\n")
    r = subprocess.run(["systemd-analyze", "verify", "--man=no", str(unit_with_real_binary)],
                       capture_output=True, text=True)
    assert "StartLimitActin" in r.stderr
    body = [l for l in (SYSTEMD / "kiosk.conf").read_text().splitlines()
            if l and not l.startswith("#")]
    assert body == ["[Unit]", "StartLimitAction=reboot"]


def test_verify_would_catch_a_typo(tmp_path, unit_with_real_binary):
    bad = tmp_path / "units" / "crier.service"
    bad.write_text(unit_with_real_binary.read_text().replace("NoNewPrivileges=", "NoNewPrivilege="))
    r = subprocess.run(["systemd-analyze", "verify", "--man=no", str(bad)],
                       capture_output=True, text=True)
    assert "NoNewPrivilege" in r.stderr


def security(path):
    r = subprocess.run(["systemd-analyze", "security", "--offline=yes", "--no-pager", str(path)],
                       capture_output=True, text=True)
    out = r.stdout + r.stderr
    m = re.search(r"Overall exposure level for %s:\s*([\d.]+)" % re.escape(path.name), out)
    assert m, "no exposure level in:\n" + out
    return float(m.group(1)), out


def test_security_exposure_is_at_most_2(capsys):
    score, out = security(UNIT)
    with capsys.disabled():
        print("\n  systemd-analyze security crier.service: exposure %.1f (limit %.1f)"
              % (score, MAX_EXPOSURE))
    assert score <= MAX_EXPOSURE, out


def test_the_local_page_adds_no_privilege_to_crier_and_its_helper_scores_below_1(unit_with_real_binary, capsys):
    """Port 80 comes from crier.socket (systemd binds it), so crier.service keeps no capability;
    the root helper that writes crier.conf has one capability and no network."""
    d = unit_with_real_binary.parent
    r = subprocess.run(["systemd-analyze", "verify", "--man=no", str(d / "crier.socket"), str(d / "crier-config.path"),
                        str(d / "crier-config.service")], capture_output=True, text=True)
    assert r.returncode == 0 and r.stderr.strip() == "", r.stderr
    s = unit_settings()
    assert s[("Service", "CapabilityBoundingSet")] == [""] and s[("Service", "AmbientCapabilities")] == [""]
    sock = (SYSTEMD / "crier.socket").read_text()
    assert "ListenStream=80\n" in sock and "Accept=no" in sock
    assert "PathExists=/run/crier/crier.conf.new" in (SYSTEMD / "crier-config.path").read_text()
    score, out = security(SYSTEMD / "crier-config.service")
    with capsys.disabled():
        print("\n  systemd-analyze security crier-config.service: exposure %.1f" % score)
    assert score <= 1.0, out
    assert "PrivateNetwork=yes" in (SYSTEMD / "crier-config.service").read_text()


def test_the_score_parser_sees_a_weak_unit(tmp_path):
    weak = tmp_path / "crier.service"
    weak.write_text("[Service]\nType=notify\nExecStart=/bin/true\n")
    score, _ = security(weak)
    assert score > 9.0


def test_runtime_contract():
    """What crier itself relies on (DESIGN.md, issue 5) is in the unit."""
    s = unit_settings()
    one = lambda k, sec="Service": s[(sec, k)][-1]
    assert one("Type") == "notify"
    assert one("NotifyAccess") == "main"
    assert one("ExecStart") == "/usr/bin/crier run --config /boot/firmware/crier.conf"
    assert one("WatchdogSec") == "10s"
    assert one("Restart") == "always"
    assert one("User") == "crier"
    assert set(one("SupplementaryGroups").split()) >= {"audio", "gpio"}
    assert one("StateDirectory") == "crier"
    assert one("RuntimeDirectory") == "crier"
    # the speech crash guard's mark must survive the restart that follows a crash
    assert one("RuntimeDirectoryPreserve") == "restart"
    # SIGTERM: crier needs up to 5 s to finish the current alert
    assert int(one("TimeoutStopSec").rstrip("s")) > 5
    # devices it opens
    allow = " ".join(s[("Service", "DeviceAllow")])
    for dev in ("char-alsa", "char-gpiochip", "char-ttyS", "char-ttyAMA"):
        assert dev in allow
    assert one("DevicePolicy") == "closed"
    fams = set(one("RestrictAddressFamilies").split())
    assert fams == {"AF_INET", "AF_INET6", "AF_UNIX"}
    # /usr/share/espeak-ng-data and /boot/firmware stay readable: nothing hides them
    for k in ("InaccessiblePaths", "TemporaryFileSystem", "RootDirectory", "RootImage"):
        assert ("Service", k) not in s
    assert one("ProtectSystem") == "strict"


def test_realtime_is_allowed_for_the_audio_thread_and_bounded():
    """crier sets SCHED_FIFO audio.realtime_priority on its audio thread itself (docs/audio.md):
    the unit lets it (RLIMIT_RTPRIO at or above the default, below the kernel's interrupt
    threads; sched_setscheduler through the filter) and nothing more (no process-wide policy,
    setpriority/sched_setattr still filtered)."""
    import sandbox
    s = unit_settings()
    one = lambda k: s[("Service", k)][-1]
    default = int(re.search(r"^#? ?audio\.realtime_priority = (\d+)$", (ROOT / "board" / "crier.conf").read_text(), re.M).group(1))
    assert default <= int(one("LimitRTPRIO")) < 50
    assert one("RestrictRealtime") == "no"
    for k in ("CPUSchedulingPolicy", "CPUSchedulingPriority"):
        assert ("Service", k) not in s, "the whole process would be real-time"
    allowed = sandbox.unit_syscalls(UNIT.read_text())
    assert "sched_setscheduler" in allowed
    assert not allowed & {"setpriority", "sched_setattr", "sched_setparam", "nice", "setrlimit", "sched_setaffinity"}


def test_device_names_exist_in_the_kernel_list():
    """char-NAME in DeviceAllow= must be a driver name from /proc/devices on a Pi kernel;
    a typo would silently allow nothing. These are the names of Linux's char drivers."""
    known = {"alsa", "gpiochip", "ttyS", "ttyAMA", "ttyUSB", "ttyACM"}
    for v in unit_settings()[("Service", "DeviceAllow")]:
        name = v.split()[0]
        assert name.startswith("char-") and name[5:] in known, v


@pytest.fixture
def root(tmp_path):
    """A bare root with only root/audio/dialout, like a minimal Debian."""
    r = tmp_path / "root"
    (r / "etc").mkdir(parents=True)
    (r / "etc/passwd").write_text("root:x:0:0:root:/root:/bin/bash\n")
    (r / "etc/group").write_text("root:x:0:\ndialout:x:20:\naudio:x:29:\n")
    (r / "etc/shadow").write_text("root:*:19000:0:99999:7:::\n")
    (r / "etc/gshadow").write_text("root:*::\ndialout:*::\naudio:*::\n")
    return r


def test_sysusers_creates_crier_in_audio_and_gpio(root):
    r = subprocess.run(["systemd-sysusers", "--root", str(root), str(SYSTEMD / "crier.sysusers")],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    passwd = {l.split(":")[0]: l.split(":") for l in (root / "etc/passwd").read_text().splitlines()}
    groups = {l.split(":")[0]: l.split(":") for l in (root / "etc/group").read_text().splitlines()}
    assert "crier" in passwd and "gpio" in groups, (passwd, groups)
    user = passwd["crier"]
    assert int(user[2]) < 1000, "must be a system user"
    assert user[6] in ("/usr/sbin/nologin", "/sbin/nologin")
    for g in ("audio", "gpio", "dialout"):
        assert "crier" in groups[g][3].split(","), (g, groups[g])
    # idempotent, and an existing gpio group (Raspberry Pi OS) is kept as it is
    r = subprocess.run(["systemd-sysusers", "--root", str(root), str(SYSTEMD / "crier.sysusers")],
                       capture_output=True, text=True)
    assert r.returncode == 0 and (root / "etc/group").read_text().count("\ngpio:") == 1


def test_sysusers_keeps_an_existing_gpio_group(root):
    (root / "etc/group").write_text((root / "etc/group").read_text() + "gpio:x:997:pi\n")
    subprocess.run(["systemd-sysusers", "--root", str(root), str(SYSTEMD / "crier.sysusers")],
                   check=True, capture_output=True)
    gpio = [l for l in (root / "etc/group").read_text().splitlines() if l.startswith("gpio:")]
    assert len(gpio) == 1 and gpio[0].startswith("gpio:x:997:") and "crier" in gpio[0]


def test_tmpfiles_creates_the_state_dir(root):
    subprocess.run(["systemd-sysusers", "--root", str(root), str(SYSTEMD / "crier.sysusers")],
                   check=True, capture_output=True)
    r = subprocess.run(["systemd-tmpfiles", "--root", str(root), "--create",
                        str(SYSTEMD / "crier.tmpfiles")], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    st = (root / "var/lib/crier").stat()
    assert oct(st.st_mode & 0o7777) == "0o750"
    uid = [l.split(":")[2] for l in (root / "etc/passwd").read_text().splitlines()
           if l.startswith("crier:")][0]
    assert st.st_uid == int(uid)


def test_watchdog_dropin():
    text = (SYSTEMD / "system.conf.d/watchdog.conf").read_text()
    body = [l.strip() for l in text.splitlines() if l.strip() and not l.startswith("#")]
    assert body[0] == "[Manager]"
    assert "RuntimeWatchdogSec=15s" in body
    # documented: every setting has comments explaining it
    assert text.count("#") > 5 and "bcm2835" in text


def test_udev_rule_gives_gpiochips_to_gpio():
    rule = (ROOT / "board/udev/60-crier-gpio.rules").read_text()
    lines = [l for l in rule.splitlines() if l.strip() and not l.startswith("#")]
    assert lines == ['SUBSYSTEM=="gpio", KERNEL=="gpiochip[0-9]*", GROUP="gpio", MODE="0660"']


IMAGE_UNITS = ROOT / "image/rootfs/etc/systemd/system"
# The services that run on crier's behalf or with what a phone or the network sends: each is
# sandboxed and scores an exposure <= MAX_EXPOSURE. The setup hotspot's is root with CAP_NET_*
# (hostapd, dnsmasq, wpa_supplicant): docs/setup.md#6-no-network-yet-the-setup-hotspot.
HARDENED = [SYSTEMD / "crier.service", SYSTEMD / "crier-config.service", IMAGE_UNITS / "crier-setup-ap.service",
            IMAGE_UNITS / "crier-hostname.service"]
# Root services left unsandboxed, and why: none takes input from crier's requests beyond a
# file's existence, or from the network.
NOT_SANDBOXED = {
    "crier-reboot.service": "systemctl reboot when crier's request file appears; nothing read from it",
    "crier-growdata.service": "first boot: grows the data partition (parted, resize2fs need the block device)",
    "crier-image-layout.service": "boot: reports the read-only root and data layout on the console",
    "crier-mark-good.service": "boot: commits the booted RAUC slot, or rolls back",
    "crier-wifi-config.service": "writes the supplicant file from crier.conf (crier's checked parser) into /run/crier-wifi",
    "crier-wpa-supplicant.service": "the distribution's wpa_supplicant, as Debian runs it",
}


def test_every_service_is_either_hardened_or_listed_with_a_reason():
    services = {p.name for p in list(SYSTEMD.glob("*.service")) + list(IMAGE_UNITS.glob("*.service"))}
    assert services == {p.name for p in HARDENED} | set(NOT_SANDBOXED), \
        "a new unit: harden it (HARDENED, exposure <= %.1f) or say in NOT_SANDBOXED why not" % MAX_EXPOSURE


@pytest.mark.parametrize("unit", HARDENED, ids=lambda p: p.name)
def test_every_hardened_unit_scores_at_most_2(unit, tmp_path, capsys):
    """The same limit for each: crier.service, crier-config.service (root, one capability, no
    network) and crier-setup-ap.service (root, the network capabilities hostapd/dnsmasq need)."""
    # offline analysis does not need the binaries: the unit file as installed
    score, out = security(unit)
    with capsys.disabled():
        print("\n  systemd-analyze security %s: exposure %.1f (limit %.1f)" % (unit.name, score, MAX_EXPOSURE))
    assert score <= MAX_EXPOSURE, out


def _setup_ap_sandbox(netns):
    """crier-setup-ap.service's seccomp filter and address families (sandbox.py), and its
    capability bounding set, for a child process in the network namespace `netns`."""
    import ctypes
    import sandbox
    text = (IMAGE_UNITS / "crier-setup-ap.service").read_text()
    install = sandbox.preexec(text)
    keep = {"CAP_NET_ADMIN": 12, "CAP_NET_RAW": 13, "CAP_NET_BIND_SERVICE": 10}
    assert set(sandbox.setting(text, "CapabilityBoundingSet").split()) == set(keep)
    libc = ctypes.CDLL(None, use_errno=True)

    def pre():
        fd = os.open("/run/netns/" + netns, os.O_RDONLY)
        assert libc.setns(fd, 0x40000000) == 0   # CLONE_NEWNET; before the filter forbids it
        os.close(fd)
        for cap in range(64):
            if cap not in keep.values():
                libc.prctl(24, cap, 0, 0, 0)   # PR_CAPBSET_DROP (EINVAL past the last cap)
        libc.prctl(38, 1, 0, 0, 0)             # PR_SET_NO_NEW_PRIVS (NoNewPrivileges=yes)
        install()
    return pre


def test_dnsmasq_runs_under_the_setup_hotspot_s_sandbox(crier, tmp_path):
    """The real dnsmasq with the file `crier setup-ap-config` writes, under crier-setup-ap.service's
    system call filter (~@privileged), address families and capabilities, in a network namespace
    with a wlan0: it starts, answers DNS with the box and stays up. Without `group=` in its file
    it calls setgroups() to change to the group "dip" and the filter kills it (SIGSYS): the
    file before this fix."""
    if os.geteuid() != 0 or not shutil.which("ip"):
        pytest.skip("needs root and ip(8): a network namespace")
    ensure_packages("python3-seccomp", "dnsmasq-base")
    d = tmp_path / "ap"
    d.mkdir()   # RuntimeDirectory= makes it on the box
    (tmp_path / "crier.conf").write_text("device.id = test\n")
    subprocess.run([str(crier), "setup-ap-config", "--config", str(tmp_path / "crier.conf"), "--dir", str(d)], check=True, capture_output=True)
    conf = (d / "dnsmasq.conf").read_text()
    assert "\ngroup=\n" in conf
    ns = "crier-ap-%d" % os.getpid()
    subprocess.run(["ip", "netns", "add", ns], check=True)
    try:
        ipn = lambda *a: subprocess.run(["ip", "-n", ns] + list(a), check=True, capture_output=True)
        ipn("link", "add", "wlan0", "type", "veth", "peer", "name", "peer0")
        ipn("addr", "add", "10.42.0.1/24", "dev", "wlan0")
        for l in ("lo", "wlan0", "peer0"):
            ipn("link", "set", l, "up")

        def run(conf_file, seconds):
            p = subprocess.Popen(["/usr/sbin/dnsmasq", "--keep-in-foreground", "--conf-file=%s" % conf_file, "--log-facility=-"],
                                 preexec_fn=_setup_ap_sandbox(ns), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
            try:
                p.wait(seconds)
            except subprocess.TimeoutExpired:
                pass
            return p

        p = run(d / "dnsmasq.conf", 3)
        answer = None
        if p.poll() is None:
            # a DNS query from inside the namespace: every name is the box
            q = subprocess.run(["ip", "netns", "exec", ns, "python3", "-c",
                                "import socket,struct; s=socket.socket(socket.AF_INET,socket.SOCK_DGRAM); s.settimeout(5); "
                                "s.sendto(struct.pack('>HHHHHH',7,256,1,0,0,0)+b'\\x07example\\x03org\\x00'+struct.pack('>HH',1,1),('10.42.0.1',53)); "
                                "d=s.recv(512); print(socket.inet_ntoa(d[-4:]))"], capture_output=True, text=True)
            answer = q.stdout.strip()
        alive = p.poll() is None
        p.terminate()
        out = p.communicate(timeout=10)[0]
        assert alive, "dnsmasq ended under the sandbox (%s):\n%s" % (p.returncode, out)
        assert answer == "10.42.0.1", (answer, out)
        assert "DHCP, IP range 10.42.0.10 -- 10.42.0.99" in out, out
        # the emulation bites: the same file without group= dies at setgroups()
        (d / "old.conf").write_text(conf.replace("\ngroup=\n", "\n"))
        p = run(d / "old.conf", 10)
        rc = p.poll()
        if rc is None:
            p.kill()
        out = p.communicate(timeout=10)[0]
        assert rc == -31, "dnsmasq without group= was not killed by SIGSYS under the filter (%s):\n%s" % (rc, out)
    finally:
        subprocess.run(["ip", "netns", "del", ns], capture_output=True)


def test_setup_hotspot_units_verify_and_stay_narrow(tmp_path):
    """crier-setup-ap.path/.service (docs/setup.md#6-no-network-yet-the-setup-hotspot): they verify, the path unit watches crier's
    own runtime directory, the service keeps only the network capabilities, crier.service
    gains nothing; its exposure is checked with the others (test_every_hardened_unit_scores_at_most_2)."""
    d = tmp_path / "units"
    d.mkdir()
    fake = tmp_path / "bin"
    fake.mkdir()
    for name in ("crier", "crier-setup-ap"):
        (fake / name).write_text("#!/bin/sh\nexit 0\n")
        (fake / name).chmod(0o755)
    svc = (IMAGE_UNITS / "crier-setup-ap.service").read_text()
    assert "ExecStart=/usr/local/sbin/crier-setup-ap /run/crier/setup-ap " in svc
    svc = svc.replace("/usr/bin/crier ", "%s/crier " % fake).replace("/usr/local/sbin/crier-setup-ap ", "%s/crier-setup-ap " % fake)
    (d / "crier-setup-ap.service").write_text(svc)
    (d / "crier-setup-ap.path").write_text((IMAGE_UNITS / "crier-setup-ap.path").read_text())
    r = subprocess.run(["systemd-analyze", "verify", "--man=no", str(d / "crier-setup-ap.path"), str(d / "crier-setup-ap.service")],
                       capture_output=True, text=True)
    # the units it names (crier-wpa-supplicant, the wlan0 device) are not here: only those may be missing
    errs = [l for l in (r.stdout + r.stderr).splitlines() if l.strip() and "crier-wpa-supplicant" not in l and "wlan0" not in l]
    assert errs == [], r.stdout + r.stderr
    assert "PathExists=/run/crier/setup-ap" in (d / "crier-setup-ap.path").read_text()
    caps = [l for l in svc.splitlines() if l.startswith("CapabilityBoundingSet=")]
    assert caps == ["CapabilityBoundingSet=CAP_NET_ADMIN CAP_NET_RAW CAP_NET_BIND_SERVICE"], caps
    assert "Conflicts=crier-wpa-supplicant.service" in svc
    # no chown allowed (the supplicant's socket gets its group from Group=crier), and the
    # directory crier looks in is made by the unit: it does not exist after the box's own
    # supplicant stopped, and ReadWritePaths= of a missing path fails the start
    assert "Group=crier" in svc and "setup-ap-config --dir /run/crier-setup-ap\n" in svc and not re.search(r"^SystemCallFilter=.*chown", svc, re.M)
    assert re.search(r"^RuntimeDirectory=.*\bwpa_supplicant\b", svc, re.M) and "/run/wpa_supplicant" not in svc.split("ReadWritePaths=")[1].split("\n")[0]
    # crier itself: no capability, no new privilege (it only writes /run/crier/setup-ap)
    s = unit_settings()
    assert s[("Service", "CapabilityBoundingSet")] == [""] and s[("Service", "NoNewPrivileges")] == ["yes"]


def test_setup_ap_helper_without_a_radio_says_so_once_and_waits(tmp_path):
    """crier-setup-ap on a box without the radio (no Wi-Fi hardware, its driver not started: the
    amd64 image's kernel has none): one "no radio" line naming the interface, hostapd and dnsmasq
    never started, no exit while crier's request stays (an exit would have crier-setup-ap.path
    start the unit again at once, until its start limit left the path unit failed), and a clean
    end when crier removes the request. The amd64 boot test runs it under systemd."""
    helper = ROOT / "image/rootfs/usr/local/sbin/crier-setup-ap"
    fake = tmp_path / "bin"
    fake.mkdir()
    started = tmp_path / "started"
    for name in ("hostapd", "dnsmasq", "wpa_supplicant"):
        (fake / name).write_text("#!/bin/sh\necho %s >> %s\nexec sleep 60\n" % (name, started))
        (fake / name).chmod(0o755)
    req = tmp_path / "setup-ap"
    req.write_text("ap\n")
    log = tmp_path / "helper.log"
    env = dict(os.environ, CRIER_SETUP_HOSTAPD=str(fake / "hostapd"), CRIER_SETUP_DNSMASQ=str(fake / "dnsmasq"),
               CRIER_SETUP_SUPPLICANT=str(fake / "wpa_supplicant"))
    with open(log, "w") as err:
        p = subprocess.Popen(["sh", str(helper), str(req), str(tmp_path), "crier-noradio0"], stderr=err, env=env)
    try:
        deadline = time.monotonic() + 10
        while "no radio" not in log.read_text() and p.poll() is None and time.monotonic() < deadline:
            time.sleep(0.1)
        assert "crier-setup-ap: no radio: network interface crier-noradio0 does not exist" in log.read_text(), log.read_text()
        req.write_text("station\n")   # crier changing its mind changes nothing without a radio
        time.sleep(1.5)               # the helper looks once a second: it must still be waiting
        assert p.poll() is None, log.read_text()
        req.unlink()
        assert p.wait(timeout=10) == 0
    finally:
        if p.poll() is None:
            p.kill()
    text = log.read_text()
    assert text.count("no radio") == 1, text
    assert "request file gone: radio given back" in text, text
    assert not started.exists(), started.read_text()
