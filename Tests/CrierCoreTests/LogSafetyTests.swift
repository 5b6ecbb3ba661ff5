import Synchronization
import Testing
@testable import CrierCore

/// What reaches a terminal, the serial console or the journal: one record is one line of
/// printable text, whatever an order id or a server's message contained.
@Suite struct LogEscapingTests {
    /// Scalars no sink may receive raw, listed here independently of the implementation.
    static func forbidden(_ u: Unicode.Scalar) -> Bool {
        let v = u.value
        if v < 0x20 || v == 0x7f || (0x80...0x9f).contains(v) { return true }
        let bidiAndInvisible: [ClosedRange<UInt32>] = [0x061c...0x061c, 0x200b...0x200f, 0x2028...0x202e,
                                                         0x2060...0x2069, 0xfeff...0xfeff, 0xfff9...0xfffb]
        if bidiAndInvisible.contains(where: { $0.contains(v) }) { return true }
        switch u.properties.generalCategory {
        case .control, .format, .lineSeparator, .paragraphSeparator, .privateUse, .unassigned: return true
        default: return false
        }
    }

    static func combining(_ u: Unicode.Scalar) -> Bool {
        [.nonspacingMark, .spacingMark, .enclosingMark].contains(u.properties.generalCategory)
    }

    /// The documented format read back: `TIME LEVEL component: message k=v k="v"`. Field values
    /// are read from the right (a quoted value's `"` inside are always `\"`), so a message that
    /// itself looks like `x=y` cannot confuse it. nil: not such a line.
    static func read(_ line: String, fieldKeys: [String]) -> (component: String, message: String, fields: [String])? {
        var rest = Array(line.unicodeScalars)
        var values: [String] = []
        for key in fieldKeys.reversed() {
            var value: [Unicode.Scalar]
            if rest.last == "\"" {
                // The opening quote: the first `"` leftwards not escaped by an odd run of `\`.
                var i = rest.count - 2
                while i >= 0 {
                    if rest[i] == "\"" {
                        var b = 0
                        var j = i - 1
                        while j >= 0 && rest[j] == "\\" { b += 1; j -= 1 }
                        if b % 2 == 0 { break }
                    }
                    i -= 1
                }
                guard i >= 0, let u = unescape(String(String.UnicodeScalarView(rest[(i + 1)..<(rest.count - 1)]))) else { return nil }
                value = Array(u.unicodeScalars)
                rest.removeSubrange(i...)
            } else {
                guard let sp = rest.lastIndex(of: "=") else { return nil }
                value = Array(rest[(sp + 1)...])
                rest.removeSubrange((sp + 1)...)
            }
            let tail = Array((" " + key + "=").unicodeScalars)
            guard rest.count >= tail.count, Array(rest.suffix(tail.count)) == tail else { return nil }
            rest.removeLast(tail.count)
            values.insert(String(String.UnicodeScalarView(value)), at: 0)
        }
        // "1970-01-01T00:00:00.000Z INFO " then "component: message", split on scalars (a
        // Character split would see " " + a combining mark as one character).
        let parts = rest.split(separator: " ", maxSplits: 2, omittingEmptySubsequences: false)
        guard parts.count == 3, let colon = parts[2].firstIndex(of: ":"), colon + 1 < parts[2].endIndex,
              parts[2][colon + 1] == " " else { return nil }
        let text = { (x: ArraySlice<Unicode.Scalar>) in String(String.UnicodeScalarView(x)) }
        guard let c = unescape(text(parts[2][..<colon])), let m = unescape(text(parts[2][(colon + 2)...])) else { return nil }
        return (c, m, values)
    }

    /// `\n \r \t \\ \" \u{X…}`; anything else after a backslash is not the format.
    static func unescape(_ s: String) -> String? {
        var out = String.UnicodeScalarView()
        let a = Array(s.unicodeScalars)
        var i = 0
        while i < a.count {
            if a[i] != "\\" { out.append(a[i]); i += 1; continue }
            guard i + 1 < a.count else { return nil }
            switch a[i + 1] {
            case "n": out.append("\n"); i += 2
            case "r": out.append("\r"); i += 2
            case "t": out.append("\t"); i += 2
            case "\\": out.append("\\"); i += 2
            case "\"": out.append("\""); i += 2
            case "u":
                guard i + 2 < a.count, a[i + 2] == "{", let close = a[(i + 3)...].firstIndex(of: "}"),
                      let v = UInt32(String(String.UnicodeScalarView(a[(i + 3)..<close])), radix: 16),
                      let u = Unicode.Scalar(v) else { return nil }
                out.append(u)
                i = close + 1
            default: return nil
            }
        }
        return String(out)
    }

