import Dispatch
import Glibc
import Synchronization

/// A serial executor with one thread of its own: an actor whose `unownedExecutor` is this runs
/// every job in order on that thread, which can be given a scheduling policy (the daemon's
/// event thread runs at SCHED_FIFO). Another thread can also hand it a plain call (`submit`)
/// that runs in order with the jobs and may enter the actor with `assumeIsolated`: one hop,
/// where resuming a task (an AsyncStream, a continuation) from a foreign thread may first run
/// it on Swift's shared pool, an ordinary thread a busy machine delays by a scheduler slice.
///
/// If the thread cannot be made (`startError`), jobs and calls still run in order, on a
/// Dispatch serial queue.
public final class ThreadExecutor: SerialExecutor {
    /// A job of an actor, or a call handed over by `submit`: one queue, so both keep their order.
    private enum Work {
        case job(UnownedJob)
        case call(@Sendable () -> Void)
    }
    private let queue = Mutex<[Work]>([])
    private let signal = DispatchSemaphore(value: 0)
    /// pthread_self() of the thread, 0 until it runs (`checkIsolated`).
    private let thread = Atomic<UInt>(0)
    private let failure = Mutex<SystemError?>(nil)
    private let fallback: DispatchQueue

    /// Why the thread could not be made (nil: it runs).
    public var startError: SystemError? { failure.withLock { $0 } }

    /// Starts the thread `name` (at most 15 bytes show in ps), which runs `onStart` (e.g. to
    /// set its scheduling policy) before the first job. `thread: false` runs everything on the
    /// fallback queue from the start (what a failed start does; tests).
    public init(name: String, thread wanted: Bool = true, onStart: @escaping @Sendable () -> Void = {}) {
        fallback = DispatchQueue(label: name + "-fallback")
        guard wanted else {
            failure.withLock { $0 = SystemError("thread executor \(name): asked to run without its thread", code: 0) }
            return
        }
        do {
            try PosixThread.detach(name: name) { [self] in
                thread.store(UInt(pthread_self()), ordering: .releasing)
                onStart()
                run()
            }
        } catch {
            failure.withLock { $0 = error }
        }
    }

    public func enqueue(_ job: consuming ExecutorJob) {
        let j = UnownedJob(job)
        if startError != nil {
            fallback.async { j.runSynchronously(on: self.asUnownedSerialExecutor()) }
            return
        }
        queue.withLock { $0.append(.job(j)) }
        signal.signal()
    }

    /// Runs `body` on the thread, after every job and call already queued, without a task.
    public func submit(_ body: @escaping @Sendable () -> Void) {
        if startError != nil {
            fallback.async { body() }
            return
        }
        queue.withLock { $0.append(.call(body)) }
        signal.signal()
    }

    /// Whether the caller runs on this executor's thread (or, without one, its fallback queue).
    public var isCurrent: Bool {
        startError == nil && thread.load(ordering: .acquiring) == UInt(pthread_self())
    }

    /// `assumeIsolated` asks this when it is called outside a job (from a `submit` call): the
    /// thread runs nothing but this executor's work, so being on it is being isolated.
    public func checkIsolated() {
        if startError != nil {
            dispatchPrecondition(condition: .onQueue(fallback))
            return
        }
        precondition(isCurrent, "an actor on the thread executor was entered from another thread")
    }

    public func asUnownedSerialExecutor() -> UnownedSerialExecutor {
        UnownedSerialExecutor(ordinary: self)
    }

    private func run() {
        let me = asUnownedSerialExecutor()
        while true {
            signal.wait()
            // Everything queued so far, in order (later signals then find an empty queue): no
            // O(n) removeFirst per item after a burst, and the burst's array is given back.
            let batch = queue.withLock { q in
                let all = q
                q = []
                return all
            }
            for work in batch {
                switch work {
                case .job(let job): job.runSynchronously(on: me)
                case .call(let body): body()
                }
            }
        }
    }
}
