import Synchronization
@testable import CrierCore

struct FakeError: Error, CustomStringConvertible {
    var description: String
}

/// A scripted component: each run follows `script[run - 1]` (the last entry repeats).
final class FakeComponent: SupervisedComponent {
    enum Behaviour: Sendable {
        /// Runs until cancelled, then returns.
        case healthy
        /// Throws at once.
        case throwing
        /// Returns at once, unasked.
        case returning
        /// Ignores cancellation and stop requests until `release()`.
        case hang
    }

    struct State {
        var runs = 0
        var handles: [ProgressHandle] = []
        var stopRequests: [StopReason] = []
        var hung: [CheckedContinuation<Void, Never>] = []
        var released = false
    }

    let name: String
    let dependencies: [String]
    let stallDeadline: Double?
    let stopTimeout: Double
    let restartPolicy: RestartPolicy?
    let script: [Behaviour]
    let state = Mutex(State())

    init(_ name: String, dependencies: [String] = [], stallDeadline: Double? = nil, stopTimeout: Double = 2,
         policy: RestartPolicy? = nil, _ script: [Behaviour] = [.healthy]) {
        self.name = name
        self.dependencies = dependencies
        self.stallDeadline = stallDeadline
        self.stopTimeout = stopTimeout
        self.restartPolicy = policy
        self.script = script
    }

    var runs: Int { state.withLock { $0.runs } }
    var stopRequests: [StopReason] { state.withLock { $0.stopRequests } }
    var handles: [ProgressHandle] { state.withLock { $0.handles } }
    /// Heartbeat through the current run's handle.
    func beat() { state.withLock { $0.handles.last }?.heartbeat() }
    /// Lets every hung run return.
    func release() {
        let hung = state.withLock { s in
            s.released = true
            defer { s.hung = [] }
            return s.hung
        }
        for c in hung { c.resume() }
    }

    /// Waits (yielding, not sleeping) until run number `n` has begun, so its handle exists.
    func waitForRun(_ n: Int = 1) async {
        while runs < n { await Task.yield() }
    }

    func run(progress: ProgressHandle) async throws {
        let n = state.withLock { s in
            s.runs += 1
            s.handles.append(progress)
            return s.runs
        }
        switch script[min(n, script.count) - 1] {
        case .healthy:
            let (s, c) = AsyncStream.makeStream(of: Void.self)
            await withTaskCancellationHandler {
                for await _ in s {}
            } onCancel: {
                c.finish()
            }
        case .throwing:
            throw FakeError(description: "boom \(n)")
        case .returning:
            return
        case .hang:
            // Deaf to cancellation, like a thread stuck in a driver.
            await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
                let resumeNow = state.withLock { s in
                    if !s.released { s.hung.append(c) }
                    return s.released
                }
                if resumeNow { c.resume() }
            }
        }
    }

    func requestStop(_ reason: StopReason) {
        state.withLock { $0.stopRequests.append(reason) }
    }
}

/// A supervisor on a manual clock with its log captured.
struct SupervisorRig {
    let clock = ManualClock(now: 100)
    let sink = MemoryLogSink()
    let supervisor: Supervisor

    init(_ components: [FakeComponent], options: Supervisor.Options = .init()) throws {
        let hub = LogHub(clock: { WallTime(unixMillis: 0) })
        hub.setMinimum(.debug)
        hub.add(sink)
        supervisor = try Supervisor(components: components, options: options, clock: clock, log: hub.logger("supervisor"))
    }

    func start() -> Task<Void, any Error> {
        let s = supervisor
        return Task { try await s.run() }
    }

    /// Log lines without the timestamp, e.g. `WARN supervisor: restarting component=link ...`.
    var lines: [String] { sink.lines.map { String($0.drop(while: { $0 != " " }).dropFirst()) } }
}

extension AsyncStream<SupervisorEvent>.Iterator {
    /// The next `n` events.
    mutating func take(_ n: Int) async -> [SupervisorEvent] {
        var out: [SupervisorEvent] = []
        while out.count < n, let e = await next() { out.append(e) }
        return out
    }
}
