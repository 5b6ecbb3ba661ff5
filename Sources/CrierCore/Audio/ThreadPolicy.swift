/// The scheduling policy the audio thread (or the speech thread) runs under, as `crier status`
/// and the start log show it (docs/audio.md, "Real-time priority"): `SCHED_FIFO 30`,
/// `SCHED_OTHER (off: audio.realtime_priority = 0)` or `SCHED_OTHER (real-time refused: …)`.
public struct ThreadPolicy: Sendable, Equatable {
    public enum Kind: String, Sendable {
        /// Real-time: the thread runs before every ordinary thread of the box.
        case fifo = "SCHED_FIFO"
        /// The ordinary time-shared policy (with the unit's Nice=).
        case other = "SCHED_OTHER"
    }

    public var kind: Kind
    /// 1...99 for `.fifo`; 0 for `.other`.
    public var priority: Int
    /// Why the thread is not real-time; nil when it is.
    public var detail: String?

    public init(kind: Kind, priority: Int = 0, detail: String? = nil) {
        self.kind = kind
        self.priority = priority
        self.detail = detail
    }

    /// The default of `audio.realtime_priority`: below the kernel's threaded interrupt handlers
    /// (SCHED_FIFO 50), so the sound card's and the network's interrupts still run first, and
    /// above every ordinary thread. squeezelite's `-p` defaults to 45 for its output thread.
    public static let defaultPriority = 30

    /// The default of `speech.realtime_priority`: below the audio thread, so a speech thread
    /// starting an utterance never delays a period; above every ordinary thread.
    public static let defaultSpeechPriority = 20

    /// The default of `speech.start_priority` (the daemon's event thread): below the speech
    /// thread it hands each utterance to, above every ordinary thread.
    public static let defaultStartPriority = 10

    /// What came of asking for `requested` (0: not asked) when the kernel answered `errno`
    /// (0: granted). `errnoName`/`errnoText` word the refusal (`EPERM`, `Operation not permitted`).
    public static func outcome(requested: Int, errno: Int32, errnoName: String, errnoText: String,
                               key: String = Asker.audio.key) -> ThreadPolicy {
        if requested <= 0 { return ThreadPolicy(kind: .other, detail: "off: \(key) = 0") }
        if errno == 0 { return ThreadPolicy(kind: .fifo, priority: requested) }
        return ThreadPolicy(kind: .other, detail: "real-time refused: \(errnoName) \(errnoText)")
    }

    /// `SCHED_FIFO 30`, `SCHED_OTHER (real-time refused: EPERM Operation not permitted)`.
    public var line: String {
        switch kind {
        case .fifo: "\(kind.rawValue) \(priority)"
        case .other: kind.rawValue + (detail.map { " (\($0))" } ?? "")
        }
    }

    /// The one log line at start. A refusal says what to change; nil for `.fifo` and `off`
    /// (the status shows those; `audio thread: SCHED_FIFO 30` is logged at info by the caller).
    public static func refusalAdvice(requested: Int, errno: Int32, errnoName: String,
                                     thread: String = Asker.audio.thread, key: String = Asker.audio.key,
                                     cost: String = Asker.audio.cost) -> String? {
        guard requested > 0, errno != 0 else { return nil }
        let why: String
        switch errnoName {
        case "EPERM":
            why = "not root and RLIMIT_RTPRIO below \(requested), RestrictRealtime=yes, a seccomp filter without sched_setscheduler, "
                + "or a container or a kernel whose real-time group budget is 0"
        case "EINVAL":
            why = "the kernel does not accept SCHED_FIFO \(requested)"
        default:
            why = "the kernel refused it"
        }
        return "\(thread): real-time priority SCHED_FIFO \(requested) refused (\(errnoName): \(why)); "
            + "running as SCHED_OTHER, \(cost). "
            + "Allow it with LimitRTPRIO=\(requested) and RestrictRealtime=no in the unit (board/systemd/crier.service does), "
            + "or set \(key) = 0 to silence this"
    }

    /// A thread that asks for real-time priority, as its one log line names it: the thread, its
    /// crier.conf key, what a refusal costs, and what the line of a grant adds.
    public struct Asker: Sendable {
        public var thread: String
        public var key: String
        public var cost: String
        public var grantedNote: String
        public init(thread: String, key: String, cost: String, grantedNote: String = "") {
            self.thread = thread
            self.key = key
            self.cost = cost
            self.grantedNote = grantedNote
        }
        public static let audio = Asker(thread: "audio thread", key: "audio.realtime_priority", cost: "first sound may be late on a busy box")
    }

    /// `outcome`, and its one line in `log` (nil: not logged, e.g. asked again): a refusal's
    /// advice as a warning, a grant as `<thread>: SCHED_FIFO n<grantedNote>` at info, nothing
    /// when it was not asked (`off`: the status shows it). The kernel's answer comes from the
    /// caller (CrierPosix's `ThreadScheduling`), so that this stays free of system calls.
    public static func asked(_ requested: Int, errno: Int32, errnoName: String, errnoText: String, by asker: Asker,
                             log: Logger?) -> ThreadPolicy {
        let policy = outcome(requested: requested, errno: errno, errnoName: errnoName, errnoText: errnoText, key: asker.key)
        if let log {
            if let advice = refusalAdvice(requested: requested, errno: errno, errnoName: errnoName, thread: asker.thread,
                                          key: asker.key, cost: asker.cost) {
                log.warning(advice)
            } else if policy.kind == .fifo {
                log.info("\(asker.thread): \(policy.line)\(asker.grantedNote)")
            }
        }
        return policy
    }
}
