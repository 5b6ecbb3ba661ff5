import Synchronization
import Testing
@testable import CrierCore

private let year: Int64 = 365 * 86400
private let trueStart: Int64 = 1_780_000_000

private func order(_ id: String, ts: Int64, key: [UInt8]) -> JSONObject {
    var o = JSONObject()
    o["type"] = .string("order")
    o["id"] = .string(id)
    o["kind"] = .string("new_customer")
    o["number"] = .number(JSONNumber(7))
    return OrderSigning.sign(o, ts: ts, key: key, mac: fakeMAC)
}

/// issue 35 item 1: a Pi has no RTC; its clock starts at the last saved time and steps when NTP
/// syncs (or someone runs date -s). Signed orders while the clock is not synchronized.
@Suite("Signed orders while the clock is not synchronized (issue 35)")
struct UnsynchronizedSigningTests {
    let key: [UInt8] = Array(0..<32)

    @Test("a Pi booting 90 days behind: the server's orders are accepted, not 'stale, ahead' (they were, until NTP synced)")
    func bootBehind() {
        let wall = trueStart - 90 * 86400
        var v = SignatureVerifier(key: key, mac: fakeMAC, startedAt: (wall, 0))
        #expect(v.check(order("A-1", ts: trueStart, key: key), now: wall, synchronized: false, monotonic: 5) == nil)
        #expect(v.check(order("A-2", ts: trueStart + 10, key: key), now: wall + 10, synchronized: false, monotonic: 15) == nil)
        // The same orders with the clock taken as synchronized: the ±300 s rule refuses them.
        var old = SignatureVerifier(key: key, mac: fakeMAC)
        #expect(old.check(order("A-1", ts: trueStart, key: key), now: wall)?.reason == .stale)
    }

    @Test("replays are still refused: a capture from before the clock at start, one behind the newest order, the same order again")
    func replays() {
        var v = SignatureVerifier(key: key, mac: fakeMAC, startedAt: (trueStart - 3600, 100))
        // Older than the clock at start (the last saved time is never later than the truth).
        let r0 = v.check(order("OLD", ts: trueStart - 3600 - 301, key: key), now: trueStart - 3600, synchronized: false, monotonic: 101)
        #expect(r0?.reason == .stale)
        #expect(r0?.message.contains("not synchronized") == true)
        // The first genuine order raises the estimate to the server's time.
        #expect(v.check(order("N-1", ts: trueStart, key: key), now: trueStart - 3600, synchronized: false, monotonic: 110) == nil)
        // A capture from 20 minutes ago (after the saved time, before the newest order): stale.
        #expect(v.check(order("CAP", ts: trueStart - 1200, key: key), now: trueStart - 3590, synchronized: false, monotonic: 120)?.reason == .stale)
        // Within the window behind: new, accepted; the same again: replayed.
        #expect(v.check(order("N-0", ts: trueStart - 200, key: key), now: trueStart - 3580, synchronized: false, monotonic: 130) == nil)
        #expect(v.check(order("N-1", ts: trueStart, key: key), now: trueStart - 3570, synchronized: false, monotonic: 140)?.reason == .replayed)
        // The estimate runs on: 1000 s later an order signed 1000 s after N-1 is fine, one
        // signed at N-1's time is not.
        #expect(v.check(order("N-2", ts: trueStart + 1000, key: key), now: trueStart - 2600, synchronized: false, monotonic: 1110) == nil)
        #expect(v.check(order("N-3", ts: trueStart - 10, key: key), now: trueStart - 2600, synchronized: false, monotonic: 1110)?.reason == .stale)
    }

    @Test("orders flow while the wall clock steps +1 year and −3 hours, unsynchronized: each accepted once, every replay refused")
    func stepsWhileOrdersFlow() {
        var v = SignatureVerifier(key: key, mac: fakeMAC, startedAt: (trueStart, 0))
        var offset: Int64 = 0  // the box's wall clock minus the true time
        var accepted: [String] = []
        var sent: [(String, Int64)] = []
        for i in 0..<300 {
            let mono = Double(i) * 10
            let truth = trueStart + Int64(i) * 10
            if i == 100 { offset += year }       // date -s a year ahead
            if i == 200 { offset -= year + 3 * 3600 }  // and back to 3 hours behind the truth
            let id = "O-\(i)"
            if v.check(order(id, ts: truth, key: key), now: truth + offset, synchronized: false, monotonic: mono) == nil { accepted.append(id) }
            sent.append((id, truth))
            // Every order sent so far, replayed: never accepted again.
            if i % 25 == 24 {
                for (rid, rts) in sent {
                    #expect(v.check(order(rid, ts: rts, key: key), now: truth + offset, synchronized: false, monotonic: mono) != nil, "replay of \(rid) accepted")
                }
            }
        }
        #expect(accepted == (0..<300).map { "O-\($0)" })
    }

