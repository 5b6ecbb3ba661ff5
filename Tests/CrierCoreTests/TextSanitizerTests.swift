import Testing
@testable import CrierCore

/// The scalar fast path must give exactly what the Character walk gives, for any text.
@Suite struct TextSanitizerTests {
    /// The walk as it was before the fast path (commit 13be19d), kept verbatim as the reference.
    static func reference(_ input: String, maxChars: Int) -> TextSanitizer.Result {
        let input = TextSanitizer.decodeEntities(input)
        var out = ""
        var replaced = 0
        var lastWasSpace = true
        for ch in input {
            var isSpace = ch.isWhitespace
            if ch.unicodeScalars.contains(where: TextSanitizer.isUnwanted) {
                replaced += 1
                isSpace = true
            }
            if isSpace {
                if !lastWasSpace { out.append(" ") }
                lastWasSpace = true
            } else {
                out.append(ch)
                lastWasSpace = false
            }
        }
        if out.last == " " { out.removeLast() }
        var truncated = 0
        if out.count > maxChars {
            truncated = out.count - maxChars
            out = String(out.prefix(maxChars))
        }
        return TextSanitizer.Result(text: out, truncated: truncated, replaced: replaced)
    }

    // Pieces of text drawn at random: what order systems send, and what breaks grapheme rules.
    static let pieces: [String] = [
        "新客户来了", "四十二号", "，", "。", "号", "a", "Z", "42", " ", "  ", "\t", "\n", "\r\n", "\r", "\u{00A0}",
        "\u{3000}", "\u{0007}", "\u{001B}", "\u{0085}", "\u{009C}", "\u{200B}", "\u{200C}", "\u{200D}", "\u{200E}",
        "\u{202E}", "\u{2060}", "\u{FEFF}", "\u{E000}", "\u{FFFE}", "\u{0301}", "e\u{0301}", "\u{0308}", "\u{20DD}",
        "\u{302A}", "\u{3099}", "か\u{3099}", "ｶ\u{FF9E}", "👍", "👍🏽", "👨‍👩‍👧", "🇨🇳", "🇺🇸🇨", "❤\u{FE0F}",
        "한국어", "\u{1100}\u{1161}", "\u{AC00}\u{11A8}", "न\u{093F}", "\u{0600}1", "ก\u{0E33}", "&amp;", "&lt;",
        "&#7;", "&#x200D;", "&#x301;", "&#20013;", "&#x1F600;", "&nbsp;", "&bogus;", "&", ";", "Ω", "ß", "ǅ", "€",
        "₂", "‰", "…", "「", "」", "ー", "ヶ", "〜", "\u{2028}", "\u{2029}", "\u{00AD}", "\u{0378}", "\u{E0041}",
    ]

    @Test(arguments: 0..<30)
    func fastPathEqualsTheCharacterWalk(batch: Int) {
        var rng = SplitMix64(seed: UInt64(batch) &* 0x9E37_79B9 &+ 16)
        for _ in 0..<200 {  // 30 × 200 = 6000 strings
            let n = Int.random(in: 0...40, using: &rng)
            var s = ""
            for _ in 0..<n { s += Self.pieces.randomElement(using: &rng)! }
            // Mostly "safe" text, so the fast path itself is exercised often.
            if Bool.random(using: &rng) { s = String(s.unicodeScalars.filter(TextSanitizer.standsAlone).map(Character.init)) }
            let cap = [0, 1, 2, 3, 5, 8, 13, 40, 500][Int.random(in: 0..<9, using: &rng)]
            let got = TextSanitizer.clean(s, maxChars: cap)
            let want = Self.reference(s, maxChars: cap)
            #expect(got == want, "\(s.unicodeScalars.map { String($0.value, radix: 16) }) cap \(cap)")
        }
    }

