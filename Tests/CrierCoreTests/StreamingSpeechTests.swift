import Testing
@testable import CrierCore

/// Issue 16: speech is mixed while it is still being synthesized. Every streamed step must give
/// what the whole-utterance step gives, whatever the chunk sizes.
@Suite("Streaming speech")
struct StreamingSpeechTests {
    /// espeak-like samples: a little leading near-silence, then a voiced signal with pauses.
    func speechLike(_ rng: inout SplitMix64, count: Int) -> [Int16] {
        let lead = Int.random(in: 0...1500, using: &rng)
        var out: [Int16] = []
        out.reserveCapacity(count)
        var phase = 0.0
        let hz = Double.random(in: 90...300, using: &rng)
        for i in 0..<count {
            if i < lead {
                out.append(Int16.random(in: -20...20, using: &rng))
                continue
            }
            phase += 2 * Double.pi * hz / 22050
            let pause = (i / 3000) % 4 == 3
            let v = pause ? 0 : 12000 * Resampler.sin(phase) + Double(Int.random(in: -800...800, using: &rng))
            out.append(Int16(max(-32768, min(32767, v))))
        }
        return out
    }

    /// A random split of `n` samples into chunks (some empty, some tiny, some large).
    func splits(_ rng: inout SplitMix64, _ n: Int) -> [Range<Int>] {
        var r: [Range<Int>] = []
        var i = 0
        while i < n {
            let k: Int
            switch Int.random(in: 0..<4, using: &rng) {
            case 0: k = 0
            case 1: k = Int.random(in: 1...8, using: &rng)
            case 2: k = Int.random(in: 9...600, using: &rng)
            default: k = Int.random(in: 600...5000, using: &rng)
            }
            let e = min(n, i + k)
            r.append(i..<e)
            i = e
        }
        return r
    }

    @Test(arguments: [(22050, 48000), (22050, 44100), (22050, 22050), (48000, 22050), (16000, 48000)])
    func resamplingInChunksEqualsResamplingWhole(rates: (Int, Int)) {
        let r = Resampler(from: rates.0, to: rates.1)
        var rng = SplitMix64(seed: UInt64(rates.0 * 7 + rates.1))
        for round in 0..<12 {
            let n = round == 0 ? 0 : Int.random(in: 1...20000, using: &rng)
            let input = speechLike(&rng, count: n).map { Float($0) / 32768 }
            let whole = r.process(input)
            var s = Resampler.Stream(r)
            var streamed: [Float] = []
            for c in splits(&rng, n) { streamed += s.push(Array(input[c])) }
            streamed += s.finish()
            #expect(streamed.count == whole.count, "round \(round): \(streamed.count) vs \(whole.count) samples")
            // Same samples bit for bit (the same arithmetic, in the same order).
            let differ = zip(streamed, whole).filter { $0 != $1 }.count
            #expect(differ == 0, "round \(round), n=\(n): \(differ) samples differ")
        }
    }

    @Test func trimInChunksEqualsTrimWhole() {
        var rng = SplitMix64(seed: 16)
        for round in 0..<200 {
            let n = Int.random(in: 0...8000, using: &rng)
            // Mostly silence, sometimes none, sometimes all silent.
            var x = speechLike(&rng, count: n)
            if round % 5 == 0 { x = x.map { $0 / 2000 } }
            let drop = SilenceTrim.leadingSilence(x, rate: 22050)
            let whole = Array(x[drop...])
            var t = SilenceTrim.Stream(rate: 22050)
            var streamed: [Int16] = []
            for c in splits(&rng, n) { streamed += t.push(Array(x[c])) }
            #expect(streamed == whole, "round \(round): \(streamed.count) vs \(whole.count)")
        }
    }

    @Test func speechStreamerEqualsTheWholeUtterancePath() {
        let r = Resampler(from: 22050, to: 48000)
        var rng = SplitMix64(seed: 42)
        for round in 0..<20 {
            let x = speechLike(&rng, count: Int.random(in: 100...40000, using: &rng))
            let whole = SpeechStreamer.whole(x, resampler: r)
            var s = SpeechStreamer(resampler: r)
            var streamed: [Float] = []
            for c in splits(&rng, x.count) { streamed += s.push(Array(x[c])) }
            streamed += s.finish()
            #expect(streamed == whole, "round \(round)")
        }
    }

