import Testing
@testable import CrierCore

/// The volume curve through the real mixer: what a listener (or a captured WAV) measures.
@Suite("Volume through the mixer")
struct VolumeMixTests {
    let format = AudioFormat(rate: 22050, channels: 1)

    /// RMS (0...1 of full scale) of a 1 kHz tone (stand-in for an alert) mixed at `gain`.
    func rms(gain: Double) -> Double {
        var m = Mixer(format: format, gain: gain)
        m.add(id: 1, clip: Tone.beep(format: format, ms: 500, level: 0.5))
        var out = [Int16](repeating: 0, count: format.frames(ms: 500))
        _ = out.withUnsafeMutableBufferPointer { m.render(into: $0, frames: $0.count) }
        // The middle, away from the fades.
        let mid = out[1000..<(out.count - 1000)]
        return (mid.reduce(0.0) { $0 + Double($1) * Double($1) } / Double(mid.count)).squareRoot() / 32767
    }

    /// Whether a / b is `db` decibels, within 0.05 dB.
    func ratioIs(_ a: Double, _ b: Double, db: Double) -> Bool {
        let r = a / b
        return r > Decibel.gain(db - 0.05) && r < Decibel.gain(db + 0.05)
    }

    @Test("one step down lowers the alert's RMS by -min_db/steps (3 dB)")
    func stepIsThreeDb() {
        let c = ButtonsConfig()
        let levels = (0...c.volumeSteps).map { rms(gain: VolumeCurve.gain(level: $0, steps: 10, minDb: -30)) }
        for l in 1...c.volumeSteps {
            #expect(ratioIs(levels[l], levels[l - 1], db: 3), "level \(l)")
        }
        #expect(ratioIs(levels[10], levels[0], db: 30))
    }

    @Test("muted with mute.alerts = floor, an alert plays at the floor level's RMS")
    func floor() {
        var c = Controls(config: ButtonsConfig(), restored: nil, now: 0, wall: WallTime(unixMillis: 0))
        let unmuted = rms(gain: c.gain.alerts)
        _ = c.handle(Gesture(.mute, .press, at: 0), now: 0, wall: WallTime(unixMillis: 0), historyCount: 0)
        #expect(c.gain.prompts == 0)
        let muted = rms(gain: c.gain.alerts)
        #expect(ratioIs(unmuted, muted, db: 9))  // level 7 -> floor 4: 3 steps of 3 dB
    }
}