    /// The table-free classification equals the Unicode tables' for every scalar there is, with
    /// the tables of the toolchain that builds it (6.0.3's and 6.3.1's may differ).
    @Test func classifyEqualsTheUnicodeTablesForEveryScalar() {
        var mismatches: [String] = []
        for v in UInt32(0)...0x10FFFF {
            guard let u = Unicode.Scalar(v) else { continue }
            let c = TextSanitizer.classify(u)
            if c.space != u.properties.isWhitespace || c.unwanted != TextSanitizer.isUnwanted(u) {
                mismatches.append(String(v, radix: 16))
            }
        }
        #expect(mismatches.isEmpty, "U+\(mismatches.prefix(20).joined(separator: ", U+"))")
        #expect(TextSanitizer.fastPrintable(0x4E2D) && !TextSanitizer.fastPrintable(0x3000) && !TextSanitizer.fastPrintable(0x20))
    }

    @Test func edgeCases() {
        let cases: [(String, Int)] = [
            ("", 10), ("   ", 10), ("\r\n\r\n", 10), ("a\r\nb", 10), ("abc", 0), ("abc ", 3), (" abc", 2),
            ("a\u{0007}\u{0007}b", 10), ("新客户来了，四十二号", 4), ("e\u{0301}e\u{0301}", 1), ("a\u{200D}b", 10),
            ("&#7;&#7;x", 10), ("x &nbsp; y", 10), (String(repeating: "号", count: 600), 500),
        ]
        for (s, cap) in cases {
            #expect(TextSanitizer.clean(s, maxChars: cap) == Self.reference(s, maxChars: cap), "\(s.debugDescription) cap \(cap)")
        }
        // The fast path is taken for order text, and not for text that needs grapheme rules.
        #expect("新客户来了，四十二号 A&B 42".unicodeScalars.allSatisfy(TextSanitizer.standsAlone))
        #expect(!"e\u{0301}".unicodeScalars.allSatisfy(TextSanitizer.standsAlone))
        #expect(!"👍🏽".unicodeScalars.allSatisfy(TextSanitizer.standsAlone))
    }

    /// The scripts left out of Chinese text (espeak-ng 1.51's use-after-free, TextSanitizer.leftOut):
    /// for any mix of pieces, the zh text holds none of them, the en text is what it was without
    /// a language, and the zh text is the en text with those characters turned into spaces.
    @Test(arguments: 0..<10)
    func chineseTextHasNoScriptThatSwitchesEspeakLanguage(batch: Int) {
        let foreign = ["Ϩϛ", "α", "Ω", "ϐϗ", "ա", "ש", "ع", "अ", "ক", "ਕ", "க", "ಕ", "ක", "ა", "한국", "\u{1100}\u{1161}", "\u{10450}",
                       "abϐ", "Ϩ1ϛ", "e\u{0301}ϐ", "\u{A7FF}"]
        var rng = SplitMix64(seed: UInt64(batch) &* 0x2545_F491 &+ 7)
        for _ in 0..<200 {
            var s = ""
            for _ in 0..<Int.random(in: 0...20, using: &rng) {
                s += Bool.random(using: &rng) ? foreign.randomElement(using: &rng)! : Self.pieces.randomElement(using: &rng)!
            }
            let zh = TextSanitizer.clean(s, maxChars: 500, lang: .zh)
            let en = TextSanitizer.clean(s, maxChars: 500, lang: .en)
            #expect(!zh.text.unicodeScalars.contains { TextSanitizer.leftOut($0, lang: .zh) }, "\(s.debugDescription) → \(zh.text.debugDescription)")
            #expect(en == TextSanitizer.clean(s, maxChars: 500), "\(s.debugDescription)")
            #expect(en.leftOut == 0)
            let spaced = String(s.map { ch in ch.unicodeScalars.contains { TextSanitizer.leftOut($0, lang: .zh) } && !ch.unicodeScalars.contains(where: TextSanitizer.isUnwanted) ? " " : ch })
            #expect(zh.text == TextSanitizer.clean(spaced, maxChars: 500).text, "\(s.debugDescription)")
        }
    }

