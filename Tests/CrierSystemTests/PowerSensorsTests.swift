import CrierCore
import CrierPosix
import Glibc
import Synchronization
import Testing
@testable import CrierSystem

/// A fake sysfs/procfs tree under a temporary directory.
private final class FakeTree {
    let root = TestFS.tempDir()
    func put(_ path: String, _ text: String) {
        var dir = ""
        for part in path.split(separator: "/").dropLast() {
            dir += "/" + part
            mkdir(root + dir, 0o755)
        }
        try? FileIO.write(root + "/" + path, Array(text.utf8))
    }
    func remove(_ path: String) { unlink(root + "/" + path) }
    deinit { removeTree(root) }
}

@Suite("Power sensors on a fake sysfs tree (issue 35)", .serialized)
struct PowerSensorsTests {
    @Test("Raspberry Pi kernel: the firmware's word and thermal_zone0")
    func firmware() {
        let t = FakeTree()
        t.put(PowerSensors.firmwarePath, "50005\n")
        t.put(PowerSensors.thermalPath, "71234\n")
        let r = PowerSensors(root: t.root).read()
        #expect(r == PowerReading(source: .firmware, flags: ThrottledFlags(raw: 0x50005), milliCelsius: 71234))
    }

    @Test("Debian's kernel: hwmon rpi_volt's under-voltage alarm (the other hwmon devices are skipped)")
    func hwmon() {
        let t = FakeTree()
        t.put("sys/class/hwmon/hwmon0/name", "cpu_thermal\n")
        t.put("sys/class/hwmon/hwmon0/in0_lcrit_alarm", "1\n")
        t.put("sys/class/hwmon/hwmon1/name", "rpi_volt\n")
        t.put("sys/class/hwmon/hwmon1/in0_lcrit_alarm", "0\n")
        let s = PowerSensors(root: t.root)
        #expect(s.read() == PowerReading(source: .hwmon, flags: ThrottledFlags(raw: 0)))
        t.put("sys/class/hwmon/hwmon1/in0_lcrit_alarm", "1\n")
        #expect(s.read().active == [.underVoltage])
    }

    @Test("no flags at all (a PC, a VM), garbage in the files: source none, nothing invented")
    func none() {
        let t = FakeTree()
        #expect(PowerSensors(root: t.root).read() == PowerReading(source: .none))
        t.put(PowerSensors.firmwarePath, "garbage")
        t.put(PowerSensors.thermalPath, "hot")
        #expect(PowerSensors(root: t.root).read() == PowerReading(source: .none))
    }

    @Test("boot id and the watchdog's bootstatus")
    func bootEvidence() {
        let t = FakeTree()
        let s = PowerSensors(root: t.root)
        #expect(s.bootID() == "unknown")
        #expect(s.watchdogBootstatus() == nil)
        t.put("proc/sys/kernel/random/boot_id", "5c1e2e1a-0000-4000-8000-000000000001\n")
        t.put("sys/class/watchdog/watchdog0/bootstatus", "32\n")
        #expect(s.bootID() == "5c1e2e1a-0000-4000-8000-000000000001")
        #expect(s.watchdogBootstatus() == 32)
    }

    @Test("the run record across starts: first, crash, clean stop, power cut, watchdog reset; prompt said once per boot")
    func runRecordAcrossStarts() {
        let t = FakeTree()
        let s = PowerSensors(root: t.root)
        let file = RunRecordFile(path: t.root + "/crier.run")
        let (log, _) = systemLog()
        t.put("proc/sys/kernel/random/boot_id", "boot-1\n")
        var k = RunRecordKeeper(file: file, sensors: s, reload: false, log: log)
        #expect(k.lastStart == .first)
        k.change { $0.powerPromptSaid = true }
        // SIGKILL: no stop; the next start in the same boot.
        k = RunRecordKeeper(file: file, sensors: s, reload: false, log: log)
        #expect(k.lastStart == .crash)
        #expect(k.current.powerPromptSaid)
        k.stopped()
        k = RunRecordKeeper(file: file, sensors: s, reload: false, log: log)
        #expect(k.lastStart == .clean)
        // Power cut: a new boot id, the record still says running.
        t.put("proc/sys/kernel/random/boot_id", "boot-2\n")
        k = RunRecordKeeper(file: file, sensors: s, reload: false, log: log)
        #expect(k.lastStart == .powerLoss)
        #expect(!k.current.powerPromptSaid)
        t.put("proc/sys/kernel/random/boot_id", "boot-3\n")
        t.put("sys/class/watchdog/watchdog0/bootstatus", "32\n")
        k = RunRecordKeeper(file: file, sensors: s, reload: false, log: log)
        #expect(k.lastStart == .watchdog)
        // A reload keeps it.
        k = RunRecordKeeper(file: file, sensors: s, reload: true, log: log)
        #expect(k.lastStart == .watchdog)
    }

    @Test("a record that cannot be written is one notice, and the box runs on")
    func unwritable() {
        let (log, sink) = systemLog()
        let k = RunRecordKeeper(file: RunRecordFile(path: "/nonexistent-crier-dir/crier.run"), sensors: PowerSensors(root: "/nonexistent"), reload: false, log: log)
        k.change { $0.powerPromptSaid = true }
        k.stopped()
        #expect(k.lastStart == .first)
        #expect(sink.lines.filter { $0.contains("cannot write the run record") }.count == 1, "\(sink.lines)")
    }

    @Test("the monitor polls its thread, logs each change once, and hands readings on")
    func monitor() async {
        let t = FakeTree()
        t.put(PowerSensors.firmwarePath, "0\n")
        t.put(PowerSensors.thermalPath, "50000\n")
        let (log, sink) = systemLog()
        let seen = ReadingBox()
        let m = PowerMonitor(sensors: PowerSensors(root: t.root), interval: 0.02, log: log) { r, events, _ in seen.add(r, events) }
        let first = m.poll()
        #expect(first.events.count == 1)
        try? m.start()
        t.put(PowerSensors.firmwarePath, "10001\n")
        #expect(await eventually { seen.events.contains(.began(.underVoltage)) })
        t.put(PowerSensors.firmwarePath, "10000\n")
        #expect(await eventually { seen.events.contains(.ended(.underVoltage)) })
        m.stop()
        #expect(sink.lines.filter { $0.contains("power: under-voltage now") }.count == 1, "\(sink.lines)")
        #expect(sink.lines.filter { $0.contains("power: under-voltage over") }.count == 1)
        #expect(m.status?.seen == ["under_voltage"])
    }
}

private final class ReadingBox: Sendable {
    private let m = Mutex<[PowerEvent]>([])
    func add(_ r: PowerReading, _ e: [PowerEvent]) { m.withLock { $0 += e } }
    var events: [PowerEvent] { m.withLock { $0 } }
}

private func systemLog() -> (Logger, MemoryLogSink) {
    let hub = LogHub(clock: { WallTime(unixMillis: 0) })
    let sink = MemoryLogSink()
    hub.add(sink)
    return (hub.logger("power"), sink)
}

/// rm -r without a subprocess (see TestFS.remove: no fork from the test process).
private func removeTree(_ path: String) {
    var st = stat()
    guard lstat(path, &st) == 0 else { return }
    if (st.st_mode & S_IFMT) == S_IFDIR, let d = opendir(path) {
        var names: [String] = []
        while let e = readdir(d) {
            let name = withUnsafeBytes(of: e.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
            if name != "." && name != ".." { names.append(name) }
        }
        closedir(d)
        for n in names { removeTree(path + "/" + n) }
        rmdir(path)
    } else {
        unlink(path)
    }
}
