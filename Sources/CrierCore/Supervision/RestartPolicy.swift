/// How a supervisor answers a component's failure (Erlang/OTP `one_for_one`): restart only that
/// component, after an exponential backoff, unless it has already been restarted
/// `maxRestarts` times within `window` seconds; then give up, which ends the process so that
/// systemd restarts it whole.
public struct RestartPolicy: Sendable, Equatable {
    /// Wait before the first restart, in seconds.
    public var initialBackoff: Double
    /// Longest wait between restarts, in seconds.
    public var maxBackoff: Double
    /// Each restart within the window waits this many times longer than the one before.
    public var multiplier: Double
    /// Restart intensity: more failures than this within `window` → give up.
    public var maxRestarts: Int
    /// The intensity window, in seconds.
    public var window: Double

    public init(initialBackoff: Double = 0.1, maxBackoff: Double = 5, multiplier: Double = 2,
                maxRestarts: Int = 5, window: Double = 60) {
        self.initialBackoff = initialBackoff
        self.maxBackoff = maxBackoff
        self.multiplier = multiplier
        self.maxRestarts = maxRestarts
        self.window = window
    }

    public static let standard = RestartPolicy()

    /// Wait before restart number `attempt` (1 = the first restart within the window).
    public func backoff(attempt: Int) -> Double {
        var b = initialBackoff
        var n = 1
        while n < attempt && b < maxBackoff {
            b *= multiplier
            n += 1
        }
        return min(b, maxBackoff)
    }
}

/// What to do about one failure.
public enum RestartDecision: Sendable, Equatable {
    /// Restart after `backoff` seconds; `attempt` counts restarts within the window, this one included.
    case restart(attempt: Int, backoff: Double)
    /// `restarts` restarts already happened within `window` seconds: stop trying.
    case giveUp(restarts: Int, window: Double)
}

/// One component's restart history, pure: feed it failure times, it answers with decisions.
public struct RestartTracker: Sendable, Equatable {
    public let policy: RestartPolicy
    /// Times of the restarts still inside the window, oldest first.
    public private(set) var recent: [Double] = []
    /// Every restart since the supervisor started, for status.
    public private(set) var total = 0

    public init(policy: RestartPolicy) { self.policy = policy }

    public mutating func recordFailure(at now: Double) -> RestartDecision {
        recent.removeAll { now - $0 >= policy.window }
        if recent.count >= policy.maxRestarts {
            return .giveUp(restarts: recent.count, window: policy.window)
        }
        recent.append(now)
        total += 1
        return .restart(attempt: recent.count, backoff: policy.backoff(attempt: recent.count))
    }
}
