import CrierCore
import CrierPosix
import Synchronization

/// The one thread of an order link (`OrderLink`, `MQTTLink`) and how it ends. Started at most
/// once; `stop` and `abandon` set `stopping` and poke `wake`, so a body that checks `stopping`
/// each time round its loop and blocks only in poll() on `wake.readFD` (or for at most a few
/// seconds) ends promptly. `stop` then joins it; `abandon` does not wait, for a thread stuck
/// where no wake-up reaches it (a name lookup) that the supervisor replaces.
final class LinkThread: Sendable {
    /// Wakes the body out of its poll(): on stop, and for the link's own news (an ack to send).
    let wake = WakePipe()
    private let name: String

    private struct State {
        var started = false
        var stopping = false
        var thread: PosixThread?
    }
    private let state = Mutex(State())

    init(name: String) {
        self.name = name
    }

    /// Set by `stop` or `abandon` (also before `start`): the body returns when it sees it.
    var stopping: Bool { state.withLock { $0.stopping } }

    /// Runs `body` on a new thread, the first time only: a second call does nothing.
    /// `prepare` runs just before, on that first call only (the links log their configuration
    /// warnings there, once). A thread that cannot be made is logged; the link then makes no
    /// progress and the supervisor replaces it.
    func start(log: Logger, prepare: () -> Void = {}, _ body: @escaping @Sendable () -> Void) {
        let first = state.withLock { s -> Bool in
            guard !s.started else { return false }
            s.started = true
            return true
        }
        guard first else { return }
        prepare()
        // Made under the lock: a `stop` racing this start either finds the thread to join or
        // came first, and then the body sees `stopping` at once.
        let failure = state.withLock { s -> String? in
            do {
                s.thread = try PosixThread(name: name, body)
                return nil
            } catch {
                return "\(error)"
            }
        }
        if let failure { log.error("cannot start the link thread: \(failure)") }
    }

    /// Asks the body to end without waiting for it.
    func abandon() {
        state.withLock { $0.stopping = true }
        wake.wake()
    }

    /// Asks the body to end and waits for it. Idempotent; before `start` it only marks
    /// `stopping`. Returns as soon as the body does: bounded by the body's longest wait that
    /// `wake` cannot end (a name lookup, say).
    func stop() {
        let t = state.withLock { s -> PosixThread? in
            s.stopping = true
            defer { s.thread = nil }
            return s.thread
        }
        wake.wake()
        t?.join()
    }
}