    @Test func nextLineAndBidiOverridesInAnIdAreEscaped() {
        let r = LogRecord(time: WallTime(unixMillis: 0), level: .warning, component: "alert",
                          message: "order rejected \u{202E}txt.exe", fields: [("id", "A\u{85}B\u{202E}C"), ("reason", "queue_full")])
        #expect(r.formatted() == "1970-01-01T00:00:00.000Z WARN alert: order rejected \\u{202E}txt.exe id=\"A\\u{0085}B\\u{202E}C\" reason=queue_full")
    }

    @Test func aNewlineOrCarriageReturnCannotForgeALine() {
        let r = LogRecord(time: WallTime(unixMillis: 0), level: .info, component: "alert",
                          message: "spoken\r\n1970-01-01T00:00:00.000Z ERROR fake: x", fields: [("id", "1\n2\u{2028}3")])
        let line = r.formatted()
        #expect(!line.unicodeScalars.contains(where: Self.forbidden))
        #expect(Self.read(line, fieldKeys: ["id"])?.fields == ["1\n2\u{2028}3"])
    }

    /// Seeded: arbitrary scalars, weighted towards the dangerous ranges, in every part of a record.
    @Test(arguments: [UInt64(1), 2, 3, 2026])
    func anyTextIsOneLineOfPrintableTextAndReadsBack(seed: UInt64) {
        var rng = SplitMix64(seed: seed)
        let pools: [ClosedRange<UInt32>] = [0x00...0x1f, 0x20...0x7e, 0x7f...0xa0, 0x0600...0x061f, 0x200b...0x206f,
                                            0xfeff...0xfeff, 0xfff0...0xfffd, 0xe000...0xe0ff, 0x4e00...0x4e20,
                                            0x1f600...0x1f64f, 0x0300...0x036f, 0xe0000...0xe007f, 0x10fff0...0x10ffff, 0x0...0x10ffff]
        let specials: [Unicode.Scalar] = ["\\", "\"", "=", " ", "\n", "\r", "\t", "\u{85}", "\u{202E}", "\u{2029}"]
        func text() -> String {
            var s = String.UnicodeScalarView()
            for _ in 0..<Int.random(in: 0...12, using: &rng) {
                if Bool.random(using: &rng) {
                    s.append(specials.randomElement(using: &rng)!)
                } else {
                    let p = pools.randomElement(using: &rng)!
                    if let u = Unicode.Scalar(UInt32.random(in: p, using: &rng)) { s.append(u) }
                }
            }
            return String(s)
        }
        for _ in 0..<1000 {
            let keys = ["id", "text", "k\(Int.random(in: 0...9, using: &rng))"]
            let r = LogRecord(time: WallTime(unixMillis: Int64.random(in: 0...4_000_000_000_000, using: &rng)),
                              level: LogLevel.allCases.randomElement(using: &rng)!, component: "alert",
                              message: text(), fields: keys.map { ($0, text()) })
            for line in [r.formatted(), r.formatted(syslogPrefix: true)] {
                #expect(!line.unicodeScalars.contains(where: Self.forbidden), "\(line.unicodeScalars.map { String($0.value, radix: 16) })")
                // No part's text merges with the separator before it.
                let sc = Array(line.unicodeScalars)
                for i in sc.indices.dropFirst() where [" ", "=", "\"", "}"].contains(sc[i - 1]) {
                    #expect(!Self.combining(sc[i]), "\(line)")
                }
            }
            let back = Self.read(r.formatted(), fieldKeys: keys)
            #expect(back?.component == r.component)
            #expect(back?.message == r.message, "\(r.formatted())")
            #expect(back?.fields == r.fields.map(\.1), "\(r.formatted())")
        }
    }

    @Test func statusOutputShowsTheEscapedForm() {
        let e = LogRecord(time: WallTime(unixMillis: 0), level: .error, component: "link", message: "bad \u{202E}\u{1b}[2J")
        #expect(!e.escapedMessage.unicodeScalars.contains(where: Self.forbidden))
    }
}

