import Testing
@testable import CrierCore

@Suite struct RealtimeWaitBudgetTests {
    @Test func ordersAreWithinBudgetAndAFloodIsNot() {
        var b = RealtimeWaitBudget()
        // 100 orders a second at 50 µs each: 0.5% of a core, always real-time.
        for i in 0..<1000 {
            let now = Double(i) * 0.01
            b.worked(50e-6, now: now)
            #expect(b.allowsRealtime(now: now))
        }
        // A flood: 25 ms of work in one second: ordinary for the rest of it and the next.
        var f = RealtimeWaitBudget()
        f.worked(0.015, now: 10.0)
        #expect(f.allowsRealtime(now: 10.0))
        f.worked(0.010, now: 10.5)
        #expect(!f.allowsRealtime(now: 10.5) && !f.allowsRealtime(now: 11.9))
        #expect(f.realtimeAgain(now: 10.5) == 12.0)
        #expect(f.allowsRealtime(now: 12.0) && f.realtimeAgain(now: 12.0) == nil)
        f.worked(-1, now: 12.0)  // a clock that went back counts nothing
        #expect(f.allowsRealtime(now: 12.0))
    }

    /// Over seeded random work: whenever the thread is allowed to wait at real-time priority,
    /// the work it did in the current window is within the budget; and a thread that stays
    /// within budget is never made ordinary.
    @Test(arguments: 0..<20)
    func realtimeNeverFollowsAWindowOverBudget(seed: Int) {
        var rng = SplitMix64(seed: UInt64(seed) &+ 99)
        var b = RealtimeWaitBudget(window: 1, maxBusy: 0.02)
        var now = 0.0
        var windowStart = -Double.infinity, busy = 0.0
        let flooding = seed % 2 == 0
        for _ in 0..<5000 {
            now += Double.random(in: 0.0001...0.05, using: &rng)
            let work = flooding ? Double.random(in: 0...0.004, using: &rng) : Double.random(in: 0...0.0001, using: &rng)
            b.worked(work, now: now)
            if now - windowStart >= 1 { windowStart = now; busy = 0 }
            busy += work
            if busy > 0.02 { #expect(!b.allowsRealtime(now: now)) }
            if !flooding { #expect(b.allowsRealtime(now: now)) }
        }
    }
}
