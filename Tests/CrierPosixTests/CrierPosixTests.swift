import CrierPosix
import Glibc
import Synchronization
import Testing

@Suite("CrierPosix")
struct CrierPosixTests {
    private func tempPath(_ name: String) -> String {
        FileIO.temporaryDirectory() + "crier-posix-\(getpid())-\(name)"
    }

    @Test func fileWriteIsWholeAndReadsBack() throws {
        let p = tempPath("roundtrip")
        defer { unlink(p) }
        let bytes = (0..<200_000).map { UInt8(truncatingIfNeeded: $0 &* 31) }
        try FileIO.write(p, bytes)
        #expect(try FileIO.read(p) == bytes)
        #expect(!FileIO.exists(p + ".tmp"))
    }

    /// SCHED_FIFO goes to the calling thread only; a thread it starts is SCHED_OTHER (reset on
    /// fork). Without the privilege (not root, RLIMIT_RTPRIO 0) the refusal is EPERM, thrown.
    @Test func realtimeIsForTheCallingThreadOnly() throws {
        var limit = rlimit()
        getrlimit(__rlimit_resource_t(14), &limit)  // RLIMIT_RTPRIO, not exported by Glibc's module
        let allowed = geteuid() == 0 || limit.rlim_cur >= 20
        let seen = Mutex<(Int32, Int32, Int32, SystemError?)>((-1, -1, -1, nil))
        let t = try PosixThread(name: "rt-test") {
            do throws(SystemError) {
                try ThreadScheduling.setRealtime(priority: 20)
            } catch {
                seen.withLock { $0.3 = error }
            }
            let mine = sched_getscheduler(0)
            let prio = ThreadScheduling.current().priority
            let child = Mutex<Int32>(-1)
            if let inner = try? PosixThread(name: "rt-child", { child.withLock { $0 = sched_getscheduler(0) } }) { inner.join() }
            seen.withLock { $0.0 = mine; $0.1 = prio; $0.2 = child.withLock { $0 } }
        }
        t.join()
        let (mine, prio, child, error) = seen.withLock { $0 }
        if allowed {
            #expect(error == nil)
            #expect(mine == Int32(SCHED_FIFO) | 0x4000_0000)  // the kernel reports the reset-on-fork flag
            #expect(prio == 20)
        } else {
            #expect(error?.code == EPERM)
            #expect(mine == Int32(SCHED_OTHER))
        }
        #expect(child == Int32(SCHED_OTHER))
        #expect(sched_getscheduler(0) == Int32(SCHED_OTHER))
    }

    @Test func writesAFifoDirectly() throws {
        let p = tempPath("fifo")
        defer { unlink(p) }
        #expect(mkfifo(p, 0o600) == 0)
        let got = Mutex<[UInt8]>([])
        let reader = try PosixThread(name: "fifo-reader") {
            let bytes = (try? FileIO.read(p)) ?? []
            got.withLock { $0 = bytes }
        }
        try FileIO.write(p, Array("RIFF".utf8))
        reader.join()
        #expect(got.withLock { $0 } == Array("RIFF".utf8))
        #expect(!FileIO.exists(p + ".tmp"))
    }

    @Test func readSaysWhyNot() throws {
        let missing = tempPath("missing")
        #expect(throws: SystemError("open", path: missing, code: ENOENT)) { try FileIO.read(missing) }
        let big = tempPath("big")
        defer { unlink(big) }
        try FileIO.write(big, [UInt8](repeating: 7, count: 3000))
        #expect(throws: SystemError("read", path: big, code: EFBIG)) { try FileIO.read(big, limit: 1000) }
        #expect(throws: SystemError("read", path: "/", code: EISDIR)) { try FileIO.read("/") }
    }

    @Test func systemErrorReadsAsASentence() {
        #expect(SystemError("open", path: "/dev/serial0", code: ENOENT).description
                == "open /dev/serial0: No such file or directory (errno 2)")
    }

    @Test func wakePipeWakesAWaiterAndTimesOutOtherwise() throws {
        let w = WakePipe()
        #expect(w.failure == nil)
        let t0 = Monotonic.now()
        #expect(w.wait(timeout: 0.05) == false)
        #expect(Monotonic.now() - t0 >= 0.05)
        let woken = Atomic<Bool>(false)
        let thread = try PosixThread(name: "waiter") {
            woken.store(w.wait(timeout: 10), ordering: .relaxed)
        }
        w.wake()
        thread.join()
        let wasWoken = woken.load(ordering: .relaxed)
        #expect(wasWoken)
        // Consumed: the next wait times out again.
        #expect(w.wait(timeout: 0) == false)
    }

    @Test func threadsCarryTheirName() throws {
        let name = Mutex("")
        let t = try PosixThread(name: "crier-name-test-long") {
            var buf = [UInt8](repeating: 0, count: 32)
            let fd = open("/proc/thread-self/comm", O_RDONLY)
            let n = read(fd, &buf, buf.count)
            close(fd)
            name.withLock { $0 = String(decoding: buf.prefix(max(0, n)), as: UTF8.self) }
        }
        t.join()
        #expect(name.withLock { $0 } == "crier-name-test\n")  // the kernel keeps 15 bytes
    }

    @Test func pollTimeoutRoundsUpAndClamps() {
        #expect(Monotonic.pollTimeout(until: nil) == -1)
        #expect(Monotonic.pollTimeout(until: Monotonic.now() - 1) == 0)
        let ms = Monotonic.pollTimeout(until: Monotonic.now() + 0.0101)
        #expect(ms >= 10 && ms <= 11)
        #expect(Monotonic.pollTimeout(until: Monotonic.now() + 1e9) == 3_600_000)
    }
}
