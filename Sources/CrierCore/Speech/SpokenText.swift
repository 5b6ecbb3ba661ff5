/// Shop text as a native speaker reads it aloud: dates, times, ranges, phone numbers, amounts,
/// percentages, order numbers and symbols become words before synthesis, so espeak never
/// guesses (its Mandarin voice reads `-` as 负 and `%`, `+`, `#`, `/`, `&` as English words; its
/// English voice reads `$3.50` as "dollar three point five zero").
///
/// A small tokenizer walks the text; at each digit (or a sign, currency, `#` or `+` in front of
/// one) it tries the rules below in order and takes the first that matches. The tables in
/// docs/speech.md list every rule with an example; NumberWordsTests checks each row.
///
/// 1. money: `¥88` `$3.50` `€5` `£2.50` (prefix currency, thousands separators allowed)
/// 2. order number: `#42` `No.42` `#A012`
/// 3. date: `2026-12-01` `2026/12/01` `2026.12.01`; a 4-digit year before 年
/// 4. time `12:30[:45]` (h ≤ 24, two-digit minutes), else a ratio or score `3:1`
/// 5. hyphen chains: three groups or ≥ 7 digits (`400-820-8820`, `010-12345678`) digit by digit;
///    `05-20` (a zero-padded part) month-day
/// 6. phone numbers: 11-digit mobiles `1[3-9]…` (3-4-4), `+86 …`, digits after 电话/手机/尾号/tel/…
/// 7. codes: digits after 单号/编号/…码 (4 or more), a leading zero, more than 12 digits, or more
///    than 6 bare digits with no unit after and no amount word before: digit by digit
/// 8. quantities: `3,500` `3.50` `1.2.3` `1/2` `50%`, with `a-b` / `a~b` ranges (a < b) read 到 / "to"
/// 9. a sign: `-5` where the `-` does not follow a letter or digit
/// Symbols left over get a reading (zh: + 加, & 和, = 等于, @ 艾特, ℃ 度, × 乘) or become a pause, so
/// none reaches espeak's English fallback.
public enum SpokenText {
    public static func spell(_ text: String, lang: Lang) -> String {
        // Most Chinese shop text has nothing for a rule to act on; the tokenizer walks it by
        // Character, ~1.4 µs each, which is most of the time to first sound of a long text
        // (issue 16). Such text comes out as it went in.
        if lang == .zh && Reader.isPlain(text) { return text }
        var r = Reader(text, lang: lang)
        return r.run()
    }
}

extension Reader {
    /// True when no rule can act on any character of `text` in zh: no ASCII at all (so no digit,
    /// letter, sign or space), nothing that `normalize` maps to an ASCII digit, letter or symbol
    /// (full-width forms other than plain punctuation, dashes, tildes, U+2212), and no symbol with a reading or a pause (° ℃ ℉ × ÷ ‰ and the currency
    /// signs). `SpokenText.spell` then returns the text unchanged, which is what `run()` gives
    /// for it (checked against `run()` over seeded random text in SpokenTextTests).
    static let inertFullWidth: Set<UInt32> = Set("!\"'(),.:;?".unicodeScalars.map(\.value))

    static func isPlain(_ text: String) -> Bool {
        for u in text.unicodeScalars {
            switch u.value {
            case 0xFF01...0xFF5D:
                // Full-width punctuation that becomes ASCII punctuation no rule reads (，！？：；（）．
                // ＂＇) is inert when no digit or letter is around; anything else is not plain.
                guard Self.inertFullWidth.contains(u.value - 0xFF01 + 0x21) else { return false }
            case 0..<0x80, 0xFF5E, 0xFFE0...0xFFEE, 0x2010...0x2015, 0x2212, 0x301C,
                 0xB0, 0x2103, 0x2109, 0xD7, 0xF7, 0x2030, 0xA5, 0x20AC, 0xA3, 0xA2, 0x24:
                return false
            // Combining marks and joiners would make a multi-scalar Character, which
            // `normalize` leaves alone but `run()` walks differently: not plain.
            case 0x300...0x36F, 0x200B...0x200F, 0xFE00...0xFE0F, 0x1AB0...0x1AFF, 0x20D0...0x20FF:
                return false
            default:
                continue
            }
        }
        return true
    }
}

/// The currencies a shop text writes in front of an amount.
struct Currency {
    var zh: String
    var enOne: String
    var enMany: String
    /// nil: the amount is read as a decimal ("eighty-eight point five yuan").
    var enMinor: (one: String, many: String)?

