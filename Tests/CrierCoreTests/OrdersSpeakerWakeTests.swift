import Testing
@testable import CrierCore


/// How the loop waits: the SpeakerWake rules, or (to show the simulation catches the bug of
/// issue 13 item 1) what the daemon did before them.
private protocol WaitModel {
    mutating func poke() -> Bool
    /// nil: go on at once; else the timers to cancel (their generations) and one to start.
    mutating func begin(until: Double?, now: Double) -> (cancel: [UInt64], start: SpeakerWake.Timer?)?
    mutating func fired(_ g: UInt64) -> Bool
}

extension SpeakerWake: WaitModel {
    mutating func begin(until d: Double?, now: Double) -> (cancel: [UInt64], start: SpeakerWake.Timer?)? {
        let old = armed?.generation
        switch beginWait(until: d, now: now) {
        case .proceed: return nil
        case .wait(let cancel, let start): return (cancel && old != nil ? [old!] : [], start)
        }
    }
    mutating func fired(_ g: UInt64) -> Bool { timerFired(generation: g) }
}

/// The daemon before the fix: a `poked` flag, a timer task per wait cancelled when the wait ended
/// early, and a timer that pokes when it returns, cancelled or not.
private struct LegacyWake: WaitModel {
    var poked = false
    var waiting = false
    var gen: UInt64 = 0
    var live: UInt64?
    mutating func poke() -> Bool {
        if waiting { waiting = false; return true }
        poked = true
        return false
    }
    mutating func begin(until d: Double?, now: Double) -> (cancel: [UInt64], start: SpeakerWake.Timer?)? {
        if poked { poked = false; return nil }
        waiting = true
        guard let d else { return ([], nil) }
        gen += 1
        return ([], SpeakerWake.Timer(deadline: max(now, d), generation: gen))
    }
    mutating func fired(_ g: UInt64) -> Bool { poke() }
    /// The old loop cancelled its own timer after every wait.
    func resumed() -> [UInt64] { [gen] }
}

/// The speaker loop of Daemon.speakerLoop with time simulated: the real LinkPromptSchedule and
/// AlertQueue, saying takes time, link events and orders arrive at random, a cancelled timer
/// "fires" at once (what a cancelled `Task.sleep` does). Counts loop turns.
private struct LoopSim<W: WaitModel> {
    var wait: W
    var now = 0.0
    var prompts: LinkPromptSchedule
    var queue: AlertQueue
    var statusPrompts: [Templates.Name] = []
    var held = false
    /// (time, kind): external events still to come.
    var events: [(Double, Int)]
    /// Timers running: (fire time, generation).
    var timers: [(Double, UInt64)] = []
    var turnTimes: [Double] = []
    var externalTimes: [Double] = []
    var sayings: [Double] = []
    var orderSeq = 0
    var rng: SplitMix
    let legacyCancels: Bool
    /// Simulated seconds to run (the link-down prompt repeats for ever while the link is down).
    let horizon = 900.0

    init(wait: W, seed: UInt64, legacy: Bool) {
        self.wait = wait
        legacyCancels = legacy
        rng = SplitMix(state: seed)
        var c = StatusPromptConfig()
        c.onStart = Bool.random(using: &rng)
        c.onLinkUp = Bool.random(using: &rng)
        c.onLinkDown = Bool.random(using: &rng) || true
        c.linkDownAfter = Double(Int.random(in: 1...40, using: &rng))
        c.linkDownRepeat = Double(Int.random(in: 10...60, using: &rng))
        prompts = LinkPromptSchedule(config: c, startedAt: 0)
        let repeatEvery = Bool.random(using: &rng) ? 0 : Double(Int.random(in: 1...20, using: &rng))
        queue = AlertQueue(config: AlertConfig(repeatEvery: repeatEvery, repeatMax: Int.random(in: 0...3, using: &rng)))
        if c.onStart { statusPrompts.append(.started) }
        // Link history: never reachable, or up and down at random; some orders and mute toggles.
        var ev: [(Double, Int)] = []
        let neverUp = Bool.random(using: &rng)
        for _ in 0..<Int.random(in: 0...25, using: &rng) {
            let kind = neverUp ? [2, 3][Int.random(in: 0...1, using: &rng)] : Int.random(in: 0...3, using: &rng)
            ev.append((Double.random(in: 0...600, using: &rng), kind))
        }
        // A startup burst: buttons and the link poke at t≈0 (what started the runaway).
        ev.append((0.001, 3))
        events = ev.sorted { $0.0 < $1.0 }
    }

