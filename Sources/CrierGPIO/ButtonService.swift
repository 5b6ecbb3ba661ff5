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
    public struct Hooks: Sendable {
        /// How many alerts the alert queue can replay right now.
        public var historyCount: @Sendable () async -> Int
        /// Performs one effect; called in order, never with `.persist`. Return promptly (queue
        /// the speech, do not wait for it to finish): button handling waits for this.
        public var perform: @Sendable (ControlEffect) async -> Void

        public init(historyCount: @escaping @Sendable () async -> Int, perform: @escaping @Sendable (ControlEffect) async -> Void) {
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
    var controls: Controls?
    var timer: Task<Void, Never>?
    var sink: AsyncStream<Event>.Continuation?

    public init(config: ButtonsConfig, log: Logger, hooks: Hooks, wall: @escaping @Sendable () -> WallTime,
                makeInput: ButtonReader.InputFactory? = nil, clock: @escaping @Sendable () -> Double = Monotonic.now) {
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
        let restored = StateFile(path: config.statePath).load(log: log)
        var c = Controls(config: config, restored: restored, now: clock(), wall: wall())
        let first = c.start()
        controls = c
        log.info("controls: ready", ["volume": "\(c.volume)/\(config.volumeSteps)", "muted": c.muted, "gain": c.gain])
        await apply(first)

        let (events, sink) = AsyncStream<Event>.makeStream()
        self.sink = sink
        let reader = ButtonReader(config: config, log: log, makeInput: makeInput, clock: clock) { sink.yield(.gesture($0)) }
        reader.start()
        schedule(sink)
        for await e in events {
            guard var c = controls else { break }
            let out: [ControlEffect]
            switch e {
            case .gesture(let g):
                let needsHistory = g.action == .replay
                let count = needsHistory ? await hooks.historyCount() : 0
                c = controls!  // may have changed while awaiting
                out = c.handle(g, now: clock(), wall: wall(), historyCount: count)
                if !out.isEmpty { log.info("button \(g.action.rawValue): \(g.kind)", ["effects": Self.describe(out)]) }
            case .tick:
                out = c.tick(now: clock(), wall: wall())
                if out.contains(.say(.muteEnded)) {
                    log.notice("mute ended after mute.max_minutes", ["minutes": ConfigValue.fmt(config.muteMaxMinutes)])
                }
            }
            controls = c
            schedule(sink)
            await apply(out)
        }
        timer?.cancel()
        sink.finish()
        reader.stop()
        persister.flush()
    }

    /// A press from elsewhere (the local page), handled exactly like the button's own press.
    public func press(_ action: ButtonAction) {
        sink?.yield(.gesture(Gesture(action, .press, at: clock())))
    }

    func apply(_ effects: [ControlEffect]) async {
        for e in effects {
            if case .persist(let s) = e { persister.save(s) } else { await hooks.perform(e) }
        }
    }

    /// One timer task for Controls' next deadline (mute's end).
    func schedule(_ sink: AsyncStream<Event>.Continuation) {
        timer?.cancel()
        timer = nil
        guard let d = controls?.nextDeadline else { return }
        let wait = max(0, d - clock())
        timer = Task {
            try? await Task.sleep(for: .milliseconds(Int64((wait * 1000).rounded(.up))))
            if !Task.isCancelled { sink.yield(.tick) }
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