    static func prefix(_ c: Character) -> Currency? {
        switch c {
        case "¥", "￥": Currency(zh: "元", enOne: "yuan", enMany: "yuan", enMinor: nil)
        case "$": Currency(zh: "美元", enOne: "dollar", enMany: "dollars", enMinor: ("cent", "cents"))
        case "€": Currency(zh: "欧元", enOne: "euro", enMany: "euros", enMinor: ("cent", "cents"))
        case "£": Currency(zh: "英镑", enOne: "pound", enMany: "pounds", enMinor: ("penny", "pence"))
        default: nil
        }
    }
}

struct Reader {
    /// Normalized: full-width forms (０-９, Ａ-Ｚ, ％ ＋ － ： ，…) as ASCII, dashes and tildes as `~`,
    /// U+2212 as `-`. `orig` keeps what was written, for punctuation passed through.
    let c: [Character]
    let orig: [Character]
    let lang: Lang
    var out = ""

    init(_ text: String, lang: Lang) {
        orig = Array(text)
        c = orig.map(Reader.normalize)
        self.lang = lang
    }

    static func normalize(_ ch: Character) -> Character {
        guard ch.unicodeScalars.count == 1, let u = ch.unicodeScalars.first else { return ch }
        switch u.value {
        case 0xFF01...0xFF5D: return Character(Unicode.Scalar(u.value - 0xFF01 + 0x21)!)
        case 0xFF5E, 0x301C, 0x2013, 0x2014: return "~"  // ～ 〜 – —
        case 0x2212: return "-"
        case 0xFFE5: return "¥"
        default: return ch
        }
    }

    var zh: Bool { lang == .zh }

    func at(_ i: Int) -> Character? { i >= 0 && i < c.count ? c[i] : nil }
    func isDigit(_ i: Int) -> Bool { at(i).map { $0.isASCII && $0.isNumber } ?? false }
    func isLetter(_ i: Int) -> Bool { at(i).map { $0.isASCII && $0.isLetter } ?? false }

    /// The digit run starting at `i` (empty when none).
    func digits(_ i: Int) -> (String, Int) {
        var j = i
        var s = ""
        while isDigit(j) { s.append(c[j]); j += 1 }
        return (s, j)
    }

    /// What was written just before `i`, without spaces and colons between it and `i`.
    func before(_ i: Int, _ n: Int = 4) -> String {
        var j = i - 1
        while let ch = at(j), ch == " " || ch == ":" { j -= 1 }
        guard j >= 0 else { return "" }
        return String(c[max(0, j - n + 1)...j]).lowercased()
    }

    /// `i` follows one of `cues` (an ASCII cue as a whole word: "tel", not "hotel").
    func follows(_ i: Int, _ cues: [String]) -> Bool {
        let b = before(i, 8)
        return cues.contains { cue in
            guard b.hasSuffix(cue) else { return false }
            guard cue.first?.isASCII == true, let prev = b.dropLast(cue.count).last else { return true }
            return !(prev.isASCII && prev.isLetter)
        }
    }

    mutating func run() -> String {
        var i = 0
        while i < c.count {
            if let end = special(i) { i = end; continue }
            i = symbol(i)
        }
        if zh {
            // A symbol made a pause: no doubled or leading/trailing spaces from it.
            var s = ""
            for ch in out where !(ch == " " && (s.isEmpty || s.last == " ")) { s.append(ch) }
            while s.last == " " { s.removeLast() }
            return s
        }
        // An English word is kept apart from a letter or digit next to it ("A42" → "A forty-two")
        // and from nothing else ("forty-two," stays together).
        var s = ""
        var boundary = false
        for ch in out {
            if ch == Self.mark { boundary = true; continue }
            if boundary, let l = s.last, l.isLetter || l.isNumber, ch.isLetter || ch.isNumber { s.append(" ") }
            boundary = false
            s.append(ch)
        }
        return s
    }

    /// U+0001 never reaches here from outside: TextSanitizer turns C0 controls into spaces.
    static let mark: Character = "\u{1}"

    /// Chinese words are written straight into the text; English ones between marks that
    /// become a space only where one is needed.
    mutating func emit(_ w: String) {
        if zh { out += w } else { out.append(Self.mark); out += w; out.append(Self.mark) }
    }

    // MARK: rules

