import Synchronization

/// A long-running part of the daemon (audio engine, speech, order link, buttons, status
/// prompts), in the swift-service-lifecycle shape: one `run` that lasts as long as the part
/// works. The supervisor starts it, watches it and restarts it.
///
/// Contract:
/// - `run` returns only when asked to stop (task cancelled or `requestStop` called). Throwing
///   or returning at any other time is a failure and leads to a restart.
/// - While it works, it calls `progress.heartbeat()` at least once per `stallDeadline` (the
///   audio thread each period, the link each heartbeat, the button thread each wait). Silence
///   for longer is a stall: the supervisor calls `requestStop(.stalled)`, cancels the task,
///   waits up to `stallGrace` for `run` to return, then abandons it and starts a new `run`
///   with a new handle regardless. Heartbeats through an abandoned handle are ignored.
/// - Waiting for missing hardware is not a failure: retry inside `run` and keep heartbeating
///   (`progress.setDetail("no sound card; retrying")`), so the box comes up and says so.
/// - State that must survive a restart (the alert queue, volume) lives outside the component.
public protocol SupervisedComponent: Sendable {
    /// Short lower-case name used in logs and status: `audio`, `speech`, `link`, `buttons`.
    var name: String { get }
    /// Components that must start before this one and stop after it.
    var dependencies: [String] { get }
    /// Longest silence between heartbeats before the component counts as stalled, in
    /// seconds; nil: never considered stalled.
    var stallDeadline: Double? { get }
    /// How long a graceful stop may take (the audio engine finishes the alert it is
    /// speaking), in seconds; after that the supervisor abandons it and moves on.
    var stopTimeout: Double { get }
    /// Overrides the supervisor's restart policy for this component.
    var restartPolicy: RestartPolicy? { get }

    /// The component's whole life. `progress` belongs to this run only.
    func run(progress: ProgressHandle) async throws

    /// The supervisor wants the current run to end: `.stalled` means give up now (make the
    /// blocked thread return: drop the PCM, close the fd, set the flag it checks), `.shutdown`
    /// means finish what is in hand within `stopTimeout`. Called from the supervisor, never on
    /// the component's own thread; must not block. The run's task is cancelled as well and
    /// `progress.stopRequested` says the same, so a thread can also poll for it.
    func requestStop(_ reason: StopReason)
}

extension SupervisedComponent {
    public var dependencies: [String] { [] }
    public var stallDeadline: Double? { nil }
    public var stopTimeout: Double { 2 }
    public var restartPolicy: RestartPolicy? { nil }
    public func requestStop(_ reason: StopReason) {}
}

/// Why the supervisor wants a run to end.
public enum StopReason: Int, Sendable, Equatable, CustomStringConvertible {
    /// No heartbeat within the stall deadline: abandon what is blocked, a new run follows.
    case stalled = 1
    /// The process is stopping: finish the current work (bounded by `stopTimeout`), clean up.
    case shutdown = 2

    public var description: String { self == .stalled ? "stalled" : "shutdown" }
}

/// A run's line to its supervisor. Cheap enough for the audio thread to call every period
/// (one clock read and one atomic store); safe from any thread.
public final class ProgressHandle: Sendable {
    public let component: String
    /// Which run of the component this handle belongs to: 1 for the first, then one more per restart.
    public let generation: Int
    private let clock: any SupervisionClock
    private let lastBits: Atomic<UInt64>
    private let stopBits = Atomic<Int>(0)
    private let detailBox = Mutex<String?>(nil)

    public init(component: String, generation: Int, clock: any SupervisionClock) {
        self.component = component
        self.generation = generation
        self.clock = clock
        lastBits = Atomic(clock.now().bitPattern)
    }

    /// "I am still working." Call at least once per stall deadline.
    public func heartbeat() {
        lastBits.store(clock.now().bitPattern, ordering: .relaxed)
    }

    /// When the last heartbeat (or the start of the run) happened, on the supervision clock.
    public var lastProgress: Double { Double(bitPattern: lastBits.load(ordering: .relaxed)) }

    /// Set once the supervisor wants this run to end; a blocking loop checks it each turn.
    public var stopRequested: StopReason? { StopReason(rawValue: stopBits.load(ordering: .acquiring)) }

    /// A short note for `crier status`, e.g. "no sound card; retrying every 5 s"; nil clears it.
    public func setDetail(_ detail: String?) { detailBox.withLock { $0 = detail } }
    public var detail: String? { detailBox.withLock { $0 } }

    /// For a component whose work already runs on its own thread and records its own progress
    /// time (`engine.lastProgress`): every `interval` seconds, heartbeats if `source()` changed
    /// since the last look. Returns when the task is cancelled or a stop is requested.
    ///
    ///     func run(progress: ProgressHandle) async throws {
    ///         engine.start()
    ///         defer { engine.stop() }
    ///         await progress.follow(every: 0.25) { engine.lastProgress }
    ///     }
    public func follow(every interval: Double, _ source: @escaping @Sendable () -> Double) async {
        var last = source()
        var next = clock.now()
        while !Task.isCancelled, stopRequested == nil {
            next = max(next + interval, clock.now())
            do { try await clock.sleep(until: next) } catch { return }
            let v = source()
            if v != last {
                last = v
                heartbeat()
            }
        }
    }

    func markStop(_ reason: StopReason) {
        _ = stopBits.compareExchange(expected: 0, desired: reason.rawValue, ordering: .releasing)
    }
}
