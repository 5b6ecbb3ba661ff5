import CrierCore
import Foundation
import Synchronization
import Testing
@testable import CrierAudio

/// Issue 16: a clip that is still being written (streamed speech) plays through the engine as
/// the whole clip would, never stalls the audio thread when its writer is slow, and ends (the
/// ack's signal) only after its real last sample.
@Suite struct StreamingEngineTests {
    let rate = 48000

    /// A speech-like test signal: a few partials with an envelope and a pause, 0.7 s.
    func signal(seconds: Double = 0.7) -> [Float] {
        let n = Int(Double(rate) * seconds)
        return (0..<n).map { i in
            let t = Double(i) / Double(rate)
            // 100 ms syllables with a smooth envelope, every fifth one a pause.
            let env = (i / 4800) % 5 == 4 ? 0.0 : 0.6 * sin(.pi * Double(i % 4800) / 4800)
            let v = env * (0.6 * sin(2 * .pi * 180 * t) + 0.3 * sin(2 * .pi * 530 * t + 1) + 0.1 * sin(2 * .pi * 1900 * t))
            return Float(v)
        }
    }

    /// The samples from the first loud one to the last, with a margin.
    func heard(_ x: [Float]) throws -> ArraySlice<Float> {
        let first = try #require(Signal.firstLoud(x, threshold: 0.001))
        let last = try #require(Signal.lastLoud(x, threshold: 0.001))
        return x[max(0, first - 100)..<min(x.count, last + 100)]
    }

    func playAndCapture(_ clip: Clip, periodMs: Int? = nil, feed: (@Sendable () async -> Void)? = nil) async throws -> (x: [Float], end: ClipEnd, log: MemoryLogSink, stats: AudioStats) {
        let wav = tempDir() + "/out.wav"
        let log = MemoryLogSink()
        let e = engine(fileDevice(wav), log: log) { c in
            if let periodMs {
                c.periodMs = periodMs
                c.bufferMs = 4 * periodMs
            }
        }
        e.start()
        await waitWritten(e, atLeast: UInt64(rate) / 4)
        let end = await withCheckedContinuation { (c: CheckedContinuation<ClipEnd, Never>) in
            e.play(clip, onEnd: { c.resume(returning: $0) })
            if let feed { Task.detached { await feed() } }
        }
        await waitWritten(e, atLeast: e.stats.framesWritten + UInt64(rate) / 5)
        e.stop()
        return (try capture(wav), end, log, e.stats)
    }