    /// Tries every rule at `i`; returns where the text continues, or nil when none matched.
    mutating func special(_ i: Int) -> Int? {
        guard let ch = at(i) else { return nil }
        if let cur = Currency.prefix(ch), isDigit(i + 1) || (at(i + 1) == " " && isDigit(i + 2)) {
            return money(from: isDigit(i + 1) ? i + 1 : i + 2, cur)
        }
        if ch == "#" {
            var j = i + 1
            while isLetter(j), j - i <= 3 { j += 1 }
            if isDigit(j) { return orderNumber(from: i + 1) }
        }
        if ch == "N" || ch == "n", at(i + 1) == "o" || at(i + 1) == "O", at(i + 2) == ".", !isLetter(i - 1) {
            let j = at(i + 3) == " " ? i + 4 : i + 3
            if isDigit(j) { return orderNumber(from: j) }
        }
        if ch == "+", !isDigit(i - 1), isDigit(i + 1) {
            let (cc, j) = digits(i + 1)
            if cc.count <= 3, at(j) == " " || at(j) == "-", isDigit(j + 1) {
                if zh {
                    emit("加" + Self.digitWords(cc, lang: lang, phone: false) + "，")
                } else {
                    emit("plus " + Self.digitWords(cc, lang: lang, phone: false))
                    out += ", "
                }
                return phoneGroups(from: j + 1)
            }
        }
        if ch == "-", isDigit(i + 1), !(isLetter(i - 1) || isDigit(i - 1)) {
            emit(zh ? "负" : "minus")
            return number(i + 1, negative: true)
        }
        // 热干面 x2, ×2: times two (but X12 is an order code).
        if ch == "x" || ch == "×", isDigit(i + 1), !isLetter(i - 1), !isDigit(i - 1) {
            emit(zh ? "乘" : "times")
            return number(i + 1)
        }
        if ch == "~", isDigit(i + 1), !isDigit(i - 1), !(at(i - 1).map { Self.units.contains($0) || "℃°%".contains($0) } ?? false) {
            emit(zh ? "约" : "about")
            return number(i + 1)
        }
        if isDigit(i) { return number(i) }
        return nil
    }

    /// A number and whatever it forms with what follows it.
    mutating func number(_ i: Int, negative: Bool = false) -> Int {
        let (d1, j) = digits(i)
        // 3. dates
        if d1.count == 4, let sep = at(j), sep == "-" || sep == "/" || sep == ".", let date = date(i, sep: sep) {
            return date
        }
        if d1.count == 4, at(j) == "年" {
            emit(Self.digitWords(d1, lang: lang, phone: false))
            return j
        }
        // 4. times and ratios
        if d1.count <= 2, at(j) == ":", isDigit(j + 1) {
            return time(i) ?? ratio(i)
        }
        // 5. hyphen chains
        if at(j) == "-", isDigit(j + 1), let end = hyphenChain(i) { return end }
        // 6. phone numbers
        if follows(i, Self.phoneCues) && d1.count >= 3 || Self.isMobile(d1) {
            return phoneGroups(from: i)
        }
        // English ordinals: 1st floor, May 2nd, 103rd (a suffix that does not agree, 1th, is
        // still meant as an ordinal); 第一, 第二 in Chinese.
        if d1.count <= 6, let n = Int(d1), let end = ordinalSuffix(j) {
            emit(zh ? "第" + NumberWords.zh(UInt64(n)) : Self.enOrdinal(n))
            return end
        }
        // 7-8. quantities
        let q = quantity(i)
        if q.plainInt, d1.count >= 4, follows(i, Self.codeCues) {
            emit(Self.digitWords(d1, lang: lang, phone: false))
            return q.end
        }
        if q.plainInt, d1.count > 6, !(zh && unitFollows(q.end)), !follows(i, Self.amountCues) {
            emit(Self.digitWords(d1, lang: lang, phone: false))
            return q.end
        }
        var end = q.end
        var words = q.words
        // a-b, a~b: a range when a < b.
        let (sepAt, next) = rangeSeparator(end)
        if let sep = at(sepAt), sep == "-" || sep == "~" {
            if isDigit(next) {
                let q2 = quantity(next)
                if (negative ? -q.value : q.value) < q2.value {
                    words += zh ? "到" : " to "
                    words += q2.words
                    end = q2.end
                } else if zh && sep == "-" && follows(i, ["满"]) {
                    // 满100-20: spend 100, 20 off.
                    words += "减" + q2.words
                    end = q2.end
                }
            }
        }
        emit(words)
        return end
    }

    /// Where a range separator would be after `end` and where the second part would start:
    /// `3-5`, `3~5`, `3 - 5`.
    func rangeSeparator(_ end: Int) -> (Int, Int) {
        if at(end) == " ", at(end + 1) == "-" || at(end + 1) == "~", at(end + 2) == " " { return (end + 1, end + 3) }
        return (end, end + 1)
    }

