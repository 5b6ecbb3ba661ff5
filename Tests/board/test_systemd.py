"""board/systemd: the unit verifies, its hardening scores an exposure <= 2.0, and the
sysusers/tmpfiles entries do what the unit relies on. No running systemd needed."""
import re
import subprocess

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
SETUP_EXPOSURE = 2.1  # root with CAP_NET_* (hostapd, dnsmasq, wpa_supplicant): docs/setup.md#6-no-network-yet-the-setup-hotspot


def test_setup_hotspot_units_verify_and_stay_narrow(tmp_path):
    """crier-setup-ap.path/.service (docs/setup.md#6-no-network-yet-the-setup-hotspot): they verify, the path unit watches crier's
    own runtime directory, the service keeps only the network capabilities, crier.service
    gains nothing, and the exposure stays at its documented 2.1."""
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
    r = subprocess.run(["systemd-analyze", "security", "--offline=yes", "--no-pager", str(d / "crier-setup-ap.service")],
                       capture_output=True, text=True)
    m = re.search(r"Overall exposure level for crier-setup-ap\.service:\s*([\d.]+)", r.stdout + r.stderr)
    assert m and float(m.group(1)) <= SETUP_EXPOSURE, r.stdout + r.stderr
    # crier itself: no capability, no new privilege (it only writes /run/crier/setup-ap)
    s = unit_settings()
    assert s[("Service", "CapabilityBoundingSet")] == [""] and s[("Service", "NoNewPrivileges")] == ["yes"]
