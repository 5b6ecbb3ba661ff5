import CrierCore
import CrierPosix
import Dispatch
import Synchronization

/// The daemon actor's own thread (issue 36, "the hop that starts an alert"). An order reaches
/// the speaker policy as a job on the daemon actor; on Swift's shared pool that job waits for a
/// pool thread, an ordinary thread that a busy box's other programs delay by a scheduler slice
/// (the loaded benchmark's 3-5 ms outliers at p99). Here the actor's jobs run in order on one
/// thread of their own, at SCHED_FIFO `speech.start_priority` (default 10: below the speech
/// thread's 20 and the audio thread's 30, so neither waits for it; above every ordinary
/// thread). The daemon's jobs are short by design (blocking C calls live on their own threads),
/// so a real-time event thread costs no one else a core; a job that spun would stop the
/// watchdog pets (they are daemon jobs too) and systemd would restart crier.
final class EventThread: SerialExecutor {
    private let jobs = Mutex<[UnownedJob]>([])
    private let signal = DispatchSemaphore(value: 0)
    private let policyBox = Mutex<ThreadPolicy?>(nil)
    /// Set when the thread could not be made: jobs then go to Swift's shared pool.
    private let failed = Atomic<Bool>(false)

    /// What the thread got (nil until it has started).
    var policy: ThreadPolicy? { policyBox.withLock { $0 } }

    init(priority: Int, log: Logger) {
        do {
            try PosixThread.detach(name: "crier-events") { [self] in
                var code: Int32 = 0
                if priority > 0 {
                    do throws(SystemError) { try ThreadScheduling.setRealtime(priority: priority) } catch { code = error.code }
                }
                let p = ThreadPolicy.outcome(requested: priority, errno: code, errnoName: errnoName(code),
                                             errnoText: errnoText(code), key: "speech.start_priority")
                policyBox.withLock { $0 = p }
                if let advice = ThreadPolicy.refusalAdvice(requested: priority, errno: code, errnoName: errnoName(code),
                                                           thread: "event thread", key: "speech.start_priority",
                                                           cost: "an order may wait for the box's other programs before its speech starts") {
                    log.warning(advice)
                } else if p.kind == .fifo {
                    log.info("event thread: \(p.line) (orders, buttons and timers turned into speech)")
                }
                run()
            }
        } catch {
            failed.store(true, ordering: .relaxed)
            log.error("cannot start the event thread (\(error)); the daemon runs on Swift's shared threads at ordinary priority")
        }
    }

    func enqueue(_ job: consuming ExecutorJob) {
        let j = UnownedJob(job)
        if failed.load(ordering: .relaxed) {
            // No thread of ours: the job still has to run, in order; Dispatch's serial queue does that.
            Self.fallback.async { j.runSynchronously(on: self.asUnownedSerialExecutor()) }
            return
        }
        jobs.withLock { $0.append(j) }
        signal.signal()
    }

    private static let fallback = DispatchQueue(label: "crier-events-fallback")

    func asUnownedSerialExecutor() -> UnownedSerialExecutor {
        UnownedSerialExecutor(ordinary: self)
    }

    private func run() {
        let me = asUnownedSerialExecutor()
        while true {
            signal.wait()
            guard let job = jobs.withLock({ q in q.isEmpty ? nil : q.removeFirst() }) else { continue }
            job.runSynchronously(on: me)
        }
    }
}
