import CrierCore
import CrierPosix
import Dispatch
import Synchronization

/// Writes the state file off the caller's thread (fsync on an SD card can take tens of ms),
/// keeping only the newest state when saves pile up.
public final class StatePersister: Sendable {
    let file: StateFile
    let log: Logger
    let queue = DispatchQueue(label: "crier-state")
    let pending = Mutex<(state: ControlState?, lastError: String?)>((nil, nil))

    public init(file: StateFile, log: Logger) {
        self.file = file
        self.log = log
    }

    public func save(_ s: ControlState) {
        let schedule = pending.withLock { p -> Bool in
            defer { p.state = s }
            return p.state == nil
        }
        guard schedule else { return }  // a write is queued: it will take the newest state
        queue.async { [self] in
            guard let s = pending.withLock({ p -> ControlState? in defer { p.state = nil }; return p.state }) else { return }
            do throws(StateFileError) {
                try file.save(s)
                let recovered = pending.withLock { p -> Bool in defer { p.lastError = nil }; return p.lastError != nil }
                if recovered { log.notice("state: saving works again", ["path": file.path]) }
            } catch {
                let first = pending.withLock { p -> Bool in
                    defer { p.lastError = error.description }
                    return p.lastError != error.description
                }
                if first { log.error("state: cannot save volume and mute: \(error); they will not survive a restart") }
            }
        }
    }

    /// Waits until queued writes are done (for shutdown and tests).
    public func flush() { queue.sync {} }
}