    struct Quantity {
        var words: String
        var value: Double
        var end: Int
        /// Only digits: no separators, decimals, fraction or percent.
        var plainInt: Bool
    }

    /// 8. `3,500` `3.50` `1.2.3` `1/2` `50%` `2个` starting at `i` (a digit).
    func quantity(_ i: Int) -> Quantity {
        var (int, j) = digits(i)
        var grouped = false
        // Thousands separators: groups of exactly three digits after a first group of 1-3.
        if int.count <= 3, !(int.count > 1 && int.hasPrefix("0")) {
            while isThousandsSeparator(j), case let (g, k) = digits(j + 1), g.count == 3 {
                int += g
                j = k
                grouped = true
            }
        }
        var frac: String?
        var version: [String] = []
        if at(j) == ".", isDigit(j + 1) {
            let (f, k) = digits(j + 1)
            j = k
            frac = f
            while at(j) == ".", isDigit(j + 1) {
                let (g, k2) = digits(j + 1)
                version.append(g)
                j = k2
            }
        }
        let value = Double(int + (frac.map { "." + $0 } ?? "")) ?? 0
        if let frac, !version.isEmpty || before(i - 0, 2).hasSuffix("v") || follows(i, ["版本"]) {
            // 1.2.3, v2.0: every group is a number, zeros kept.
            let groups = [int, frac] + version
            let w = groups.map { Self.quantityWords($0, nil, lang: lang) }.joined(separator: zh ? "点" : " point ")
            return Quantity(words: w, value: value, end: j, plainInt: false)
        }
        if frac == nil, at(j) == "/", isDigit(j + 1) {
            let (den, k) = digits(j + 1)
            if let a = UInt64(int), let b = UInt64(den), int.count <= 4, den.count <= 4, at(k) != "/", !isDigit(k) {
                if a > 0, a < b, b <= 10 {
                    return Quantity(words: Self.fraction(a, b, lang: lang), value: Double(a) / Double(b), end: k, plainInt: false)
                }
                if (1...12).contains(a), (1...31).contains(b) {
                    // 12/25: month and day.
                    let w = zh ? NumberWords.zh(a) + "月" + NumberWords.zh(b) + "日" : Self.enMonths[Int(a) - 1] + " " + Self.enOrdinal(Int(b))
                    return Quantity(words: w, value: Double(a), end: k, plainInt: false)
                }
            }
        }
        var w = Self.quantityWords(int, frac, lang: lang)
        if at(j) == "%" || at(j) == "‰" {
            let perMille = at(j) == "‰"
            w = zh ? (perMille ? "千分之" : "百分之") + w : w + (perMille ? " per mille" : " percent")
            return Quantity(words: w, value: value, end: j + 1, plainInt: false)
        }
        if at(j) == "℃" || at(j) == "°" {
            // 3℃~5℃: the unit belongs to the number, so the range still reads 三度到五度.
            w += zh ? "度" : (at(j) == "℃" ? " degrees Celsius" : " degrees")
            return Quantity(words: w, value: value, end: j + 1, plainInt: false)
        }
        if zh, int == "2", frac == nil, !grouped, Self.measureWords.contains(where: { startsWith($0, at: j) }), !follows(i, ["第"]) {
            w = "两"
        }
        return Quantity(words: w, value: value, end: j, plainInt: !grouped && frac == nil)
    }

    /// `3,500`, and `３，５００` in full-width text; but the Chinese comma after ASCII digits is
    /// punctuation ("A023，290号" is two things).
    func isThousandsSeparator(_ j: Int) -> Bool {
        guard at(j) == "," else { return false }
        if orig[j] == "," { return true }
        return orig[j] == "，" && j > 0 && orig[j - 1] != c[j - 1]
    }

    func startsWith(_ s: String, at j: Int) -> Bool {
        var k = j
        for ch in s {
            guard at(k) == ch else { return false }
            k += 1
        }
        return true
    }

    func unitFollows(_ j: Int) -> Bool {
        let k = at(j) == " " ? j + 1 : j
        guard let ch = at(k) else { return false }
        return Self.units.contains(ch)
    }

