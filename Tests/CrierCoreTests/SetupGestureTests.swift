import Testing
@testable import CrierCore

/// Both volume keys held together open the setup hotspot (docs/buttons.md, docs/setup.md#6-no-network-yet-the-setup-hotspot).
@Suite("Setup gesture: both volume keys held together")
struct SetupGestureTests {
    static let ms = 0.001

    /// Feeds (time, action, pressed) edges and ticks at every deadline up to `end`.
    static func run(_ edges: [(Double, ButtonAction, Bool)], until end: Double, hold: Double = 5) -> [Gesture] {
        let line = GestureRecognizer.LineConfig(mode: .repeating, pressedLevel: false, debounce: 20 * ms, hold: 1.0, repeatEvery: 0.25, stuckAfter: 30)
        var r = GestureRecognizer([.volumeUp: line, .volumeDown: line], setupHold: hold)
        var out: [Gesture] = []
        var i = 0
        while true {
            let nextEdge = i < edges.count ? edges[i].0 : .infinity
            let deadline = r.nextDeadline ?? .infinity
            let t = min(nextEdge, deadline)
            if t > end { break }
            if nextEdge <= deadline {
                out += r.feed(edges[i].1, level: !edges[i].2, at: nextEdge)
                i += 1
            } else {
                out += r.tick(now: t)
            }
        }
        return out + r.tick(now: end)
    }

    @Test("held together 5 s: one setupHold at exactly 5 s after the second key, no volume repeats meanwhile")
    func chord() {
        let g = Self.run([(1.0, .volumeUp, true), (1.3, .volumeDown, true), (9.0, .volumeUp, false), (9.1, .volumeDown, false)], until: 12)
        let setup = g.filter { $0.kind == .setupHold }
        #expect(setup.count == 1)
        #expect(abs(setup[0].at - (1.3 + 5)) < 1e-9)  // a level counts from when it began (debounce adds latency only)
        // one press each; no repeat of either key once both are down (up's own repeats would
        // start at 2.02: the second key came first)
        #expect(g.filter { $0.kind == .press }.map(\.action) == [.volumeUp, .volumeDown])
        #expect(g.filter { if case .repeat = $0.kind { return true } else { return false } }.isEmpty)
    }

    @Test("released before 5 s: nothing; one key held alone: repeats as before, no setupHold")
    func notLongEnough() {
        let short = Self.run([(1.0, .volumeUp, true), (1.1, .volumeDown, true), (5.9, .volumeDown, false), (6.0, .volumeUp, false)], until: 20)
        #expect(!short.contains { $0.kind == .setupHold })
        let alone = Self.run([(1.0, .volumeUp, true), (8.0, .volumeUp, false)], until: 10)
        #expect(!alone.contains { $0.kind == .setupHold })
        // exactly what the recognizer without the gesture gives (25 repeats: 2.0, 2.25, ... 8.0)
        #expect(same(alone, Self.run([(1.0, .volumeUp, true), (8.0, .volumeUp, false)], until: 10, hold: 0)))
        #expect(alone.filter { if case .repeat = $0.kind { return true } else { return false } }.count == 25)
    }

    @Test("held on: one setupHold per hold; released and held again: a second one")
    func oncePerHold() {
        let g = Self.run([(1.0, .volumeUp, true), (1.0, .volumeDown, true), (20.0, .volumeDown, false), (21.0, .volumeDown, true), (28.0, .volumeUp, false)], until: 30)
        #expect(g.filter { $0.kind == .setupHold }.count == 2)
    }

    @Test("setup.hold_seconds = 0: no gesture; Controls turns it into openSetup")
    func offAndControls() {
        #expect(!Self.run([(1.0, .volumeUp, true), (1.0, .volumeDown, true)], until: 20, hold: 0).contains { $0.kind == .setupHold })
        var c = Controls(config: ButtonsConfig(), restored: nil, now: 0, wall: WallTime(unixMillis: 0))
        #expect(c.handle(Gesture(.volumeUp, .setupHold, at: 6), now: 6, wall: WallTime(unixMillis: 6000), historyCount: 0) == [.openSetup])
    }

    @Test("a key bouncing during the hold does not restart it; a stuck key never makes one")
    func bounceAndStuck() {
        let g = Self.run([(1.0, .volumeUp, true), (1.0, .volumeDown, true), (3.0, .volumeUp, false), (3.005, .volumeUp, true)], until: 10)
        #expect(g.filter { $0.kind == .setupHold }.count == 1)
        // down-at-start (ignored until released) never counts
        let line = GestureRecognizer.LineConfig(mode: .repeating, pressedLevel: false, debounce: 20 * Self.ms, hold: 1.0, repeatEvery: 0.25, stuckAfter: 30)
        var r = GestureRecognizer([.volumeUp: line, .volumeDown: line], setupHold: 5)
        _ = r.start(.volumeUp, level: false, at: 0)
        _ = r.start(.volumeDown, level: false, at: 0)
        #expect(r.nextDeadline == nil)
        #expect(!r.tick(now: 20).contains { $0.kind == .setupHold })
    }
}
