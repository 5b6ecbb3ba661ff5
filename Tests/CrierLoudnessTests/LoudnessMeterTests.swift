import CrierLoudness
import Glibc
import Testing

/// libebur128 through the adapter, on signals whose loudness is known from BS.1770-4.
@Suite struct LoudnessMeterTests {
    static func sine(_ hz: Double, dbfs: Double, seconds: Double, rate: Int = 48000, phase: Double = 0, channels: Int = 1) -> [Float] {
        let a = pow(10, dbfs / 20)
        let n = Int(seconds * Double(rate))
        var x = [Float](repeating: 0, count: n * channels)
        for i in 0..<n {
            let v = Float(a * sin(2 * Double.pi * hz * Double(i) / Double(rate) + phase))
            for c in 0..<channels { x[i * channels + c] = v }
        }
        return x
    }

    /// A 1 kHz sine of peak -20 dBFS on one channel: mean square A²/2 = 0.005 (-23.010 dB), the
    /// K-weighting's gain at 1 kHz +0.698 dB (its two biquads at 48 kHz), less BS.1770's 0.691:
    /// -23.004 LUFS.
    @Test func oneKilohertzAtMinus20dBFSIsMinus23LUFS() throws {
        let m = try LoudnessMeter.measure(Self.sine(1000, dbfs: -20, seconds: 5), rate: 48000)
        #expect(abs(m.integrated - -23.004) < 0.02, "\(m.integrated)")
        #expect(abs(20 * log10(m.samplePeak) - -20) < 0.01)
        #expect(abs(20 * log10(m.truePeak) - -20) < 0.1)
    }

    /// EBU Tech 3341 case 1: stereo, both channels -23 dBFS, 1 kHz: -23.0 LUFS. At 16 kHz too.
    @Test func tech3341StereoCaseAndOtherRates() throws {
        let m = try LoudnessMeter.measure(Self.sine(1000, dbfs: -23, seconds: 5, channels: 2), rate: 48000, channels: 2)
        #expect(abs(m.integrated - -23.0) < 0.1, "\(m.integrated)")
        for rate in [16000, 22050, 24000, 44100] {
            let r = try LoudnessMeter.measure(Self.sine(1000, dbfs: -20, seconds: 3, rate: rate), rate: rate)
            #expect(abs(r.integrated - -23.0) < 0.1, "\(rate) Hz: \(r.integrated)")
        }
    }

    /// 6.02 dB less amplitude is 6.02 LU less. A second of tone then nine of silence: the absolute
    /// gate (-70 LUFS) leaves the silent 400 ms blocks out and keeps the ten that hold tone (every
    /// 100 ms): seven full, three with 3/4, 1/2, 1/4 of it, mean power 8.5/10 of the tone's,
    /// 0.706 LU below it (the silence alone would pull it down by 10 LU).
    @Test func levelScalesAndSilenceIsGatedOut() throws {
        let loud = try LoudnessMeter.measure(Self.sine(1000, dbfs: -20, seconds: 3), rate: 48000)
        let soft = try LoudnessMeter.measure(Self.sine(1000, dbfs: -26.0206, seconds: 3), rate: 48000)
        #expect(abs((loud.integrated - soft.integrated) - 6.0206) < 0.01)
        let gated = try LoudnessMeter.measure(Self.sine(1000, dbfs: -20, seconds: 1) + [Float](repeating: 0, count: 9 * 48000), rate: 48000)
        #expect(abs(gated.integrated - (loud.integrated + 10 * log10(0.85))) < 0.02, "\(gated.integrated)")
    }

    /// Silence, an empty buffer and a signal shorter than one 400 ms block have no integrated
    /// loudness: -infinity, never a crash or NaN.
    @Test func silenceAndShortSignalsAreMinusInfinity() throws {
        for x in [[Float](repeating: 0, count: 48000), [], Self.sine(1000, dbfs: -20, seconds: 0.3)] {
            let m = try LoudnessMeter.measure(x, rate: 48000)
            #expect(m.integrated == -.infinity)
            #expect(!m.integrated.isNaN)
        }
        #expect(try LoudnessMeter.measure([Float](repeating: 0, count: 480), rate: 48000).samplePeak == 0)
    }

    /// A sine at a quarter of the rate sampled 45° off its crests: every sample at 0.707 (-3.01
    /// dBFS) while the wave itself reaches 1.0; the true peak sees it, the sample peak cannot.
    @Test func truePeakSeesBetweenSamples() throws {
        let m = try LoudnessMeter.measure(Self.sine(12000, dbfs: 0, seconds: 1, phase: Double.pi / 4), rate: 48000)
        #expect(abs(20 * log10(m.samplePeak) - -3.01) < 0.02)
        #expect(20 * log10(m.truePeak) > -0.6, "\(20 * log10(m.truePeak)) dBTP")
    }

    @Test func badLayoutsAreRefused() {
        #expect(throws: LoudnessMeter.Failure.self) { try LoudnessMeter.measure([0], rate: 100) }
        #expect(throws: LoudnessMeter.Failure.self) { try LoudnessMeter.measure([0], rate: 48000, channels: 0) }
        #expect(LoudnessMeter.version.hasPrefix("1."))
    }
}
