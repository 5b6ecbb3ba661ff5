import Testing
@testable import CrierCore

/// What a device lost with a clip's end still queued had played (issue 31, item 5): the playhead
/// stops at the device's last good answer, and a clip counts as heard only if its last audible
/// frame had played by then (its silent end need not have).
@Suite struct PlayheadTests {
    @Test func thePlayheadIsTheLastGoodAnswerAndNeverGoesBack() {
        var p = Playhead()
        p.observe(written: 4800, delay: 3840)
        #expect(p.played == 960)
        p.observe(written: 5760, delay: 3840)
        #expect(p.played == 1920)
        // A rewind takes back queued frames: written goes down, what played does not.
        p.observe(written: 3000, delay: 1000)
        #expect(p.played == 2000)
        p.observe(written: 2500, delay: 2500)
        #expect(p.played == 2000)
        // Nonsense from a driver (more queued than written, negative) counts as nothing played.
        var q = Playhead()
        q.observe(written: 100, delay: 500)
        q.observe(written: 100, delay: -5)
        #expect(q.played == 100)
        var r = Playhead()
        r.observe(written: 100, delay: 500)
        #expect(r.played == 0)
        // Self-paced: the pacing clock, never beyond what was written.
        var s = Playhead()
        s.observe(written: 960, clock: 500)
        #expect(s.played == 500)
        s.observe(written: 960, clock: 2000)
        #expect(s.played == 960)
        s.observe(written: 1000, clock: -3)
        #expect(s.played == 960)
    }

    @Test func aClipIsHeardOnlyIfItsLastFrameHadPlayed() {
        let c = QueuedClipEnd(id: 1, end: 10_000, heard: 4800)
        #expect(c.fate(played: 10_000) == .ended(heard: 4800))
        #expect(c.fate(played: 12_000) == .ended(heard: 4800))
        #expect(c.fate(played: 9_999) == .again)
        #expect(c.fate(played: 0) == .again)
        #expect(c.unplayed(played: 9_999) == 1 && c.unplayed(played: 6160) == 3840 && c.unplayed(played: 10_001) == 0)
        // Stopped: heard up to where its 240-frame fade began (stream 9760); less if that had not played.
        let s = QueuedClipEnd(id: 2, end: 10_000, heard: 3000, tail: 240, stopped: true)
        #expect(s.fate(played: 10_000) == .ended(heard: 3000))
        #expect(s.fate(played: 9_760) == .cut(heard: 3000))
        #expect(s.fate(played: 9_800) == .cut(heard: 3000))
        #expect(s.fate(played: 9_759) == .cut(heard: 2999))
        #expect(s.fate(played: 7_000) == .cut(heard: 240))
        #expect(s.fate(played: 6_000) == .cut(heard: 0))
        #expect(s.fate(played: 0) == .cut(heard: 0))
    }

    @Test func theMixerSaysWhichFramesOfAStoppedClipAreItsFadeOut() {
        let format = AudioFormat(rate: 48000, channels: 1)
        var m = Mixer(format: format, fadeMs: 5)
        var buf = [Int16](repeating: 0, count: 960)
        m.add(id: 1, clip: Clip(samples: [Float](repeating: 0.5, count: 48000)))
        m.add(id: 2, clip: Clip(samples: [Float](repeating: 0.5, count: 500)))
        let r1 = buf.withUnsafeMutableBufferPointer { m.render(into: $0, frames: 960) }
        #expect(r1.finished.map(\.id) == [2] && r1.finished[0].heard == 500 && r1.finished[0].tail == 0)
        m.stop(id: 1)
        let r2 = buf.withUnsafeMutableBufferPointer { m.render(into: $0, frames: 960) }
        // Heard up to frame 960, where the fade began; the next 240 frames (5 ms) are the fade.
        #expect(r2.finished.map(\.id) == [1] && r2.finished[0].endFrame == 240)
        #expect(r2.finished[0].heard == 960 && r2.finished[0].tail == 240)
    }

