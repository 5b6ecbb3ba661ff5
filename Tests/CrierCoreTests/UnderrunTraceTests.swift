import Testing
@testable import CrierCore

/// The underrun warning's why (`UnderrunTrace`), from the audio loop's sleep and wake-up times.
@Suite struct UnderrunTraceTests {
    static let rate = 48000

    /// 40 ms queued (1 920 frames), asked to sleep 20 ms, woken after 95 ms: asleep past the queue.
    @Test func asleepPastWhatWasQueuedIsWokeLate() {
        var t = UnderrunTrace(rate: Self.rate)
        t.sleeping(at: 10, queued: 1920, asked: 0.020)
        t.woke(at: 10.095)
        let e = t.explain(now: 10.0952)
        #expect(e.cause == .wokeLate)
        #expect(e.fields.map(\.0) == ["slept_ms", "asked_ms", "queued_ms", "busy_ms", "why"])
        #expect(e.fields.map(\.1) == ["95.0", "20.0", "40.0", "0.2", "woke late"])
    }

    /// Woken in time, but the work after it outlasted what was left.
    @Test func awakeInTimeButTooLongIsBusy() {
        var t = UnderrunTrace(rate: Self.rate)
        t.sleeping(at: 5, queued: 2880, asked: nil)
        t.woke(at: 5.021)
        let e = t.explain(now: 5.090)
        #expect(e.cause == .busy)
        #expect(e.askedMs == nil && !e.fields.contains { $0.0 == "asked_ms" })
        #expect(e.fields.last! == ("why", "busy"))
    }

    @Test func neitherIsAShortQueue() {
        var t = UnderrunTrace(rate: Self.rate)
        t.sleeping(at: 1, queued: 4800, asked: 0.05)
        t.woke(at: 1.02)
        #expect(t.explain(now: 1.021).cause == .shortQueue)
    }

    /// Before the first sleep (the first fill of the device) nothing is known: said so, not guessed.
    @Test func beforeAnySleepIsUnknown() {
        let t = UnderrunTrace(rate: Self.rate)
        let e = t.explain(now: 3)
        #expect(e.cause == .unknown)
        #expect(e.fields.map(\.0) == ["why"])
        // Asleep but not yet woken (the underrun found by the first call after a wake-up that
        // was not recorded): unknown too, never a negative sleep.
        var u = UnderrunTrace(rate: Self.rate)
        u.sleeping(at: 4, queued: 100, asked: 0.01)
        #expect(u.explain(now: 4.5).cause == .unknown)
    }

    /// A self-paced device has no queue to read: the times are given, the cause is unknown.
    @Test func unknownQueueGivesTimesOnly() {
        var t = UnderrunTrace(rate: Self.rate)
        t.sleeping(at: 2, queued: nil, asked: 0.04)
        t.woke(at: 2.3)
        let e = t.explain(now: 2.3)
        #expect(e.cause == .unknown)
        #expect(e.fields.map(\.0) == ["slept_ms", "asked_ms", "busy_ms", "why"])
    }

    /// Over seeded random timings the cause is the one the times imply, exactly one of three, and
    /// no figure is negative (a queue the device reported below 0 after an xrun counts as 0).
    @Test(arguments: Array(UInt64(1)...20)) func theCauseFollowsTheTimes(seed: UInt64) {
        var rng = SplitMix(state: seed)
        for _ in 0..<200 {
            var t = UnderrunTrace(rate: Self.rate)
            let at = Double.random(in: 0...1e6, using: &rng)
            let queued = Int.random(in: -500...9600, using: &rng)
            let slept = Double.random(in: 0...0.3, using: &rng)
            let busy = Double.random(in: 0...0.1, using: &rng)
            t.sleeping(at: at, queued: queued, asked: Bool.random(using: &rng) ? Double.random(in: 0...0.1, using: &rng) : nil)
            t.woke(at: at + slept)
            let e = t.explain(now: at + slept + busy)
            let covered = Double(max(0, queued)) / Double(Self.rate)
            // Float sums: a case within a microsecond of a boundary is not asked about.
            guard abs(slept - covered) > 1e-6, abs(slept + busy - covered) > 1e-6 else { continue }
            let want: UnderrunTrace.Cause = slept >= covered ? .wokeLate : slept + busy >= covered ? .busy : .shortQueue
            #expect(e.cause == want, "slept \(slept) busy \(busy) queued \(queued)")
            #expect([e.sleptMs, e.queuedMs, e.busyMs].allSatisfy { ($0 ?? 0) >= 0 })
        }
    }
}
