/// Seeded random shop-like texts with what every correct reading of them must contain: the
/// invariant tests in CrierCoreTests and the phoneme checks in CrierSpeechTests run the same
/// seeds, so a failure names a seed and a text to replay.
public enum SpokenTextSamples {
    /// A piece of shop text with what any correct reading must contain.
    public struct Piece: Sendable {
        public var text: String
        /// Words the zh reading must contain.
        public var zhMust: [String]
        public var enMust: [String]
        /// The text has a real negative number (a leading minus).
        public var negatives = 0
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

    static func piece(_ r: inout SplitMix64) -> Piece {
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
            return Piece(text: t, zhMust: [zhInt(mo) + "月" + zhInt(d) + "日"], enMust: [Reader.enMonths[Int(mo) - 1]])
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
            return Piece(text: t, zhMust: ["诶"], enMust: ["A "])
        default:
            let n = UInt64.random(in: 1...999, using: &r)
            return Piece(text: fullWidth("\(n)") + "号", zhMust: [zhInt(n) + "号"], enMust: [enInt(n)])
        }
    }

    /// `count` texts of 1-5 pieces each, joined by one separator per text.
    public static func texts(seed: UInt64, count: Int) -> [(text: String, pieces: [Piece])] {
        var r = SplitMix64(seed: seed)
        return (0..<count).map { _ in
            let pieces = (0..<Int.random(in: 1...5, using: &r)).map { _ in piece(&r) }
            let seps = ["，", " ", "、", "；"]
            return (pieces.map(\.text).joined(separator: seps.randomElement(using: &r)!), pieces)
        }
    }
}
