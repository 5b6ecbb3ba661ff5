import Testing
@testable import CrierCore

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

    @Test(arguments: SpokenText.examples.filter { $0.en != nil })
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

extension SpokenTextExample: CustomTestStringConvertible {
    public var testDescription: String { "\(rule): \(input)" }
}

/// Seeded random shop texts: the invariants hold for every combination, not just the table.
@Suite struct SpokenTextInvariantTests {
    /// A piece of shop text with what any correct reading must contain.
    struct Piece {
        var text: String
        var zhMust: [String]
        var enMust: [String]
        /// The text has a real negative number (a leading minus).
        var negatives = 0
    }

    struct RNG: RandomNumberGenerator {
        var state: UInt64
        mutating func next() -> UInt64 {
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return z ^ (z >> 31)
        }
    }

    static func zhInt(_ n: UInt64) -> String { NumberWords.integer(n, lang: .zh) }
    static func enInt(_ n: UInt64) -> String { NumberWords.integer(n, lang: .en) }
    static func fullWidth(_ s: String) -> String {
        String(s.unicodeScalars.map { u -> Character in
            switch u.value {
            case 0x30...0x39, 0x2C, 0x3A, 0x2D, 0x25: Character(Unicode.Scalar(u.value - 0x21 + 0xFF01)!)
            default: Character(u)
            }
        })
    }

    static func piece(_ r: inout RNG) -> Piece {
        switch Int.random(in: 0..<14, using: &r) {
        case 0:
            let n = UInt64.random(in: 1...999, using: &r)
            return Piece(text: "\(n)号", zhMust: [zhInt(n) + "号"], enMust: [enInt(n)])
        case 1:
            let n = UInt64.random(in: 1000...999_999_999, using: &r)
            var s = String(n), grouped = ""
            while s.count > 3 { grouped = "," + s.suffix(3) + grouped; s.removeLast(3) }
            // 两 before 千/万/亿 when the number leads with 2 (两千五百).
            var zh = zhInt(n)
            if zh.hasPrefix("二千") || zh.hasPrefix("二万") || zh.hasPrefix("二亿") { zh = "两" + zh.dropFirst() }
            return Piece(text: "共" + s + grouped + "件", zhMust: [zh], enMust: [enInt(n)])
        case 2:
            let h = UInt64.random(in: 0...23, using: &r), m = UInt64.random(in: 1...59, using: &r)
            return Piece(text: "\(h):" + (m < 10 ? "0" : "") + "\(m)取餐", zhMust: ["点", zhInt(m) + "分"], enMust: [enInt(m)])
        case 3:
            let y = UInt64.random(in: 2000...2099, using: &r), mo = UInt64.random(in: 1...12, using: &r), d = UInt64.random(in: 1...28, using: &r)
            let sep = ["-", "/", "."].randomElement(using: &r)!
            let t = "\(y)\(sep)" + (mo < 10 ? "0" : "") + "\(mo)\(sep)" + (d < 10 ? "0" : "") + "\(d)"
            return Piece(text: t, zhMust: [zhInt(mo) + "月" + zhInt(d) + "日"], enMust: [SpokenTextMonth.name(Int(mo))])
        case 4:
            let a = UInt64.random(in: 1...20, using: &r), b = a + UInt64.random(in: 1...20, using: &r)
            return Piece(text: "等候\(a)-\(b)分钟", zhMust: ["到"], enMust: [enInt(a) + " to " + enInt(b)])
        case 5:
            var d = "1" + String(Int.random(in: 3...9, using: &r))
            for _ in 0..<9 { d += String(Int.random(in: 0...9, using: &r)) }
            let zhDigits = d.map { $0 == "1" ? "幺" : NumberWords.zhDigits[$0.wholeNumberValue!] }.joined()
            return Piece(text: "电话" + d, zhMust: [String(zhDigits.prefix(3))],
                         enMust: [d.prefix(3).map { NumberWords.enOnes[$0.wholeNumberValue!] }.joined(separator: " ")])
        case 6:
            let p = UInt64.random(in: 1...100, using: &r)
            return Piece(text: "\(p)%", zhMust: ["百分之" + zhInt(p)], enMust: [enInt(p) + " percent"])
        case 7:
            let y = UInt64.random(in: 1...9999, using: &r), f = UInt64.random(in: 10...99, using: &r)
            return Piece(text: "¥\(y).\(f)", zhMust: ["元"], enMust: ["yuan"])
        case 8:
            let y = UInt64.random(in: 1...999, using: &r), f = UInt64.random(in: 10...99, using: &r)
            return Piece(text: "$\(y).\(f)", zhMust: ["美元"], enMust: [enInt(y) + (y == 1 ? " dollar " : " dollars ") + enInt(f)])
        case 9:
            let n = UInt64.random(in: 1...99, using: &r)
            return Piece(text: "#\(n)", zhMust: [zhInt(n) + "号"], enMust: ["number " + enInt(n)])
        case 10:
            let n = UInt64.random(in: 1...99, using: &r)
            return Piece(text: " -\(n)度", zhMust: ["负" + zhInt(n)], enMust: ["minus " + enInt(n)], negatives: 1)
        case 11:
            return Piece(text: ["请稍候", "新客户来了，", "&amp;", "+", "/", "、", "！", "（外带）", "😀", "：", "\u{200B}"].randomElement(using: &r)!,
                         zhMust: [], enMust: [])
        case 12:
            let n = UInt64.random(in: 0...999, using: &r)
            let t = "A" + (n < 100 ? "0" : "") + (n < 10 ? "0" : "") + "\(n)"
            return Piece(text: t, zhMust: ["A"], enMust: ["A "])
        default:
            let n = UInt64.random(in: 1...999, using: &r)
            return Piece(text: fullWidth("\(n)") + "号", zhMust: [zhInt(n) + "号"], enMust: [enInt(n)])
        }
    }

    /// The generator behind `zhRandomShopTextsHaveNoDigitsAndNoFalseMinus`; CrierSpeechTests
    /// runs the same seeds through espeak.
    static func texts(seed: UInt64, count: Int) -> [(text: String, pieces: [Piece])] {
        var r = RNG(state: seed)
        return (0..<count).map { _ in
            let pieces = (0..<Int.random(in: 1...5, using: &r)).map { _ in piece(&r) }
            let seps = ["，", " ", "、", "；"]
            return (pieces.map(\.text).joined(separator: seps.randomElement(using: &r)!), pieces)
        }
    }

    static let cases = 2000

    @Test func zhRandomShopTextsHaveNoDigitsAndNoFalseMinus() {
        for (text, pieces) in Self.texts(seed: 13, count: Self.cases) {
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

    @Test func enRandomShopTextsKeepEveryNumber() {
        for (text, pieces) in Self.texts(seed: 1313, count: Self.cases) {
            let en = SpokenText.spell(TextSanitizer.clean(text, maxChars: 500).text, lang: .en)
            #expect(!en.contains(where: { $0.isASCII && $0.isNumber }), "digit left: \(text) → \(en)")
            for p in pieces { for m in p.enMust { #expect(en.contains(m), "\(p.text) should read \(m): \(text) → \(en)") } }
        }
    }
}

enum SpokenTextMonth {
    static func name(_ m: Int) -> String { Reader.enMonths[m - 1] }
}

extension String {
    func count(of s: String) -> Int {
        var n = 0
        var rest = Substring(self)
        while let r = rest.firstRange(of: s) { n += 1; rest = rest[r.upperBound...] }
        return n
    }
}