    /// A device modelled frame by frame: the engine writes periods into a buffer with the real
    /// mixer (clips of random lengths, some stopped mid-way), the device plays at an irregular
    /// pace, the engine asks for the delay at random moments (and not always). For every frame F at
    /// which the device could die (it had played exactly F frames), every clip fully written by
    /// then: counted heard only if its last frame was at or before F; a stopped clip's heard frames
    /// never more than had played; and the estimate behind the truth by no more than the frames
    /// played since the last good answer.
    @Test(arguments: 0..<40)
    func aFailureAtEveryFrameNeverCountsAnUnplayedEndAsHeard(seed: Int) {
        var rng = SplitMix(state: UInt64(seed) &* 0x9E37_79B9 &+ 31)
        let format = AudioFormat(rate: 8000, channels: 1)
        var mixer = Mixer(format: format, fadeMs: 1, headroomDb: 3)  // 8-frame fades
        let period = Int.random(in: 40...160, using: &rng)
        let buffer = period * Int.random(in: 2...6, using: &rng)
        struct Written { var clip: QueuedClipEnd; var start: Int; var atHw: Int }
        var clips: [Written] = []
        var starts: [UInt64: Int] = [:]
        var observations: [(hw: Int, played: UInt64)] = []  // the playhead after each good answer
        var playhead = Playhead()
        var hw = 0, written = 0, nextID: UInt64 = 1, maxStep = 0
        var buf = [Int16](repeating: 0, count: period)
        while nextID <= 12 || !mixer.isIdle {
            // The device plays an irregular amount (never past what was written: an underrun waits).
            let step = min(written - hw, Int.random(in: 0...(period * 3 / 2), using: &rng))
            hw += step
            maxStep = max(maxStep, step)
            if Int.random(in: 0..<5, using: &rng) > 0 {
                playhead.observe(written: UInt64(written), delay: written - hw)
                observations.append((hw, playhead.played))
            }
            if mixer.isIdle || Int.random(in: 0..<8, using: &rng) == 0, nextID <= 12 {
                mixer.add(id: nextID, clip: Clip(samples: [Float](repeating: 0.5, count: Int.random(in: 20...900, using: &rng))))
                nextID += 1
            }
            if Int.random(in: 0..<10, using: &rng) == 0, let id = mixer.activeIDs.randomElement(using: &rng) { mixer.stop(id: id) }
            while buffer - (written - hw) > 0 {
                let n = min(buffer - (written - hw), Int.random(in: 1...period, using: &rng))
                let r = buf.withUnsafeMutableBufferPointer { mixer.render(into: $0, frames: n) }
                for id in r.started { starts[id] = written }
                for f in r.finished {
                    let q = QueuedClipEnd(id: f.id, end: UInt64(written + f.endFrame), quiet: f.quiet, heard: f.heard, tail: f.tail,
                                          stopped: f.tail > 0)
                    clips.append(Written(clip: q, start: starts[f.id] ?? written, atHw: hw))
                }
                written += n
            }
        }
        #expect(clips.count >= 12)
        var obs = 0
        var lost = Playhead()
        var worstLag = 0
        for dead in 0...hw {
            // The answers the device gave before it died at `dead`.
            while obs < observations.count && observations[obs].hw <= dead {
                lost = Playhead()
                lost.observe(written: observations[obs].played, delay: 0)
                obs += 1
            }
            let played = lost.played
            #expect(played <= UInt64(dead), "seed \(seed): the playhead \(played) is past the device's \(dead)")
            worstLag = max(worstLag, dead - Int(played))
            for w in clips where w.atHw <= dead {
                let c = w.clip
                switch c.fate(played: played) {
                case .ended(let heard):
                    #expect(c.audibleEnd <= UInt64(dead), "seed \(seed): clip \(c.id) counted heard with its end \(c.audibleEnd) unplayed at \(dead)")
                    #expect(heard == c.heard)
                case .cut(let heard):
                    #expect(c.stopped && c.end > UInt64(dead) || c.end > played)
                    let truth = min(c.heard, max(0, dead - w.start))
                    #expect(heard <= truth, "seed \(seed): clip \(c.id) heard \(heard) > \(truth) played")
                    #expect(truth - heard <= dead - Int(played))
                case .again:
                    #expect(!c.stopped && c.end > played)
                }
            }
        }
        // The estimate lags the device by at most what it played between two good answers.
        var gap = 0
        var last = 0
        for o in observations {
            gap = max(gap, o.hw - last)
            last = o.hw
        }
        #expect(worstLag <= max(gap, hw - last), "seed \(seed)")
    }