    mutating func external(_ kind: Int) {
        externalTimes.append(now)
        switch kind {
        case 0: if let p = prompts.connected() { statusPrompts.append(p) }
        case 1: prompts.disconnected(now: now)
        case 2:
            orderSeq += 1
            _ = queue.add(Order(id: "o\(orderSeq)", kind: .newCustomer(number: orderSeq), ttl: Bool.random(using: &rng) ? 5 : nil), now: now)
        default: held.toggle()
        }
        _ = wait.poke()
    }

    /// Advances time to `t`, delivering what happens meanwhile (the loop is busy: no resume).
    mutating func busy(until t: Double) {
        while let e = events.first, e.0 <= t {
            events.removeFirst()
            now = max(now, e.0)
            external(e.1)
        }
        while let i = timers.indices.min(by: { timers[$0].0 < timers[$1].0 }), timers[i].0 <= t {
            let (at, g) = timers.remove(at: i)
            now = max(now, at)
            _ = wait.fired(g)
        }
        now = max(now, t)
    }

    /// Blocks until a poke or timer resumes the waiter; false when nothing ever will.
    mutating func block() -> Bool {
        while true {
            let nextEvent = events.first?.0
            let nextTimer = timers.map(\.0).min()
            guard let t = [nextEvent, nextTimer].compactMap({ $0 }).min(), t <= horizon else { return false }
            now = max(now, t)
            if let i = timers.firstIndex(where: { $0.0 <= t }) {
                let g = timers.remove(at: i).1
                if wait.fired(g) { return true }
            } else {
                let e = events.removeFirst()
                external(e.1)
                // external() pokes; a waiting model resumed.
                return true
            }
        }
    }

    /// Runs until nothing can happen any more or `limit` turns; returns false at the limit.
    mutating func run(limit: Int) -> Bool {
        for _ in 0..<limit {
            turnTimes.append(now)
            if let p = prompts.due(now: now), !statusPrompts.contains(p) { statusPrompts.append(p) }
            _ = queue.expire(now: now)
            var alert: Alert?
            if !held { alert = queue.next(now: now).alert }
            if let alert {
                sayings.append(now)
                busy(until: now + 2)
                _ = queue.finished(alert, now: now)
            } else if !statusPrompts.isEmpty {
                statusPrompts.removeFirst()
                sayings.append(now)
                busy(until: now + 1.5)
            } else {
                var wakeAt = held ? queue.nextExpiry : queue.nextWakeup(now: now)
                if let p = prompts.nextDownPrompt { wakeAt = min(wakeAt ?? p, p) }
                guard let plan = wait.begin(until: wakeAt, now: now) else { continue }
                // A cancelled Task.sleep returns at once: its timer "fires" now.
                for g in plan.cancel {
                    timers.removeAll { $0.1 == g }
                    timers.append((now, g))
                }
                if let t = plan.start { timers.append((t.deadline, t.generation)) }
                if !block() { return true }
                if legacyCancels, let l = wait as? LegacyWake {
                    for g in l.resumed() where timers.contains(where: { $0.1 == g }) {
                        timers.removeAll { $0.1 == g }
                        timers.append((now, g))
                    }
                }
            }
        }
        return false
    }