    /// 1. `¥88`, `$3.50`, `$1,234.56` from the first digit.
    mutating func money(from i: Int, _ cur: Currency) -> Int {
        var (int, j) = digits(i)
        if int.count <= 3, !(int.count > 1 && int.hasPrefix("0")) {
            while isThousandsSeparator(j), case let (g, k) = digits(j + 1), g.count == 3 { int += g; j = k }
        }
        var frac = ""
        if at(j) == ".", isDigit(j + 1) { (frac, j) = digits(j + 1) }
        if zh {
            emit(Self.quantityWords(int, frac.isEmpty ? nil : frac, lang: .zh) + cur.zh)
            // ¥88元: the currency is said once.
            if cur.zh == "元", at(j) == "元" || at(j) == "块" { j += 1 }
            return j
        }
        let major = UInt64(int).map { $0 }
        let amount = Self.quantityWords(int, nil, lang: .en)
        if let minor = cur.enMinor, frac.count == 2, let m = Int(frac), let major {
            let name = major == 1 ? cur.enOne : cur.enMany
            let cents = NumberWords.integer(UInt64(m), lang: .en)
            if m == 0 { emit("\(amount) \(name)") }
            else if major == 0 { emit("\(cents) \(m == 1 ? minor.one : minor.many)") }
            else if m < 10 { emit("\(amount) \(name) and \(cents) \(m == 1 ? minor.one : minor.many)") }
            else { emit("\(amount) \(name) \(cents)") }
        } else if frac.isEmpty {
            emit("\(amount) \(major == 1 ? cur.enOne : cur.enMany)")
        } else {
            emit("\(Self.quantityWords(int, frac, lang: .en)) \(cur.enMany)")
        }
        return j
    }

    /// 2. `#42` → 四十二号 / "number forty-two"; `#A012` → A零一二号.
    mutating func orderNumber(from i: Int) -> Int {
        var j = i
        var letters = ""
        while isLetter(j) { letters.append(c[j]); j += 1 }
        let (d, k) = digits(j)
        var w = letters.isEmpty ? "" : Self.spacedLetters(letters, lang: lang) + (zh ? "" : " ")
        if !d.isEmpty { w += Self.quantityWords(d, nil, lang: lang) }
        if zh {
            emit(w + (at(k) == "号" ? "" : "号"))
        } else {
            emit("number " + w)
        }
        return k
    }

    /// 3. `2026-12-01`: year, month, day with one separator, a real month and day.
    mutating func date(_ i: Int, sep: Character) -> Int? {
        guard var (words, end) = dateWords(i, sep: sep) else { return nil }
        // 2026.12.01-2026.12.03: a range of dates.
        let (sepAt, next) = rangeSeparator(end)
        if let s = at(sepAt), s == "-" || s == "~", case let (y2, k) = digits(next), y2.count == 4, let sep2 = at(k),
           sep2 == "-" || sep2 == "/" || sep2 == ".", let (w2, e2) = dateWords(next, sep: sep2) {
            words += (zh ? "到" : " to ") + w2
            end = e2
        }
        emit(words)
        return end
    }

    func dateWords(_ i: Int, sep: Character) -> (String, Int)? {
        let (y, j) = digits(i)
        let (m, k) = digits(j + 1)
        guard (1...2).contains(m.count), at(k) == sep else { return nil }
        let (d, l) = digits(k + 1)
        guard (1...2).contains(d.count), !isDigit(l), let mi = Int(m), let di = Int(d), (1...12).contains(mi), (1...31).contains(di),
              !(at(l) == sep && isDigit(l + 1)) else { return nil }
        if zh {
            return (Self.digitWords(y, lang: .zh, phone: false) + "年" + NumberWords.zh(UInt64(mi)) + "月" + NumberWords.zh(UInt64(di)) + "日", l)
        }
        return (Self.enMonths[mi - 1] + " " + Self.enOrdinal(di) + ", " + Self.enYear(Int(y)!), l)
    }

    /// 4. `12:30` → 十二点三十分 / "twelve thirty"; `12:00` → 十二点 / "twelve o'clock".
    mutating func time(_ i: Int) -> Int? {
        guard let t = clock(i) else { return nil }
        var words = t.words
        var end = t.end
        let (sepAt, next) = rangeSeparator(end)
        if let sep = at(sepAt), sep == "-" || sep == "~", isDigit(next), let t2 = clock(next) {
            words += (zh ? "到" : " to ") + t2.words
            end = t2.end
        }
        emit(words)
        return end
    }