    @Test func chineseTextExamples() {
        let r = TextSanitizer.clean("新客户 Ϩϛ 42号", maxChars: 500, lang: .zh)
        #expect(r.text == "新客户 42号" && r.leftOut == 2 && r.replaced == 0)
        #expect(TextSanitizer.clean("Ω咖啡 한국 Zoë", maxChars: 500, lang: .zh).text == "咖啡 Zoë")
        #expect(TextSanitizer.clean("Ω咖啡 한국 Zoë", maxChars: 500, lang: .en).text == "Ω咖啡 한국 Zoë")
        // A Latin letter that is not in a left-out range (Latin Extended-D starts at U+A720 but
        // espeak-ng maps U+A700-U+D7FF to Korean, so it is left out too).
        #expect(TextSanitizer.clean("\u{A722}", maxChars: 500, lang: .zh).text == "")
        // Every left-out scalar takes the Character walk (the fast scalar path does not check).
        for v in UInt32(0)...0x10FFFF {
            guard let u = Unicode.Scalar(v), TextSanitizer.leftOut(u, lang: .zh) else { continue }
            #expect(!TextSanitizer.standsAlone(u) && !TextSanitizer.fastPrintable(v), "U+\(String(v, radix: 16))")
        }
    }

    /// No run of more than `maxWordScalars` scalars between word ends reaches espeak-ng (its
    /// 160-byte word buffers; "a." + 161 letters, "s'" × 80, a letter with 200 accents abort
    /// it), and breaking only adds spaces: the text without them is the text given.
    @Test(arguments: 0..<10)
    func longWordsAreBrokenAndNothingElseChanges(batch: Int) {
        let parts = ["s'", "a.", "h", "H", "\u{0301}", "é", "新", "。", " ", "4", "-", "/", "www.example.com/", "😀", "👍🏽", "\u{3000}", "ϐ"]
        var rng = SplitMix64(seed: UInt64(batch) &* 0x9E37_79B9 &+ 40)
        for _ in 0..<300 {
            var s = ""
            let heavy = parts.randomElement(using: &rng)!
            for _ in 0..<Int.random(in: 0...300, using: &rng) {
                s += Int.random(in: 0..<4, using: &rng) == 0 ? parts.randomElement(using: &rng)! : heavy
            }
            let (out, broken) = TextSanitizer.breakLongWords(s)
            var run = 0, longest = 0
            for u in out.unicodeScalars {
                run = TextSanitizer.endsWord(u) ? 0 : run + 1
                longest = max(longest, run)
            }
            #expect(longest <= TextSanitizer.maxWordScalars, "\(s.debugDescription)")
            #expect(out.unicodeScalars.filter { $0 != " " }.map(\.value) == s.unicodeScalars.filter { $0 != " " }.map(\.value))
            #expect((broken == 0) == (out == s))
            #expect(TextSanitizer.breakLongWords(out).broken == 0)
        }
    }

    @Test func longWordExamples() {
        let suffixes = String(repeating: "s'", count: 220)
        let (out, broken) = TextSanitizer.breakLongWords(suffixes)
        #expect(broken == 1 && out.split(separator: " ").map(\.count) == [40, 40, 40, 40, 40, 40, 40, 40, 40, 40, 40])
        #expect(TextSanitizer.breakLongWords("新客户来了，" + String(repeating: "号", count: 300)).broken == 0)  // hanzi are words of their own
        #expect(TextSanitizer.breakLongWords("Order 42 for José at www.example.com/menu").broken == 0)
        let zalgo = "a.h" + String(repeating: "\u{0301}", count: 200)
        #expect(TextSanitizer.breakLongWords(zalgo).text.unicodeScalars.split(separator: " ").allSatisfy { $0.count <= 40 })
        let announcer = Announcer(templates: Templates(), maxChars: 500)
        let r = announcer.announce(.text("a." + String(repeating: "H", count: 170)), lang: .en)
        #expect(r.brokenWords == 1 && r.speakable)
    }
}