    /// Clips of speech-like sound followed by silent tails of various lengths (none, shorter than
    /// the 8-frame fade, longer than a buffer; digital zeros and noise up to -60 dBFS), whole
    /// and streamed, some stopped, played one after the other in blocks of random sizes. For
    /// every frame at which the device could die, each clip counts heard iff its last loud
    /// frame (|sample| > -60 dBFS) had played: at that frame yes, one frame earlier no (said
    /// again, or for a stopped clip heard no further than had played). And what a clip counted
    /// heard had not played was silence on the wire too.
    @Test(arguments: 0..<40)
    func aClipIsHeardOnceItsLastAudibleFrameHadPlayed(seed: Int) {
        var rng = SplitMix(state: UInt64(seed) &* 0x2545_F491 &+ 7)
        let format = AudioFormat(rate: 8000, channels: 1)
        var mixer = Mixer(format: format, fadeMs: 1, headroomDb: 3)  // 8-frame fades
        let threshold = Mixer.audibleThreshold
        #expect(threshold == Float(0.001))
        var out: [Int16] = []
        var buf = [Int16](repeating: 0, count: 256)
        var checked = 0, silentTails = 0
        for id in UInt64(1)...12 {
            let loud = Int.random(in: 1...300, using: &rng)
            let tail = [0, 1, 7, 8, 9, Int.random(in: 10...80, using: &rng), Int.random(in: 200...1500, using: &rng)]
                .randomElement(using: &rng)!
            var samples: [Float] = (0..<loud).map { _ in
                Float.random(in: 0.0011...0.6, using: &rng) * (Bool.random(using: &rng) ? 1 : -1)
            }
            // Some quiet stretches inside the speech (pauses between words).
            if loud > 40, Bool.random(using: &rng) {
                let at = Int.random(in: 0..<(loud - 30), using: &rng)
                for i in at..<(at + 20) { samples[i] = 0 }
            }
            let noisy = Bool.random(using: &rng)
            samples += (0..<tail).map { _ in noisy ? Float.random(in: -threshold...threshold, using: &rng) : 0 }
            // The last loud sample by the definition, found the plain way.
            var lastLoud = -1
            for (i, x) in samples.enumerated() where abs(x) > threshold { lastLoud = i }
            #expect(lastLoud == loud - 1)
            let streamed = Bool.random(using: &rng)
            if streamed {
                let st = ClipStream()
                var i = 0
                while i < samples.count {
                    let n = min(samples.count - i, Int.random(in: 1...400, using: &rng))
                    st.append(Array(samples[i..<(i + n)]))
                    i += n
                }
                st.finish()
                mixer.add(id: id, clip: Clip(stream: st))
            } else {
                mixer.add(id: id, clip: Clip(samples: samples))
            }
            let stopAfter = Int.random(in: 0..<4, using: &rng) == 0 ? Int.random(in: 1...4, using: &rng) : nil
            let start = out.count
            var blocks = 0
            var stopAt: Int?
            var fin: QueuedClipEnd?
            while fin == nil {
                _ = mixer.pollStreams()
                if blocks == stopAfter {
                    mixer.stop(id: id)
                    stopAt = mixer.voices.first(where: { $0.id == id })?.stopAt
                }
                let n = Int.random(in: 1...200, using: &rng)
                let r = buf.withUnsafeMutableBufferPointer { mixer.render(into: $0, frames: n) }
                #expect(r.gapFrames == 0)
                for f in r.finished {
                    fin = QueuedClipEnd(id: f.id, end: UInt64(out.count + f.endFrame), quiet: f.quiet, heard: f.heard,
                                        tail: f.tail, stopped: f.tail > 0)
                }
                out += buf[0..<n]
                blocks += 1
            }
            // Silence between clips.
            out += [Int16](repeating: 0, count: Int.random(in: 0...50, using: &rng))
            guard let c = fin else { continue }
            let clipEnd = stopAt ?? samples.count
            #expect(Int(c.end) == start + clipEnd, "seed \(seed) clip \(id)")
            // The stream frame just past the last loud frame that was mixed (before the clip's end).
            let loudBefore = samples[0..<clipEnd].lastIndex(where: { abs($0) > threshold }).map { $0 + 1 } ?? 0
            let truth = start + loudBefore
            #expect(c.audibleEnd == UInt64(truth), "seed \(seed) clip \(id): audible end \(c.audibleEnd), last loud frame \(truth - 1)")
            if truth < Int(c.end) { silentTails += 1 }
            // What counts heard without having played was silence on the wire too.
            let limit = Int16((threshold * 0.71 * 32767).rounded(.up))
            for f in truth..<Int(c.end) {
                #expect(abs(Int(out[f])) <= Int(limit), "seed \(seed) clip \(id): frame \(f) of its silent end is \(out[f])")
            }
            for dead in start...(Int(c.end) + 1) {
                checked += 1
                switch c.fate(played: UInt64(dead)) {
                case .ended(let heard):
                    #expect(dead >= truth, "seed \(seed) clip \(id): heard at \(dead), its last loud frame \(truth - 1) unplayed")
                    #expect(heard == c.heard)
                case .cut(let heard):
                    #expect(c.stopped && dead < truth, "seed \(seed) clip \(id) at \(dead)")
                    #expect(heard <= min(c.heard, dead - start), "seed \(seed) clip \(id) at \(dead): heard \(heard)")
                case .again:
                    #expect(!c.stopped && dead < truth, "seed \(seed) clip \(id): not heard at \(dead), its last loud frame \(truth - 1) played")
                }
            }
            // The edge: heard once the last loud frame has played, not one frame earlier.
            #expect(c.fate(played: UInt64(truth)) == .ended(heard: c.heard), "seed \(seed) clip \(id)")
            if truth > start {
                #expect(c.fate(played: UInt64(truth - 1)) != .ended(heard: c.heard), "seed \(seed) clip \(id)")
            }
        }
        #expect(checked > 1000 && silentTails >= 4, "seed \(seed): \(checked) frames, \(silentTails) silent tails")
    }

