import Synchronization

/// Monotonic time for supervision, watchdog and rate limits, in seconds from an arbitrary
/// origin. Injected so every rule here is tested without sleeping.
public protocol SupervisionClock: Sendable {
    /// Seconds on a monotonic timeline; never goes backwards.
    func now() -> Double
    /// Returns once `now() >= deadline`; throws `CancellationError` if the task is cancelled.
    func sleep(until deadline: Double) async throws
}

/// The real clock: Swift's `ContinuousClock` (CLOCK_BOOTTIME on Linux), seconds since this
/// value was made.
public struct SystemClock: SupervisionClock {
    private let origin: ContinuousClock.Instant

    public init() { origin = ContinuousClock.now }

    public func now() -> Double { (ContinuousClock.now - origin).seconds }

    public func sleep(until deadline: Double) async throws {
        try await ContinuousClock().sleep(until: origin.advanced(by: .seconds(deadline)), tolerance: nil)
    }
}

extension Duration {
    /// The duration as (possibly fractional) seconds.
    public var seconds: Double {
        let (s, atto) = components
        return Double(s) + Double(atto) * 1e-18
    }
}

/// A clock that only moves when told to. Sleepers wake, in deadline order, when `advance`
/// passes their deadline. For tests (this target's and the runtime's).
public final class ManualClock: SupervisionClock {
    private struct Sleeper {
        var id: UInt64
        var deadline: Double
        var continuation: CheckedContinuation<Void, any Error>
    }
    private struct State {
        var now: Double
        var nextID: UInt64 = 0
        var sleepers: [Sleeper] = []
        var cancelledEarly: Set<UInt64> = []
    }
    private let state: Mutex<State>

    public init(now: Double = 0) { state = Mutex(State(now: now)) }

    public func now() -> Double { state.withLock { $0.now } }

    /// How many tasks are sleeping on this clock now.
    public var sleeperCount: Int { state.withLock { $0.sleepers.count } }

    /// Every deadline someone sleeps until now: a test steps the clock only once the task it
    /// drives is asleep again (its iteration finished), not while it still reads the clock.
    public var deadlines: [Double] { state.withLock { $0.sleepers.map(\.deadline) } }

    /// The earliest deadline anyone sleeps until, if anyone sleeps.
    public var nextDeadline: Double? { state.withLock { $0.sleepers.map(\.deadline).min() } }

    public func sleep(until deadline: Double) async throws {
        let id = state.withLock { s in
            s.nextID += 1
            return s.nextID
        }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (c: CheckedContinuation<Void, any Error>) in
                let action: Result<Void, any Error>? = state.withLock { s in
                    if s.cancelledEarly.remove(id) != nil { return .failure(CancellationError()) }
                    if s.now >= deadline { return .success(()) }
                    s.sleepers.append(Sleeper(id: id, deadline: deadline, continuation: c))
                    return nil
                }
                if let action { c.resume(with: action) }
            }
        } onCancel: {
            let c: CheckedContinuation<Void, any Error>? = state.withLock { s in
                if let i = s.sleepers.firstIndex(where: { $0.id == id }) {
                    return s.sleepers.remove(at: i).continuation
                }
                s.cancelledEarly.insert(id)
                return nil
            }
            c?.resume(throwing: CancellationError())
        }
    }

    /// Moves time forward and wakes every sleeper whose deadline has come.
    public func advance(by seconds: Double) {
        precondition(seconds >= 0, "a monotonic clock does not go back")
        set { $0 + seconds }
    }

    /// Moves time forward to exactly `time` (no rounding from adding a difference).
    public func advance(to time: Double) {
        set { max($0, time) }
    }

    private func set(_ next: (Double) -> Double) {
        let due: [Sleeper] = state.withLock { s in
            s.now = next(s.now)
            let now = s.now
            let due = s.sleepers.filter { $0.deadline <= now }.sorted { $0.deadline < $1.deadline }
            s.sleepers.removeAll { $0.deadline <= now }
            return due
        }
        for sl in due { sl.continuation.resume() }
    }
}
