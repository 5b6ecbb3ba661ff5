import CrierCore
import CrierPosix
import Glibc
import Synchronization

/// What the daemon needs of an order link, v1 (`OrderLink`) or MQTT (`MQTTLink`): its driver
/// (thread, reconnects, liveness), acks, and the device's news.
public protocol OrderLinking: AnyObject, Sendable {
    /// Starts, stops and watches the link thread (`start`, `stop`, `abandon`, `lastProgress`).
    var driver: LinkDriver { get }
    /// Queues an ack; says whether it goes out or why not (an answer the server already has).
    @discardableResult func send(_ ack: Ack, reply: Bool) -> AckOutbox.Outcome
    /// The volume, the booted slot or the last update's outcome changed (crier-mark-good writes
    /// it minutes after boot): v1 says the slot and update in the next connection's hello, MQTT
    /// republishes its retained status at once.
    func deviceChanged(_ change: DeviceChange)
}

/// News about the box that a link tells its server.
public enum DeviceChange: Sendable, Equatable {
    case volume(Int)
    case update(slot: String?, lastUpdate: String?)
    /// Power, temperature, last start (issue 35).
    case health(DeviceHealth)
}

extension OrderLinking {
    public func start() { driver.start() }
    public func stop() { driver.stop() }
    public func abandon() { driver.abandon() }
    /// When the link thread last went round its loop: the supervisor's progress signal.
    public var lastProgress: Double { driver.lastProgress }
    public var isConnected: Bool { driver.isConnected }
    public func presenceChanged(volume: Int) { deviceChanged(.volume(volume)) }
    public func deviceChanged(slot: String?, lastUpdate: String?) { deviceChanged(.update(slot: slot, lastUpdate: lastUpdate)) }
    public func healthChanged(_ h: DeviceHealth) { deviceChanged(.health(h)) }
    public var config: LinkConfig { driver.config }
    public var deviceID: String { driver.deviceID }
    /// Acks until the server has them (docs/protocol.md, "Ack outbox").
    public var ackStore: AckStore { driver.ackStore }
    var log: Logger { driver.log }
    var onEvent: @Sendable (LinkEvent) -> Void { driver.onEvent }
    var wake: WakePipe { driver.thread.wake }
    var stopping: Bool { driver.thread.stopping }
    func tick() { driver.tick() }
}

/// A connection attempt that did not get the link up, as the driver logs it.
struct LinkFailure {
    /// A failure with the last one's key is logged at debug (`again`) or not at all.
    var key: String
    var level: LogLevel
    var message: String
    /// Fields after `server`, before `retry_in`.
    var fields: [(String, String)]
    /// The last field.
    var hint: String?
    /// The debug line for the same failure again: its message, its `error`, and whether it
    /// says `retry_in`. nil: not logged again.
    var again: (message: String, error: String, retryIn: Bool)?
}

/// The end of a connection that was up.
struct LinkLoss {
    /// The daemon's `.disconnected(reason:)` and the log's `reason`.
    var reason: String
    var level: LogLevel = .warning
    var message = "connection lost"
    var hint: String?
}

/// How one connection of a session ended.
enum LinkEnd {
    case failed(LinkFailure)
    case lost(LinkLoss)
    /// The link cannot work (logged): it idles until stopped, going round its loop so the
    /// supervisor does not replace it every 45 s.
    case broken
}

/// What a transport supplies to `LinkDriver`: its connections, one at a time, on the link
/// thread (the session's state lives there: not Sendable).
protocol LinkSession: AnyObject {
    /// Before the first connection: the fields of "link starting" after `server` and `device`;
    /// nil when the link cannot work (logged): it idles until stopped.
    func begin(_ run: LinkRun) -> [(String, String)]?
    /// One connection, from connect to its end (also the end of a stop: `run.stopping`).
    func connect(_ run: LinkRun) -> LinkEnd
    /// After the driver logged the loss of a connection.
    func lost(_ loss: LinkLoss, now: Double, run: LinkRun)
}

