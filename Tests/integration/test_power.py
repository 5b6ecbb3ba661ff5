"""Power and heat (issue 35 item 2) with a fake sysfs tree (CRIER_SYSFS_ROOT, tests only): the
firmware's throttled word and the temperature in `crier status` and the v1 hello, changes
logged, the under-voltage prompt said once per boot at a quiet moment, and how the last run
ended (first start, clean stop, crash, power cut, watchdog reset)."""
import json
import os
import signal
import subprocess
import time

from conftest import CRIER
from test_daemon import Proc, order_sim

FIRMWARE = "sys/devices/platform/soc/soc:firmware/get_throttled"
THERMAL = "sys/class/thermal/thermal_zone0/temp"
BOOT_ID = "proc/sys/kernel/random/boot_id"
BOOTSTATUS = "sys/class/watchdog/watchdog0/bootstatus"


class FakeSys:
    def __init__(self, root):
        self.root = root

    def put(self, path, text):
        p = self.root / path
        p.parent.mkdir(parents=True, exist_ok=True)
        tmp = p.with_name(p.name + ".new")
        tmp.write_text(text)
        os.replace(tmp, p)


def start(box, sysroot, port, extra=""):
    box.write_conf("server = tcp://127.0.0.1:%d\ndevice.id = test-box\nstatus.on_link_up = off\n"
                   "input = fifo:%s\nstate.path = %s\ncontrol.socket = %s\n%s" % (
                       port, box.tmp / "buttons.fifo", box.tmp / "state", box.tmp / "control.sock", extra))
    env = dict(box.env, CRIER_SYSFS_ROOT=str(sysroot))
    p = Proc([CRIER, "run", "--config", box.conf], env=env)
    p.wait_for(r" INFO runtime: ready")
    return p


def status(box):
    return json.loads(subprocess.run([CRIER, "status", "--config", box.conf, "--json"],
                                     capture_output=True, text=True, timeout=20).stdout)


def test_status_hello_prompt_once_per_boot_and_how_the_last_run_ended(box, tmp_path):
    sys_ = FakeSys(tmp_path / "sysroot")
    sys_.put(FIRMWARE, "50005\n")  # under-voltage and throttled, now and occurred
    sys_.put(THERMAL, "61500\n")
    sys_.put(BOOT_ID, "boot-A\n")
    sim = order_sim()
    crier = start(box, sys_.root, sim.port)
    try:
        crier.wait_for(r"WARN power: the firmware reports under-voltage, throttled; the power supply sags")
        crier.wait_for(r"INFO runtime: last start: first start")
        # The v1 hello carries the health (extra fields; an older server ignores them).
        sim.wait_for(r"^device connected device=test-box .*power=under_voltage,throttled temp_c=62 last_start=first", which="out")
        # Said after the start prompt, once the speaker has been quiet for 5 s.
        crier.wait_for(r"said prompt=started")
        said = crier.wait_for(r"INFO runtime: said prompt=power_weak text=电源电压不足，请更换电源", timeout=20)
        assert len(said) == 1
        st = status(box)
        assert st["power"] == {"source": "firmware", "summary": "under_voltage,throttled", "now": ["under_voltage", "throttled"],
                               "seen": ["under_voltage", "throttled"], "temp_c": 61.5, "temp_max_c": 61.5}
        assert st["last_start"] == "first"
        text = subprocess.run([CRIER, "status", "--config", box.conf], capture_output=True, text=True, timeout=20).stdout
        assert "power: under-voltage, throttled now; seen since start: under-voltage, throttled; 61.5 °C (max 61.5 °C)\n" in text
        assert "last start: first start (no record of an earlier run)\n" in text
        # Under-voltage ends: logged once.
        sys_.put(FIRMWARE, "0\n")
        crier.wait_for(r"NOTICE power: under-voltage over")
        assert crier.stop() == 0
        # Same boot, after a clean stop: not said again.
        crier = start(box, sys_.root, sim.port)
        crier.wait_for(r"INFO runtime: last start: after a clean stop")
        sys_.put(FIRMWARE, "50005\n")
        crier.wait_for(r"said prompt=started")
        time.sleep(UNDER_VOLTAGE_QUIET + POLL + 1)
        assert not any("prompt=power_weak" in l for l in crier.lines()), "said twice in one boot"
        assert status(box)["last_start"] == "clean"
        # SIGKILL: a crash, in the same boot.
        crier.stop(signal.SIGKILL)
        crier = start(box, sys_.root, sim.port)
        crier.wait_for(r"NOTICE runtime: last start: after a crash")
        assert status(box)["last_start"] == "crash"
        # The board went down without a stop: a new boot id. Under-voltage had been seen.
        crier.stop(signal.SIGKILL)
        sys_.put(BOOT_ID, "boot-B\n")
        crier = start(box, sys_.root, sim.port)
        crier.wait_for(r"NOTICE runtime: last start: after a power cut or hard reset .*last_start=power_loss under_voltage_before=\"yes")
        # A new boot: said again.
        crier.wait_for(r"said prompt=power_weak", timeout=20)
        crier.stop(signal.SIGKILL)
        # The watchdog says it reset the board (WDIOF_CARDRESET).
        sys_.put(BOOT_ID, "boot-C\n")
        sys_.put(BOOTSTATUS, "32\n")
        crier = start(box, sys_.root, sim.port)
        crier.wait_for(r"NOTICE runtime: last start: after a watchdog reset")
        assert status(box)["last_start"] == "watchdog"
    finally:
        crier.stop()
        sim.stop()


UNDER_VOLTAGE_QUIET = 5
POLL = 5


def test_no_firmware_and_prompt_switched_off(box, tmp_path):
    """A PC or VM: no flags, nothing said, status says so; status.on_under_voltage = off."""
    sys_ = FakeSys(tmp_path / "sysroot")
    sys_.put(BOOT_ID, "boot-A\n")
    sim = order_sim()
    crier = start(box, sys_.root, sim.port, "status.on_under_voltage = off\n")
    try:
        crier.wait_for(r"INFO power: under-voltage cannot be read: no firmware get_throttled and no rpi_volt hwmon")
        st = status(box)
        assert st["power"]["source"] == "none" and st["power"]["summary"] == "unknown"
        sim.wait_for(r"^device connected device=test-box .*power=unknown last_start=first", which="out")
        # Under-voltage appears while running: logged, not said (switched off).
        sys_.put(FIRMWARE, "10001\n")
        crier.wait_for(r"WARN power: the firmware reports under-voltage;", timeout=15)
        time.sleep(UNDER_VOLTAGE_QUIET + 1)
        assert not any("prompt=power_weak" in l for l in crier.lines())
        assert status(box)["power"]["now"] == ["under_voltage"]
    finally:
        crier.stop()
        sim.stop()
