import CrierCore
import CrierPosix
import Glibc
import Synchronization

/// Reads the Pi's power and heat sensors from sysfs (issue 35 item 2): the firmware's throttled
/// word, else the mainline hwmon's under-voltage alarm, and thermal_zone0. `root` is "/" on the
/// box; tests pass a fake tree (`CRIER_SYSFS_ROOT`, tests only).
public struct PowerSensors: Sendable {
    public let root: String

    /// Raspberry Pi kernel (downstream raspberrypi-firmware driver). Its newer versions log
    /// "deprecated, use hwmon sysfs instead" (a WARN_ONCE) at the first read.
    public static let firmwarePath = "sys/devices/platform/soc/soc:firmware/get_throttled"
    /// Mainline raspberrypi-hwmon: a hwmon device named `rpi_volt`.
    public static let hwmonDir = "sys/class/hwmon"
    public static let thermalPath = "sys/class/thermal/thermal_zone0/temp"

    public init(root: String = FileIO.env("CRIER_SYSFS_ROOT").flatMap { $0.isEmpty ? nil : $0 } ?? "/") {
        self.root = root.hasSuffix("/") ? root : root + "/"
    }

    public func read() -> PowerReading {
        let temp = text(root + Self.thermalPath).flatMap(PowerReading.parseTemperature)
        if let t = text(root + Self.firmwarePath), let flags = ThrottledFlags.parse(t) {
            return PowerReading(source: .firmware, flags: flags, milliCelsius: temp)
        }
        if let dir = hwmonVolt(), let a = text(dir + "/in0_lcrit_alarm") {
            // The alarm is bit 16 of the driver's last poll (2 s): under-voltage within it.
            let on = a.hasPrefix("1")
            return PowerReading(source: .hwmon, flags: ThrottledFlags(raw: on ? 0x10001 : 0), milliCelsius: temp)
        }
        return PowerReading(source: .none, milliCelsius: temp)
    }

    private func hwmonVolt() -> String? {
        let dir = root + Self.hwmonDir
        guard let d = opendir(dir) else { return nil }
        defer { closedir(d) }
        var names: [String] = []
        while let e = readdir(d) {
            let name = withUnsafeBytes(of: e.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
            if name.hasPrefix("hwmon") { names.append(name) }
        }
        for n in names.sorted() where text(dir + "/" + n + "/name")?.hasPrefix("rpi_volt") == true {
            return dir + "/" + n
        }
        return nil
    }

    func text(_ path: String) -> String? {
        guard let b = try? FileIO.read(path, limit: 256) else { return nil }
        return String(decoding: b, as: UTF8.self)
    }

    /// This boot's id (`/proc/sys/kernel/random/boot_id`); "unknown" without one.
    public func bootID() -> String {
        let id = text(root + "proc/sys/kernel/random/boot_id").map { $0.filter { $0 != "\n" } } ?? ""
        return id.isEmpty ? "unknown" : id
    }

    /// The first watchdog's bootstatus flags (decimal, as sysfs prints them), nil without one.
    public func watchdogBootstatus() -> UInt32? {
        text(root + "sys/class/watchdog/watchdog0/bootstatus").flatMap { UInt32($0.filter { $0 != "\n" }) }
    }
}

/// The run record file (`RunRecord`), written durably: a power cut leaves the old or the new.
public struct RunRecordFile: Sendable {
    public let path: String
    public init(path: String) { self.path = path }

    public func load() -> RunRecord? {
        guard let b = try? FileIO.read(path, limit: 4096) else { return nil }
        return RunRecord.decode(String(decoding: b, as: UTF8.self))
    }

