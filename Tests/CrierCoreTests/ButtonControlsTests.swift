import Testing
@testable import CrierCore

private let t0 = WallTime(unixMillis: 1_764_489_600_000)  // 2025-11-30T08:00:00Z

private func wall(_ s: Double) -> WallTime { WallTime(unixMillis: t0.unixMillis + Int64(s * 1000)) }

private func g(_ a: ButtonAction, _ k: Gesture.Kind = .press, _ at: Double = 0) -> Gesture { Gesture(a, k, at: at) }

private func gainOf(_ level: Int, _ c: ButtonsConfig = ButtonsConfig()) -> Double {
    VolumeCurve.gain(level: level, steps: c.volumeSteps, minDb: c.volumeMinDb)
}

private struct Rig {
    var c: Controls
    var now = 0.0
    init(_ config: ButtonsConfig = ButtonsConfig(), restored: ControlState? = nil) {
        c = Controls(config: config, restored: restored, now: 0, wall: t0)
    }
    mutating func press(_ a: ButtonAction, _ k: Gesture.Kind = .press, history: Int = 0) -> [ControlEffect] {
        c.handle(g(a, k, now), now: now, wall: wall(now), historyCount: history)
    }
    mutating func at(_ t: Double) -> [ControlEffect] {
        now = t
        return c.tick(now: t, wall: wall(t))
    }
}

@Suite("Controls: volume, mute, replay, acknowledge")
struct ButtonControlsTests {
    @Test("defaults: level 7 of 10, gains applied at start, nothing persisted yet")
    func startDefaults() {
        var r = Rig()
        #expect(r.c.volume == 7)
        #expect(r.c.start() == [.setGain(OutputGain(prompts: gainOf(7), alerts: gainOf(7), holdAlerts: false))])
        #expect(r.c.start().isEmpty)
    }