    @Test func clipStreamKeepsWhatWasWrittenAcrossBlocksAndPartEnds() {
        let st = ClipStream()
        let woken = Counter()
        st.setWaker { woken.add() }
        var rng = SplitMix64(seed: 3)
        var all: [Float] = []
        for part in 0..<3 {
            for _ in 0..<Int.random(in: 1...30, using: &rng) {
                let c = (0..<Int.random(in: 0...9000, using: &rng)).map { _ in Float.random(in: -1...1, using: &rng) }
                #expect(st.append(c))
                all += c
            }
            st.endPart()
            #expect(st.partEnds.count == part + 1 && st.partEnds.last == all.count)
        }
        #expect(woken.value >= 1, "the first append wakes a reader that found nothing")
        // Read back in random windows, as the audio thread does.
        var back: [Float] = []
        while back.count < all.count {
            var buf = [Float](repeating: 0, count: Int.random(in: 1...5000, using: &rng))
            let (n, total) = buf.withUnsafeMutableBufferPointer { st.read(from: back.count, into: $0) }
            #expect(total == nil, "not finished yet")
            back += buf[0..<n]
        }
        #expect(back == all)
        st.finish()
        var tail = [Float](repeating: 0, count: 10)
        let (n, total) = tail.withUnsafeMutableBufferPointer { st.read(from: all.count, into: $0) }
        #expect(n == 0 && total == all.count)
    }

    @Test func clipStreamIsBoundedAndACancelStopsTheWriter() {
        let st = ClipStream(capacity: 1000)
        #expect(st.append([Float](repeating: 0.1, count: 600)))
        #expect(!st.append([Float](repeating: 0.1, count: 600)), "full: the writer is told to stop")
        #expect(st.count == 1000 && st.isFull)
        let c = ClipStream()
        #expect(c.append([0.5]))
        c.cancel()
        #expect(!c.append([0.5]))
        #expect(c.count == 1)
    }

    // MARK: the mixer reading a growing clip

    let format = AudioFormat(rate: 48000, channels: 1)

    func renderAll(_ m: inout Mixer, blocks: Int, frames: Int = 960, feed: (Int) -> Void = { _ in }) -> (samples: [Int16], results: [Mixer.Rendered]) {
        var out: [Int16] = []
        var rs: [Mixer.Rendered] = []
        for b in 0..<blocks {
            feed(b)
            _ = m.pollStreams()
            var buf = [Int16](repeating: 0, count: frames)
            rs.append(buf.withUnsafeMutableBufferPointer { m.render(into: $0, frames: frames) })
            out += buf
        }
        return (out, rs)
    }

    func voice(_ n: Int, seed: UInt64) -> [Float] {
        var rng = SplitMix64(seed: seed)
        return speechLike(&rng, count: n).map { Float($0) / 32768 * 0.9 }
    }

    @Test func aStreamedClipFedAheadSoundsExactlyLikeTheWholeClip() {
        var rng = SplitMix64(seed: 7)
        for round in 0..<10 {
            let x = voice(Int.random(in: 2000...60000, using: &rng), seed: UInt64(round))
            var whole = Mixer(format: format)
            whole.add(id: 1, clip: Clip(samples: x))
            let a = renderAll(&whole, blocks: x.count / 960 + 3)
            // The stream is fed in random chunks, each block a little ahead of playback.
            let st = ClipStream()
            let chunks = splits(&rng, x.count)
            var next = 0
            var streamed = Mixer(format: format)
            streamed.add(id: 1, clip: Clip(stream: st))
            let b = renderAll(&streamed, blocks: x.count / 960 + 3) { blk in
                while next < chunks.count && (chunks[next].lowerBound < (blk + 2) * 960 + 480) {
                    st.append(Array(x[chunks[next]]))
                    next += 1
                }
                if next == chunks.count { st.finish() }
            }
            #expect(a.samples == b.samples, "round \(round)")
            #expect(b.results.allSatisfy { $0.gaps.isEmpty })
            #expect(b.results.flatMap(\.finished).map(\.heard) == [x.count])
            #expect(a.results.flatMap(\.finished).map(\.endFrame) == b.results.flatMap(\.finished).map(\.endFrame))
        }
    }

    /// The engine's write-ahead rule: rendering no further than `streamLead` never runs a clip
    /// dry, whatever the chunking, and the result is the whole clip's samples.
    @Test func renderingWithinTheStreamLeadNeverLeavesAGap() {
        var rng = SplitMix64(seed: 16)
        for round in 0..<20 {
            let x = voice(Int.random(in: 2000...40000, using: &rng), seed: UInt64(100 + round))
            var whole = Mixer(format: format)
            whole.add(id: 1, clip: Clip(samples: x))
            let a = renderAll(&whole, blocks: x.count / 960 + 3).samples
            let st = ClipStream()
            var m = Mixer(format: format)
            #expect(m.streamLead(want: 960) == nil, "nothing playing: no limit")
            m.add(id: 1, clip: Clip(stream: st))
            let chunks = splits(&rng, x.count)
            var next = 0, out: [Int16] = [], gaps = 0, steps = 0
            while steps < 100_000 {
                steps += 1
                if next < chunks.count && Int.random(in: 0..<3, using: &rng) == 0 {
                    st.append(Array(x[chunks[next]]))
                    next += 1
                    if next == chunks.count { st.finish() }
                }
                _ = m.pollStreams()
                if m.isIdle && out.isEmpty { continue }  // not started: the engine writes idle silence
                let lead = m.streamLead(want: 960)
                let n = min(960, lead ?? 960)
                if n == 0 { continue }
                var buf = [Int16](repeating: 0, count: n)
                let r = buf.withUnsafeMutableBufferPointer { m.render(into: $0, frames: n) }
                gaps += r.gapFrames
                out += buf
                if !r.finished.isEmpty { break }
            }
            #expect(gaps == 0, "round \(round): \(gaps) gap frames")
            #expect(Array(a.prefix(out.count)) == out, "round \(round)")
            #expect(m.streamLead(want: 960) == nil, "finished: no limit")
        }
        // A stopped clip no longer limits the stream (its fade-out may run into silence).
        let st = ClipStream()
        st.append([Float](repeating: 0.5, count: 1000))
        var m = Mixer(format: format)
        m.add(id: 2, clip: Clip(stream: st))
        _ = m.pollStreams()
        #expect(m.streamLead(want: 960) == 1000 - m.fadeFrames)
        m.stop(id: 2)
        #expect(m.streamLead(want: 960) == nil)
    }

