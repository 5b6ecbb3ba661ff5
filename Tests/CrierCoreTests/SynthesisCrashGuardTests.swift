import Testing
@testable import CrierCore

@Suite struct SynthesisCrashGuardTests {
    @Test func keysAreStableAndTellVoiceAndTextApart() {
        let k = SynthesisCrashGuard.key(voice: "cmn-latn-pinyin", text: "新客户来了，四十二号")
        #expect(k == SynthesisCrashGuard.key(voice: "cmn-latn-pinyin", text: "新客户来了，四十二号"))
        #expect(k != SynthesisCrashGuard.key(voice: "en-us", text: "新客户来了，四十二号"))
        #expect(k != SynthesisCrashGuard.key(voice: "cmn-latn-pinyin", text: "新客户来了，四十三号"))
        // The separator keeps "ab"+"c" and "a"+"bc" apart.
        #expect(SynthesisCrashGuard.key(voice: "ab", text: "c") != SynthesisCrashGuard.key(voice: "a", text: "bc"))
        // FNV-1a 64 of the empty voice, the separator byte and no text (a fixed value: files
        // written by one build are read by the next).
        #expect(SynthesisCrashGuard.key(voice: "", text: "") == 0xaf63_bd4c_8601_b7df)
    }

    @Test func marksRoundTripAndAnythingElseReadsAsNoMark() {
        for k: UInt64 in [0, 1, 0xdead_beef, .max] {
            let m = SynthesisCrashGuard.mark(k)
            #expect(m.count == SynthesisCrashGuard.markSize && m.last == UInt8(ascii: "\n"))
            #expect(SynthesisCrashGuard.decodeMark(m) == k)
        }
        #expect(SynthesisCrashGuard.idleMark.count == SynthesisCrashGuard.markSize)
        #expect(SynthesisCrashGuard.decodeMark(SynthesisCrashGuard.idleMark) == nil)
        #expect(SynthesisCrashGuard.decodeMark([]) == nil)  // a new file
        #expect(SynthesisCrashGuard.decodeMark(Array("00000000dead".utf8)) == nil)  // torn
        #expect(SynthesisCrashGuard.decodeMark(Array("zzzzzzzzzzzzzzzz\n".utf8)) == nil)
    }

    @Test func strikesFileRoundTripsAndIgnoresJunk() {
        var g = SynthesisCrashGuard()
        g.crashed(during: 0xabc)
        g.crashed(during: 0xabc)
        g.crashed(during: 7)
        #expect(SynthesisCrashGuard.decode(g.encoded()) == g)
        let junk = SynthesisCrashGuard.decode("abc 2\nnot a line\n7 x\nffff -3\n\n12 1 9\n" + String(repeating: "f", count: 40) + " 1\n")
        #expect(junk.strikes == [0xabc: 2])
    }

    @Test func twoCrashesInARowRefuseATextAndAnEndClearsIt() {
        var g = SynthesisCrashGuard()
        #expect(g.crashed(during: 5) == 1)
        #expect(g.refuses(5) == nil)
        #expect(g.crashed(during: 5) == 2)
        #expect(g.refuses(5) == 2)
        #expect(g.refuses(6) == nil)
        #expect(g.ended(5) && g.refuses(5) == nil && !g.ended(5))
        for k in 0..<UInt64(200) { g.crashed(during: k) }
        #expect(g.strikes.count == SynthesisCrashGuard.capacity)
    }

    /// Against a model over seeded random runs: a text is refused exactly when the last two
    /// things that happened to it were crashes inside its synthesis (with no synthesis of it
    /// ending between), and a refused text stays refused until it ends (it never can: it is
    /// refused) or a reboot. Strikes survive the file.
    @Test(arguments: 0..<20)
    func refusalMatchesTheModel(seed: Int) {
        var rng = SplitMix64(seed: UInt64(seed) &+ 0x51)
        var g = SynthesisCrashGuard()
        var history: [UInt64: [Bool]] = [:]  // true: a crash during it, false: it ended
        for _ in 0..<400 {
            let k = UInt64.random(in: 0..<6, using: &rng)
            if g.refuses(k) == nil {
                if Int.random(in: 0..<3, using: &rng) == 0 {
                    g.crashed(during: k)
                    history[k, default: []].append(true)
                } else {
                    g.ended(k)
                    history[k, default: []].append(false)
                }
            }
            if Int.random(in: 0..<10, using: &rng) == 0 { g = SynthesisCrashGuard.decode(g.encoded()) }
            for key in UInt64(0)..<6 {
                let h = history[key] ?? []
                let modelRefuses = h.count >= 2 && h.suffix(2) == [true, true]
                #expect((g.refuses(key) != nil) == modelRefuses, "key \(key) history \(h)")
            }
        }
    }
}
