import CrierCore
import CrierPosix
import Dispatch
import Synchronization

/// The button thread: waits on an input (libgpiod, FIFO or keyboard), feeds every level to
/// one `GestureRecognizer`, ticks it at its deadlines and hands each gesture to `onGesture`
/// (called on this thread; keep it short, e.g. yield into an AsyncStream or call an actor).
///
/// The input is made *on* the thread by `makeInput` and never leaves it, so it needs no
/// locks; the reader itself only shares immutable values, the stop flag (atomic) and a wake
/// pipe, so `stop()` interrupts a blocked wait at once.
public final class ButtonReader: Sendable {
    public typealias InputFactory = @Sendable (ButtonsConfig, Logger) -> any ButtonInput

    let config: ButtonsConfig
    let log: Logger
    let makeInput: InputFactory
    let onGesture: @Sendable (Gesture) -> Void
    let clock: @Sendable () -> Double
    let waker = WakePipe()
    let stopping = Atomic<Bool>(false)
    let started = Atomic<Bool>(false)
    let done = DispatchSemaphore(value: 0)

    public init(config: ButtonsConfig, log: Logger, makeInput: InputFactory? = nil,
                clock: @escaping @Sendable () -> Double = Monotonic.now,
                onGesture: @escaping @Sendable (Gesture) -> Void) {
        self.config = config
        self.log = log
        self.makeInput = makeInput ?? ButtonReader.input(for:log:)
        self.clock = clock
        self.onGesture = onGesture
    }

    /// The backend `input =` names.
    public static func input(for config: ButtonsConfig, log: Logger) -> any ButtonInput {
        switch config.input {
        case .gpio: GPIODInput(config: config, log: log)
        case .keyboard: KeyboardInput(config: config, log: log)
        case .fifo(let path): FifoInput(path: path, config: config, log: log)
        }
    }

    /// Starts the thread (once).
    public func start() {
        guard !started.exchange(true, ordering: .acquiringAndReleasing) else { return }
        if let e = waker.failure { log.error("no wake-up pipe (\(e)); stopping waits for the next event") }
        do {
            try PosixThread.detach(name: "crier-buttons") { [self] in
                run()
                done.signal()
            }
        } catch {
            log.error("cannot start the button thread: \(error); buttons are off")
            done.signal()
        }
    }

    /// Stops the thread and waits for it to release its lines (promptly: the wait is woken).
    public func stop() {
        guard started.load(ordering: .acquiring), !stopping.exchange(true, ordering: .acquiringAndReleasing) else { return }
        waker.wake()
        done.wait()
    }

    func run() {
        let fitted = config.fitted.map { "\($0.0.rawValue)=\($0.1.line!)" }.joined(separator: " ")
        let buttons = fitted.isEmpty ? "none" : fitted
        if config.input == .gpio {
            // Which libgpiod API this build has (v1 or v2, chosen when it was built): the log
            // says it, so a field report or the VM test can tell the two apart.
            log.info("reading", ["input": config.input.description, "libgpiod": GPIODInput.libraryVersion, "buttons": buttons])
        } else {
            log.info("reading", ["input": config.input.description, "buttons": buttons])
        }
        var recognizer = GestureRecognizer(config: config)
        let input = makeInput(config, log)
        var last = -Double.infinity
        while !stopping.load(ordering: .acquiring) {
            let events = input.wait(until: recognizer.nextDeadline, wakeFD: waker.readFD)
            waker.drain()
            var out: [Gesture] = []
            for e in events {
                // Keep time monotonic for the recognizer even if a stamp is a little behind.
                let at = max(e.at, last)
                last = at
                out += e.initial ? recognizer.start(e.action, level: e.level, at: at) : recognizer.feed(e.action, level: e.level, at: at)
            }
            let now = max(clock(), last)
            last = now
            out += recognizer.tick(now: now)
            for g in out { report(g) }
        }
        input.close()
        log.info("stopped")
    }

    func report(_ g: Gesture) {
        let b = "button \(g.action.rawValue)"
        switch g.kind {
        case .stuck:
            log.warning("\(b): down for more than \(ConfigValue.fmt(config.stuckSeconds)) s (or already down at start); ignored until released; check the button and its wiring")
        case .unstuck:
            log.notice("\(b): released; works again")
        default:
            log.debug("\(b): \(g.kind)")
        }
        onGesture(g)
    }

    /// Gestures as an AsyncStream, for an actor that loops over them. The reader starts now and
    /// stops when the stream's consumer goes away.
    public static func stream(config: ButtonsConfig, log: Logger, makeInput: InputFactory? = nil) -> (ButtonReader, AsyncStream<Gesture>) {
        let (stream, cont) = AsyncStream<Gesture>.makeStream()
        let reader = ButtonReader(config: config, log: log, makeInput: makeInput) { cont.yield($0) }
        cont.onTermination = { _ in reader.stop() }
        reader.start()
        return (reader, stream)
    }
}