    public func save(_ r: RunRecord) throws(SystemError) {
        try FileIO.writeDurably(path, Array(r.encoded().utf8))
    }
}

/// Polls `PowerSensors` every `interval` seconds on its own thread (a firmware read is a
/// mailbox round trip to the VideoCore: a blocking call, kept off Swift's pool), logs every
/// change (`PowerWatch`) and hands each reading to `onReading`.
public final class PowerMonitor: Sendable {
    public let sensors: PowerSensors
    public let interval: Double
    private let log: Logger
    private let onReading: @Sendable (PowerReading, [PowerEvent], PowerStatus?) -> Void
    private let watch = Mutex(PowerWatch())
    private let wake: WakePipe
    private let stopping = Atomic<Bool>(false)
    private let thread = Mutex<PosixThread?>(nil)

    public init(sensors: PowerSensors = PowerSensors(), interval: Double = 5, log: Logger,
                onReading: @escaping @Sendable (PowerReading, [PowerEvent], PowerStatus?) -> Void) {
        self.sensors = sensors
        self.interval = interval
        self.log = log
        self.onReading = onReading
        wake = WakePipe()
    }

    /// What `crier status` shows; nil before the first reading.
    public var status: PowerStatus? { watch.withLock { $0.status } }

    /// Reads once now (on the caller's thread) and logs what changed; `start` hands the
    /// later ones to `onReading`.
    @discardableResult
    public func poll() -> (reading: PowerReading, events: [PowerEvent], status: PowerStatus?) {
        let r = sensors.read()
        let (events, status) = watch.withLock { w in (w.observe(r), w.status) }
        for e in events {
            let (level, message, fields) = PowerWatch.line(e)
            log.hub.emit(level, log.component, message, fields)
        }
        return (r, events, status)
    }

    /// Polls every `interval` from now on (call `poll` once first for the state at start).
    public func start() throws(SystemError) {
        let t = try PosixThread(name: "crier-power") { [self] in
            while !stopping.load(ordering: .relaxed) {
                _ = wake.wait(timeout: interval)
                if stopping.load(ordering: .relaxed) { return }
                let (r, events, status) = poll()
                onReading(r, events, status)
            }
        }
        thread.withLock { $0 = t }
    }

    public func stop() {
        stopping.store(true, ordering: .relaxed)
        wake.wake()
        let t = thread.withLock { t -> PosixThread? in
            defer { t = nil }
            return t
        }
        t?.join()
    }
}

/// Keeps this run's record on the data partition (`RunRecord`): written at start, when the
/// under-voltage prompt is said or under-voltage is first seen, and `stopped` at a clean stop.
public final class RunRecordKeeper: Sendable {
    public let file: RunRecordFile
    /// The record the previous run left (nil: none, or unreadable).
    public let previous: RunRecord?
    private let record: Mutex<RunRecord>
    private let log: Logger
    /// Write failures are logged once.
    private let failed = Atomic<Bool>(false)

    /// Reads the previous record, classifies the last start, writes this run's record.
    public init(file: RunRecordFile, sensors: PowerSensors, reload: Bool, log: Logger) {
        self.file = file
        self.log = log
        previous = file.load()
        let (r, _) = RunRecord.starting(previous: previous, bootID: sensors.bootID(),
                                        watchdogBootstatus: sensors.watchdogBootstatus(), reload: reload)
        record = Mutex(r)
        save(r)
    }

    public var current: RunRecord { record.withLock { $0 } }
    public var lastStart: LastStart? { current.lastStart }

    /// Update the record and write it when it changed.
    public func change(_ body: @Sendable (inout RunRecord) -> Void) {
        let changed = record.withLock { r -> RunRecord? in
            let before = r
            body(&r)
            return r == before ? nil : r
        }
        if let r = changed { save(r) }
    }

    public func stopped() { change { $0.state = .stopped } }

    private func save(_ r: RunRecord) {
        do throws(SystemError) {
            try file.save(r)
        } catch {
            guard !failed.exchange(true, ordering: .relaxed) else { return }
            // No data partition (a development machine): the status cannot say how the last
            // run ended, and the under-voltage prompt may be said again after a restart.
            log.notice("cannot write the run record: \(error); `crier status` cannot tell how this run ended at the next start",
                       ["path": file.path])
        }
    }
}
