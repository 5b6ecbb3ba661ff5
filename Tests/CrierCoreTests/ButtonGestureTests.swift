import Testing
@testable import CrierCore

/// Drives a recognizer like the reader thread does: feed each edge at its time, and in between
/// tick exactly at `nextDeadline`. Records when each gesture came out, so a late deadline shows.
private struct Timeline {
    var r: GestureRecognizer
    var out: [(emitted: Double, g: Gesture)] = []

    init(_ configs: [ButtonAction: GestureRecognizer.LineConfig]) { r = GestureRecognizer(configs) }

    /// `edges`: (time, pressed) for one button; levels are electrical active-low.
    mutating func run(_ a: ButtonAction, _ edges: [(Double, Bool)], until end: Double) {
        var i = 0
        while true {
            let nextEdge = i < edges.count ? edges[i].0 : Double.infinity
            let deadline = r.nextDeadline ?? .infinity
            let t = min(nextEdge, deadline)
            if t > end { break }
            if nextEdge <= deadline {
                for g in r.feed(a, level: !edges[i].1, at: nextEdge) { out.append((nextEdge, g)) }
                i += 1
            } else {
                for g in r.tick(now: t) { out.append((t, g)) }
            }
        }
        for g in r.tick(now: end) { out.append((end, g)) }
    }

    var gestures: [Gesture] { out.map(\.g) }
}

private let ms = 0.001

/// Equal kinds and times within a microsecond (times are sums of doubles).
func same(_ a: [Gesture], _ b: [Gesture]) -> Bool {
    a.count == b.count && zip(a, b).allSatisfy { $0.action == $1.action && $0.kind == $1.kind && abs($0.at - $1.at) < 1e-6 }
}

private func line(_ mode: GestureMode) -> GestureRecognizer.LineConfig {
    .init(mode: mode, pressedLevel: false, debounce: 20 * ms, hold: 1.0, repeatEvery: 0.25, stuckAfter: 30)
}

@Suite("Gesture recognizer timelines")
struct ButtonGestureTests {
    @Test("contact bounce on press and release gives exactly one press")
    func bounce() {
        var tl = Timeline([.mute: line(.immediate)])
        // Press at 1.000 with 3 ms of chatter, release at 1.200 with chatter.
        tl.run(.mute, [(1.000, true), (1.001, false), (1.002, true), (1.003, false), (1.004, true),
                       (1.200, false), (1.201, true), (1.202, false)], until: 3)
        #expect(tl.gestures == [Gesture(.mute, .press, at: 1.004 + 20 * ms)])
        // It came out at its own time, not later.
        #expect(tl.out[0].emitted == tl.out[0].g.at)
    }

    @Test("a glitch shorter than debounce is ignored")
    func glitch() {
        var tl = Timeline([.acknowledge: line(.immediate)])
        tl.run(.acknowledge, [(1.0, true), (1.015, false)], until: 5)
        #expect(tl.gestures.isEmpty)
    }

    @Test("an immediate button fires on press, not on release, and holding does nothing")
    func immediate() {
        var tl = Timeline([.acknowledge: line(.immediate)])
        tl.run(.acknowledge, [(2.0, true), (5.0, false)], until: 6)
        #expect(tl.gestures == [Gesture(.acknowledge, .press, at: 2.02)])
    }

    @Test("a short press of a press-or-hold button fires on release, never a hold")
    func shortPress() {
        var tl = Timeline([.replay: line(.pressOrHold)])
        tl.run(.replay, [(1.0, true), (1.3, false)], until: 4)
        #expect(tl.gestures == [Gesture(.replay, .press, at: 1.32)])
    }

    @Test("holding a press-or-hold button fires hold at hold_ms and no press on release")
    func hold() {
        var tl = Timeline([.replay: line(.pressOrHold)])
        tl.run(.replay, [(1.0, true), (3.5, false)], until: 5)
        #expect(tl.gestures == [Gesture(.replay, .hold, at: 2.0)])
        #expect(tl.out[0].emitted == 2.0)
    }

    @Test("release just before hold_ms is a press; a release bounce near hold_ms does not fake a hold")
    func releaseRacesHold() {
        var tl = Timeline([.replay: line(.pressOrHold)])
        tl.run(.replay, [(1.0, true), (1.99, false)], until: 3)
        #expect(tl.gestures == [Gesture(.replay, .press, at: 2.01)])

        // A 5 ms dropout across the hold moment is a glitch: the hold still counts, at 2.0.
        var tl2 = Timeline([.replay: line(.pressOrHold)])
        tl2.run(.replay, [(1.0, true), (1.998, false), (2.003, true), (2.5, false)], until: 3)
        #expect(tl2.gestures == [Gesture(.replay, .hold, at: 2.0)])
    }