    /// The most loop turns in any one simulated second, less the events and sayings in it.
    var worstIdleTurnsPerSecond: Int {
        // Every list is in time order: count each window [start, start+1) with two pointers.
        func counts(_ ts: [Double]) -> [Int] {
            var out: [Int] = []
            var lo = 0, hi = 0
            for start in turnTimes {
                while lo < ts.count && ts[lo] < start { lo += 1 }
                hi = max(hi, lo)
                while hi < ts.count && ts[hi] < start + 1 { hi += 1 }
                out.append(hi - lo)
            }
            return out
        }
        let t = counts(turnTimes), e = counts(externalTimes), s = counts(sayings)
        return t.indices.map { t[$0] - e[$0] - s[$0] }.max() ?? 0
    }
}

@Suite("Speaker loop wake-ups")
struct OrdersSpeakerWakeTests {
    @Test("idle stays idle: over seeded random prompt settings and link histories, a handful of loop turns per simulated second at most")
    func loopNeverSpins() {
        for seed in UInt64(1)...300 {
            var sim = LoopSim(wait: SpeakerWake(), seed: seed, legacy: false)
            let settled = sim.run(limit: 20_000)
            #expect(settled, "seed \(seed): the loop did not settle within 20 000 turns")
            // 1/minSleep turns for a deadline that stays in the past, plus the turn after one.
            #expect(sim.worstIdleTurnsPerSecond <= Int(1 / SpeakerWake.minSleep) + 2, "seed \(seed): \(sim.worstIdleTurnsPerSecond) idle turns in one second")
        }
    }

    @Test("the simulation catches the old wait (a cancelled timer ended the next wait): it spun at one instant")
    func legacyWaitSpins() {
        var spun = 0
        for seed in UInt64(1)...10 {
            var sim = LoopSim(wait: LegacyWake(), seed: seed, legacy: true)
            if !sim.run(limit: 5_000) || sim.worstIdleTurnsPerSecond > 1000 { spun += 1 }
        }
        #expect(spun > 0)
    }

    @Test("a stale timer never ends a later wait; pokes coalesce; an unchanged deadline keeps its timer")
    func rules() {
        var w = SpeakerWake()
        guard case .wait(false, let t1?) = w.beginWait(until: 30, now: 0) else { Issue.record("expected a timer"); return }
        #expect(w.poke() == true)  // an order: the wait ends
        // The next wait with the same deadline keeps the same timer: no new task per turn.
        let r1 = w.beginWait(until: 30, now: 1)
        #expect(r1 == .wait(cancelTimer: false, start: nil))
        let r2 = w.poke()
        #expect(r2 == true)
        guard case .wait(true, let t2?) = w.beginWait(until: 40, now: 2) else { Issue.record("expected a new timer"); return }
        let r3 = w.timerFired(generation: t1.generation)
        #expect(r3 == false, "the replaced timer is stale")
        #expect(w.waiting)
        let r4 = w.timerFired(generation: t2.generation)
        #expect(r4 == true)
        // Pokes while busy: one wait skipped, not one per poke.
        _ = w.poke(); _ = w.poke(); _ = w.poke()
        let r5 = w.beginWait(until: nil, now: 3)
        #expect(r5 == .proceed)
        let r6 = w.beginWait(until: nil, now: 3)
        #expect(r6 == .wait(cancelTimer: false, start: nil))
    }

    @Test("a deadline already passed still waits minSleep")
    func pastDeadline() {
        var w = SpeakerWake()
        guard case .wait(_, let t?) = w.beginWait(until: 5, now: 10) else { Issue.record("expected a timer"); return }
        #expect(t.deadline == 10 + SpeakerWake.minSleep)
        let r7 = w.timerFired(generation: t.generation)
        #expect(r7)
        // Looked at again before that short timer ran out: the same timer, not a new one.
        guard case .wait(_, let t2?) = w.beginWait(until: 5, now: 10.06) else { Issue.record("expected a timer"); return }
        _ = w.poke()
        let r8 = w.beginWait(until: 5, now: 10.07)
        #expect(r8 == .wait(cancelTimer: false, start: nil))
        #expect(t2.deadline > 10.06)
    }
}
