import Testing
@testable import CrierCore

@Suite struct MixerTests {
    let format = AudioFormat(rate: 48000, channels: 2)

    func render(_ m: inout Mixer, frames: Int) -> ([Int16], Mixer.Rendered) {
        var buf = [Int16](repeating: 1, count: frames * format.channels)
        let r = buf.withUnsafeMutableBufferPointer { m.render(into: $0, frames: frames) }
        return (buf, r)
    }

    @Test func idleRendersExactSilence() {
        var m = Mixer(format: format)
        let (buf, r) = render(&m, frames: 960)
        #expect(buf.allSatisfy { $0 == 0 })
        #expect(r.silent)
    }

    @Test func fullScaleClipStaysUnderHeadroomAndFadesAtEdges() {
        var m = Mixer(format: format, fadeMs: 5, headroomDb: 3)
        m.add(id: 1, clip: Clip(samples: [Float](repeating: 1, count: 4800)))
        let (buf, r) = render(&m, frames: 4800 + 960)
        #expect(r.started == [1])
        #expect(r.finished.map(\.id) == [1] && r.finished.first?.endFrame == 4800)
        let left = stride(from: 0, to: buf.count, by: 2).map { Int(buf[$0]) }
        let peak = left.map(abs).max()!
        #expect(peak <= 23200 && peak >= 23100)  // −3 dB of 32767 = 23197
        #expect(m.clampedSamples == 0)
        #expect(left[0] == 0)  // fades in from zero
        #expect(left[4799] == 0)  // and out to zero
        let maxStep = zip(left, left.dropFirst()).map { abs($0 - $1) }.max()!
        #expect(maxStep <= 23197 / 240 + 1)  // 5 ms fade = 240 frames
        #expect(left[4800...].allSatisfy { $0 == 0 })
        #expect(buf.indices.filter { $0 % 2 == 0 }.allSatisfy { buf[$0] == buf[$0 + 1] })  // both channels
    }

    @Test func stopFadesOutFromCurrentPosition() {
        var m = Mixer(format: format, fadeMs: 5)
        m.add(id: 7, clip: Clip(samples: [Float](repeating: 0.5, count: 48000)))
        _ = render(&m, frames: 960)
        m.stop(id: 7)
        let (_, r) = render(&m, frames: 960)
        #expect(r.finished.map(\.id) == [7])
        #expect(r.finished.first!.endFrame == 240)
        #expect(m.isIdle)
    }

    @Test func gainRampsInsteadOfStepping() {
        var m = Mixer(format: format, fadeMs: 0.1, headroomDb: 0, gain: 1, gainRampMs: 20)
        m.add(id: 1, clip: Clip(samples: [Float](repeating: 0.5, count: 48000)))
        _ = render(&m, frames: 960)
        m.setGain(0.25)
        let (buf, _) = render(&m, frames: 1920)
        let left = stride(from: 0, to: buf.count, by: 2).map { Int(buf[$0]) }
        #expect(left[0] > 16000)
        #expect(left[240] > 10000 && left[240] < 14000)  // a quarter of the way down the ramp
        #expect(abs(left[1900] - 4096) <= 2)  // reached within one 20 ms period
    }

    @Test func mixesTwoClipsAndReportsEachEnd() {
        var m = Mixer(format: AudioFormat(rate: 8000, channels: 1), fadeMs: 0.125, headroomDb: 0)
        m.add(id: 1, clip: Clip(samples: [Float](repeating: 0.25, count: 100)))
        m.add(id: 2, clip: Clip(samples: [Float](repeating: 0.25, count: 50)))
        let (buf, r) = render(&m, frames: 200)
        #expect(abs(Int(buf[25]) - 16384) <= 1)
        #expect(abs(Int(buf[75]) - 8192) <= 1)
        #expect(r.finished.map(\.id) == [1, 2])
        #expect(r.finished.map(\.endFrame) == [100, 50])
    }