    @Test func aStreamWaitingForItsFirstSamplesIsIdleAndStartsWhenTheyCome() {
        let st = ClipStream()
        var m = Mixer(format: format)
        m.add(id: 9, clip: Clip(stream: st))
        #expect(m.isIdle)
        let none = m.pollStreams()
        #expect(!none)
        var buf = [Int16](repeating: 1, count: 960)
        let r0 = buf.withUnsafeMutableBufferPointer { m.render(into: $0, frames: 960) }
        #expect(r0.started.isEmpty && r0.silent && buf.allSatisfy { $0 == 0 })
        st.append([Float](repeating: 0.5, count: 4800))
        let some = m.pollStreams()
        #expect(some)
        #expect(!m.isIdle)
        let r1 = buf.withUnsafeMutableBufferPointer { m.render(into: $0, frames: 960) }
        #expect(r1.started == [9] && !r1.silent)
    }

    @Test func aSlowSynthesisGivesSilenceGapsWithoutClicksAndEveryFrameIsStillPlayed() {
        // Chunks of 10 ms arrive every 30 ms of playback: the clip keeps running dry.
        let x = [Float](repeating: 0.8, count: 48000)
        let st = ClipStream()
        var m = Mixer(format: format, fadeMs: 5, headroomDb: 0)
        m.add(id: 3, clip: Clip(stream: st))
        var fed = 0
        let r = renderAll(&m, blocks: 400, frames: 480) { blk in
            if blk % 3 == 0 && fed < x.count {
                st.append(Array(x[fed..<min(x.count, fed + 480)]))
                fed = min(x.count, fed + 480)
                if fed == x.count { st.finish() }
            }
        }
        let gaps = r.results.flatMap(\.gaps)
        #expect(!gaps.isEmpty && Set(gaps) == [3])
        let fin = r.results.flatMap(\.finished)
        #expect(fin.count == 1 && fin[0].heard == x.count, "finished once, all of it heard: \(fin)")
        // No click: a 5 ms ramp at 0.8 of full scale moves at most 0.8/240 per sample.
        let steps = zip(r.samples, r.samples.dropFirst()).map { abs(Int($0) - Int($1)) }
        #expect(steps.max()! <= Int(0.8 * 32767 / 240) + 2, "max step \(steps.max()!)")
        // Everything written was played: gap frames + clip frames = frames up to the end.
        let gapFrames = r.results.reduce(0) { $0 + $1.gapFrames }
        #expect(gapFrames > 48000, "about twice as much silence as sound: \(gapFrames)")
    }

    @Test func stoppingAStreamedClipCancelsItsSynthesisAndSaysHowMuchWasHeard() {
        let st = ClipStream()
        st.append([Float](repeating: 0.5, count: 20000))
        var m = Mixer(format: format)
        m.add(id: 5, clip: Clip(stream: st))
        _ = renderAll(&m, blocks: 5)
        m.stop(id: 5)
        #expect(st.isCancelled)
        let r = renderAll(&m, blocks: 2)
        let fin = r.results.flatMap(\.finished)
        #expect(fin.count == 1 && fin[0].heard == 4800 && fin[0].endFrame == 240)
        #expect(m.isIdle)
        // Stopped before its first samples: ends at once, nothing heard.
        let late = ClipStream()
        m.add(id: 6, clip: Clip(stream: late))
        m.stop(id: 6)
        let r2 = renderAll(&m, blocks: 1)
        #expect(r2.results[0].finished.map(\.id) == [6] && r2.results[0].finished[0].heard == 0)
        #expect(late.isCancelled)
    }
}

final class Counter: Sendable {
    private let n = Mutex(0)
    func add() { n.withLock { $0 += 1 } }
    var value: Int { n.withLock { $0 } }
}

import Synchronization
