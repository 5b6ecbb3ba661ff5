/// What the audio thread did before an underrun, so the warning that reports one says why
/// (docs/audio.md, "Underruns"). Three causes need different fixes and look alike in a bare
/// "underrun": the thread woke after what it had queued had played (a CPU taken by something at
/// or above its priority, a machine or VM that stalled, a stopped process), it woke in time but
/// its own work took longer than what was left, or less was queued than it had counted on.
/// Fed by the audio loop with two clock readings per wakeup; no system call of its own.
public struct UnderrunTrace: Sendable, Equatable {
    public let rate: Int
    /// When the thread last went to sleep, with the frames then queued (nil: not known, a
    /// self-paced device) and how long it meant to sleep (a timed sleep's timeout, or the poll's
    /// backstop; nil: not known).
    private var sleptAt: Double?
    private var queued: Int?
    private var asked: Double?
    private var wokeAt: Double?

    public init(rate: Int) {
        self.rate = max(1, rate)
    }

    /// The thread goes to sleep at `now` with `queued` frames in the device, for `asked` seconds.
    public mutating func sleeping(at now: Double, queued: Int?, asked: Double?) {
        sleptAt = now
        self.queued = queued.map { max(0, $0) }
        self.asked = asked
        wokeAt = nil
    }

    public mutating func woke(at now: Double) {
        wokeAt = now
    }

    public enum Cause: String, Sendable, Equatable {
        /// Asleep past the end of what was queued.
        case wokeLate = "woke late"
        /// Awake in time; its work outlasted what was left.
        case busy
        /// Neither: less was queued than counted (or the device consumed it faster).
        case shortQueue = "short queue"
        /// Before the first sleep (the device's first fill), or nothing known.
        case unknown
    }

    public struct Explanation: Sendable, Equatable {
        public var cause: Cause
        /// Milliseconds: asleep, queued when it went to sleep, awake until the underrun showed.
        public var sleptMs: Double?
        public var queuedMs: Double?
        public var askedMs: Double?
        public var busyMs: Double?

        /// Log fields, in a fixed order; absent figures are left out.
        public var fields: [(String, String)] {
            var f: [(String, String)] = []
            func add(_ k: String, _ v: Double?) { if let v { f.append((k, Format.fixed(v, 1))) } }
            add("slept_ms", sleptMs)
            add("asked_ms", askedMs)
            add("queued_ms", queuedMs)
            add("busy_ms", busyMs)
            f.append(("why", cause.rawValue))
            return f
        }
    }

    /// Why an underrun found at `now` happened, from the last sleep and wake-up.
    public func explain(now: Double) -> Explanation {
        guard let sleptAt, let wokeAt, wokeAt >= sleptAt else {
            return Explanation(cause: .unknown, busyMs: wokeAt.map { max(0, now - $0) * 1000 })
        }
        let slept = wokeAt - sleptAt
        let busy = max(0, now - wokeAt)
        var e = Explanation(cause: .unknown, sleptMs: slept * 1000, queuedMs: queued.map { Double($0) * 1000 / Double(rate) },
                            askedMs: asked.map { $0 * 1000 }, busyMs: busy * 1000)
        guard let queued else { return e }
        let covered = Double(queued) / Double(rate)
        if slept >= covered {
            e.cause = .wokeLate
        } else if slept + busy >= covered {
            e.cause = .busy
        } else {
            e.cause = .shortQueue
        }
        return e
    }
}
