import CrierCore
import CrierPosix
import Glibc
import Synchronization
import Testing

/// An actor that runs on a ThreadExecutor, as the daemon runs on its event thread.
private actor Recorder {
    let executor: ThreadExecutor
    nonisolated var unownedExecutor: UnownedSerialExecutor { executor.asUnownedSerialExecutor() }
    var seen: [Int] = []
    /// How many of the entries were made off the executor's thread (must stay 0).
    var offThread = 0

    init(_ executor: ThreadExecutor) { self.executor = executor }

    func add(_ i: Int) {
        if !executor.isCurrent && executor.startError == nil { offThread += 1 }
        seen.append(i)
    }
}

/// The calling thread's name, as the kernel holds it.
private func threadName() -> String {
    var buf = [UInt8](repeating: 0, count: 32)
    let fd = open("/proc/thread-self/comm", O_RDONLY | O_CLOEXEC)
    defer { close(fd) }
    let n = read(fd, &buf, 31)
    let name = String(decoding: buf.prefix(max(0, n)), as: UTF8.self)
    return name.hasSuffix("\n") ? String(name.dropLast()) : name
}

@Suite("ThreadExecutor")
struct ThreadExecutorTests {

    /// Calls handed over from another thread (as the order link hands its events) run in the
    /// order given, on the executor's thread, inside the actor (assumeIsolated passes), mixed
    /// with the actor's own awaited jobs; over seeded random mixes.
    @Test(arguments: [true, false])
    func submittedCallsKeepTheirOrderAndRunInsideTheActor(ownThread: Bool) async throws {
        let started = Mutex<String?>(nil)
        let ex = ThreadExecutor(name: "crier-ex-test", thread: ownThread) {
            started.withLock { $0 = threadName() }
        }
        #expect((ex.startError == nil) == ownThread)
        for seed in UInt64(1)...10 {
            var rng = SplitMix64(seed: seed)
            let rec = Recorder(ex)
            let names = Mutex<Set<String>>([])
            let plan = (0..<200).map { _ in rng.next() % 3 }
            let sender = try PosixThread(name: "link-like") {
                for (i, kind) in plan.enumerated() where kind != 0 {
                    ex.submit {
                        _ = names.withLock { $0.insert(ownThread ? threadName() : "queue") }
                        rec.assumeIsolated { $0.add(i) }
                    }
                }
            }
            // The actor's own jobs meanwhile, from this task.
            for (i, kind) in plan.enumerated() where kind == 0 { await rec.add(-1 - i) }
            sender.join()
            await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in ex.submit { c.resume() } }
            let seen = await rec.seen
            let submitted = plan.enumerated().filter { $0.element != 0 }.map(\.offset)
            #expect(seen.filter { $0 >= 0 } == submitted, "seed \(seed)")
            #expect(seen.filter { $0 < 0 }.count == plan.filter { $0 == 0 }.count, "seed \(seed)")
            #expect(await rec.offThread == 0, "seed \(seed)")
            if ownThread {
                #expect(names.withLock { $0 } == ["crier-ex-test"], "seed \(seed)")
                #expect(started.withLock { $0 } == "crier-ex-test")
            } else {
                #expect(started.withLock { $0 } == nil)
            }
        }
    }

    /// Off its thread the executor says so (what `checkIsolated` traps on).
    @Test func isCurrentOnlyOnItsThread() async {
        let ex = ThreadExecutor(name: "crier-ex-cur")
        #expect(!ex.isCurrent)
        let onIt = await withCheckedContinuation { (c: CheckedContinuation<Bool, Never>) in ex.submit { c.resume(returning: ex.isCurrent) } }
        #expect(onIt)
    }
}
