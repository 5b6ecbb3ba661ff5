import Synchronization

/// Starts every component in dependency order, restarts one that throws, returns or stalls
/// (one-for-one, exponential backoff, restart intensity), stops them in reverse order, logs
/// every transition and answers "is everything healthy?" for the watchdog.
///
/// `run()` returns after `stop()` (or cancellation of its task) once every component stopped;
/// it throws `SupervisorError.restartIntensityExceeded` after giving up on a component (the
/// others are stopped first): the process should then exit non-zero.
public actor Supervisor {
    public struct Options: Sendable {
        /// Policy for components that don't bring their own.
        public var policy: RestartPolicy
        /// How long a stalled run gets to return after `requestStop(.stalled)` before it is
        /// abandoned and a new run starts anyway, in seconds.
        public var stallGrace: Double

        public init(policy: RestartPolicy = .standard, stallGrace: Double = 1) {
            self.policy = policy
            self.stallGrace = stallGrace
        }
    }

    private enum Outcome: Sendable {
        case returned
        case threw(String)
    }

    private enum Inbox: Sendable {
        case exited(index: Int, generation: Int, outcome: Outcome)
        case tick(Int)
        case stop
    }

    private enum Phase {
        case pending
        case running
        /// Stalled: asked to stop, waiting until `until` for the run to return.
        case interrupting(until: Double, restartAt: Double)
        case waiting(restartAt: Double)
        case stopping(until: Double, since: Double)
        case stopped
    }

    private struct Slot {
        let component: any SupervisedComponent
        var tracker: RestartTracker
        var phase: Phase = .pending
        var generation = 0
        var handle: ProgressHandle?
        var task: Task<Void, Never>?
        /// The current generation's run has neither returned nor been abandoned.
        var live = false
        var gaveUp = false
        var lastFailure: String?
    }

    private let clock: any SupervisionClock
    private let log: Logger
    private let options: Options
    private let board: Board
    private var slots: [Slot]
    private let inbox: AsyncStream<Inbox>
    private let inboxIn: AsyncStream<Inbox>.Continuation
    private let eventsIn: AsyncStream<SupervisorEvent>.Continuation
    /// Every transition, in order (buffers the newest 256 when nobody reads). One reader.
    public nonisolated let events: AsyncStream<SupervisorEvent>

    private var timer: Task<Void, Never>?
    private var timerAt: Double?
    private var timerID = 0
    private var started = false
    private var stopQueue: [Int]?
    private var finished = false
    private var fatal: SupervisorError?

    /// `components` in any order; they are started so that dependencies come first (ties keep
    /// the given order).
    public init(components: [any SupervisedComponent], options: Options = Options(),
                clock: any SupervisionClock = SystemClock(), log: Logger) throws(SupervisorError) {
        let ordered = try Supervisor.startOrder(components)
        self.clock = clock
        self.log = log
        self.options = options
        slots = ordered.map { Slot(component: $0, tracker: RestartTracker(policy: $0.restartPolicy ?? options.policy)) }
        board = Board(clock: clock, entries: ordered.map {
            Board.Entry(name: $0.name, stallDeadline: $0.stallDeadline)
        })
        (inbox, inboxIn) = AsyncStream.makeStream(of: Inbox.self)
        (events, eventsIn) = AsyncStream.makeStream(of: SupervisorEvent.self, bufferingPolicy: .bufferingNewest(256))
    }

    /// Names in start order (dependencies first); stop order is the reverse.
    public nonisolated var startOrder: [String] { board.names }

    /// Every component running and on time? Safe from any thread; reads live heartbeats, so a
    /// stall shows here even before the supervisor has acted on it.
    public nonisolated func health() -> SupervisorHealth { board.health() }

    /// Each component's state for `crier status`, in start order.
    public nonisolated func statuses() -> [ComponentStatus] { board.statuses() }

    /// Asks for a graceful stop: components stop in reverse start order, then `run()` returns.
    public nonisolated func stop() { inboxIn.yield(.stop) }

    public func run() async throws(SupervisorError) {
        guard !started else { throw .alreadyRunning }
        started = true
        // The loop runs in its own task: a cancelled task's `for await` would end at once,
        // while cancelling `run()` must mean a graceful stop of every component.
        let loop = Task { await self.loop() }
        await withTaskCancellationHandler {
            await loop.value
        } onCancel: { [inboxIn] in
            inboxIn.yield(.stop)
        }
        if let fatal { throw fatal }
    }

    // MARK: - The loop

    private func loop() async {
        let now = clock.now()
        for i in slots.indices { launch(i, now: now) }
        publish()
        rearm()
        for await message in inbox {
            let now = clock.now()
            switch message {
            case .stop:
                beginStop(now: now)
            case .tick(let id):
                if id == timerID { timerAt = nil }
            case .exited(let i, let generation, let outcome):
                exited(i, generation: generation, outcome: outcome, now: now)
            }
            sweep(now: now)
            publish()
            if finished { break }
            rearm()
        }
        timer?.cancel()
        timer = nil
        log.info(fatal == nil ? "all components stopped" : "all components stopped after a fatal failure")
        emit(.finished(fatal: fatal != nil))
        eventsIn.finish()
    }

    /// Publishes the board first, so whoever sees an event also sees the state it led to.
    private func emit(_ event: SupervisorEvent) {
        publish()
        eventsIn.yield(event)
    }

    private func launch(_ i: Int, now: Double) {
        slots[i].generation += 1
        let generation = slots[i].generation
        let component = slots[i].component
        let handle = ProgressHandle(component: component.name, generation: generation, clock: clock)
        slots[i].handle = handle
        slots[i].live = true
        slots[i].phase = .running
        let inboxIn = self.inboxIn
        slots[i].task = Task.detached {
            let outcome: Outcome
            do {
                try await component.run(progress: handle)
                outcome = .returned
            } catch {
                outcome = .threw(Supervisor.describe(error))
            }
            inboxIn.yield(.exited(index: i, generation: generation, outcome: outcome))
        }
        if generation == 1 {
            log.info("started", ["component": component.name])
        } else {
            log.info("restarted", ["component": component.name, "run": generation])
        }
        emit(.started(component.name, run: generation))
    }

    private func exited(_ i: Int, generation: Int, outcome: Outcome, now: Double) {
        let name = slots[i].component.name
        guard generation == slots[i].generation, slots[i].live else {
            log.debug("abandoned run returned", ["component": name, "run": generation])
            return
        }
        slots[i].live = false
        slots[i].task = nil
        switch slots[i].phase {
        case .stopping(_, let since):
            slots[i].phase = .stopped
            var fields: [(String, String)] = [("component", name), ("after", formatSeconds(now - since))]
            if case .threw(let e) = outcome { fields.append(("error", e)) }
            log.hub.emit(.info, log.component, "stopped", fields)
            emit(.stopped(name, timedOut: false))
            advanceStop(now: now)
        case .interrupting(_, let restartAt):
            // The stalled run gave up as asked; its restart follows once the backoff is over.
            slots[i].phase = .waiting(restartAt: restartAt)
        case .running:
            if stopQueue != nil {
                slots[i].phase = .stopped
                log.info("exited during shutdown", ["component": name])
                emit(.stopped(name, timedOut: false))
                advanceStop(now: now)
            } else {
                switch outcome {
                case .returned: fail(i, .returned, now: now)
                case .threw(let e): fail(i, .error(e), now: now)
                }
            }
        case .pending, .waiting, .stopped:
            break
        }
    }

    private func fail(_ i: Int, _ reason: FailureReason, now: Double) {
        let name = slots[i].component.name
        let decision = slots[i].tracker.recordFailure(at: now)
        slots[i].lastFailure = reason.description
        var fields: [(String, String)] = [("component", name), ("reason", reason.tag)]
        switch reason {
        case .error(let e): fields.append(("error", e))
        case .stalled(let s): fields.append(("no_progress_for", formatSeconds(s)))
        case .returned: break
        }
        switch decision {
        case .restart(let attempt, let backoff):
            fields += [("attempt", String(attempt)), ("backoff", formatSeconds(backoff))]
            log.hub.emit(.warning, log.component, "restarting", fields)
            if slots[i].live {
                interrupt(i, .stalled)
                slots[i].phase = .interrupting(until: now + options.stallGrace, restartAt: now + backoff)
            } else {
                slots[i].phase = .waiting(restartAt: now + backoff)
            }
            emit(.failed(name, reason: reason, decision: decision))
        case .giveUp(let restarts, let window):
            fields += [("restarts", String(restarts)), ("window", formatSeconds(window))]
            log.hub.emit(.error, log.component, "giving up", fields)
            slots[i].gaveUp = true
            if slots[i].live { interrupt(i, .stalled) }
            fatal = .restartIntensityExceeded(component: name, restarts: restarts, window: window,
                                              lastFailure: reason.description)
            emit(.failed(name, reason: reason, decision: decision))
            log.error("restart intensity exceeded; stopping everything so crier exits and systemd restarts it",
                      ["component": name])
            beginStop(now: now)
        }
    }

    private func interrupt(_ i: Int, _ reason: StopReason) {
        slots[i].handle?.markStop(reason)
        slots[i].component.requestStop(reason)
        slots[i].task?.cancel()
    }

    /// Acts on every deadline that has come: stalls, abandoned runs, due restarts, stop timeouts.
    private func sweep(now: Double) {
        for i in slots.indices {
            let name = slots[i].component.name
            switch slots[i].phase {
            case .running:
                guard stopQueue == nil, slots[i].live, let deadline = slots[i].component.stallDeadline,
                      let handle = slots[i].handle else { continue }
                // Same expression as the wake-up time in nextWake(), so a wake at the deadline
                // always acts (no rounding can make it re-arm for the same instant).
                if now >= handle.lastProgress + deadline {
                    fail(i, .stalled(silentFor: now - handle.lastProgress), now: now)
                }
            case .interrupting(let until, let restartAt):
                guard now >= until else { continue }
                log.warning("abandoning stalled run; a new one starts anyway",
                            ["component": name, "run": slots[i].generation, "waited": formatSeconds(options.stallGrace)])
                slots[i].live = false
                slots[i].task = nil
                slots[i].phase = .waiting(restartAt: restartAt)
                emit(.abandoned(name, run: slots[i].generation))
                if now >= restartAt, stopQueue == nil { launch(i, now: now) }
            case .waiting(let restartAt):
                if now >= restartAt, stopQueue == nil { launch(i, now: now) }
            case .stopping(let until, _):
                guard now >= until else { continue }
                log.warning("did not stop in time; abandoned",
                            ["component": name, "timeout": formatSeconds(slots[i].component.stopTimeout)])
                slots[i].live = false
                slots[i].task = nil
                slots[i].phase = .stopped
                emit(.stopped(name, timedOut: true))
                advanceStop(now: now)
            case .pending, .stopped:
                continue
            }
        }
    }

    private func beginStop(now: Double) {
        guard stopQueue == nil else { return }
        log.info("stopping", ["order": slots.reversed().map(\.component.name).joined(separator: ",")])
        stopQueue = Array(slots.indices.reversed())
        advanceStop(now: now)
    }

    /// Stops the next component in reverse start order; returns while one is finishing.
    private func advanceStop(now: Double) {
        guard var queue = stopQueue else { return }
        defer { stopQueue = queue }
        while let i = queue.first {
            if slots[i].live {
                if case .stopping = slots[i].phase { return }
                let c = slots[i].component
                slots[i].phase = .stopping(until: now + c.stopTimeout, since: now)
                log.info("stopping", ["component": c.name])
                emit(.stopping(c.name))
                interrupt(i, .shutdown)
                return
            }
            slots[i].phase = .stopped
            queue.removeFirst()
        }
        finished = true
    }

    private func nextWake() -> Double? {
        var next: Double?
        func consider(_ t: Double) { next = min(next ?? t, t) }
        for s in slots {
            switch s.phase {
            case .running:
                if stopQueue == nil, s.live, let d = s.component.stallDeadline, let h = s.handle {
                    consider(h.lastProgress + d)
                }
            case .interrupting(let until, _): consider(until)
            case .waiting(let at): if stopQueue == nil { consider(at) }
            case .stopping(let until, _): consider(until)
            case .pending, .stopped: break
            }
        }
        return next
    }

    private func rearm() {
        let next = nextWake()
        if next == timerAt, timer != nil || next == nil { return }
        timer?.cancel()
        timer = nil
        timerAt = next
        guard let next else { return }
        timerID += 1
        let id = timerID
        let clock = self.clock
        let inboxIn = self.inboxIn
        timer = Task.detached {
            do {
                try await clock.sleep(until: next)
                inboxIn.yield(.tick(id))
            } catch {}
        }
    }

    private func publish() {
        board.update(slots.map { s in
            let state: ComponentState
            switch s.phase {
            case .pending: state = .pending
            case .running: state = .running
            case .interrupting, .waiting: state = .restarting
            case .stopping: state = .stopping
            case .stopped: state = .stopped
            }
            return (s.gaveUp ? .failed : state, s.live ? s.handle : nil, s.tracker.total, s.lastFailure)
        })
    }

    // MARK: - Pure helpers

    static func describe(_ error: any Error) -> String {
        let s = String(describing: error)
        return s.count > 200 ? String(s.prefix(200)) + "…" : s
    }

    /// Kahn's algorithm, stable: among the components whose dependencies are all placed, the
    /// earliest given goes first.
    static func startOrder(_ components: [any SupervisedComponent]) throws(SupervisorError) -> [any SupervisedComponent] {
        var names = Set<String>()
        for c in components {
            guard names.insert(c.name).inserted else { throw .duplicateName(c.name) }
        }
        for c in components {
            for d in c.dependencies where !names.contains(d) {
                throw .unknownDependency(component: c.name, dependency: d)
            }
        }
        var placed = Set<String>()
        var remaining = components
        var order: [any SupervisedComponent] = []
        while !remaining.isEmpty {
            guard let i = remaining.firstIndex(where: { $0.dependencies.allSatisfy(placed.contains) }) else {
                throw .dependencyCycle(remaining.map(\.name))
            }
            let c = remaining.remove(at: i)
            placed.insert(c.name)
            order.append(c)
        }
        return order
    }
}

