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
}
