/// When a full data partition holds the alerts back (docs/protocol.md, section 6a, "A full
/// data partition"). Exactly once rests on the journals (the ack outbox, the MQTT inbox): an
/// order said whose outcome cannot be written is said again after a restart, when the server
/// or the inbox hands it over again. So:
///
/// - A **reserve** file of `reserveBytes` sits on the data partition beside the journals. When
///   a journal write fails for lack of space (ENOSPC, EDQUOT), the reserve is released and the
///   write tried again in the room it leaves: the outcome of what was being said is recorded.
/// - From then on the box **holds its alerts**: orders are received as usual (v1: not acked,
///   the server keeps them; MQTT: journaled in the room left, or not PUBACKed), but no alert
///   begins, so nothing is said that could not be recorded. Expiry and cancels still work.
/// - Every `checkEvery` seconds the free space is measured; once `reserveBytes + resumeMargin`
///   are free, the reserve is made again, and once no journal write is failing the held alerts
///   are said, without a restart.
///
/// Other write failures (read-only card, permissions) do not hold anything: that box has no
/// durable memory at all and says its orders from memory, as documented (holding would silence
/// it for good). Pure: the adapter (`DataReserve`) does the file, statvfs and fallocate.
public struct JournalSpace: Sendable, Equatable {
    public enum Reserve: Sendable, Equatable {
        /// On disk, at full size.
        case held
        /// Released for the journals (or could not be made for lack of space).
        case released
        /// Cannot be made for another reason (read-only, permissions): no guard.
        case unavailable(String)
    }

    /// The reserve's size: several rewrites of a full ack outbox (1000 undelivered acks and
    /// 1024 remembered outcomes, ~0.2 MB typical, ~0.8 MB with 64-character ids) and of the
    /// inbox, with room to spare.
    public static let defaultReserveBytes: Int64 = 4 << 20
    public let reserveBytes: Int64
    /// Free space beyond the reserve before alerts resume (so that the journals can be written
    /// right after the reserve is made again).
    public let resumeMargin: Int64
    public let checkEvery: Double

    public private(set) var reserve: Reserve = .released
    /// Journals whose last write failed for lack of space.
    public private(set) var failing: Set<String> = []
    /// When the alerts began to be held (nil: they are not).
    public private(set) var heldSince: Double?
    /// The last write that failed for lack of space, for the log and `crier status`.
    public private(set) var lastProblem: String?

    public init(reserveBytes: Int64 = JournalSpace.defaultReserveBytes, resumeMargin: Int64 = 1 << 20, checkEvery: Double = 5) {
        self.reserveBytes = max(0, reserveBytes)
        self.resumeMargin = max(0, resumeMargin)
        self.checkEvery = max(0.1, checkEvery)
    }

    /// No alert may begin now: its outcome might not be recorded.
    public var holdsAlerts: Bool { reserve == .released || !failing.isEmpty }

    /// The free space must be watched (the reserve is to be made again).
    public var needsCheck: Bool { reserve == .released || !failing.isEmpty }

    /// What the adapter does next.
    public enum Action: Sendable, Equatable {
        case none
        /// Delete the reserve file, then try the failed write once more.
        case releaseAndRetry
        /// Make the reserve file (`reserveBytes`).
        case makeReserve
    }

    /// At start: the reserve file is there at full size (`true`) or not.
    public mutating func started(reserveFound: Bool, now: Double) -> Action {
        if reserveFound {
            reserve = .held
            return .none
        }
        heldSince = now  // until the reserve is made
        return .makeReserve
    }

    /// The reserve file was made (or found), or could not be.
    public enum Made: Sendable, Equatable {
        case ok
        case noSpace
        case failed(String)
    }

    /// Result of `makeReserve`.
    public mutating func reserveMade(_ result: Made, now: Double) -> Transition {
        let wasHeld = holdsAlerts
        switch result {
        case .ok: reserve = .held
        case .noSpace: reserve = .released
        case .failed(let why): reserve = .unavailable(why)
        }
        return transition(from: wasHeld, now: now)
    }

    /// A journal write ended. `noSpace`: it failed with ENOSPC or EDQUOT. Returns what to do:
    /// release the reserve and retry (then report the retry's outcome too), or nothing.
    public mutating func wrote(_ journal: String, ok: Bool, noSpace: Bool, detail: String? = nil, now: Double) -> (Action, Transition) {
        let wasHeld = holdsAlerts
        if ok {
            failing.remove(journal)
            return (.none, transition(from: wasHeld, now: now))
        }
        guard noSpace else { return (.none, .unchanged) }
        if let detail { lastProblem = detail }
        if reserve == .held {
            // Held from now on (what is being said is recorded in the room the reserve leaves).
            reserve = .released
            return (.releaseAndRetry, transition(from: wasHeld, now: now))
        }
        failing.insert(journal)
        return (.none, transition(from: wasHeld, now: now))
    }

    /// The free space measured (every `checkEvery` s while `needsCheck`): `.makeReserve` once
    /// there is room for the reserve and the margin.
    public func check(freeBytes: Int64) -> Action {
        guard reserve == .released, freeBytes >= reserveBytes + resumeMargin else { return .none }
        return .makeReserve
    }

    public enum Transition: Sendable, Equatable {
        case unchanged
        /// Alerts are held from now on.
        case holding
        /// Alerts may be said again; they were held this long.
        case resumed(heldFor: Double)
    }

    private mutating func transition(from wasHeld: Bool, now: Double) -> Transition {
        switch (wasHeld, holdsAlerts) {
        case (false, true):
            heldSince = now
            return .holding
        case (true, false):
            let t = now - (heldSince ?? now)
            heldSince = nil
            lastProblem = nil
            return .resumed(heldFor: t)
        default: return .unchanged
        }
    }

    /// The log line's message and hint when the alerts begin to be held.
    /// `atStart`: there was no room for the reserve when crier started (nothing was released).
    public static func holdingMessage(dir: String, freeBytes: Int64, reserveBytes: Int64, resumeMargin: Int64, atStart: Bool = false) -> (message: String, hint: String) {
        let what = atStart ? "no room for the \(mib(reserveBytes)) MiB reserve at start"
            : "the \(mib(reserveBytes)) MiB reserve was released to record what was being said"
        return ("the data partition is \(atStart ? "nearly " : "")full (\(mib(freeBytes)) MiB free in \(dir)): \(what); "
            + "new alerts wait unsaid until \(mib(reserveBytes + resumeMargin)) MiB are free (orders are kept: the server or broker still has them, none is said twice)",
         "free space on the data partition (\(dir)): remove what filled it; alerts resume by themselves within seconds, no restart needed")
    }

    static func mib(_ b: Int64) -> String {
        let tenths = (max(0, b) * 10 + (1 << 19)) >> 20
        return "\(tenths / 10).\(tenths % 10)"
    }
}