    @Test("a volume step sets the gain, clicks and persists; the ends say so")
    func volumeSteps() {
        var r = Rig()
        #expect(r.press(.volumeUp) == [.setGain(OutputGain(prompts: gainOf(8), alerts: gainOf(8), holdAlerts: false)),
                                       .click, .persist(ControlState(volume: 8))])
        _ = r.press(.volumeUp)
        let top = r.press(.volumeUp)
        #expect(top.contains(.say(.volumeMax)) && !top.contains(.click))
        #expect(r.c.volume == 10)
        #expect(r.press(.volumeUp) == [.say(.volumeMax)])          // press at the end: said again
        #expect(r.press(.volumeUp, .repeat(3)).isEmpty)            // held at the end: once is enough
        for _ in 0..<9 { _ = r.press(.volumeDown, .repeat(1)) }
        #expect(r.c.volume == 1)
        #expect(r.press(.volumeDown, .repeat(2)).contains(.say(.volumeMin)))
        #expect(r.press(.volumeDown) == [.say(.volumeMin)])
        #expect(r.c.volume == 0)
    }

    @Test("mute: prompts silent, orders at the floor, toggles back with a click")
    func muteFloor() {
        var r = Rig()
        let e = r.press(.mute)
        #expect(e == [.setGain(OutputGain(prompts: 0, alerts: gainOf(4), holdAlerts: false)),
                      .persist(ControlState(volume: 7, muted: true, mutedSince: t0))])
        r.now = 10
        #expect(r.press(.mute) == [.setGain(OutputGain(prompts: gainOf(7), alerts: gainOf(7), holdAlerts: false)),
                                   .click, .persist(ControlState(volume: 7))])
        #expect(r.c.nextDeadline == nil)
    }

    @Test("mute with mute.alerts = queue holds orders until mute ends")
    func muteQueue() {
        var c = ButtonsConfig()
        c.muteAlerts = .queue
        var r = Rig(c)
        #expect(r.press(.mute).first == .setGain(OutputGain(prompts: 0, alerts: gainOf(7), holdAlerts: true)))
        #expect(r.press(.mute).first == .setGain(OutputGain(prompts: gainOf(7), alerts: gainOf(7), holdAlerts: false)))
    }

    @Test("mute ends by itself after mute.max_minutes and says so")
    func autoUnmute() {
        var r = Rig()
        _ = r.press(.mute)
        #expect(r.c.nextDeadline == 1800)
        #expect(r.at(1799.9).isEmpty)
        #expect(r.at(1800) == [.setGain(OutputGain(prompts: gainOf(7), alerts: gainOf(7), holdAlerts: false)),
                               .say(.muteEnded), .persist(ControlState(volume: 7))])
        #expect(!r.c.muted)
        #expect(r.at(4000).isEmpty)
    }

    @Test("a volume key while muted unmutes and steps")
    func volumeUnmutes() {
        var r = Rig()
        _ = r.press(.mute)
        #expect(r.press(.volumeDown) == [.setGain(OutputGain(prompts: gainOf(6), alerts: gainOf(6), holdAlerts: false)),
                                         .click, .persist(ControlState(volume: 6))])
        #expect(!r.c.muted && r.c.nextDeadline == nil)
    }

    @Test("a restored mute keeps only what is left of max_minutes")
    func restoreMute() {
        let saved = ControlState(volume: 3, muted: true, mutedSince: WallTime(unixMillis: t0.unixMillis - 600_000))
        var r = Rig(restored: saved)
        #expect(r.c.muted && r.c.volume == 3)
        #expect(r.c.nextDeadline == 1200)  // 30 min - 10 min already muted
        #expect(r.c.start() == [.setGain(OutputGain(prompts: 0, alerts: gainOf(4), holdAlerts: false))])
        #expect(r.at(1200).contains(.say(.muteEnded)))
    }

    @Test("a restored mute that ran out while the box was off ends at start, saying so")
    func restoreExpiredMute() {
        let saved = ControlState(volume: 3, muted: true, mutedSince: WallTime(unixMillis: t0.unixMillis - 3_600_000))
        var r = Rig(restored: saved)
        #expect(!r.c.muted)
        #expect(r.c.start() == [.setGain(OutputGain(prompts: gainOf(3), alerts: gainOf(3), holdAlerts: false)),
                                .say(.muteEnded), .persist(ControlState(volume: 3))])
    }

    @Test("a wall clock behind the saved mute (no RTC yet) gives a full but bounded mute")
    func restoreClockBehind() {
        let saved = ControlState(volume: 3, muted: true, mutedSince: WallTime(unixMillis: t0.unixMillis + 86_400_000))
        let r = Rig(restored: saved)
        #expect(r.c.muted && r.c.nextDeadline == 1800)
        #expect(r.c.mutedSince == t0)
    }

    @Test("a restored volume beyond volume.steps is clamped")
    func restoreClamp() {
        var c = ButtonsConfig()
        c.volumeSteps = 5
        var r = Rig(c, restored: ControlState(volume: 9))
        #expect(r.c.volume == 5)
        #expect(r.c.start().last == .persist(ControlState(volume: 5)))
    }

    @Test("replay: press = latest, hold steps back, wraps after the oldest, no orders said when empty")
    func replay() {
        var r = Rig()
        #expect(r.press(.replay, history: 0) == [.say(.noOrders)])
        #expect(r.press(.replay, .hold, history: 0) == [.say(.noOrders)])
        #expect(r.press(.replay, history: 3) == [.replay(0)])
        #expect(r.press(.replay, .hold, history: 3) == [.replay(1)])
        #expect(r.press(.replay, .hold, history: 3) == [.replay(2)])
        #expect(r.press(.replay, .hold, history: 3) == [.replay(0)])
        r.now = 100  // long after: a hold starts again at the one before the latest
        #expect(r.press(.replay, .hold, history: 3) == [.replay(1)])
        r.now = 200
        var seen: [ControlEffect] = []
        for _ in 0..<12 { seen += r.press(.replay, .hold, history: 50) }
        #expect(seen.first == .replay(1) && seen.contains(.replay(9)) && !seen.contains(.replay(10)))
    }

    @Test("acknowledge acts on press; stuck and meaningless holds do nothing")
    func acknowledge() {
        var r = Rig()
        #expect(r.press(.acknowledge) == [.acknowledge])
        #expect(r.press(.mute, .stuck).isEmpty)
        #expect(r.press(.mute, .unstuck).isEmpty)
        #expect(r.press(.acknowledge, .hold).isEmpty)
    }
}

@Suite("Volume curve")
struct VolumeCurveTests {
    @Test("levels are evenly spaced in dB from min_db to 0 dB")
    func curve() {
        #expect(VolumeCurve.decibels(level: 10, steps: 10, minDb: -30) == 0)
        #expect(VolumeCurve.decibels(level: 0, steps: 10, minDb: -30) == -30)
        #expect(VolumeCurve.decibels(level: 7, steps: 10, minDb: -30) == -9)
        #expect(VolumeCurve.decibels(level: 99, steps: 10, minDb: -30) == 0)
        #expect(VolumeCurve.gain(level: 10, steps: 10, minDb: -30) == 1)
        for l in 0..<10 {
            let ratio = VolumeCurve.gain(level: l + 1, steps: 10, minDb: -30) / VolumeCurve.gain(level: l, steps: 10, minDb: -30)
            #expect(abs(ratio - 1.4125375446227544) < 1e-12)  // +3 dB per step
        }
    }

    @Test("dB to linear matches known values")
    func linear() {
        #expect(abs(VolumeCurve.linear(decibels: -20) - 0.1) < 1e-14)
        #expect(abs(VolumeCurve.linear(decibels: -6) - 0.5011872336272722) < 1e-14)
        #expect(abs(VolumeCurve.linear(decibels: -60) - 0.001) < 1e-16)
        #expect(abs(VolumeCurve.linear(decibels: 6) - 1.9952623149688795) < 1e-13)
    }
}