    func clock(_ i: Int) -> (words: String, end: Int)? {
        let (h, j) = digits(i)
        guard h.count <= 2, at(j) == ":" else { return nil }
        let (m, k) = digits(j + 1)
        guard m.count == 2, let hi = Int(h), let mi = Int(m), hi <= 24, mi <= 59 else { return nil }
        var end = k
        var sec: Int?
        if at(k) == ":", case let (s, l) = digits(k + 1), s.count == 2, let si = Int(s), si <= 59 {
            sec = si
            end = l
        }
        if isDigit(end) || (at(end) == ":" && isDigit(end + 1)) { return nil }
        // 24:00 is the end of a day; 24:30 is no time (a score or a ratio).
        if hi == 24 && (mi > 0 || (sec ?? 0) > 0) { return nil }
        if zh {
            var w = (hi == 2 ? "两" : NumberWords.zh(UInt64(hi))) + "点"
            // 12:05 十二点零五分, 12:00:30 十二点零分三十秒 (not 零零分).
            if mi > 0 || sec != nil { w += (mi > 0 && mi < 10 ? "零" : "") + NumberWords.zh(UInt64(mi)) + "分" }
            if let sec { w += NumberWords.zh(UInt64(sec)) + "秒" }
            return (w, end)
        }
        if (hi == 0 || hi == 24) && mi == 0 && sec == nil { return ("midnight", end) }
        var w = NumberWords.en(UInt64(hi))
        if mi == 0 && sec == nil {
            let rest = String(c[min(end, c.count)...].prefix(4)).lowercased().trimmingLeadingSpace
            if !(rest.hasPrefix("am") || rest.hasPrefix("pm") || rest.hasPrefix("a.m") || rest.hasPrefix("p.m")) {
                w += hi <= 12 ? " o'clock" : " hundred"
            }
        } else if mi > 0 {
            w += (mi < 10 ? " oh " : " ") + NumberWords.en(UInt64(mi))
        } else {
            w += " hundred"
        }
        if let sec { w += " and " + NumberWords.en(UInt64(sec)) + (sec == 1 ? " second" : " seconds") }
        return (w, end)
    }

    /// `3:1` → 三比一 / "three to one".
    mutating func ratio(_ i: Int) -> Int {
        let (a, j) = digits(i)
        let (b, k) = digits(j + 1)
        emit(Self.quantityWords(a, nil, lang: lang) + (zh ? "比" : " to ") + Self.quantityWords(b, nil, lang: lang))
        return k
    }

    /// 5. `400-820-8820`, `010-12345678` (phone, digit by digit in groups), `05-20` (month-day),
    /// `1-2-3` (a code). Nil: a two-part `a-b` left to the quantity and range rules.
    mutating func hyphenChain(_ i: Int) -> Int? {
        var groups: [String] = []
        var j = i
        while true {
            let (g, k) = digits(j)
            groups.append(g)
            j = k
            if at(j) == "-", isDigit(j + 1) { j += 1 } else { break }
        }
        if isLetter(j) || at(j) == "." || at(j) == "," || at(j) == ":" { return nil }
        let total = groups.reduce(0) { $0 + $1.count }
        // Two short groups without a leading zero are amounts far more often than a phone
        // number without its area code: 满1000-200, 500-1000元, 2025-2026 (a cue word such as
        // 电话 still makes them a phone number, rule 6).
        let twoAmounts = groups.count == 2 && groups.allSatisfy { $0.count <= 4 && !$0.hasPrefix("0") }
        if total >= 7 && !twoAmounts {
            emit(groups.map { Self.digitWords($0, lang: lang, phone: true) }.joined(separator: zh ? "，" : ", "))
            return j
        }
        if groups.count == 2, groups.contains(where: { $0.count == 2 && $0.hasPrefix("0") }),
           let m = Int(groups[0]), let d = Int(groups[1]), (1...12).contains(m), (1...31).contains(d), groups[0].count <= 2, groups[1].count <= 2 {
            emit(zh ? NumberWords.zh(UInt64(m)) + "月" + NumberWords.zh(UInt64(d)) + "日" : Self.enMonths[m - 1] + " " + Self.enOrdinal(d))
            return j
        }
        if groups.count >= 3 {
            emit(groups.map { Self.quantityWords($0, nil, lang: lang) }.joined(separator: zh ? "杠" : " dash "))
            return j
        }
        return nil
    }