/// Per-order lines are limited per reason, not per line: a flood of orders the box refuses
/// writes a bounded number of lines whose counts add up.
@Suite struct LogFloodTests {
    /// (lines written, orders accounted for: written + the counts in the summaries)
    static func run(_ n: Int, stepMicros: Int64, level: LogLevel = .warning, message: String = "order rejected",
                    fields: @escaping (Int) -> [(String, String)]) -> (lines: [LogRecord], accounted: Int) {
        let now = Mutex<Int64>(1_000_000)
        let hub = LogHub(clock: { WallTime(unixMillis: now.withLock { $0 } / 1000) })
        let sink = MemoryLogSink()
        hub.add(sink)
        hub.limitRepeats()
        for i in 0..<n {
            now.withLock { $0 += stepMicros }
            hub.emit(level, "alert", message, fields(i))
            // The runtime flushes every 5 s.
            if i % 1000 == 0 { hub.flushRepeats() }
        }
        now.withLock { $0 += 61_000_000 }
        hub.flushRepeats()
        var accounted = 0
        for r in sink.all where r.message.hasPrefix(message) {
            if let open = r.message.firstRange(of: " (repeated ") {
                let n = r.message[open.upperBound...].prefix { $0.isNumber }
                accounted += Int(n)!
            } else {
                accounted += 1
            }
        }
        return (sink.all, accounted)
    }

    @Test func hundredThousandQueueFullRejectsWriteABoundedNumberOfLines() {
        // 100 000 orders in 10 s (what the issue measured: 99 724 WARN lines).
        let (lines, accounted) = Self.run(100_000, stepMicros: 100) { [("id", "A-\($0)"), ("reason", "queue_full")] }
        #expect(lines.count == 2)
        #expect(accounted == 100_000)
        #expect(lines.last?.formatted().hasSuffix("WARN alert: order rejected (repeated 99999 times) reason=queue_full sample_id=A-99999") == true,
                "\(lines.map { $0.formatted() })")
    }

    @Test func aLongerFloodGetsOneSummaryPerWindow() {
        // 100 000 orders over 200 s: a line and a summary per 60 s window.
        let (lines, accounted) = Self.run(100_000, stepMicros: 2000) { [("id", "A-\($0)"), ("reason", "queue_full")] }
        #expect(lines.count <= 8, "\(lines.map { $0.formatted() })")
        #expect(accounted == 100_000)
    }

    @Test func cancelsForUnknownIdsAtInfoAreBoundedToo() {
        let (lines, accounted) = Self.run(300_000, stepMicros: 100, level: .info, message: "cancelled by server") {
            [("id", "X-\($0)"), ("was_playing", "false"), ("stopped_repeats", "0")]
        }
        // 30 s of flood: the first 100 written (normal activity stays visible), then one summary.
        #expect(lines.count == 101)
        #expect(accounted == 300_000)
    }

    @Test func differentReasonsAreCountedApart() {
        let (lines, accounted) = Self.run(10_000, stepMicros: 100) { i in [("id", "A-\(i)"), ("reason", i % 2 == 0 ? "queue_full" : "invalid_order")] }
        #expect(lines.count == 4)
        #expect(accounted == 10_000)
        #expect(lines.contains { $0.message == "order rejected (repeated 4999 times)" && $0.fields.contains { $0 == ("reason", "invalid_order") } })
    }

    @Test func atShutdownEveryPendingCountIsWritten() {
        let hub = LogHub(clock: { WallTime(unixMillis: 5_000) })
        let sink = MemoryLogSink()
        hub.add(sink)
        hub.limitRepeats()
        for i in 0..<500 { hub.emit(.warning, "alert", "order rejected", [("id", "A-\(i)"), ("reason", "queue_full")]) }
        hub.flushRepeats()
        #expect(sink.all.count == 1)  // the window is not over
        hub.flushRepeats(final: true)
        #expect(sink.all.last?.message == "order rejected (repeated 499 times)")
    }

    @Test func theFirstErrorOfAKindIsNeverSuppressedEvenWhenTheTableIsFull() {
        var r = RateLimiter(window: 60, maxTracked: 4)
        var out: [LogRecord] = []
        for i in 0..<1000 {
            out += r.admit(LogRecord(time: WallTime(unixMillis: Int64(i)), level: .warning, component: "link", message: "junk \(i % 50)"))
        }
        let e = LogRecord(time: WallTime(unixMillis: 2000), level: .error, component: "audio", message: "device gone")
        #expect(r.admit(e).last == e)
        #expect(r.tracked <= 4)
    }
}