    @Test func rewindAllRestartsClips() {
        var m = Mixer(format: format)
        m.add(id: 1, clip: Clip(samples: [Float](repeating: 0.5, count: 4800)))
        _ = render(&m, frames: 2000)
        m.rewindAll()
        let (_, r) = render(&m, frames: 4800)
        #expect(r.started == [1])
        #expect(r.finished.first?.endFrame == 4800)
    }
}

@Suite struct ResamplerTests {
    func sine(_ hz: Double, rate: Int, count: Int) -> [Float] {
        (0..<count).map { Float(0.5 * Resampler.sin(2 * Double.pi * hz * Double($0) / Double(rate))) }
    }

    @Test func keepsLengthAndLevelOfSpeechBandTone() {
        let input = sine(1000, rate: 22050, count: 22050)
        let out = Resampler(from: 22050, to: 48000).process(input)
        #expect(out.count == 48000)
        let rms = Signal.rms(out[4800..<43200])
        #expect(abs(rms - 0.5 / 2.squareRoot()) < 0.005)
        // Compare with an ideal 1 kHz sine at 48 kHz, ignoring the filter's group delay.
        let ideal = sine(1000, rate: 48000, count: 48000)
        var best = 1.0
        for lag in -20...20 {
            var err = 0.0
            for i in 4800..<43200 { let d = Double(out[i] - ideal[i + lag]); err += d * d }
            best = min(best, (err / 38400).squareRoot())
        }
        #expect(best < 0.01)
    }

    @Test func removesContentAboveTheOutputNyquist() {
        let input = sine(10000, rate: 48000, count: 48000)
        let out = Resampler(from: 48000, to: 16000).process(input)
        #expect(Signal.rms(out[1600..<14400]) < 0.01)  // 10 kHz cannot exist at 16 kHz: filtered, not aliased to 6 kHz
    }

    @Test func sameRateIsIdentity() {
        let x: [Float] = [0.1, -0.2, 0.3]
        #expect(Resampler(from: 22050, to: 22050).process(x) == x)
    }
}

@Suite struct WAVTests {
    @Test func roundTrip() throws {
        let s: [Int16] = [0, 1, -1, 32767, -32768, 1234]
        let d = try WAV.decode(WAV.encode(rate: 22050, channels: 2, samples: s))
        #expect(d.rate == 22050 && d.channels == 2 && d.samples == s && d.frames == 3)
    }

    @Test func unpatchedDataSizeReadsToTheEnd() throws {
        var bytes = WAV.header(rate: 8000, channels: 1, dataBytes: 0)
        bytes += [1, 0, 2, 0, 3]
        #expect(try WAV.decode(bytes).samples == [1, 2])
    }

    @Test func rejectsGarbage() {
        #expect(throws: WAV.DecodeError.notRIFF) { try WAV.decode([1, 2, 3]) }
    }
}

@Suite struct LogFormatTests {
    @Test func lineShape() {
        let r = LogRecord(time: WallTime(unixMillis: 1_796_022_000_123), level: .info, component: "link",
                          message: "connected", fields: [("server", "tcp://10.0.0.5:7700"), ("after", "3.2s")])
        #expect(r.formatted() == "2026-11-30T07:00:00.123Z INFO link: connected server=tcp://10.0.0.5:7700 after=3.2s")
        #expect(r.formatted(syslogPrefix: true).hasPrefix("<6>2026-11-30T07:00:00.123Z INFO"))
    }

    @Test func networkTextCannotForgeALine() {
        let r = LogRecord(time: WallTime(unixMillis: 0), level: .warning, component: "link",
                          message: "bad\nINFO fake", fields: [("text", "a b\n\"c\"")])
        #expect(r.formatted() == "1970-01-01T00:00:00.000Z WARN link: bad\\nINFO fake text=\"a b\\n\\\"c\\\"\"")
    }

    @Test func hubFiltersByLevel() {
        let hub = LogHub(clock: { WallTime(unixMillis: 0) })
        let sink = MemoryLogSink()
        hub.add(sink)
        hub.setMinimum(.info)
        hub.logger("x").debug("hidden")
        hub.logger("x").warning("shown")
        #expect(sink.lines == ["1970-01-01T00:00:00.000Z WARN x: shown"])
    }
}
