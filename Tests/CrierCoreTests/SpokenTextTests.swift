import Testing
@testable import CrierCore

/// The rows with an English reading. Outside the macro: Swift 6.0.3's type checker crashes
/// (signal 11) on a closure inside `@Test(arguments:)`.
let englishExamples = SpokenText.examples.filter { $0.en != nil }

/// Issue 13 item 11: shop text read the way a native speaker reads it at the counter. Every row
/// of the tables in docs/speech.md (`SpokenText.examples`) is checked here in both languages.
@Suite struct SpokenTextTests {
    /// The rows are read the way an order's text is: sanitized (entities decoded), then spelled.
    static func read(_ s: String, _ lang: Lang) -> String {
        SpokenText.spell(TextSanitizer.clean(s, maxChars: 500).text, lang: lang)
    }

    @Test(arguments: SpokenText.examples)
    func chineseReading(_ e: SpokenTextExample) {
        #expect(Self.read(e.input, .zh) == e.zh, "\(e.rule): \(e.input)")
    }

    @Test(arguments: englishExamples)
    func englishReading(_ e: SpokenTextExample) {
        #expect(Self.read(e.input, .en) == e.en!, "\(e.rule): \(e.input)")
    }

    @Test func tableCoversEveryKindOfShopText() {
        let rules = Set(SpokenText.examples.map(\.rule))
        for r in ["order number", "amount", "currency", "time", "date", "range", "phone number", "percentage",
                  "negative", "thousands separator", "huge number", "zero, leading zeros", "version", "symbol", "mixed text"] {
            #expect(rules.contains(r), "no example for \(r)")
        }
    }

    @Test func entitiesAreDecodedBeforeReading() {
        #expect(TextSanitizer.clean("A&amp;B &lt;3 &#39;x&#x27; &#20013;", maxChars: 100).text == "A&B <3 'x' 中")
        #expect(TextSanitizer.clean("a&#7;b", maxChars: 100).text == "a b")  // a decoded control is still removed
        #expect(TextSanitizer.clean("&bogus; & ;", maxChars: 100).text == "&bogus; & ;")
    }
}


/// Seeded random shop texts (`SpokenTextSamples`): the invariants hold for every combination,
/// not just the table.
@Suite struct SpokenTextInvariantTests {
    static let cases = 2000

    @Test func zhRandomShopTextsHaveNoDigitsAndNoFalseMinus() {
        for (text, pieces) in SpokenTextSamples.texts(seed: 13, count: Self.cases) {
            let zh = SpokenText.spell(TextSanitizer.clean(text, maxChars: 500).text, lang: .zh)
            #expect(!zh.contains(where: { $0.isASCII && $0.isNumber }), "ASCII digit left: \(text) → \(zh)")
            #expect(!zh.unicodeScalars.contains { (0xFF10...0xFF19).contains($0.value) }, "\(text) → \(zh)")
            for sym in ["%", "#", "$", "¥", "+", "&", "/", "-", "－"] {
                #expect(!zh.contains(sym), "'\(sym)' left for espeak to guess: \(text) → \(zh)")
            }
            let negatives = pieces.reduce(0) { $0 + $1.negatives }
            #expect(zh.count(of: "负") == negatives, "负 only for a real minus: \(text) → \(zh)")
            for p in pieces { for m in p.zhMust where !m.isEmpty { #expect(zh.contains(m), "\(p.text) should read \(m): \(text) → \(zh)") } }
        }
    }

    /// Any text at all, not only shop-like: no digit survives in either language, and the
    /// words stay within the fuzz target's bound (Tests/fuzz/targets/text.swift).
    @Test func arbitraryTextLeavesNoDigitsAndStaysBounded() {
        var r = SplitMix64(seed: 1_300_013)
        let alphabet = Array("0123456789０１９-－~～—:：,，.．/#%％+&@$¥￥€£年月日号元分点 \u{3000}aAzZ新客户😀\u{200B}\u{202E}")
        for _ in 0..<5000 {
            let text = String((0..<Int.random(in: 1...40, using: &r)).map { _ in alphabet.randomElement(using: &r)! })
            let clean = TextSanitizer.clean(text, maxChars: 500).text
            for lang in Lang.allCases {
                let out = SpokenText.spell(clean, lang: lang)
                #expect(!out.unicodeScalars.contains { (0x30...0x39).contains($0.value) || (0xFF10...0xFF19).contains($0.value) },
                        "\(lang): \(text) → \(out)")
                #expect(out.count <= clean.count * 24 + 64, "\(lang): \(text) → \(out)")
            }
        }
    }

    @Test func enRandomShopTextsKeepEveryNumber() {
        for (text, pieces) in SpokenTextSamples.texts(seed: 1313, count: Self.cases) {
            let en = SpokenText.spell(TextSanitizer.clean(text, maxChars: 500).text, lang: .en)
            #expect(!en.contains(where: { $0.isASCII && $0.isNumber }), "digit left: \(text) → \(en)")
            for p in pieces { for m in p.enMust { #expect(en.contains(m), "\(p.text) should read \(m): \(text) → \(en)") } }
        }
    }
}

extension String {
    func count(of s: String) -> Int {
        var n = 0
        var rest = Substring(self)
        while let r = rest.firstRange(of: s) { n += 1; rest = rest[r.upperBound...] }
        return n
    }
}

/// Issue 16: the plain-text fast path of `SpokenText.spell` gives what the tokenizer gives.
@Suite struct SpokenTextFastPathTests {
    @Test func plainChineseTextComesOutAsTheTokenizerWouldWriteIt() {
        let pool: [String] = ["请", "各", "位", "顾", "客", "注", "意", "号", "元", "新", "，", "。", "、", "；", "：", "！", "？",
                              "「", "」", "《", "》", "…", "——", "～", "〜", "（", "）", "０", "５", "Ａ", "％", "＋", "￥", "¥", "€",
                              "°", "℃", "×", "÷", "‰", "−", "–", "😀", "👍🏽", "é", "e\u{301}", "한", "ー", "·", " ", "A", "7", "-", "/", "x",
                              "：", "．", "！", "？", "＃", "／", "－", "＆", "ｘ", "Ｎｏ．", "＂"]
        var rng = SplitMix64(seed: 16)
        var plain = 0
        for round in 0..<3000 {
            // Mostly hanzi and CJK punctuation, sometimes one odd piece.
            var t = ""
            for _ in 0..<Int.random(in: 1...40, using: &rng) {
                t += Int.random(in: 0..<6, using: &rng) == 0 ? pool.randomElement(using: &rng)! : pool[Int.random(in: 0..<17, using: &rng)]
            }
            if Reader.isPlain(t) { plain += 1 }
            var r = Reader(t, lang: .zh)
            let slow = r.run()
            #expect(SpokenText.spell(t, lang: .zh) == slow, "round \(round): \(t)")
        }
        #expect(plain > 300, "the fast path is taken for plain text (\(plain) of 3000)")
        #expect(Reader.isPlain("请各位顾客注意，本店今日推出新品。"))
        #expect(!Reader.isPlain("请到3号窗口") && !Reader.isPlain("３号") && !Reader.isPlain("满100-20") && !Reader.isPlain("八元/斤"))
    }
}
