import Testing
@testable import CrierCore

/// Issue 31 item 1: a journal write that fails for lack of space never turns into a second
/// saying. The rule with injected failures; the adapter is tested with a real full file
/// system (Tests/integration/test_link.py, test_mqtt.py).
@Suite("Journal space: a full data partition holds the alerts, never says one twice")
struct JournalSpaceTests {
    @Test("ENOSPC with the reserve held: release it and retry; alerts are held from then on, until the reserve is made again")
    func releaseRetryHoldResume() {
        var j = JournalSpace(reserveBytes: 4 << 20, resumeMargin: 1 << 20)
        #expect(j.started(reserveFound: true, now: 0) == .none)
        #expect(!j.holdsAlerts && !j.needsCheck)
        #expect(j.wrote("acks", ok: true, noSpace: false, now: 1) == (.none, .unchanged))
        let (a, t) = j.wrote("acks", ok: false, noSpace: true, detail: "cannot write acks: ENOSPC", now: 2)
        #expect(a == .releaseAndRetry && t == .holding)
        #expect(j.holdsAlerts && j.needsCheck && j.lastProblem == "cannot write acks: ENOSPC")
        // The retry in the room the reserve left works: still held (no reserve for the next one).
        #expect(j.wrote("acks", ok: true, noSpace: false, now: 2) == (.none, .unchanged))
        #expect(j.holdsAlerts)
        // Not enough room yet: the reserve and the margin.
        #expect(j.check(freeBytes: (5 << 20) - 1) == .none)
        #expect(j.check(freeBytes: 5 << 20) == .makeReserve)
        #expect(j.reserveMade(.ok, now: 12) == .resumed(heldFor: 10))
        #expect(!j.holdsAlerts && j.lastProblem == nil)
    }

    @Test("a second ENOSPC with the reserve gone: that journal is failing; alerts resume only once it is written again and the reserve is back")
    func failingJournal() {
        var j = JournalSpace()
        _ = j.started(reserveFound: true, now: 0)
        _ = j.wrote("acks", ok: false, noSpace: true, now: 1)
        #expect(j.wrote("acks", ok: false, noSpace: true, now: 1) == (.none, .unchanged), "no second release: nothing left to free")
        #expect(j.wrote("inbox", ok: false, noSpace: true, now: 2) == (.none, .unchanged))
        #expect(j.failing == ["acks", "inbox"])
        #expect(j.reserveMade(.ok, now: 3) == .unchanged, "the journals still fail")
        #expect(j.holdsAlerts)
        #expect(j.check(freeBytes: 1 << 40) == .none, "the reserve is there")
        #expect(j.wrote("acks", ok: true, noSpace: false, now: 4) == (.none, .unchanged))
        #expect(j.wrote("inbox", ok: true, noSpace: false, now: 5) == (.none, .resumed(heldFor: 4)))
    }

    @Test("no room for the reserve at start: held from the start, resumed when it can be made")
    func fullAtStart() {
        var j = JournalSpace()
        #expect(j.started(reserveFound: false, now: 0) == .makeReserve)
        #expect(j.reserveMade(.noSpace, now: 0) == .unchanged)
        #expect(j.holdsAlerts && j.needsCheck)
        #expect(j.reserveMade(.ok, now: 7) == .resumed(heldFor: 7))
    }

    @Test("another failure (read-only card, permissions) holds nothing: that box has no durable memory and says orders from memory, as documented")
    func otherFailuresDoNotHold() {
        var j = JournalSpace()
        _ = j.started(reserveFound: false, now: 0)
        #expect(j.reserveMade(.failed("read-only file system"), now: 0) == .resumed(heldFor: 0))
        #expect(!j.holdsAlerts && !j.needsCheck)
        #expect(j.wrote("acks", ok: false, noSpace: false, now: 1) == (.none, .unchanged))
        #expect(!j.holdsAlerts)
        // ENOSPC there (no reserve to release): held while that journal fails.
        #expect(j.wrote("acks", ok: false, noSpace: true, now: 2) == (.none, .holding))
        #expect(j.wrote("acks", ok: true, noSpace: false, now: 3) == (.none, .resumed(heldFor: 1)))
    }

    @Test("seeded random failures: an alert never begins while an outcome could go unrecorded")
    func invariant() {
        for seed in UInt64(1)...200 {
            var rng = SplitMix(state: seed)
            var j = JournalSpace(reserveBytes: 100, resumeMargin: 10)
            var reserveOnDisk = Bool.random(using: &rng)
            if j.started(reserveFound: reserveOnDisk, now: 0) == .makeReserve {
                _ = j.reserveMade(.noSpace, now: 0)
            }
            var free: Int64 = 0
            for step in 0..<200 {
                let now = Double(step)
                switch Int.random(in: 0..<4, using: &rng) {
                case 0: free = Int64.random(in: 0...200, using: &rng)
                case 1:
                    if j.check(freeBytes: free) == .makeReserve {
                        let ok = free >= 100
                        _ = j.reserveMade(ok ? .ok : .noSpace, now: now)
                        if ok { free -= 100; reserveOnDisk = true }
                    }
                default:
                    // A journal write of 10 bytes (an outcome) after an alert began.
                    let mayBegin = !j.holdsAlerts
                    let journal = Bool.random(using: &rng) ? "acks" : "inbox"
                    var ok = free >= 10
                    var (a, _) = j.wrote(journal, ok: ok, noSpace: !ok, now: now)
                    if a == .releaseAndRetry {
                        #expect(reserveOnDisk, "seed \(seed): released a reserve that was not there")
                        reserveOnDisk = false
                        free += 100
                        ok = free >= 10
                        (a, _) = j.wrote(journal, ok: ok, noSpace: !ok, now: now)
                    }
                    if ok { free -= 10 }
                    // An alert allowed to begin always gets its outcome recorded.
                    if mayBegin { #expect(ok, "seed \(seed) step \(step): an alert began and its outcome was not recorded") }
                }
            }
        }
    }
}
