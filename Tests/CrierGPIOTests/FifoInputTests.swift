import CrierCore
import CrierPosix
import Glibc
import Synchronization
import Testing
@testable import CrierGPIO

/// A writer on the FIFO, as a test script or a person with `echo GPIO17 0 > fifo` would be.
final class FifoWriter {
    let fd: Int32
    init?(_ path: String, timeout: Double = 5) async {
        let end = Monotonic.now() + timeout
        var fd: Int32 = -1
        while fd < 0 && Monotonic.now() < end {
            fd = open(path, O_WRONLY | O_NONBLOCK)  // ENXIO until the reader has it open
            if fd < 0 { await pause(0.005) }
        }
        guard fd >= 0 else { return nil }
        self.fd = fd
    }
    func send(_ s: String) { _ = Array(s.utf8).withUnsafeBytes { write(fd, $0.baseAddress, $0.count) } }
    /// Electrical level lines, with real pauses between them.
    func levels(_ steps: [(String, Double)]) async {
        for (line, wait) in steps {
            send(line + "\n")
            if wait > 0 { await pause(wait) }
        }
    }
    func close() { Glibc.close(fd) }
}

@Suite("FIFO input end to end", .serialized)
struct FifoInputTests {
    func config(_ path: String) -> ButtonsConfig {
        var c = ButtonsConfig()
        c.input = .fifo(path)
        c[.replay].holdMs = 300
        c[.volumeUp].holdMs = 300
        c.repeatMs = 100
        return c
    }

    @Test("levels written to the FIFO become gestures through the real reader and recognizer")
    func gestures() async throws {
        let d = TempDir(); defer { d.remove() }
        let path = d.file("buttons")
        let (log, sink) = testLog()
        let got = Collector<Gesture>()
        let reader = ButtonReader(config: config(path), log: log) { got.add($0) }
        reader.start()
        defer { reader.stop() }
        let w = try #require(await FifoWriter(path))

        // A bouncy short press of mute (active low: 0 = pressed).
        await w.levels([("GPIO22 0", 0.002), ("GPIO22 1", 0.002), ("GPIO22 0", 0.1), ("GPIO22 1", 0.15)])
        #expect(await got.waitFor { $0.map(\.kind) == [.press] })
        #expect(got.all.first?.action == .mute)

        // A short press of replay acts on release; a hold acts at hold_ms, once.
        await w.levels([("replay 0", 0.1), ("replay 1", 0.15), ("GPIO23 0", 0.5), ("GPIO23 1", 0.15)])
        #expect(await got.waitFor { $0.count == 3 })
        #expect(got.all.dropFirst().map(\.kind) == [.press, .hold])

        // Volume held for ~0.55 s: a press at once, then repeats every 100 ms after 300 ms.
        await w.levels([("GPIO17 0", 0.55), ("GPIO17 1", 0.15)])
        #expect(await got.waitFor { $0.filter { $0.action == .volumeUp }.count >= 3 })
        let vol = got.all.filter { $0.action == .volumeUp }
        #expect(vol.first?.kind == .press)
        #expect(vol.dropFirst().allSatisfy { if case .repeat = $0.kind { true } else { false } })
        let gap = vol[1].at - vol[0].at
        #expect(gap > 0.25 && gap < 0.4)

        // Nonsense is logged and ignored.
        await w.levels([("GPIO99 0", 0), ("hello", 0.05)])
        #expect(await eventually { sink.lines.contains { $0.contains("names no configured button") } })
        #expect(sink.lines.contains { $0.contains("FIFO line ignored") })
        w.close()
    }

