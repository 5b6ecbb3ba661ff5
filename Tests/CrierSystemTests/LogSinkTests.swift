import CrierCore
import CrierPosix
import Glibc
import Testing
@testable import CrierSystem

@Suite(.serialized, .timeLimit(.minutes(1)))
struct SerialSinkTests {
    @Test func aStuckReaderNeverBlocksWritesDropsAreCountedAndMarkedThenItResumes() async throws {
        let pty = Pty()
        let sink = try SerialSink(path: pty.slavePath, options: .init(capacity: 1000),
                                  clock: { WallTime(unixMillis: 1_795_000_000_000) })
        defer { sink.close(flushTimeout: 0) }
        #expect(await eventually { sink.counters.open })

        // The reader reads nothing: the pty buffer fills, then the queue, then lines drop.
        let start = monotonicNow()
        var slowest = 0.0
        for i in 0..<10_000 {
            let t = monotonicNow()
            sink.write(record(i))
            slowest = max(slowest, monotonicNow() - t)
        }
        let elapsed = monotonicNow() - start
        #expect(elapsed < 2, "10 000 writes took \(elapsed)s")
        // Scheduling on a loaded 2-core machine can pause any thread; a write blocked on the port
        // would take as long as the port stays stuck (forever here).
        #expect(slowest < 1, "one write took \(slowest)s")
        let c = sink.counters
        #expect(c.dropped > 0)
        #expect(c.queued <= 1001)

        // The reader comes back: everything queued arrives, each gap marked with its count, the
        // last one once the queue has drained.
        _ = await pty.read { sink.counters.queued == 0 && $0.hasSuffix("not open\"\r\n") }
        sink.write(record(20_000, "after the stall"))
        #expect(await pty.read(until: "INFO audio: after the stall n=20000\r\n"))
        #expect(pty.text.hasPrefix("2026-"))
        #expect(pty.text.contains("INFO audio: order spoken n=0\r\n"))
        let markers = pty.text.split(separator: "\r\n").filter { $0.contains("WARN serial: dropped ") }
        #expect(!markers.isEmpty)
        let counted = markers.compactMap { m in
            m.split(separator: " ").firstIndex(of: "dropped").flatMap { i in Int(m.split(separator: " ")[i + 1]) }
        }.reduce(0, +)
        #expect(counted == c.dropped)
        #expect(markers.allSatisfy { $0.hasSuffix("reason=\"port too slow or not open\"") })
        // Every line that was not dropped arrived, in order.
        let spoken = pty.text.split(separator: "\r\n").filter { $0.contains("order spoken") }
        #expect(spoken.count == 10_000 - c.dropped)
        #expect(sink.counters.dropped == c.dropped)
    }

    @Test func aVanishedPortIsReopenedAndTheLineInFlightIsKept() async throws {
        let dir = TestFS.tempDir()
        defer { TestFS.remove(dir) }
        let link = dir + "/serial0"
        let first = Pty()
        #expect(symlink(first.slavePath, link) == 0)
        let sink = try SerialSink(path: link, options: .init(reopenInterval: 0.05))
        defer { sink.close(flushTimeout: 0) }
        sink.write(record(1, "one"))
        #expect(await first.read(until: "one n=1\r\n"))

        first.closeMaster()  // the USB adapter is pulled
        sink.write(record(2, "two"))
        #expect(await eventually { sink.counters.portLost == 1 && sink.counters.lastError != nil })

        let second = Pty()  // ... and plugged in again
        unlink(link)
        #expect(symlink(second.slavePath, link) == 0)
        #expect(await second.read(until: "two n=2\r\n"))
        sink.write(record(3, "three"))
        #expect(await second.read(until: "three n=3\r\n"))
    }

    @Test func aMissingPortIsRetriedAndReported() async throws {
        let dir = TestFS.tempDir()
        defer { TestFS.remove(dir) }
        let path = dir + "/ttyUSB0"
        let sink = try SerialSink(path: path, options: .init(reopenInterval: 0.05))
        defer { sink.close(flushTimeout: 0) }
        sink.write(record(1, "early"))
        #expect(await eventually { sink.counters.lastError?.contains("No such file or directory") == true })
        #expect(sink.counters.lastError?.hasPrefix("open \(path)") == true)
        let pty = Pty()
        #expect(symlink(pty.slavePath, path) == 0)
        #expect(await pty.read(until: "early n=1\r\n"))
    }

    @Test func closeFlushesWhatIsQueued() async throws {
        let pty = Pty()
        let sink = try SerialSink(path: pty.slavePath)
        for i in 0..<50 { sink.write(record(i)) }
        sink.close(flushTimeout: 2)
        #expect(await pty.read(until: "n=49\r\n"))
        sink.write(record(99))  // ignored after close
        #expect(sink.counters.written == 50)
    }

    @Test func refusesAnUnknownBaudRate() {
        #expect(throws: SystemError.self) { try SerialSink(path: "/dev/null", options: .init(baud: 12345)) }
    }
}

@Suite struct StderrSinkTests {
    @Test func addsTheSyslogPriorityOnlyWhenAsked() {
        var fds: [Int32] = [-1, -1]
        #expect(pipe(&fds) == 0)
        defer { close(fds[0]) }
        StderrSink(syslogPrefix: true, fd: fds[1]).write(record(1, "x", level: .warning))
        StderrSink(syslogPrefix: false, fd: fds[1]).write(record(2, "y", level: .error))
        close(fds[1])
        var buf = [UInt8](repeating: 0, count: 4096)
        let n = read(fds[0], &buf, buf.count)
        let text = String(decoding: buf[0..<max(n, 0)], as: UTF8.self)
        #expect(text.split(separator: "\n").map { String($0.prefix(4)) } == ["<4>2", "2026"])
        #expect(text.hasSuffix("ERROR audio: y n=2\n"))
    }

    @Test func journalStreamMustNameTheActualStderr() {
        var fds: [Int32] = [-1, -1]
        #expect(pipe(&fds) == 0)
        defer { close(fds[0]); close(fds[1]) }
        var st = stat()
        #expect(fstat(fds[1], &st) == 0)
        #expect(StderrSink.stderrIsJournal(journalStream: "\(st.st_dev):\(st.st_ino)", fd: fds[1]))
        #expect(!StderrSink.stderrIsJournal(journalStream: "\(st.st_dev):\(st.st_ino + 1)", fd: fds[1]))
        #expect(!StderrSink.stderrIsJournal(journalStream: nil, fd: fds[1]))
        #expect(!StderrSink.stderrIsJournal(journalStream: "garbage", fd: fds[1]))
    }
}