/// Everything behind the buttons, ready to wire: the reader thread, gestures into `Controls`,
/// the mute timer, and the state file. The runtime supplies what only it can do: how many
/// alerts can be replayed, and performing the effects (click, say, setGain, replay,
/// acknowledge); `.persist` is handled here.
public actor ButtonService {
    /// Called on the service's executor, synchronously: plain calls, not async closures, because
    /// a nonisolated async closure runs on Swift's shared pool before it reaches its actor (a
    /// pool thread waits a scheduler slice on a busy box). The daemon's hooks enter the daemon
    /// with `assumeIsolated`, which holds because the two share the event thread.
    public struct Hooks: Sendable {
        /// How many alerts the alert queue can replay right now.
        public var historyCount: @Sendable () -> Int
        /// Performs one effect; called in order, never with `.persist`. Return promptly (queue
        /// the speech, do not wait for it to finish): button handling waits for this.
        public var perform: @Sendable (ControlEffect) -> Void

        public init(historyCount: @escaping @Sendable () -> Int, perform: @escaping @Sendable (ControlEffect) -> Void) {
            self.historyCount = historyCount
            self.perform = perform
        }
    }

    enum Event: Sendable {
        case gesture(Gesture)
        case tick
    }

    let config: ButtonsConfig
    let log: Logger
    let hooks: Hooks
    let makeInput: ButtonReader.InputFactory?
    let clock: @Sendable () -> Double
    let wall: @Sendable () -> WallTime
    let persister: StatePersister
    /// Where the service's jobs run: the daemon's event thread, so a press reaches the speaker
    /// policy without waiting for a thread of Swift's shared pool (under load, a scheduler
    /// slice: docs/buttons.md, "Press to click"); a serial queue of its own when none is given.
    let executor: ThreadExecutor
    public nonisolated var unownedExecutor: UnownedSerialExecutor { executor.asUnownedSerialExecutor() }
    var controls: Controls?
    var timer: Task<Void, Never>?
    /// Set while `run` handles events (between loading the state and stopping).
    var running = false

    public init(config: ButtonsConfig, log: Logger, hooks: Hooks, wall: @escaping @Sendable () -> WallTime,
                makeInput: ButtonReader.InputFactory? = nil, clock: @escaping @Sendable () -> Double = Monotonic.now,
                executor: ThreadExecutor? = nil) {
        self.executor = executor ?? ThreadExecutor(name: "crier-buttons", thread: false)
        self.config = config
        self.log = log
        self.hooks = hooks
        self.makeInput = makeInput
        self.clock = clock
        self.wall = wall
        persister = StatePersister(file: StateFile(path: config.statePath), log: log)
    }

    /// Volume and mute now (nil before `run` has loaded them).
    public var state: ControlState? { controls?.state }
    /// The gains in force now, for a component that starts after the buttons.
    public var gain: OutputGain? { controls?.gain }

    /// Loads the saved state, applies it, then handles buttons and the mute timer until the
    /// calling task is cancelled; the reader thread is stopped and the last state written
    /// before it returns.
    public func run() async {
        // File reads, waiting for the reader thread and for an fsync are blocking calls: never
        // on the executor, which is the daemon's event thread.
        let (path, log) = (config.statePath, log)
        let restored = await Task.detached { StateFile(path: path).load(log: log) }.value
        var c = Controls(config: config, restored: restored, now: clock(), wall: wall())
        let first = c.start()
        controls = c
        log.info("controls: ready", ["volume": "\(c.volume)/\(config.volumeSteps)", "muted": c.muted, "gain": c.gain])
        apply(first)
        running = true
        // The reader's thread hands each gesture to this executor as a plain call: no task, no
        // AsyncStream (whose waiting task was resumed on Swift's shared pool first).
        let executor = self.executor
        let reader = ButtonReader(config: config, log: log, makeInput: makeInput, clock: clock) { g in
            executor.submit { self.assumeIsolated { $0.take(.gesture(g)) } }
        }
        reader.start()
        schedule()
        let (stopped, stop) = AsyncStream<Never>.makeStream()
        await withTaskCancellationHandler {
            for await _ in stopped {}
        } onCancel: {
            stop.finish()
        }
        running = false
        timer?.cancel()
        let persister = self.persister
        await Task.detached {
            reader.stop()
            persister.flush()
        }.value
    }

    /// One gesture or timer tick, handled to its effects in one go (in order: nothing here waits).
    func take(_ e: Event) {
        guard running, var c = controls else { return }
        let out: [ControlEffect]
        switch e {
        case .gesture(let g):
            out = c.handle(g, now: clock(), wall: wall(), historyCount: g.action == .replay ? hooks.historyCount() : 0)
            if !out.isEmpty { log.info("button \(g.action.rawValue): \(g.kind)", ["effects": Self.describe(out)]) }
        case .tick:
            out = c.tick(now: clock(), wall: wall())
            if out.contains(.say(.muteEnded)) {
                log.notice("mute ended after mute.max_minutes", ["minutes": ConfigValue.fmt(config.muteMaxMinutes)])
            }
        }
        controls = c
        schedule()
        apply(out)
    }

    /// A press from elsewhere (the local page), handled exactly like the button's own press.
    public func press(_ action: ButtonAction) {
        take(.gesture(Gesture(action, .press, at: clock())))
    }

    func apply(_ effects: [ControlEffect]) {
        for e in effects {
            if case .persist(let s) = e { persister.save(s) } else { hooks.perform(e) }
        }
    }

    /// One timer task for Controls' next deadline (mute's end).
    func schedule() {
        timer?.cancel()
        timer = nil
        guard let d = controls?.nextDeadline else { return }
        let wait = max(0, d - clock())
        timer = Task {
            try? await Task.sleep(for: .milliseconds(Int64((wait * 1000).rounded(.up))))
            if !Task.isCancelled { self.take(.tick) }
        }
    }

    static func describe(_ effects: [ControlEffect]) -> String {
        effects.map { e in
            switch e {
            case .click: "click"
            case .say(let n): "say:\(n.rawValue)"
            case .setGain(let g): "gain(\(g))"
            case .replay(let i): "replay:\(i)"
            case .acknowledge: "acknowledge"
            case .persist: "persist"
            case .setMusic(let on): on ? "music:on" : "music:off"
            case .openSetup: "setup"
            }
        }.joined(separator: ",")
    }
}
