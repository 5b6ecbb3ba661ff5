import Testing
@testable import CrierCore

/// The test-only speed factor of scripts/soak.sh (`CRIER_TEST_AUDIO_SPEED`): what is accepted,
/// what is refused, and that it speeds up a self-paced stream's clock and nothing else.
@Suite struct AudioTestSpeedTests {
    @Test func unsetIsRealTimeAndSilent() {
        for v in [nil, "", "  "] as [String?] {
            let s = AudioTestSpeed(value: v, device: "default")
            #expect(s.factor == 1 && s.message == nil && !s.refused)
        }
    }

    @Test func setIsAcceptedAndLoggedLoudly() {
        let s = AudioTestSpeed(value: " 32 ", device: "null")
        #expect(s.factor == 32 && !s.refused)
        #expect(s.message?.hasPrefix("TEST ONLY: CRIER_TEST_AUDIO_SPEED=32") == true)
        #expect(s.message?.contains("32.0x faster") == true)
    }

    @Test(arguments: ["hw:0", "hw:CARD=Headphones,DEV=0", "plughw:1"])
    func refusedForARealCard(device: String) {
        let s = AudioTestSpeed(value: "32", device: device)
        #expect(s.factor == 1 && s.refused)
        #expect(s.message?.contains("refused for the real sound card '\(device)'") == true)
    }

    @Test(arguments: ["0", "0.5", "-4", "1001", "nan", "inf", "fast", "32x"])
    func refusedOutOfRange(value: String) {
        let s = AudioTestSpeed(value: value, device: "default")
        #expect(s.factor == 1 && s.refused, "\(value)")
        #expect(s.message?.contains("not a speed factor from 1 to 1000") == true)
    }

    /// Self-paced at 8x: one second of wall time is eight seconds of stream, written as the
    /// clock reaches it, and the idle sleep is an eighth as long. A clock-driven device ignores
    /// the factor (its avail paces it; its sleeps are the same as without).
    @Test func aSelfPacedClockRunsFasterAClockDrivenOneDoesNot() {
        let rate = 48000, period = 960, buffer = 3840
        var fast = Pacer(device: .init(rate: rate, period: period, buffer: buffer, selfPaced: true, speed: 8), start: 100)
        var real = Pacer(device: .init(rate: rate, period: period, buffer: buffer, selfPaced: true), start: 100)
        #expect(Pacer.clock(since: 100, now: 101, rate: rate, speed: 8) == 8 * 48000)
        let pf = fast.plan(added: false, idle: true, now: 101, avail: nil)
        let pr = real.plan(added: false, idle: true, now: 101, avail: nil)
        #expect(pf.frames == 8 * rate && pr.frames == rate)
        fast.wrote(pf.frames, sound: false)
        real.wrote(pr.frames, sound: false)
        let never: (UInt64) -> UInt64 = { _ in 0 }
        let sf = fast.sleep(after: pf, idle: true, pendingEnd: nil, now: 101, played: never, delay: { nil })
        let sr = real.sleep(after: pr, idle: true, pendingEnd: nil, now: 101, played: never, delay: { nil })
        guard case .wake(let tf) = sf, case .wake(let tr) = sr else {
            Issue.record("self-paced sleeps on the wake pipe: \(sf) \(sr)")
            return
        }
        #expect(abs(tr - Double(Pacer.idleBatchPeriods * period) / Double(rate)) < 1e-9)
        #expect(abs(tf * 8 - tr) < 1e-9)
        // A clip's end 0.8 s of stream ahead is 0.1 s of wall time away at 8x.
        if case .wake(let t) = fast.sleep(after: pf, idle: false, pendingEnd: UInt64(8 * rate) + UInt64(rate * 8 / 10), now: 101,
                                          played: never, delay: { nil }) {
            #expect(t <= 0.1 + 1e-9)
        }
        let clockDriven = Pacer.Device(rate: rate, period: period, buffer: buffer, selfPaced: false, speed: 8)
        #expect(clockDriven.speed == 1)
        let c = Pacer(device: clockDriven, start: 100)
        #expect(c.plan(added: false, idle: true, now: 101, avail: 1234).frames == 1234)
    }
}

extension AudioTestSpeedTests {
    /// The log's repeat window is a compressed minute under the factor, a real minute otherwise
    /// (refused included).
    @Test func theLogWindowIsCompressedLikeTheClock() {
        #expect(AudioTestSpeed(value: "100", device: "default").logWindow(60) == 0.6)
        #expect(AudioTestSpeed(value: nil, device: "default").logWindow(60) == 60)
        #expect(AudioTestSpeed(value: "100", device: "hw:0").logWindow(60) == 60)
    }
}
