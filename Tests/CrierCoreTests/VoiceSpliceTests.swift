import Testing
@testable import CrierCore

/// Issue 33 step 5: clips joined into one utterance. Each clip of a synthetic pack is a tone of
/// its own frequency, so the clips in the output can be read back from the sound alone.
@Suite struct VoiceSpliceTests {
    struct TonePack {
        var pack: VoicePack
        var hz: [String: Double]
        var planner: SplicePlanner
        var rate: Int
    }

    /// zh at 16 kHz, tones 300 + 37·k Hz; en at 32 kHz, 300 + 25·k Hz (304 clips up to 7.9 kHz).
    static let packs: [Lang: TonePack] = {
        var out: [Lang: TonePack] = [:]
        for (lang, rate, step) in [(Lang.zh, 16000, 37.0), (Lang.en, 32000, 25.0)] {
            let inventory = VoiceInventory.clips(lang: lang)
            var files: [String: MemoryPack.File] = [:]
            var hz: [String: Double] = [:]
            for (k, c) in inventory.enumerated() {
                hz[c.name] = 300 + step * Double(k)
                files[c.name + ".wav"] = .tone(rate: rate, channels: 1, frames: Int64(rate * 3 / 10), hz: hz[c.name]!, amplitude: 0.5,
                                                 phase: Double.pi / 2)  // a cosine: a hard cut into it clicks
            }
            let manifest = "language = \(lang.rawValue)\nname = tones\nlicence = CC0-1.0\nrate = \(rate)\n"
            let r = VoicePackLoader.load(MemoryPack(manifest: manifest, files: files), inventory: inventory, lang: lang)
            out[lang] = TonePack(pack: r.pack!, hz: hz, planner: SplicePlanner(lang: lang, clips: inventory), rate: rate)
        }
        return out
    }()

    /// The clips heard in `x`: the frequency of each 100 ms window (zero crossings, ±5 Hz), every
    /// 25 ms; a clip counts when 3 windows in a row hear it (a window across a join hears a
    /// frequency between the two clips', never the same one three times). Repeats collapse.
    static func heard(_ x: [Float], _ p: TonePack, step: Double) -> [String] {
        let window = p.rate / 10, hop = p.rate / 40
        var names: [String] = []
        var last: String?
        var run = 0
        var i = 0
        while i + window <= x.count {
            var crossings = 0
            var energy: Float = 0
            for j in i..<(i + window - 1) {
                if (x[j] < 0) != (x[j + 1] < 0) { crossings += 1 }
                energy += x[j] * x[j]
            }
            var name: String?
            if energy / Float(window) > 0.05 {
                let f = Double(crossings) * Double(p.rate) / Double(2 * window)
                if let best = p.hz.min(by: { abs($0.value - f) < abs($1.value - f) }), abs(best.value - f) < step * 0.36 { name = best.key }
            }
            if name != nil, name == last { run += 1 } else { run = 1; last = name }
            if run == 3, let name, names.last != name { names.append(name) }
            i += hop
        }
        return names
    }

    static func collapsed(_ names: [String]) -> [String] {
        var out: [String] = []
        for n in names where out.last != n { out.append(n) }
        return out
    }

    /// Where a sample step is larger than a 5 ms crossfade allows between tones of amplitude
    /// 0.5: at each sample, the step of the fastest tone sounding there, plus the fade's slope
    /// across the two tones (2·0.5/(n+1)), plus 16-bit rounding. nil: no such sample.
    static func click(_ x: [Float], starts: [Int], names: [String], _ p: TonePack) -> (at: Int, step: Float, allowed: Float)? {
        let n = p.rate * VoiceSplicer.crossfadeMs / 1000
        var allowed = [Float](repeating: Float(2 * 0.5 / Double(n + 1)) + 2.0 / 32767, count: x.count)
        for (s, name) in zip(starts, names) {
            let own = Float(0.5 * 2 * Double.pi * p.hz[name]! / Double(p.rate))
            let length = p.pack.clips[name]!.count
            for i in max(0, s)..<min(x.count, s + length + 1) { allowed[i] = max(allowed[i], Float(2 * 0.5 / Double(n + 1)) + 2.0 / 32767 + own) }
        }
        for i in 1..<max(1, x.count) where abs(x[i] - x[i - 1]) > allowed[i] { return (i, abs(x[i] - x[i - 1]), allowed[i]) }
        return nil
    }

