import Synchronization
import Testing
@testable import CrierCore

@Suite struct LogHubTests {
    @Test func keepsWhatIsAtLeastAsSevereAsTheMinimum() {
        let hub = LogHub(clock: { WallTime(unixMillis: 0) })
        let sink = MemoryLogSink()
        hub.add(sink)
        let log = hub.logger("t")
        for level in LogLevel.allCases { hub.emit(level, "t", "m", []) }
        #expect(sink.all.map(\.level) == [.error, .warning, .notice, .info])
        hub.setMinimum(.warning)
        log.info("dropped")
        log.error("kept")
        #expect(sink.all.last?.message == "kept")
        #expect(sink.all.count == 5)
    }

    @Test func repeatsAreLimitedThroughTheHub() {
        let now = Mutex<Int64>(0)
        let hub = LogHub(clock: { WallTime(unixMillis: now.withLock { $0 }) })
        let sink = MemoryLogSink()
        hub.add(sink)
        hub.limitRepeats(RateLimiter(window: 10))
        let log = hub.logger("link")
        for i in 0..<20 {
            now.withLock { $0 = Int64(i) * 100 }
            log.warning("connect failed", ["server": "tcp://10.0.0.5:7700"])
        }
        #expect(sink.lines == ["1970-01-01T00:00:00.000Z WARN link: connect failed server=tcp://10.0.0.5:7700"])
        now.withLock { $0 = 10_000 }
        hub.flushRepeats()
        #expect(sink.lines.last == "1970-01-01T00:00:10.000Z WARN link: connect failed (repeated 19 times) server=tcp://10.0.0.5:7700")
        hub.flushRepeats()
        #expect(sink.lines.count == 2)
    }
}

@Suite struct RateLimiterTests {
    func rec(_ ms: Int64, _ level: LogLevel = .error, _ component: String = "audio", _ message: String = "write failed",
             _ fields: [(String, String)] = [("error", "EIO")]) -> LogRecord {
        LogRecord(time: WallTime(unixMillis: ms), level: level, component: component, message: message, fields: fields)
    }

    @Test func firstPassesRepeatsAreCountedThenOneSummary() {
        var r = RateLimiter(window: 60)
        #expect(r.admit(rec(0)) == [rec(0)])
        for t in stride(from: Int64(1000), to: 60_000, by: 1000) { #expect(r.admit(rec(t)).isEmpty) }
        // The window is over: the summary, then this occurrence opens a new window.
        let out = r.admit(rec(61_000))
        #expect(out.map { $0.formatted() } == [
            "1970-01-01T00:01:01.000Z ERROR audio: write failed (repeated 59 times) error=EIO",
            "1970-01-01T00:01:01.000Z ERROR audio: write failed error=EIO",
        ])
    }

    @Test func differentComponentMessageLevelOrFieldsAreNotRepeats() {
        var r = RateLimiter(window: 60)
        let all = [rec(0), rec(1, .warning), rec(2, .error, "link"), rec(3, .error, "audio", "other"),
                   rec(4, .error, "audio", "write failed", [("error", "ENODEV")])]
        for x in all { #expect(r.admit(x) == [x]) }
        #expect(r.tracked == 5)
    }

    @Test func debugIsNeverLimited() {
        var r = RateLimiter(window: 60)
        let x = rec(0, .debug)
        #expect(r.admit(x) == [x])
        #expect(r.admit(x) == [x])
        #expect(r.tracked == 0)
    }

    @Test func flushWithoutRepeatsSaysNothingAndForgets() {
        var r = RateLimiter(window: 60)
        _ = r.admit(rec(0))
        #expect(r.flush(now: WallTime(unixMillis: 59_999)).isEmpty)
        #expect(r.tracked == 1)
        #expect(r.flush(now: WallTime(unixMillis: 60_000)).isEmpty)
        #expect(r.tracked == 0)
    }

    @Test func aClockSetBackEndsTheWindow() {
        var r = RateLimiter(window: 60)
        _ = r.admit(rec(1_000_000))
        _ = r.admit(rec(1_000_500))
        let out = r.admit(rec(5_000))
        #expect(out.map(\.message) == ["write failed (repeated 1 time)", "write failed"])
    }

    @Test func trackingIsBoundedAndNothingPassesUncounted() {
        var r = RateLimiter(window: 60, maxTracked: 2)
        var out: [LogRecord] = []
        for i in 0..<5 { for j in 0..<3 { out += r.admit(rec(Int64(i * 3 + j), .error, "c\(i)")) } }
        #expect(r.tracked == 2)
        out += r.flush(now: WallTime(unixMillis: 120_000))
        // Each of the 5 kinds: its first line, then a summary of the 2 repeats (the evicted ones
        // early, when a new kind needed the room).
        #expect(out.count == 10)
        #expect(out.filter { $0.message == "write failed (repeated 2 times)" }.count == 5)
    }
}