    @Test("once synchronized, the ±300 s rule of the wall clock again (NTP stepped it to the true time)")
    func synchronizedAgain() {
        var v = SignatureVerifier(key: key, mac: fakeMAC, startedAt: (trueStart - 86400, 0))
        #expect(v.check(order("A", ts: trueStart, key: key), now: trueStart - 86400, synchronized: false, monotonic: 1) == nil)
        #expect(v.check(order("B", ts: trueStart + 5, key: key), now: trueStart + 5, synchronized: true, monotonic: 6) == nil)
        let ahead = v.check(order("C", ts: trueStart + 1000, key: key), now: trueStart + 6, synchronized: true, monotonic: 7)
        #expect(ahead?.reason == .stale)
        #expect(ahead?.message.contains("ahead of this device's clock") == true)
    }

    @Test("seeded: steps of either size at any time, replays at any time; no replay is ever accepted, no fresh order refused")
    func seeded() {
        for seed in 1...40 {
            var rng = SplitMix64(seed: UInt64(seed))
            var v = SignatureVerifier(key: key, mac: fakeMAC, startedAt: (trueStart - Int64(rng.next() % 100_000), 0))
            var offset = -Int64(rng.next() % 100_000)
            var sent: [(String, Int64)] = []
            for i in 0..<200 {
                let mono = Double(i) * 7
                let truth = trueStart + Int64(i) * 7
                if rng.next() % 20 == 0 { offset += Int64(rng.next() % UInt64(2 * year)) - year }
                if rng.next() % 4 == 0, let r = sent.randomElement(using: &rng) {
                    #expect(v.check(order(r.0, ts: r.1, key: key), now: truth + offset, synchronized: false, monotonic: mono) != nil)
                }
                let id = "S\(seed)-\(i)"
                #expect(v.check(order(id, ts: truth, key: key), now: truth + offset, synchronized: false, monotonic: mono) == nil, "seed \(seed) order \(i)")
                sent.append((id, truth))
            }
        }
    }
}

/// A wall clock and a monotonic clock the test moves.
private final class Clocks: Sendable {
    let wall = Mutex<Int64>(trueStart * 1000)
    let mono = Mutex<Double>(1000)
    func advance(_ s: Double) {
        wall.withLock { $0 += Int64(s * 1000) }
        mono.withLock { $0 += s }
    }
    func step(_ s: Int64) { wall.withLock { $0 += s * 1000 } }
}

@Suite("The log across a wall clock step (issue 35)")
struct ClockStepLogTests {
    private func hub(_ c: Clocks) -> (LogHub, MemoryLogSink) {
        let hub = LogHub(clock: { WallTime(unixMillis: c.wall.withLock { $0 }) })
        let sink = MemoryLogSink()
        hub.add(sink)
        hub.limitRepeats()
        hub.noteClockSteps(monotonic: { c.mono.withLock { $0 } })
        return (hub, sink)
    }

    @Test("a step of +1 year and one of −3 hours are each noted once, with their size, before the first line on the new clock")
    func noted() {
        let c = Clocks()
        let (hub, sink) = hub(c)
        let log = hub.logger("alert")
        log.info("said", ["id": "1"])
        c.advance(10)
        c.step(year)
        log.info("said", ["id": "2"])
        log.info("said", ["id": "3"])
        c.advance(10)
        c.step(-year - 3 * 3600)
        log.info("said", ["id": "4"])
        let lines = sink.lines
        #expect(lines.count == 6, "\(lines)")
        #expect(lines[1].contains("NOTICE clock: wall clock stepped by +31536000.0 s"), "\(lines[1])")
        #expect(lines[1].contains("step_s=+31536000.0"))
        #expect(lines[2].contains("id=2") && lines[3].contains("id=3"))
        #expect(lines[4].contains("wall clock stepped by -31546800.0 s"), "\(lines[4])")
        #expect(lines[5].contains("id=4"))
    }

    @Test("slewing (NTP's small corrections, 1.5 s over an hour) is not a step")
    func slewing() {
        let c = Clocks()
        let (hub, sink) = hub(c)
        for i in 0..<360 {
            c.advance(10)
            if i % 24 == 0 { c.step(0) ; c.wall.withLock { $0 += 100 } }
            hub.logger("x").info("tick")
        }
        #expect(!sink.lines.contains { $0.contains("stepped") })
    }

    @Test("an idle box notes the step at the next flush")
    func idle() {
        let c = Clocks()
        let (hub, sink) = hub(c)
        c.step(-3 * 3600)
        hub.flushRepeats()
        #expect(sink.lines.count == 1)
        #expect(sink.lines.first?.contains("wall clock stepped by -10800.0 s") == true)
        hub.flushRepeats()
        #expect(sink.lines.count == 1)
    }

    @Test("the detector: threshold either way")
    func detector() {
        var d = ClockStepDetector(threshold: 2)
        #expect(d.observe(wall: WallTime(unixMillis: 100_000), monotonic: 10) == nil)
        #expect(d.observe(wall: WallTime(unixMillis: 111_900), monotonic: 20) == nil)
        #expect(d.observe(wall: WallTime(unixMillis: 125_000), monotonic: 30).map { ($0 * 10).rounded() } == 31)
        #expect(d.observe(wall: WallTime(unixMillis: 100_000), monotonic: 40).map { ($0 * 10).rounded() } == -350)
    }
}