    /// 6. A phone number from `i`: digit by digit, 1 as 幺; an 11-digit mobile in 3-4-4 groups;
    /// groups written with spaces or hyphens kept as groups.
    mutating func phoneGroups(from i: Int) -> Int {
        var groups: [String] = []
        var j = i
        while true {
            let (g, k) = digits(j)
            if Self.isMobile(g) {
                let a = Array(g)
                groups += [String(a[0..<3]), String(a[3..<7]), String(a[7...])]
            } else {
                groups.append(g)
            }
            j = k
            // Groups written apart ("138 0013 8000") belong to the number until it has the 11
            // digits of a mobile; what follows is something else ("…8000 42号").
            let total = groups.reduce(0) { $0 + $1.count }
            if total < 11, at(j) == " " || at(j) == "-", isDigit(j + 1) { j += 1 } else { break }
        }
        emit(groups.map { Self.digitWords($0, lang: lang, phone: true) }.joined(separator: zh ? "，" : ", "))
        return j
    }

    // MARK: symbols

    /// Anything no rule took: passed through, given a reading, or made a pause.
    mutating func symbol(_ i: Int) -> Int {
        let ch = c[i]
        let prevDigit = isDigit(i - 1)
        if zh {
            switch ch {
            case "+": out += prevDigit && !isDigit(i + 1) ? "多" : "加"
            case "&": out += "和"
            case "=": out += "等于"
            case "@": out += "艾特"
            case "°", "℃": out += "度"
            case "℉": out += "华氏度"
            case "×": out += "乘"
            case "÷": out += "除以"
            case "/":
                if let p = at(i - 1), Self.units.contains(p) || p == "%", let n = at(i + 1), !n.isASCII, n.isLetter {
                    out += "每"
                } else if let p = at(i - 1), p.isLetter, let n = at(i + 1), n.isLetter {
                    out += "或"
                } else {
                    out += " "
                }
            case "-": out += prevDigit && isDigit(i + 1) ? "杠" : " "
            case "#", "%", "‰", "*", "\\", "^", "_", "|", "`", "<", ">", "~", "$", "¥", "€", "£", "{", "}", "[", "]":
                out += " "
            default:
                if ch.isASCII && ch.isLetter { return upperRun(i) }
                out.append(orig[i])
            }
        } else {
            switch ch {
            case "&": emit("and")
            case "×": emit("times")
            case "℃": emit("degrees Celsius")
            case "℉": emit("degrees Fahrenheit")
            case "~": out += " "
            default:
                // Full-width letters as ASCII; other text as written (espeak reads it right).
                out.append(ch.isASCII && ch.isLetter ? ch : orig[i])
            }
        }
        return i + 1
    }

    /// zh: an all-capital run of 1-5 Latin letters (A12, VIP, OK, AB12) is said letter by letter: a
    /// Chinese speaker spells it, and espeak's Mandarin voice reads single letters without
    /// switching to English. Other Latin words stay as written (espeak reads them in English).
    mutating func upperRun(_ i: Int) -> Int {
        var j = i
        while isLetter(j) { j += 1 }
        let word = String(c[i..<j])
        // A lone letter before a digit (v2.0, a12) is a code too, whatever its case.
        if (1...5).contains(word.count), word.allSatisfy(\.isUppercase) || (word.count == 1 && isDigit(j)) {
            out += Self.spacedLetters(word, lang: .zh)
        } else {
            out += word
        }
        return j
    }

    // MARK: words

    static func quantityWords(_ int: String, _ frac: String?, lang: Lang) -> String {
        var w = NumberWords.words(int + (frac.map { "." + $0 } ?? ""), lang: lang)
        if lang == .zh, int.count > 1, !int.hasPrefix("0"), int.count <= 12, let first = w.first, first == "二" {
            // 2000 两千, 20000 两万, 2亿 两亿: 两 before 千/万/亿, as said aloud.
            let second = w.dropFirst().first
            if second == "千" || second == "万" || second == "亿" { w = "两" + w.dropFirst() }
        }
        return w
    }

    static func digitWords(_ d: String, lang: Lang, phone: Bool) -> String {
        if lang == .zh {
            return String(d.compactMap { $0.wholeNumberValue.map { phone && $0 == 1 ? "幺" : NumberWords.zhDigits[$0] } }.joined())
        }
        return NumberWords.digitByDigit(d, lang: .en)
    }

    /// zh: each letter by its Mandarin name in hanzi (A 诶, B 比 … Z 贼德), as a Chinese speaker
    /// spells an order code. Not the Latin letter itself: espeak-ng 1.52's Mandarin voice (Debian
    /// 13, what the images ship) switches to English for a lone Latin letter, where 1.51 did not;
    /// hanzi are read as Mandarin by both (the phoneme tests check it on both).
    static func spacedLetters(_ s: String, lang: Lang) -> String {
        guard lang == .zh else { return s.map { String($0).uppercased() }.joined(separator: " ") }
        return s.map { ch -> String in
            let u = String(ch).uppercased()
            guard let v = u.unicodeScalars.first?.value, u.count == 1, (65...90).contains(v) else { return u }
            return zhLetterNames[Int(v - 65)]
        }.joined()
    }