    static func check(_ e: SpokenTextExample, _ lang: Lang) -> Bool {
        let p = packs[lang]!
        let words = Announcer().announce(.text(e.input), lang: lang).utterance.text
        let plan = p.planner.plan(words)
        guard let (x, starts) = VoiceSplicer.splice(plan, pack: p.pack) else {
            #expect(!plan.covered, "\(lang) \(e.input): a covered plan must splice")
            return false
        }
        #expect(starts.count == plan.clipNames.count)
        #expect(collapsed(heard(x, p, step: lang == .zh ? 37 : 25)) == collapsed(plan.clipNames), "\(lang) \(e.input): \(words)")
        let c = click(x, starts: starts, names: plan.clipNames, p)
        #expect(c == nil, "\(lang) \(e.input): a click at \(c.map { "\($0)" } ?? "")")
        #expect(abs(x.first!) < 0.01 && abs(x.last!) < 0.01, "fades at both ends")
        // Length: the clips, less one crossfade per join, plus the pauses.
        let n = p.rate * VoiceSplicer.crossfadeMs / 1000
        var expected = 0
        var joined = false
        for s in plan.steps {
            switch s {
            case .clip: expected += p.rate * 3 / 10 - (joined ? n : 0); joined = true
            case .pause(let ms, _) where ms > 0 && expected > 0: expected += p.rate * ms / 1000; joined = false
            default: break
            }
        }
        #expect(x.count == expected, "\(lang) \(e.input)")
        return true
    }

    @Test func everyCoveredExampleRowSaysItsClipsInOrderWithoutAClick() {
        var spliced: [Lang: Int] = [:]
        for lang in Lang.allCases {
            for e in SpokenText.examples where lang == .zh || e.en != nil {
                if Self.check(e, lang) { spliced[lang, default: 0] += 1 }
            }
        }
        // Every row that is all numbers and symbols (most of the table) is spliced.
        #expect(spliced[.zh]! >= 70, "\(spliced)")
        #expect(spliced[.en]! >= 60, "\(spliced)")
    }

    @Test func templatesSpliceWithPausesAtTheirPunctuation() {
        let p = Self.packs[.zh]!
        let words = Announcer().announce(.newCustomers(numbers: [41, 42, 7]), lang: .zh).utterance.text
        let plan = p.planner.plan(words)
        let (x, starts) = VoiceSplicer.splice(plan, pack: p.pack)!
        #expect(Self.heard(x, p, step: 37) == Self.collapsed(plan.clipNames))
        // 新客户来了，: 0.3 s of clip, then 200 ms of silence before 四.
        #expect(starts[0] == 0 && starts[1] == 4800 + 3200)
        #expect(x[4800..<(4800 + 3200)].allSatisfy { $0 == 0 })
    }

    @Test func aHardCutWouldFailTheJoinCheck() {
        // The check has teeth: the same clips butted together without a crossfade click in
        // most rows of more than one clip (103 of 135: a join where the tail is near the
        // cosine's top does not).
        var rows = 0, clicks = 0
        for lang in Lang.allCases {
            let p = Self.packs[lang]!
            for e in SpokenText.examples where lang == .zh || e.en != nil {
                let plan = p.planner.plan(Announcer().announce(.text(e.input), lang: lang).utterance.text)
                guard plan.covered, plan.clipNames.count > 1 else { continue }
                var butted: [Float] = []
                var starts: [Int] = []
                for name in plan.clipNames { starts.append(butted.count); butted += p.pack.clips[name]!.map { Float($0) / 32767 } }
                rows += 1
                if Self.click(butted, starts: starts, names: plan.clipNames, p) != nil { clicks += 1 }
            }
        }
        #expect(rows > 100 && clicks * 3 >= rows * 2, "\(clicks) of \(rows)")
    }

    @Test func aPlanWithAGapOrAMissingClipIsNotSpliced() {
        let p = Self.packs[.zh]!
        #expect(VoiceSplicer.splice(p.planner.plan("请到三号窗口"), pack: p.pack) == nil)
        var lacking = p.pack
        lacking.clips["four"] = nil
        #expect(VoiceSplicer.splice(p.planner.plan("四十二"), pack: lacking) == nil)
    }

    /// The first sound without the whole splice: `head` is exactly the spliced part's first
    /// samples, for every example row and template, at every length up to the first clip's end
    /// less a crossfade (and nil past it, or for a gap), so the daemon's first 20 ms need only
    /// the first clip.
    @Test func theHeadIsThePrefixOfTheWholeSplice() {
        var rows = 0
        for lang in Lang.allCases {
            let p = Self.packs[lang]!
            var texts = SpokenText.examples.filter { lang == .zh || $0.en != nil }.map { Announcer().announce(.text($0.input), lang: lang).utterance.text }
            texts += ["新客户来了，四十二号", "，四十二", "New customer, number forty-two"]
            for words in texts {
                let plan = p.planner.plan(words)
                guard let full = VoiceSplicer.splice(plan, pack: p.pack)?.samples else {
                    #expect(VoiceSplicer.head(plan, pack: p.pack, count: 10) == nil)
                    continue
                }
                rows += 1
                for count in [0, 1, 79, 80, 81, p.rate / 50, 4000] {
                    if let h = VoiceSplicer.head(plan, pack: p.pack, count: count) {
                        #expect(h == Array(full.prefix(count)), "\(words) \(count)")
                    }
                }
                #expect(VoiceSplicer.head(plan, pack: p.pack, count: p.rate / 50) != nil, "20 ms of a 0.3 s clip")
                #expect(VoiceSplicer.head(plan, pack: p.pack, count: p.rate) == nil, "past the first clip")
            }
        }
        #expect(rows > 130)
    }
}