/// What the supervisor publishes for readers on other threads (watchdog, status socket).
final class Board: Sendable {
    struct Entry {
        var name: String
        var stallDeadline: Double?
        var state: ComponentState = .pending
        var handle: ProgressHandle?
        var restarts = 0
        var lastFailure: String?
    }

    private let clock: any SupervisionClock
    private let entries: Mutex<[Entry]>
    let names: [String]

    init(clock: any SupervisionClock, entries: [Entry]) {
        self.clock = clock
        self.entries = Mutex(entries)
        names = entries.map(\.name)
    }

    func update(_ values: [(ComponentState, ProgressHandle?, Int, String?)]) {
        entries.withLock { e in
            for (i, v) in values.enumerated() {
                e[i].state = v.0
                e[i].handle = v.1
                e[i].restarts = v.2
                e[i].lastFailure = v.3
            }
        }
    }

    func statuses() -> [ComponentStatus] {
        let now = clock.now()
        return entries.withLock { e in
            e.map { x in
                var state = x.state
                let since = x.handle.map { now - $0.lastProgress }
                if state == .running, let d = x.stallDeadline, let h = x.handle, now >= h.lastProgress + d {
                    state = .stalled
                }
                return ComponentStatus(name: x.name, state: state, restarts: x.restarts, lastFailure: x.lastFailure,
                                       sinceProgress: since, detail: x.handle?.detail)
            }
        }
    }

    func health() -> SupervisorHealth {
        SupervisorHealth(down: statuses().filter { $0.state != .running }.map(\.name))
    }
}