extension LinkSession {
    func lost(_ loss: LinkLoss, now: Double, run: LinkRun) {}
}

/// The link thread's side of the driver, handed to each connection of a session.
final class LinkRun {
    let driver: LinkDriver
    var backoff: ReconnectBackoff
    /// Since when the link is down (monotonic): the `after` of "connected".
    var downSince = Monotonic.now()

    init(driver: LinkDriver, backoff: ReconnectBackoff) {
        self.driver = driver
        self.backoff = backoff
    }

    var stopping: Bool { driver.thread.stopping }
    var wake: WakePipe { driver.thread.wake }
    func tick() { driver.tick() }

    /// The connection is up (the welcome, the SUBACK): the backoff is told, "connected" is
    /// logged with `fields` after `server` and `after`, and the owner gets `.connected`.
    func connected(at t: Double, _ fields: [(String, String)] = []) {
        backoff.connected(now: t)
        driver.connected.store(true, ordering: .sequentiallyConsistent)
        let url = driver.server?.description ?? "?"
        driver.log.hub.emit(.info, driver.log.component, "connected", [("server", url), ("after", "\(fmt1(t - downSince))s")] + fields)
        driver.onEvent(.connected(url))
    }
}

/// One order link's thread, reconnect loop with `ReconnectBackoff`, liveness (the progress
/// mark the supervisor watches), connection-state logging and events; the transport supplies
/// only its `LinkSession`.
public final class LinkDriver: Sendable {
    let config: LinkConfig
    var server: ServerAddress? { config.server }
    let deviceID: String
    let log: Logger
    let onEvent: @Sendable (LinkEvent) -> Void
    let thread: LinkThread
    let ackStore: AckStore
    /// The outbox is this link's own (memory only), closed by `stop` (else persisted).
    private let ownsStore: Bool
    private let backoff: ReconnectBackoff
    let connected = Atomic<Bool>(false)
    /// Monotonic nanoseconds of the link thread's last loop.
    private let progressNs = Atomic<Int64>(0)

    private struct Binding: Sendable {
        /// Logged once before the thread starts (configuration warnings).
        var prepare: @Sendable () -> Void
        /// Made on the link thread.
        var session: @Sendable () -> any LinkSession
    }
    private let binding = Mutex<Binding?>(nil)
    private let closeOwned: @Sendable () -> Void

    /// `ackStore`: the outbox with its file (the daemon's, shared with a link that replaces
    /// this one); nil: a memory-only one of `maxPendingAcks`, closed by `stop` together with
    /// what `closeOwned` closes.
    init(threadName: String, config: LinkConfig, deviceID: String, log: Logger, backoff: ReconnectBackoff,
         ackStore: AckStore?, maxPendingAcks: Int, onEvent: @escaping @Sendable (LinkEvent) -> Void,
         closeOwned: @escaping @Sendable () -> Void = {}) {
        let thread = LinkThread(name: threadName)
        self.thread = thread
        self.config = config
        self.deviceID = deviceID
        self.log = log
        self.backoff = backoff
        self.onEvent = onEvent
        self.closeOwned = closeOwned
        ownsStore = ackStore == nil
        self.ackStore = ackStore ?? AckStore(path: nil, log: log, capacity: maxPendingAcks)
        // An ack goes out once the file marks it written (write-ahead, AckOutbox): the file's
        // write wakes the link to send it.
        self.ackStore.onFileWritten { [wake = thread.wake] in wake.wake() }
    }

    /// The transport's part, given once its link is made. It holds the link (as the thread
    /// does while it runs) until `start` or `stop` takes it.
    func bind(prepare: @escaping @Sendable () -> Void, session: @escaping @Sendable () -> any LinkSession) {
        binding.withLock { $0 = Binding(prepare: prepare, session: session) }
    }

