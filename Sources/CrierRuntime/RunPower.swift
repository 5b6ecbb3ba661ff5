import CrierCore
import CrierPosix
import CrierSystem
import Synchronization

/// Power, heat and how the last run ended (issue 35 item 2; docs/operations.md), wired into
/// `crier run`: the run record (crier.run beside the button state), the power monitor's thread
/// feeding the daemon (the under-voltage prompt is the speaker policy's rule) and what
/// `crier status` shows.
struct RunPower {
    let runRecord: RunRecordKeeper
    let monitor: PowerMonitor

    /// Reads the run record and the first power reading, and starts the monitor. Before
    /// `Daemon.start`, once the control socket is ours (a refused second daemon must not touch
    /// the run record).
    static func start(config: CrierConfig, daemon: Daemon, reload: Bool, log: Logger, view powerView: PowerView) async -> RunPower {
        let hub = log.hub
        let powerLog = hub.logger("power")
        let sensors = PowerSensors()
        let runRecord = RunRecordKeeper(file: RunRecordFile(path: FileIO.directory(of: config.buttons.statePath) + "/crier.run"),
                                        sensors: sensors, reload: reload, log: powerLog)
        let lastStart = runRecord.lastStart
        if !reload, let l = lastStart {
            // Under-voltage seen in the boot that ended without a stop: the power supply is the
            // first suspect.
            let uv = l == .powerLoss && runRecord.previous?.underVoltageSeen == true
            hub.emit(l == .clean || l == .first ? .info : .notice, log.component, "last start: \(l.words)",
                     [("last_start", l.rawValue)] + (uv ? [("under_voltage_before", "yes: the power supply is the first suspect")] : []))
        }
        await daemon.preparePowerPrompt(enabled: config.status.onUnderVoltage, saidThisBoot: runRecord.current.powerPromptSaid,
                                        onSaid: { runRecord.change { $0.powerPromptSaid = true } })
        let monitor = PowerMonitor(sensors: sensors, log: powerLog) { r, events, status in
            if r.occurred.contains(.underVoltage) { runRecord.change { $0.underVoltageSeen = true } }
            let health = events.isEmpty ? nil : DeviceHealth(status, lastStart: lastStart)
            Task { await daemon.powerReading(r, health: health) }
        }
        let firstPower = monitor.poll()
        if firstPower.reading.occurred.contains(.underVoltage) { runRecord.change { $0.underVoltageSeen = true } }
        await daemon.powerReading(firstPower.reading, health: DeviceHealth(firstPower.status, lastStart: lastStart))
        do { try monitor.start() } catch { powerLog.warning("no thread for the power monitor: \(error); power and temperature are read once, at start") }
        powerView.set(monitor: monitor, lastStart: lastStart)
        return RunPower(runRecord: runRecord, monitor: monitor)
    }
}

/// What `crier status` shows of power and the last start, once the monitor runs.
final class PowerView: Sendable {
    private let state = Mutex<(monitor: PowerMonitor?, lastStart: LastStart?)>((nil, nil))
    func set(monitor: PowerMonitor, lastStart: LastStart?) { state.withLock { $0 = (monitor, lastStart) } }
    var status: (PowerStatus?, LastStart?) {
        let (m, l) = state.withLock { ($0.monitor, $0.lastStart) }
        return (m?.status, l)
    }
}

