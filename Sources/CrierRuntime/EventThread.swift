import CrierCore
import CrierPosix
import Synchronization

/// The daemon actor's own thread (issue 36, "the hop that starts an alert"). An order reaches
/// the speaker policy as a job on the daemon actor; on Swift's shared pool that job waits for a
/// pool thread, an ordinary thread that a busy box's other programs delay by a scheduler slice
/// (the loaded benchmark's 3-5 ms outliers at p99). Here the actor's jobs run in order on one
/// thread of their own (`ThreadExecutor`), at SCHED_FIFO `speech.start_priority` (default 10:
/// below the speech thread's 20 and the audio thread's 30, so neither waits for it; above every
/// ordinary thread). The daemon's jobs are short by design (blocking C calls live on their own
/// threads), so a real-time event thread costs no one else a core; a job that spun would stop
/// the watchdog pets (they are daemon jobs too) and systemd would restart crier.
///
/// The order link's thread hands its events over with `submit` (the daemon enters itself with
/// `assumeIsolated`), not through an AsyncStream: resuming the stream's waiting task from the
/// link's thread ran it on Swift's shared pool before it hopped here, and that ordinary pool
/// thread was where the remaining slow orders spent their 2-6 ms (docs/benchmarks.md, "Eighth
/// session").
final class EventThread: Sendable {
    let executor: ThreadExecutor
    /// Written once by the thread as it starts.
    private final class PolicyBox: Sendable {
        let value = Mutex<ThreadPolicy?>(nil)
    }
    private let policyBox = PolicyBox()

    /// What the thread got (nil until it has started).
    var policy: ThreadPolicy? { policyBox.value.withLock { $0 } }

    static let asker = ThreadPolicy.Asker(thread: "event thread", key: "speech.start_priority",
                                          cost: "an order may wait for the box's other programs before its speech starts",
                                          grantedNote: " (orders, buttons and timers turned into speech)")

    init(priority: Int, log: Logger) {
        let box = policyBox
        executor = ThreadExecutor(name: "crier-events") {
            let code = ThreadScheduling.requestRealtime(priority: priority)
            let p = ThreadPolicy.asked(priority, errno: code, errnoName: errnoName(code), errnoText: errnoText(code),
                                       by: Self.asker, log: log)
            box.value.withLock { $0 = p }
        }
        if let error = executor.startError {
            log.error("cannot start the event thread (\(error)); the daemon runs on a Dispatch queue at ordinary priority")
        }
    }

    /// Runs `body` on the event thread, in order with the daemon's jobs, without a task.
    func submit(_ body: @escaping @Sendable () -> Void) { executor.submit(body) }

    func asUnownedSerialExecutor() -> UnownedSerialExecutor { executor.asUnownedSerialExecutor() }
}