    static let zhLetterNames = ["诶", "比", "西", "迪", "伊", "艾弗", "吉", "艾尺", "艾", "杰", "开", "艾勒", "艾姆",
                                "恩", "欧", "批", "丘", "阿尔", "艾斯", "提", "优", "维", "达布留", "艾克斯", "歪", "贼德"]

    static func fraction(_ a: UInt64, _ b: UInt64, lang: Lang) -> String {
        if lang == .zh { return NumberWords.zh(b) + "分之" + NumberWords.zh(a) }
        guard b <= 10 else { return NumberWords.en(a) + " over " + NumberWords.en(b) }
        let one = ["", "", "half", "third", "quarter", "fifth", "sixth", "seventh", "eighth", "ninth", "tenth"][Int(b)]
        let many = b == 2 ? "halves" : one + "s"
        return NumberWords.en(a) + " " + (a == 1 ? one : many)
    }

    static func isMobile(_ d: String) -> Bool {
        let a = Array(d)
        return a.count == 11 && a[0] == "1" && "3456789".contains(a[1])
    }

    static let phoneCues = ["电话", "手机", "热线", "客服", "座机", "分机", "尾号", "号码", "致电", "拨打", "联系",
                            "tel", "tel.", "phone", "call", "ext", "ext."]
    static let codeCues = ["单号", "编号", "工号", "码", "code", "no"]
    static let amountCues = ["收款", "合计", "总计", "共", "余额", "积分", "金额", "支付", "付款", "实付", "应付", "退款",
                             "优惠", "满", "减", "销量", "库存", "total", "balance"]
    /// Words after which 2 is 两 (两个, 两杯, 两位 …; but 二号, 第二).
    static let measureWords = ["个", "位", "杯", "份", "件", "张", "瓶", "盒", "碗", "袋", "包", "只", "人", "次", "天", "周",
                               "分钟", "小时", "斤", "块", "条", "根", "本", "台", "罐", "箱", "桌", "间", "种", "样", "串", "对",
                               "千", "万", "亿", "点", "岁", "名", "倍", "双", "米"]
    /// A number followed by one of these is a quantity however long it is.
    static let units: Set<Character> = Set("元块角毛件个位人份杯张瓶盒碗袋包只次天年月日周米克斤吨度秒分万亿台单条根本罐箱桌间名岁倍")

    static let enMonths = ["January", "February", "March", "April", "May", "June", "July", "August", "September",
                           "October", "November", "December"]

    /// Where an ordinal suffix (st, nd, rd, th; any case) right at `j` ends, when it is a whole
    /// word's end.
    func ordinalSuffix(_ j: Int) -> Int? {
        guard let a = at(j), let b = at(j + 1), !isLetter(j + 2) else { return nil }
        return ["st", "nd", "rd", "th"].contains(String([a, b]).lowercased()) ? j + 2 : nil
    }

    static func enOrdinal(_ n: Int) -> String {
        if n >= 100 {
            let r = n % 100
            return r == 0 ? NumberWords.en(UInt64(n)) + "th" : NumberWords.en(UInt64(n - r)) + " " + enOrdinal(r)
        }
        let special = [1: "first", 2: "second", 3: "third", 5: "fifth", 8: "eighth", 9: "ninth", 12: "twelfth"]
        if let s = special[n] { return s }
        if n > 20, n % 10 != 0 { return NumberWords.enTens[n / 10] + "-" + enOrdinal(n % 10) }
        let w = NumberWords.en(UInt64(n))
        if w.hasSuffix("y") { return w.dropLast() + "ieth" }
        return w + "th"
    }

    /// 2026 → twenty twenty-six, 2005 → two thousand five, 1999 → nineteen ninety-nine.
    static func enYear(_ y: Int) -> String {
        if (2000...2009).contains(y) || y < 1000 || y % 1000 == 0 { return NumberWords.en(UInt64(y)) }
        let hi = NumberWords.en(UInt64(y / 100))
        let lo = y % 100
        if lo == 0 { return hi + " hundred" }
        return hi + " " + (lo < 10 ? "oh " : "") + NumberWords.en(UInt64(lo))
    }
}

extension String {
    var trimmingLeadingSpace: String {
        var s = Substring(self)
        while s.first == " " { s = s.dropFirst() }
        return String(s)
    }
}