    /// When the link thread last went round its loop (it never blocks longer than ~5 s except
    /// inside a name lookup or connect).
    public var lastProgress: Double { Double(progressNs.load(ordering: .relaxed)) / 1e9 }

    public var isConnected: Bool { connected.load(ordering: .sequentiallyConsistent) }

    func tick() { progressNs.store(Int64(Monotonic.now() * 1e9), ordering: .relaxed) }

    /// Starts the link thread. Without a configured server it logs that and does nothing.
    public func start() {
        guard let server else {
            log.notice("no order server configured; only local prompts will be spoken", ["hint": "set server = tcp://HOST:PORT in crier.conf"])
            return
        }
        guard let b = binding.withLock({ b in defer { b = nil }; return b }) else { return }
        thread.start(log: log, prepare: b.prepare) { [self] in run(server, b.session()) }
    }

    /// Asks the thread to end without waiting for it: for a link whose thread is stuck (in a
    /// name lookup, say) and is being replaced by the supervisor.
    public func abandon() {
        thread.abandon()
    }

    /// Stops promptly (closing the connection) and joins the thread. Idempotent.
    public func stop() {
        binding.withLock { $0 = nil }
        thread.stop()
        if ownsStore {
            ackStore.close()
            closeOwned()
        } else {
            ackStore.persist()
        }
    }

    private func run(_ server: ServerAddress, _ session: any LinkSession) {
        tick()
        let run = LinkRun(driver: self, backoff: backoff)
        guard let starting = session.begin(run) else { return idle() }
        let url = server.description
        var rng = SystemRandomNumberGenerator()
        var lastProblem: String?
        log.hub.emit(.info, log.component, "link starting", [("server", url), ("device", deviceID)] + starting)
        while !thread.stopping {
            tick()
            let end = session.connect(run)
            if thread.stopping { break }
            let now = Monotonic.now()
            switch end {
            case .broken:
                return idle()
            case .failed(let f):
                let delay = run.backoff.nextDelay(using: &rng)
                let retry = "\(fmt1(delay))s"
                if f.key != lastProblem {
                    var fields = [("server", url)] + f.fields + [("retry_in", retry)]
                    if let h = f.hint { fields.append(("hint", h)) }
                    log.hub.emit(f.level, log.component, f.message, fields)
                    lastProblem = f.key
                } else if let a = f.again {
                    var fields = [("server", url), ("error", a.error)]
                    if a.retryIn { fields.append(("retry_in", retry)) }
                    fields.append(("attempt", "\(run.backoff.attempt)"))
                    log.hub.emit(.debug, log.component, a.message, fields)
                }
                sleep(delay)
            case .lost(let loss):
                run.backoff.disconnected(now: now)
                run.downSince = now
                lastProblem = nil
                connected.store(false, ordering: .sequentiallyConsistent)
                onEvent(.disconnected(reason: loss.reason))
                let delay = run.backoff.nextDelay(using: &rng)
                var fields = [("server", url), ("reason", loss.reason), ("retry_in", "\(fmt1(delay))s")]
                if let h = loss.hint { fields.append(("hint", h)) }
                log.hub.emit(loss.level, log.component, loss.message, fields)
                session.lost(loss, now: now, run: run)
                sleep(delay)
            }
        }
        if connected.exchange(false, ordering: .sequentiallyConsistent) {
            onEvent(.disconnected(reason: "stopped"))
        }
        log.info("link stopped", ["server": url])
    }

    /// A link that cannot work still goes round its loop until stopped.
    private func idle() {
        while !thread.stopping { sleep(5) }
    }

    /// Waits `seconds` unless stopped; acks sent meanwhile just stay queued.
    private func sleep(_ seconds: Double) {
        let deadline = Monotonic.now() + seconds
        while !thread.stopping {
            tick()
            let left = deadline - Monotonic.now()
            if left <= 0 { return }
            thread.wake.wait(timeout: min(left, 5))
        }
    }
}
