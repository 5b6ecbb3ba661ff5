import Testing
@testable import CrierCore

/// `crier voice build`'s rules and `crier voice render`'s command template (docs/voice.md,
/// "Building a pack", "Rendering a pack with a TTS").
@Suite struct VoiceBuildTests {
    /// A triangle wave of peak `amplitude` (no libm in CrierCore's tests).
    static func tone(_ seconds: Double, rate: Int = 16000, hz: Double = 440, amplitude: Float = 0.5) -> [Float] {
        let period = Double(rate) / hz
        return (0..<Int(seconds * Double(rate))).map { i in
            let ph = (Double(i) / period).truncatingRemainder(dividingBy: 1)
            return amplitude * Float(ph < 0.5 ? 4 * ph - 1 : 3 - 4 * ph)
        }
    }

    static func silence(_ seconds: Double, rate: Int = 16000, level: Float = 0) -> [Float] {
        // Low-level noise from a fixed generator: a room's floor, not digital zero.
        var rng = SplitMix64(seed: 7)
        return (0..<Int(seconds * Double(rate))).map { _ in level * (Float(rng.next() % 2001) / 1000 - 1) }
    }

    @Test func decibels() {
        #expect(abs(VoiceBuild.db(1) - 0) < 1e-9)
        #expect(abs(VoiceBuild.db(0.1) - -20) < 1e-9)
        #expect(abs(VoiceBuild.db(0.5) - -6.0206) < 1e-4)
        #expect(VoiceBuild.db(0) == -.infinity)
        for d in [-60.0, -20, -1, 0, 6] { #expect(abs(VoiceBuild.db(Decibel.gain(d)) - d) < 1e-9) }
    }

    /// The trim keeps the voice with 20 ms before and 40 ms after, drops a room's noise floor
    /// (-60 dBFS) and keeps a soft syllable within 40 dB of the loudest.
    @Test func silenceIsTrimmedToTheVoiceAndItsMargins() throws {
        let rate = 16000
        let x = Self.silence(0.5, level: 0.001) + Self.tone(0.3, amplitude: 0.5) + Self.tone(0.1, amplitude: 0.01) + Self.silence(0.7, level: 0.001)
        let (range, loudest) = VoiceBuild.trim(x, rate: rate)
        let r = try #require(range)
        #expect(abs(loudest - VoiceBuild.db(0.5 / 3.0.squareRoot())) < 0.1, "a triangle's RMS is peak/√3")
        #expect(r.lowerBound == 8000 - 320, "20 ms before the voice")
        #expect(r.upperBound == 8000 + 6400 + 640, "the soft syllable (-40 dB) kept, then 40 ms")
        // A syllable more than 40 dB under the loudest is the room, not the voice.
        let y = Self.tone(0.3, amplitude: 0.5) + Self.tone(0.1, amplitude: 0.003) + Self.silence(0.2)
        #expect(VoiceBuild.trim(y, rate: rate).range == 0..<(4800 + 640))
    }

    @Test func silenceOnlyIsNoVoice() {
        #expect(VoiceBuild.trim(Self.silence(2), rate: 16000).range == nil)
        #expect(VoiceBuild.trim(Self.silence(2, level: 0.001), rate: 16000).range == nil, "noise at -60 dBFS")
        #expect(VoiceBuild.trim([], rate: 16000).range == nil)
        let clip = VoiceClip(name: "four", text: "四", kind: .number)
        let p = VoiceBuild.checkTrimmed(file: "four.wav", clip: clip, range: nil, loudestDb: -62.3, rate: 16000)
        #expect(p?.message == "four.wav: silence only (loudest 10 ms at -62.3 dBFS, voice starts at -55 dBFS); is it the right file, was the microphone on?")
        #expect(VoiceBuild.checkTrimmed(file: "four.wav", clip: clip, range: 0..<(11 * 16000), loudestDb: -10, rate: 16000)?.kind == .tooLong)
    }

    @Test func shortClipsAreMeasuredRepeated() {
        let x = Self.tone(0.3)
        let m = VoiceBuild.measurable(x, rate: 16000)
        #expect(m.count >= 3 * 16000 && m.count < 3 * 16000 + x.count)
        #expect(Array(m[x.count..<(2 * x.count)]) == x)
        #expect(VoiceBuild.measurable(Self.tone(4), rate: 16000).count == 4 * 16000)
        #expect(VoiceBuild.measurable([], rate: 16000).isEmpty)
    }

    @Test func gainMeetsTheTargetUnlessThePeakCeilingHoldsIt() {
        #expect(VoiceBuild.gain(loudness: -26, truePeak: 0.1) == (6, 0))
        // -14 dBTP peak + 12 dB would be -2 dBTP: fine. Peak 0.5 (-6 dBTP) + 12 dB passes -1.
        let g = VoiceBuild.gain(loudness: -32, truePeak: 0.5)
        #expect(abs(g.db - 5.0206) < 1e-3 && abs(g.limitedBy - 6.9794) < 1e-3)
        #expect(VoiceBuild.gain(loudness: -.infinity, truePeak: 0) == (0, 0))
    }

    /// The limiter: no sample over the ceiling, untouched away from the peaks, the cut reported.
    @Test func theLimiterHoldsEverySampleUnderTheCeiling() {
        var rng = SplitMix64(seed: 33)
        for _ in 0..<50 {
            var x = Self.tone(0.5, hz: 200 + Double(rng.next() % 800), amplitude: 0.3)
            // A few clicks up to +12 dB over the tone.
            for _ in 0..<Int(rng.next() % 5) { x[Int(rng.next() % UInt64(x.count))] = Float(rng.next() % 1000) / 1000 * 1.2 }
            let ceiling = Float(Decibel.gain(-1.5))
            let (y, cut) = VoiceBuild.limit(x, ceiling: ceiling, rate: 16000)
            #expect(y.allSatisfy { abs($0) <= ceiling + 1e-6 })
            #expect(y.count == x.count)
            let changed = zip(x, y).filter { $0 != $1 }.count
            #expect(changed <= 5 * (2 * 48 + 1), "only ±3 ms around each click")
            #expect(cut >= 0 && (cut > 0) == (changed > 0))
        }
        let quiet = Self.tone(0.2, amplitude: 0.1)
        #expect(VoiceBuild.limit(quiet, ceiling: 0.5, rate: 16000).samples == quiet)
    }

    /// With a measure whose answer is known (RMS as loudness, sample peak as true peak), every
    /// clip ends within 0.1 LU of the target and under the ceiling, whatever its level and crest.
    @Test func levelBringsEveryClipToTheTargetUnderTheCeiling() {
        func measure(_ z: [Float]) -> (lufs: Double, truePeak: Double) {
            let ms = z.reduce(0.0) { $0 + Double($1) * Double($1) } / Double(max(1, z.count))
            return (ms > 0 ? VoiceBuild.db(ms.squareRoot()) : -.infinity, Double(z.map { abs($0) }.max() ?? 0))
        }
        var rng = SplitMix64(seed: 9)
        for _ in 0..<40 {
            var x = Self.tone(0.2 + Double(rng.next() % 100) / 100, amplitude: Float(rng.next() % 900 + 10) / 1000)
            if rng.next() % 2 == 0 { x[Int(rng.next() % UInt64(x.count))] = 0.99 }  // a click
            let r = VoiceBuild.level(x, rate: 16000, measure: measure)
            let m = measure(VoiceBuild.measurable(r.samples, rate: 16000))
            #expect(abs(m.lufs - VoiceBuild.targetLUFS) <= 0.1, "\(m.lufs)")
            #expect(VoiceBuild.db(m.truePeak) <= VoiceBuild.peakCeilingDBTP + 0.05)
            #expect(abs(r.offTarget) <= 0.1)
        }
        let silent = VoiceBuild.level([Float](repeating: 0, count: 1000), rate: 16000, measure: measure)
        #expect(silent.offTarget == .infinity)
    }

    @Test func recordingsAreMatchedToClips() {
        let inv = [("four", "四"), ("five", "五"), ("six", "六"), ("seven", "七")].map { VoiceClip(name: $0.0, text: $0.1, kind: .number) }
        let (files, problems) = VoiceBuild.match(files: ["four.wav", "five.FLAC", "six.wav", "six.flac", "fiev.wav", "notes.txt", "manifest"], inventory: inv)
        #expect(files == ["four": "four.wav", "five": "five.FLAC"])
        #expect(problems.map(\.message) == [
            "fiev.wav: no clip is called fiev (`crier voice clips` lists the names); rename or remove it",
            "six: 2 recordings (six.flac, six.wav); keep one",
            "seven: no recording (seven.wav or .flac); record \"七\"",
        ])
    }

    @Test func recordingsWithTheWrongShapeAreNamed() {
        let clip = VoiceClip(name: "four", text: "四", kind: .number)
        #expect(VoiceBuild.check(.init(file: "four.wav", rate: 48000, channels: 2, frames: 9600), clip: clip)?.message == "four.wav: 2 channels; record mono (or export one channel)")
        #expect(VoiceBuild.check(.init(file: "four.wav", rate: 48000, channels: 1, frames: 600 * 48000), clip: clip)?.message
            == "four.wav: 10.0 min long; a recording is one word or phrase (\"四\"), at most 30 s with its silence")
        #expect(VoiceBuild.check(.init(file: "four.wav", rate: 48000, channels: 1, frames: 0), clip: clip)?.kind == .empty)
        #expect(VoiceBuild.check(.init(file: "four.wav", rate: 48000, channels: 1, frames: 30 * 48000), clip: clip) == nil)
    }

    @Test func theManifestNamesWhatTheBuildDid() {
        let m = VoiceBuild.manifest(VoicePackManifest(language: .zh, name: "X\ny", licence: "CC0-1.0", rate: 24000), source: "recordings from /a\nb")
        guard case .success(let back) = VoicePackManifest.parse(m) else { Issue.record("\(m)"); return }
        #expect(back == VoicePackManifest(language: .zh, name: "X y", licence: "CC0-1.0", rate: 24000))
        #expect(m.hasPrefix("# Built by `crier voice build`: recordings from /a b\n"))
    }

    /// The check's findings: a clip far from the median, over full scale, with long silences,
    /// or long; the summary's spread.
    @Test func loudnessFindings() {
        func c(_ n: String, _ l: Double, tp: Double = 0.5, s: Double = 0.5, lead: Double = 0.02, tail: Double = 0.04) -> VoiceLoudnessCheck.Clip {
            VoiceLoudnessCheck.Clip(name: n, lufs: l, truePeak: tp, seconds: s, leadSeconds: lead, tailSeconds: tail)
        }
        let clips = [c("a", -20), c("b", -20.4), c("c", -19.8), c("d", -24.5), c("e", -20, tp: 1.2), c("f", -20, lead: 0.6), c("g", -20, s: 5)]
        let s = VoiceLoudnessCheck.summary(clips)!
        #expect(s.minLUFS == -24.5 && s.maxLUFS == -19.8 && s.medianLUFS == -20 && abs(s.spread - 4.7) < 1e-9)
        let f = VoiceLoudnessCheck.findings(clips)
        #expect(f.map(\.clip) == ["d", "e", "f", "g"])
        #expect(f[0].message.hasPrefix("d: -24.5 LUFS, 4.5 LU softer than the pack's median -20.0 LUFS"))
        #expect(f[1].kind == .clipping)
        #expect(VoiceLoudnessCheck.findings(Array(clips.prefix(3))).isEmpty)
        #expect(VoiceLoudnessCheck.summary([]) == nil)
    }
}

