/// What `crier status` and the watchdog see of a component.
public enum ComponentState: String, Sendable, Equatable {
    /// Not started yet.
    case pending
    /// Running and reporting progress in time.
    case running
    /// Running but silent past its stall deadline; the supervisor is about to restart it.
    case stalled
    /// Failed; waiting for its backoff, or for a stalled run to give up.
    case restarting
    /// Asked to stop; finishing its work.
    case stopping
    case stopped
    /// Failed too often: the supervisor gave up and the process is exiting.
    case failed
}

public struct ComponentStatus: Sendable, Equatable {
    public var name: String
    public var state: ComponentState
    /// Restarts since the process started.
    public var restarts: Int
    /// The last failure, e.g. `stalled (no progress for 2.0s)` or `error: device vanished`.
    public var lastFailure: String?
    /// Seconds since the last heartbeat of the current run, when one is running.
    public var sinceProgress: Double?
    /// The component's own note (`progress.setDetail`).
    public var detail: String?

    public init(name: String, state: ComponentState, restarts: Int = 0, lastFailure: String? = nil,
                sinceProgress: Double? = nil, detail: String? = nil) {
        self.name = name
        self.state = state
        self.restarts = restarts
        self.lastFailure = lastFailure
        self.sinceProgress = sinceProgress
        self.detail = detail
    }
}

/// Whether the watchdog may be petted: every component running and on time.
public struct SupervisorHealth: Sendable, Equatable {
    /// Components that are not running or are past their stall deadline, in start order.
    public var down: [String]
    public var healthy: Bool { down.isEmpty }
    public init(down: [String]) { self.down = down }
}

/// Why a run counted as failed.
public enum FailureReason: Sendable, Equatable, CustomStringConvertible {
    /// `run` threw; the error's description.
    case error(String)
    /// `run` returned without being asked to stop.
    case returned
    /// No heartbeat for this many seconds (at least the stall deadline).
    case stalled(silentFor: Double)

    public var description: String {
        switch self {
        case .error(let e): "error: \(e)"
        case .returned: "returned unexpectedly"
        case .stalled(let s): "stalled (no progress for \(formatSeconds(s)))"
        }
    }

    var tag: String {
        switch self {
        case .error: "error"
        case .returned: "returned"
        case .stalled: "stalled"
        }
    }
}

/// Every transition the supervisor makes, in order. The runtime may watch them (to update the
/// systemd STATUS line); tests assert on them.
public enum SupervisorEvent: Sendable, Equatable {
    /// Run number `run` (1 = first start) of the component began.
    case started(String, run: Int)
    case failed(String, reason: FailureReason, decision: RestartDecision)
    /// A stalled run did not return within the grace period; it is left behind.
    case abandoned(String, run: Int)
    case stopping(String)
    case stopped(String, timedOut: Bool)
    /// `run()` is about to return (or throw, when `fatal`).
    case finished(fatal: Bool)
}

/// Errors from building or running a supervisor, worded for the log.
public enum SupervisorError: Error, Sendable, Equatable, CustomStringConvertible {
    case duplicateName(String)
    case unknownDependency(component: String, dependency: String)
    case dependencyCycle([String])
    case alreadyRunning
    /// More than `restarts` restarts within `window` seconds: the process should exit
    /// non-zero so that systemd restarts it whole.
    case restartIntensityExceeded(component: String, restarts: Int, window: Double, lastFailure: String)

    public var description: String {
        switch self {
        case .duplicateName(let n): "two components are named \"\(n)\""
        case .unknownDependency(let c, let d): "component \"\(c)\" depends on \"\(d)\", which is not supervised"
        case .dependencyCycle(let names): "dependency cycle among: \(names.joined(separator: ", "))"
        case .alreadyRunning: "this supervisor has already been run"
        case .restartIntensityExceeded(let c, let r, let w, let f):
            "component \(c) failed again after \(r) restarts within \(formatSeconds(w)) (last: \(f)); giving up"
        }
    }
}

/// `3.1s`: seconds with one decimal, without Foundation.
func formatSeconds(_ s: Double) -> String {
    guard s.isFinite else { return "\(s)s" }
    let tenths = Int((s * 10).rounded())
    let sign = tenths < 0 ? "-" : ""
    let a = abs(tenths)
    return "\(sign)\(a / 10).\(a % 10)s"
}
