/// Numbers as words, per language, so the synthesizer never guesses (espeak-ng's Mandarin
/// voices misread digits and drop decimal points; see docs/speech.md).
///
/// Rules (documented in docs/speech.md):
/// - Integers up to 12 digits are read as numbers: zh 42 → 四十二, en 42 → forty-two.
/// - A decimal point is read as 点 / "point", the fraction digit by digit, trailing zeros dropped
///   (the payment-speaker style): zh 100.50 → 一百点五, en 100.50 → one hundred point five.
/// - Digit strings with a leading zero (007) or longer than 12 digits are read digit by digit.
public enum NumberWords {
    public static func words(_ digits: String, lang: Lang) -> String {
        let parts = digits.split(separator: ".", maxSplits: 1, omittingEmptySubsequences: false)
        let intPart = String(parts[0])
        var frac = parts.count > 1 ? String(parts[1]) : ""
        while frac.hasSuffix("0") { frac.removeLast() }
        var out: String
        if intPart.isEmpty {
            out = lang == .zh ? "零" : "zero"
        } else if (intPart.count > 1 && intPart.hasPrefix("0")) || intPart.count > 12 {
            out = digitByDigit(intPart, lang: lang)
        } else {
            out = integer(UInt64(intPart)!, lang: lang)
        }
        if !frac.isEmpty {
            out += lang == .zh ? "点" + digitByDigit(frac, lang: lang) : " point " + digitByDigit(frac, lang: lang)
        }
        return out
    }

    public static func integer(_ n: UInt64, lang: Lang) -> String {
        lang == .zh ? zh(n) : en(n)
    }

    public static func digitByDigit(_ digits: String, lang: Lang) -> String {
        let names = lang == .zh ? zhDigits : enOnes
        return digits.compactMap { $0.wholeNumberValue.map { names[$0] } }
            .joined(separator: lang == .zh ? "" : " ")
    }

    // MARK: Chinese

    static let zhDigits = ["零", "一", "二", "三", "四", "五", "六", "七", "八", "九"]

    static func zh(_ n: UInt64) -> String {
        if n == 0 { return "零" }
        let units: [(UInt64, String)] = [(1_0000_0000_0000, "万亿"), (1_0000_0000, "亿"), (1_0000, "万")]
        var out = ""
        var rest = n
        var needZero = false
        for (size, name) in units where rest >= size || !out.isEmpty {
            let group = rest / size
            rest %= size
            if group == 0 { needZero = true; continue }
            if needZero || (!out.isEmpty && group < 1000) { out += "零" }
            out += zhGroup(group) + name
            needZero = false
        }
        if rest > 0 {
            if needZero || (!out.isEmpty && rest < 1000) { out += "零" }
            out += zhGroup(rest)
        }
        // 10-19 are said 十, 十一 … not 一十, 一十一 when they lead the number.
        if out.hasPrefix("一十") { out.removeFirst() }
        return out
    }

    /// 1...9999 without leading 零.
    static func zhGroup(_ n: UInt64) -> String {
        let digits = [n / 1000, n / 100 % 10, n / 10 % 10, n % 10]
        let names = ["千", "百", "十", ""]
        var out = ""
        var pendingZero = false
        for (i, d) in digits.enumerated() {
            if d == 0 {
                if !out.isEmpty { pendingZero = true }
                continue
            }
            if pendingZero { out += "零"; pendingZero = false }
            out += zhDigits[Int(d)] + names[i]
        }
        return out
    }

    // MARK: English (US style: no "and")

    static let enOnes = ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine",
                         "ten", "eleven", "twelve", "thirteen", "fourteen", "fifteen", "sixteen",
                         "seventeen", "eighteen", "nineteen"]
    static let enTens = ["", "", "twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety"]

    static func en(_ n: UInt64) -> String {
        if n == 0 { return "zero" }
        let scales: [(UInt64, String)] = [(1_000_000_000_000, "trillion"), (1_000_000_000, "billion"),
                                          (1_000_000, "million"), (1000, "thousand")]
        var parts: [String] = []
        var rest = n
        for (size, name) in scales where rest >= size {
            parts.append(enHundreds(rest / size) + " " + name)
            rest %= size
        }
        if rest > 0 { parts.append(enHundreds(rest)) }
        return parts.joined(separator: " ")
    }

    static func enHundreds(_ n: UInt64) -> String {
        var parts: [String] = []
        if n >= 100 { parts.append(enOnes[Int(n / 100)] + " hundred") }
        let r = Int(n % 100)
        if r >= 20 {
            parts.append(enTens[r / 10] + (r % 10 > 0 ? "-" + enOnes[r % 10] : ""))
        } else if r > 0 {
            parts.append(enOnes[r])
        }
        return parts.joined(separator: " ")
    }

    /// Replaces every number (and the symbols around numbers) in `text` by words, the way a
    /// native speaker reads shop text: see `SpokenText` and the tables in docs/speech.md.
    public static func spellNumbers(in text: String, lang: Lang) -> String {
        SpokenText.spell(text, lang: lang)
    }

    static func asciiDigit(_ c: Character) -> Character? {
        guard let u = c.unicodeScalars.first, c.unicodeScalars.count == 1 else { return nil }
        switch u.value {
        case 0x30...0x39: return c
        case 0xFF10...0xFF19: return Character(Unicode.Scalar(u.value - 0xFF10 + 0x30)!)
        default: return nil
        }
    }
}
