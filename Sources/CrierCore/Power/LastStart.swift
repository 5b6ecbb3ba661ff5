/// How the previous run of crier ended, told at the next start (issue 35 item 2): a clean stop,
/// a crash, a watchdog reset or a power cut. Pure: the runtime reads the files.
///
/// The evidence: a run record on the data partition (`RunRecord`), written `running` at start
/// and `stopped` at the end of a clean stop, with the kernel's boot id (`/proc/sys/kernel/
/// random/boot_id`, new at every boot); and the watchdog's `bootstatus` (WDIOF_CARDRESET).
/// systemd hands `SERVICE_RESULT`/`EXIT_STATUS` only to ExecStop=/ExecStopPost=, not to the
/// next ExecStart=, so it is not used.
public enum LastStart: String, Sendable, Equatable {
    /// No record: the first start on this card (or the record was lost).
    case first
    /// The previous run stopped cleanly (systemctl stop, a reboot, an update, a reload).
    case clean
    /// The previous run ended without stopping, in this same boot: a crash, SIGKILL, an
    /// out-of-memory kill, or systemd's WatchdogSec= abort; systemd restarted it.
    case crash
    /// The board went down without stopping crier and the watchdog says it reset the board.
    case watchdog
    /// The board went down without stopping crier: a power cut, a brown-out, a hard reset, or
    /// a hang the hardware watchdog reset (a Pi's bcm2835 watchdog does not report that).
    case powerLoss = "power_loss"

    /// For `crier status`.
    public var words: String {
        switch self {
        case .first: "first start (no record of an earlier run)"
        case .clean: "after a clean stop"
        case .crash: "after a crash (crier ended without stopping; systemd restarted it)"
        case .watchdog: "after a watchdog reset (the system hung)"
        case .powerLoss: "after a power cut or hard reset (the board went down without stopping crier)"
        }
    }

    /// WDIOF_CARDRESET in a watchdog's bootstatus: "the last reboot was caused by the watchdog".
    public static let cardReset: UInt32 = 0x0020

    /// `previous`: the record left by the last run (nil: none). `bootID`: this boot's id.
    /// `watchdogBootstatus`: the watchdog's flags, nil without one.
    public static func classify(previous: RunRecord?, bootID: String, watchdogBootstatus: UInt32?) -> LastStart {
        guard let p = previous else { return .first }
        if p.state == .stopped { return .clean }
        if p.bootID == bootID { return .crash }
        if let s = watchdogBootstatus, s & cardReset != 0 { return .watchdog }
        return .powerLoss
    }
}

/// The run record (`crier.run`, next to the button state on the data partition): one small
/// file rewritten at start, at a clean stop, and once when the under-voltage prompt is said
/// (a few writes per boot). Lines `key=value`; unknown keys are ignored.
public struct RunRecord: Sendable, Equatable {
    public enum State: String, Sendable { case running, stopped }
    public var state: State
    public var bootID: String
    /// How the run that wrote this record had started (kept across a reload, which re-executes
    /// crier in place: the new image is not a new start).
    public var lastStart: LastStart?
    /// The under-voltage prompt was said in this boot (`bootID`).
    public var powerPromptSaid: Bool
    /// Under-voltage was seen in this boot: with an unclean end, a hint that power failed.
    public var underVoltageSeen: Bool

    public init(state: State, bootID: String, lastStart: LastStart? = nil, powerPromptSaid: Bool = false, underVoltageSeen: Bool = false) {
        self.state = state
        self.bootID = bootID
        self.lastStart = lastStart
        self.powerPromptSaid = powerPromptSaid
        self.underVoltageSeen = underVoltageSeen
    }

    public func encoded() -> String {
        var s = "state=\(state.rawValue)\nboot=\(bootID)\n"
        if let l = lastStart { s += "started=\(l.rawValue)\n" }
        if powerPromptSaid { s += "power_prompt=said\n" }
        if underVoltageSeen { s += "under_voltage=seen\n" }
        return s
    }

    /// nil for a file that is not a record (empty, torn by a power cut, garbage).
    public static func decode(_ text: String) -> RunRecord? {
        var kv: [String: String] = [:]
        for line in text.split(separator: "\n") {
            guard let eq = line.firstIndex(of: "=") else { continue }
            kv[String(line[..<eq])] = String(line[line.index(after: eq)...])
        }
        guard let st = kv["state"].flatMap(State.init(rawValue:)), let boot = kv["boot"], !boot.isEmpty, boot.utf8.count <= 64 else { return nil }
        return RunRecord(state: st, bootID: boot, lastStart: kv["started"].flatMap(LastStart.init(rawValue:)),
                         powerPromptSaid: kv["power_prompt"] == "said", underVoltageSeen: kv["under_voltage"] == "seen")
    }

    /// The record this start writes, and how the last run ended. `reload`: this process is the
    /// re-executed image of a reload, which keeps the start it had.
    public static func starting(previous: RunRecord?, bootID: String, watchdogBootstatus: UInt32?, reload: Bool) -> (record: RunRecord, lastStart: LastStart) {
        let sameBoot = previous?.bootID == bootID
        let last: LastStart
        if reload, let p = previous, sameBoot, let kept = p.lastStart {
            last = kept
        } else {
            last = LastStart.classify(previous: previous, bootID: bootID, watchdogBootstatus: watchdogBootstatus)
        }
        let record = RunRecord(state: .running, bootID: bootID, lastStart: last,
                               powerPromptSaid: sameBoot && previous?.powerPromptSaid == true,
                               underVoltageSeen: sameBoot && previous?.underVoltageSeen == true)
        return (record, last)
    }
}