    @Test("the FIFO is created if missing and reopened when a writer closes it")
    func reopen() async throws {
        let d = TempDir(); defer { d.remove() }
        let path = d.file("buttons")
        let (log, _) = testLog()
        let got = Collector<Gesture>()
        let reader = ButtonReader(config: config(path), log: log) { got.add($0) }
        reader.start()
        for n in 1...3 {
            let w = try #require(await FifoWriter(path))
            await w.levels([("GPIO24 0", 0.1), ("GPIO24 1", 0.1)])  // levels are stamped when read
            w.close()  // EOF for the reader
            #expect(await got.waitFor { $0.count == n })
        }
        #expect(got.all.allSatisfy { $0.action == .acknowledge && $0.kind == .press })
        var st = stat()
        #expect(stat(path, &st) == 0 && (st.st_mode & S_IFMT) == S_IFIFO)
        let t = Monotonic.now()
        reader.stop()
        #expect(Monotonic.now() - t < 0.5)
    }

    @Test("a path that is not a FIFO: a clear error, retried, the box goes on")
    func notAFifo() async throws {
        let d = TempDir(); defer { d.remove() }
        let path = d.file("buttons")
        writeFile(path, [1, 2, 3])
        let (log, sink) = testLog()
        let reader = ButtonReader(config: config(path), log: log) { _ in }
        reader.start()
        #expect(await eventually { sink.lines.contains { $0.contains("exists and is not a FIFO") } })
        reader.stop()
    }

    @Test("FIFO to Controls: volume down, mute and acknowledge give the effects the runtime performs")
    func toControls() async throws {
        let d = TempDir(); defer { d.remove() }
        let path = d.file("buttons")
        let (log, _) = testLog()
        let cfg = config(path)
        let controls = Mutex(Controls(config: cfg, restored: nil, now: 0, wall: WallTime(unixMillis: 0)))
        let effects = Collector<ControlEffect>()
        let reader = ButtonReader(config: cfg, log: log) { g in
            for e in controls.withLock({ $0.handle(g, now: g.at, wall: WallTime(unixMillis: 0), historyCount: 2) }) { effects.add(e) }
        }
        reader.start()
        defer { reader.stop() }
        let w = try #require(await FifoWriter(path))
        await w.levels([("GPIO27 0", 0.1), ("GPIO27 1", 0.1), ("GPIO22 0", 0.1), ("GPIO22 1", 0.1),
                        ("GPIO24 0", 0.1), ("GPIO24 1", 0.1), ("GPIO23 0", 0.1), ("GPIO23 1", 0.1)])
        #expect(await effects.waitFor { $0.contains(.replay(0)) })
        let g6 = VolumeCurve.gain(level: 6, steps: 10, minDb: -30)
        let g4 = VolumeCurve.gain(level: 4, steps: 10, minDb: -30)
        #expect(effects.all == [
            .setGain(OutputGain(prompts: g6, alerts: g6, holdAlerts: false)), .click, .persist(ControlState(volume: 6)),
            .setGain(OutputGain(prompts: 0, alerts: g4, holdAlerts: false)),
            .persist(ControlState(volume: 6, muted: true, mutedSince: WallTime(unixMillis: 0))),
            .acknowledge,
            .replay(0),
        ])
        w.close()
    }
}

@Suite("FIFO replaced")
struct FifoReplacedTests {
    @Test("a FIFO deleted and made again is noticed and reopened")
    func replaced() async throws {
        let d = TempDir(); defer { d.remove() }
        let path = d.file("buttons")
        var c = ButtonsConfig()
        c.input = .fifo(path)
        let (log, sink) = testLog()
        let got = Collector<Gesture>()
        let reader = ButtonReader(config: c, log: log, makeInput: { c, l in FifoInput(path: path, config: c, log: l, retryEvery: 0.1) }) { got.add($0) }
        reader.start()
        defer { reader.stop() }
        #expect(await eventually { exists(path) })
        unlink(path)
        mkfifo(path, 0o600)
        #expect(await eventually { sink.lines.contains { $0.contains("was replaced; reopening") } })
        let w = try #require(await FifoWriter(path))
        await w.levels([("GPIO24 0", 0.1), ("GPIO24 1", 0.1)])
        #expect(await got.waitFor { $0.map(\.kind) == [.press] })
        w.close()
    }
}