    @Test func theSilenceScanIsBoundedAndCountsUnwrittenStreamFramesAsSilence() {
        let silent = [Float](repeating: 0, count: 100)
        #expect(Mixer.quietEnd(silent, before: 100, limit: 30) == 30)
        #expect(Mixer.quietEnd([0.5] + silent, before: 101, limit: 1000) == 100)
        #expect(Mixer.quietEnd([0.5, 0.001, -0.001, 0.0011, 0, 0], before: 6, limit: 100) == 2)
        #expect(Mixer.quietEnd([0.5, 0, 0], before: 2, limit: 100) == 1)
        #expect(Mixer.quietEnd([], before: 0, limit: 100) == 0)
        let st = ClipStream()
        st.append([0.5] + [Float](repeating: 0.0005, count: 40_000))
        #expect(st.quietEnd(before: 40_001, limit: 100_000) == 40_000)
        // Past what was written (a stopped clip played zeros there): silence.
        #expect(st.quietEnd(before: 40_011, limit: 100_000) == 40_010)
        #expect(st.quietEnd(before: 40_011, limit: 500) == 500)
        #expect(st.quietEnd(before: 1, limit: 500) == 0)
        // A quiet count larger than the end (cannot happen) never puts the audible end before 0.
        #expect(QueuedClipEnd(id: 1, end: 10, quiet: 50, heard: 10).audibleEnd == 0)
    }
}