    @Test("a repeating button steps on press, then every repeat_ms after hold_ms")
    func holdRepeat() {
        var tl = Timeline([.volumeUp: line(.repeating)])
        tl.run(.volumeUp, [(1.0, true), (2.6, false)], until: 4)
        #expect(tl.gestures == [
            Gesture(.volumeUp, .press, at: 1.02),
            Gesture(.volumeUp, .repeat(1), at: 2.0),
            Gesture(.volumeUp, .repeat(2), at: 2.25),
            Gesture(.volumeUp, .repeat(3), at: 2.5),
        ])
        #expect(tl.out.allSatisfy { $0.emitted == $0.g.at })
    }

    @Test("a late tick still yields each repeat with its own time")
    func lateTick() {
        var r = GestureRecognizer([.volumeDown: line(.repeating)])
        _ = r.feed(.volumeDown, level: false, at: 0)
        let g = r.tick(now: 1.6)
        #expect(g.map(\.kind) == [.press, .repeat(1), .repeat(2), .repeat(3)])
        #expect(g.map(\.at) == [0.02, 1.0, 1.25, 1.5])
    }

    @Test("stuck down > 30 s is reported once, then ignored until released")
    func stuck() {
        var tl = Timeline([.volumeUp: line(.repeating), .replay: line(.pressOrHold)])
        tl.run(.replay, [(0, true), (100, false), (101, true), (101.1, false)], until: 200)
        #expect(same(tl.gestures, [
            Gesture(.replay, .hold, at: 1),
            Gesture(.replay, .stuck, at: 30),
            Gesture(.replay, .unstuck, at: 100.02),
            Gesture(.replay, .press, at: 101.12),
        ]))

        var tl2 = Timeline([.volumeUp: line(.repeating)])
        tl2.run(.volumeUp, [(0, true)], until: 120)
        let kinds = tl2.gestures.map(\.kind)
        #expect(kinds.first == .press)
        #expect(kinds.last == .stuck)
        #expect(kinds.filter { $0 == .stuck }.count == 1)
        // Repeats from 1 s to just before 30 s, every 0.25 s, then nothing more.
        #expect(kinds.count == 1 + 116 + 1)
        #expect(tl2.r.nextDeadline == nil)
    }

    @Test("a button already down at start is ignored until released")
    func downAtStart() {
        var r = GestureRecognizer([.mute: line(.immediate)])
        #expect(r.start(.mute, level: false, at: 0) == [Gesture(.mute, .stuck, at: 0)])
        #expect(r.tick(now: 50).isEmpty)
        #expect(r.feed(.mute, level: true, at: 60).isEmpty)
        #expect(r.tick(now: 61) == [Gesture(.mute, .unstuck, at: 60.02)])
        _ = r.feed(.mute, level: false, at: 70)
        #expect(r.tick(now: 71) == [Gesture(.mute, .press, at: 70.02)])
    }

    @Test("active-high lines, and buttons are independent")
    func polarityAndIndependence() {
        var cfg = line(.immediate)
        cfg.pressedLevel = true
        var r = GestureRecognizer([.mute: cfg, .acknowledge: line(.immediate)])
        _ = r.start(.mute, level: false, at: 0)
        _ = r.start(.acknowledge, level: true, at: 0)
        _ = r.feed(.mute, level: true, at: 1)
        _ = r.feed(.acknowledge, level: false, at: 1.01)
        #expect(r.tick(now: 2) == [Gesture(.mute, .press, at: 1.02), Gesture(.acknowledge, .press, at: 1.03)])
        #expect(r.feed(.volumeUp, level: false, at: 3).isEmpty)  // not fitted
    }

    @Test("built from config: only fitted buttons, timings from ms keys")
    func fromConfig() {
        var c = ButtonsConfig()
        c[.acknowledge].line = nil
        c[.replay].holdMs = 1500
        c[.mute].bias = .pullDown
        let r = GestureRecognizer(config: c)
        #expect(r.actions == [.volumeUp, .volumeDown, .mute, .replay])
        #expect(r.lines[.replay]!.config.hold == 1.5)
        #expect(r.lines[.mute]!.config.pressedLevel == true)
        #expect(r.lines[.volumeUp]!.config.pressedLevel == false)
        #expect(r.lines[.volumeUp]!.config.mode == .repeating)
    }
}