    @Test(arguments: [UInt64(1), 2, 3])
    func aStreamedClipWrittenInRandomChunksSoundsExactlyLikeTheWholeClip(seed: UInt64) async throws {
        let x = signal()
        let whole = try await playAndCapture(Clip(samples: x))
        let st = ClipStream()
        let streamed = try await playAndCapture(Clip(stream: st)) {
            var rng = SplitMix64(seed: seed)
            var i = 0
            while i < x.count {
                // A large first chunk (100 ms), then random sizes a little apart: the samples
                // must be the same however they were split (small chunks: the test below).
                let n = min(x.count - i, i == 0 ? rate / 10 : Int.random(in: 1...4000, using: &rng))
                st.append(Array(x[i..<(i + n)]))
                i += n
                if Int.random(in: 0..<4, using: &rng) == 0 { try? await Task.sleep(for: .microseconds(300)) }
            }
            st.finish()
        }
        #expect(whole.end == ClipEnd(.played, heardFrames: x.count))
        #expect(streamed.end == ClipEnd(.played, heardFrames: x.count))
        let a = try heard(whole.x), b = try heard(streamed.x)
        let differ = zip(a, b).enumerated().first { $0.element.0 != $0.element.1 }
        #expect(a.count == b.count && differ == nil,
                "same samples reached ALSA: \(a.count) vs \(b.count), first difference \(differ.map { "at \($0.offset): \($0.element)" } ?? "none")")
        let step = Signal.maxStep(Array(b), in: 0..<b.count), wholeStep = Signal.maxStep(Array(a), in: 0..<a.count)
        #expect(step <= wholeStep + 1e-4, "no step at chunk edges: \(step) (the signal itself: \(wholeStep))")
        #expect(streamed.stats.gapFrames == 0)
        #expect(!streamed.log.lines.contains { $0.contains("behind playback") })
    }

    /// As espeak-ng hands them out: a small first chunk, then 20 ms chunks, each a fraction of a
    /// millisecond after the last (tens of times faster than real time). The engine must not
    /// write further ahead than the first chunk: writing a buffer ahead ran most clips dry right
    /// after their start (gap silence queued, the rest of the speech a buffer later). The second
    /// chunk comes only once the engine has read the first, so the old write-ahead always shows;
    /// a 100 ms period leaves a loaded test machine a period's slack before a real gap.
    @Test(arguments: [UInt64(4), 5, 6, 7])
    func aClipStreamedInSmallChunksFasterThanRealTimeNeverRunsDry(seed: UInt64) async throws {
        let x = signal(seconds: 0.6)
        let whole = try await playAndCapture(Clip(samples: x), periodMs: 100)
        let st = ClipStream()
        let streamed = try await playAndCapture(Clip(stream: st), periodMs: 100) {
            var rng = SplitMix64(seed: seed)
            var i = 0
            while i < x.count {
                let n = min(x.count - i, i == 0 ? Int.random(in: 241...960, using: &rng) : rate / 50)
                st.append(Array(x[i..<(i + n)]))
                i += n
                if n < rate / 50 {
                    let t0 = Date()
                    while !st.hasBeenRead && Date().timeIntervalSince(t0) < 5 { try? await Task.sleep(for: .microseconds(200)) }
                }
                try? await Task.sleep(for: .microseconds(Int.random(in: 100...800, using: &rng)))
            }
            st.finish()
        }
        #expect(streamed.stats.gapFrames == 0, "\(streamed.stats.gapFrames) frames of gap silence")
        #expect(!streamed.log.lines.contains { $0.contains("behind playback") })
        #expect(streamed.end == ClipEnd(.played, heardFrames: x.count))
        let a = try heard(whole.x), b = try heard(streamed.x)
        #expect(a.count == b.count && a.elementsEqual(b), "same samples reached ALSA: \(a.count) vs \(b.count)")
    }

    @Test func aSlowSynthesisPlaysSilenceLogsOnceNeverStallsAndEndsAtTheRealEnd() async throws {
        // 10 ms of audio every 40 ms: four times slower than real time.
        let x = signal(seconds: 0.5)
        let st = ClipStream()
        let wroteLast = Mutex<Double>(0)
        let t0 = Date()
        let r = try await playAndCapture(Clip(stream: st)) {
            var i = 0
            while i < x.count {
                let n = min(x.count - i, 480)
                st.append(Array(x[i..<(i + n)]))
                i += n
                try? await Task.sleep(for: .milliseconds(40))
            }
            wroteLast.withLock { $0 = Date().timeIntervalSince(t0) }
            st.finish()
        }
        let ended = Date().timeIntervalSince(t0)
        #expect(r.end == ClipEnd(.played, heardFrames: x.count))
        let last = wroteLast.withLock { $0 }
        #expect(last > 1.5, "the writer took \(last) s for 0.5 s of audio")
        #expect(ended >= last, "ended after its last sample was written")
        let warnings = r.log.lines.filter { $0.contains("speech synthesis is behind playback") }
        #expect(warnings.count == 1, "logged once per clip: \(warnings)")
        #expect(r.stats.gapFrames > UInt64(rate), "more than 1 s of silence inserted: \(r.stats.gapFrames)")
        // No stall: the stream kept flowing at its pace (self-paced device, so against the clock).
        #expect(Double(r.stats.framesWritten) > 0.8 * Double(rate) * ended, "\(r.stats.framesWritten) frames in \(ended) s")
        #expect(r.stats.recoveries == 0 && r.stats.clamped == 0)
        // Every sample of the clip reached ALSA, spread out by the gaps, faded in and out of each.
        let h = try heard(r.x)
        #expect(Double(h.count) / Double(rate) > 1.2, "the clip spans its writer's time")
        let step = Signal.maxStep(Array(h), in: 0..<h.count)
        #expect(step < 0.05, "gaps fade instead of clicking: \(step)")
    }

    @Test func stoppingAStreamedClipMidSynthesisCancelsTheWriter() async throws {
        let wav = tempDir() + "/out.wav"
        let e = engine(fileDevice(wav), log: MemoryLogSink())
        e.start()
        await waitWritten(e, atLeast: UInt64(rate) / 4)
        let st = ClipStream()
        let x = signal(seconds: 3)
        st.append(Array(x[0..<(rate / 2)]))
        let ended = Mutex<ClipEnd?>(nil)
        let id = e.play(Clip(stream: st), onEnd: { end in ended.withLock { $0 = end } })
        try await Task.sleep(for: .milliseconds(200))
        e.stop(id: id)
        let start = Date()
        while ended.withLock({ $0 }) == nil && Date().timeIntervalSince(start) < 5 { try await Task.sleep(for: .milliseconds(5)) }
        #expect(st.isCancelled)
        #expect(!st.append(Array(x[(rate / 2)...])), "the writer is told to stop")
        e.stop()
        let end = try #require(ended.withLock { $0 })
        #expect(end.outcome == .stopped)
        #expect(end.heardFrames > 0 && end.heardFrames < rate / 2, "heard \(end.heardFrames) frames")
    }

    @Test func aStreamedClipStartsWhenItsFirstSamplesArriveNotAPeriodLater() async throws {
        let wav = tempDir() + "/out.wav"
        let e = engine(fileDevice(wav), log: nil) { c in
            c.periodMs = 200
            c.bufferMs = 800
        }
        e.start()
        await waitWritten(e, atLeast: UInt64(rate) / 2)
        var latencies: [Double] = []
        for _ in 0..<5 {
            let st = ClipStream()
            let done = Mutex(false)
            let played = Date()
            e.play(Clip(stream: st), onEnd: { _ in done.withLock { $0 = true } })
            // The samples come a little after play(), as from a synthesis: the engine must
            // be woken by them, not find them at its next 200 ms period.
            try await Task.sleep(for: .milliseconds(30))
            let arrived = Date().timeIntervalSince(played)
            st.append(signal(seconds: 0.05))
            st.finish()
            let t0 = Date()
            while !done.withLock({ $0 }) && Date().timeIntervalSince(t0) < 5 { try await Task.sleep(for: .milliseconds(5)) }
            latencies.append(e.stats.lastStartLatency - arrived)
        }
        e.stop()
        latencies.sort()
        #expect(latencies[2] < 0.05, "first samples → first frame written: \(latencies.map { Int($0 * 1000) }) ms")
    }
}
