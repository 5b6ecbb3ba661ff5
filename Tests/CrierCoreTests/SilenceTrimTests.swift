import Testing
@testable import CrierCore

@Suite("Silence trim")
struct SilenceTrimTests {
    @Test func dropsLeadingSilenceButAFewMilliseconds() {
        // 22050 Hz: 40 ms of near-silence (|x| = 30 ≈ -61 dBFS), then signal.
        let lead = (0..<882).map { Int16($0 % 2 == 0 ? 30 : -30) }
        let body = (0..<2205).map { i in Int16(8000 * ((i / 11) % 2 == 0 ? 1 : -1)) }
        #expect(SilenceTrim.leadingSilence(lead + body, rate: 22050) == 882 - 66)  // 3 ms kept
    }

    @Test func quietSpeechIsNotSilence() {
        // -50 dBFS is above the threshold: nothing dropped.
        let quiet = (0..<500).map { Int16($0 % 2 == 0 ? 104 : -104) }
        #expect(SilenceTrim.leadingSilence(quiet, rate: 22050) == 0)
    }

    @Test func allSilentIsAllDroppedAndLoudFromTheStartIsKept() {
        #expect(SilenceTrim.leadingSilence([Int16](repeating: 12, count: 1000), rate: 22050) == 1000)
        #expect(SilenceTrim.leadingSilence([], rate: 22050) == 0)
        #expect(SilenceTrim.leadingSilence([5000, -5000, 5000], rate: 22050) == 0)
    }
}