/// `--tts 'COMMAND {text} {out}'`: split once, substituted inside words, never through a shell.
@Suite struct TTSCommandTests {
    func argv(_ t: String, text: String, out: String = "/w/four.wav") -> [String]? {
        guard case .success(let c) = TTSCommand.parse(t) else { return nil }
        let a = c.argv(text: text, out: out)
        return [a.program] + a.arguments
    }

    @Test func wordsAreSplitLikeAShellWithoutExpansion() {
        #expect(argv("espeak-ng -v cmn -w {out} {text}", text: "新客户来了") == ["espeak-ng", "-v", "cmn", "-w", "/w/four.wav", "新客户来了"])
        #expect(argv("  piper   --model 'my voice.onnx' --output_file={out}  --text \"{text}\" ", text: "forty-two")
            == ["piper", "--model", "my voice.onnx", "--output_file=/w/four.wav", "--text", "forty-two"])
        #expect(argv("tts a\\ b {out} {text}", text: "x") == ["tts", "a b", "/w/four.wav", "x"])
        #expect(argv("sh -c 'say \"$1\" > \"$2\"' sh {text} {out}", text: "o'clock") == ["sh", "-c", "say \"$1\" > \"$2\"", "sh", "o'clock", "/w/four.wav"])
    }

    /// Whatever a clip's text holds, it is one argument and nothing in it is interpreted.
    @Test func theTextIsAlwaysOneArgument() {
        for text in ["o'clock", "a b  c", "$(rm -rf /)", "; reboot", "`id`", "{out}", "\"", "\\", "*", "-v"] {
            #expect(argv("tts -w {out} {text}", text: text) == ["tts", "-w", "/w/four.wav", text], "\(text)")
        }
        #expect(argv("tts --say=[{text}]", text: "a {text} b", out: "o") == nil, "no {out}")
        #expect(argv("tts -o {out} --say=[{text}]", text: "a {text} b", out: "o") == ["tts", "-o", "o", "--say=[a {text} b]"])
    }

    @Test func badTemplatesAreRefused() {
        for (t, why) in [("", "expected a command first"), ("{text} {out}", "expected a command first"), ("tts {text}", "no {out}"),
                         ("tts {out}", "no {text}"), ("tts '{out} {text}", "is not closed"), ("tts {out} {text} \\", "lone")] {
            guard case .failure(let p) = TTSCommand.parse(t) else { Issue.record("accepted \(t)"); continue }
            #expect(p.description.contains(why), "\(t): \(p)")
        }
    }
}

/// The early answer the speech pipeline asks before the first sound equals the full plan's.
@Suite struct SplicePlannerCoversTests {
    @Test func coversAgreesWithThePlanOnRandomTextsAndEveryExample() {
        var rng = SplitMix64(seed: 5)
        for lang in Lang.allCases {
            let all = VoiceInventory.clips(lang: lang)
            let planner = SplicePlanner(lang: lang, clips: all)
            let partial = SplicePlanner(lang: lang, clips: all.filter { _ in rng.next() % 4 != 0 })
            var texts = SpokenText.examples.filter { lang == .zh || $0.en != nil }.map { Announcer().announce(.text($0.input), lang: lang).utterance.text }
            texts += ["请到三号窗口取餐", "新客户来了，四十二号，请到窗口取餐", "please collect at window three", ""]
            for t in texts {
                #expect(planner.covers(t) == planner.plan(t).covered, "\(t)")
                #expect(partial.covers(t) == partial.plan(t).covered, "\(t)")
            }
        }
    }
}
