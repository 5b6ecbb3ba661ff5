/// How the speaker loop waits: for a poke (an order, a button, a clip that ended) or a
/// deadline (a ttl, a repeat, the link-down prompt), whichever comes first. Pure: the owner runs
/// the timers and the continuation; this decides when a wait ends, so the rules are tested
/// with a simulated clock (OrdersSpeakerWakeTests).
///
/// Why it exists (issue 13, item 1): the loop used to start a timer task per wait and cancel it
/// when a poke came first; a cancelled `Task.sleep` returns at once, and that timer's poke then
/// ended the *next* wait, whose cancelled timer ended the one after: the loop never slept, ~1.5
/// cores and tens of MB/s of timer tasks while idle. The rules that make that impossible:
/// - a timer ends only the wait it was armed for (its `generation`); a stale or cancelled
///   timer is ignored;
/// - pokes do not pile up: any number of them before a wait end that one wait;
/// - a wait with a deadline lasts at least `minSleep`, even if the deadline has passed (a rule
///   that keeps naming a past deadline without having anything to say costs ≤ 1/minSleep turns
///   per second, not a spin);
/// - an unchanged deadline keeps its timer (no new task per loop turn).
public struct SpeakerWake: Sendable, Equatable {
    /// The shortest wait that has a deadline.
    public static let minSleep = 0.05

    /// A timer the owner must run: at `deadline`, call `timerFired(generation:)`.
    public struct Timer: Sendable, Equatable {
        public var deadline: Double
        public var generation: UInt64
    }

    public enum Plan: Sendable, Equatable {
        /// A poke came since the last wait: do not wait, look again.
        case proceed
        /// Wait. The owner cancels the timer it runs when `cancelTimer`, then starts `start` if set.
        case wait(cancelTimer: Bool, start: Timer?)
    }

    /// A poke nobody has consumed yet.
    public private(set) var pending = false
    /// The owner is suspended in a wait.
    public private(set) var waiting = false
    /// The timer that may end the current wait.
    public private(set) var armed: Timer?
    private var generation: UInt64 = 0

    public init() {}

    /// Something happened. Returns true when the owner must resume its waiter now.
    public mutating func poke() -> Bool {
        if waiting {
            waiting = false
            return true
        }
        pending = true
        return false
    }

    /// The loop has nothing to do before `deadline` (nil: nothing to wait for but a poke).
    public mutating func beginWait(until deadline: Double?, now: Double) -> Plan {
        if pending {
            pending = false
            return .proceed
        }
        waiting = true
        guard let deadline else {
            let had = armed != nil
            armed = nil
            return .wait(cancelTimer: had, start: nil)
        }
        let d = deadline > now ? deadline : now + Self.minSleep
        // The same deadline as the timer already running (the common case: the link-down
        // prompt or a repeat, looked at again after every event), or a past one while a short
        // timer still runs: keep it, no new task per loop turn.
        if let a = armed, a.deadline == d || (deadline <= now && a.deadline > now && a.deadline <= d) {
            return .wait(cancelTimer: false, start: nil)
        }
        let had = armed != nil
        generation &+= 1
        armed = Timer(deadline: d, generation: generation)
        return .wait(cancelTimer: had, start: armed)
    }

    /// A timer ran out (or was cancelled and returned early: the owner calls this either way).
    /// Returns true when the owner must resume its waiter now.
    public mutating func timerFired(generation g: UInt64) -> Bool {
        guard let a = armed, a.generation == g else { return false }
        armed = nil
        return poke()
    }
}
