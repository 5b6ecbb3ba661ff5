/// The words of an announcement (what `crier say --print` prints) as a sequence of clips and
/// pauses. Every character of the words belongs to exactly one step, in order, so the steps'
/// texts joined are the words again (`SplicePlan.words`): a clip says its text, a pause is the
/// punctuation or space it stands for, and a gap is words no clip covers (shop text such as
/// 窗口, "drinks"), left to espeak-ng or making the whole alert go to espeak-ng (docs/voice.md).
public struct SplicePlan: Sendable, Equatable {
    public enum Step: Sendable, Equatable {
        /// `text` is the span of the words the clip says (its own text, or "+" for "plus").
        case clip(name: String, text: String)
        /// Silence of `ms` milliseconds for punctuation or a space (0: the clips just join).
        case pause(ms: Int, text: String)
        /// Words no clip covers.
        case gap(String)

        public var text: String {
            switch self {
            case .clip(_, let t), .pause(_, let t), .gap(let t): t
            }
        }
    }

    public var steps: [Step] = []

    /// The steps read out: equal to the words planned.
    public var words: String { steps.map(\.text).joined() }
    public var clipNames: [String] { steps.compactMap { if case .clip(let n, _) = $0 { n } else { nil } } }
    public var gaps: [String] { steps.compactMap { if case .gap(let t) = $0 { t } else { nil } } }
    /// Every word has a clip: the alert can be said from the pack alone.
    public var covered: Bool { gaps.isEmpty }

    mutating func append(_ s: Step) {
        // Neighbouring gaps are one run of words for espeak-ng.
        if case .gap(let t) = s, case .gap(let u)? = steps.last {
            steps[steps.count - 1] = .gap(u + t)
        } else {
            steps.append(s)
        }
    }
}

/// Turns words into a `SplicePlan` from a set of clips (the inventory, or the clips a pack has).
///
/// zh: longest match over characters (新客户来了 before 新, 百分之 before 百); a character no clip
/// starts with is a gap. en: words are matched whole, case-insensitively, longest phrase first
/// ("Payment received", "degrees Celsius"); a word with hyphens no clip has whole is said in parts
/// ("twenty-first": twenty, first); an all-capital word of 1-5 letters is spelled with letter
/// clips (AB: A, B); "+" is the clip "plus" (espeak reads "one+one" as "one plus one").
public struct SplicePlanner: Sendable {
    public let lang: Lang
    /// Key (`VoiceInventory.key`) → clip name.
    let byText: [String: String]
    /// Every prefix of every key (zh's longest match stops as soon as none continues).
    let prefixes: Set<String>
    let longestPhrase: Int

    public init(lang: Lang, clips: [VoiceClip]) {
        self.lang = lang
        var m: [String: String] = [:]
        for c in clips where m[VoiceInventory.key(c.text, lang: lang)] == nil {
            m[VoiceInventory.key(c.text, lang: lang)] = c.name
        }
        byText = m
        var p = Set<String>()
        for k in m.keys {
            var s = ""
            for ch in k {
                s.append(ch)
                p.insert(s)
            }
        }
        prefixes = p
        longestPhrase = m.keys.map { $0.split(separator: " ").count }.max() ?? 1
    }

    /// Pauses at punctuation, in milliseconds (docs/voice.md); nil: not a pause.
    public static func pauseMs(_ c: Character, lang: Lang) -> Int? {
        switch c {
        case "、": 120
        case "，", ",": 200
        case "；", ";", "：", ":": 250
        case "。", ".", "！", "!", "？", "?", "…": 350
        // zh: a space is where SpokenText made a symbol a pause (A-12: 诶 十二); en: between words.
        case " ", "\u{3000}": lang == .zh ? 100 : 0
        default: nil
        }
    }

    public func plan(_ words: String) -> SplicePlan {
        lang == .zh ? planZh(Array(words)) : planEn(Array(words))
    }

    /// Whether the pack's clips say all of `words`: `plan(words).covered`, stopping at the first
    /// word no clip covers (a shop text usually starts with one), for the choice made before
    /// the first sound.
    public func covers(_ words: String) -> Bool {
        (lang == .zh ? planZh(Array(words), untilGap: true) : planEn(Array(words), untilGap: true)).covered
    }

    // MARK: zh

    func planZh(_ c: [Character], untilGap: Bool = false) -> SplicePlan {
        var plan = SplicePlan()
        var i = 0
        while i < c.count {
            if let ms = Self.pauseMs(c[i], lang: .zh) {
                plan.append(.pause(ms: ms, text: String(c[i])))
                i += 1
                continue
            }
            // Longest match, growing from one character while the text so far begins some
            // clip's text: a character no clip starts with costs one lookup (shop texts are
            // mostly such characters, and are planned before any sound).
            var best: (n: Int, name: String)?
            var s = ""
            var n = 1
            while i + n <= c.count {
                s.append(c[i + n - 1])
                guard prefixes.contains(s) else { break }
                if let name = byText[s] { best = (n, name) }
                n += 1
            }
            if let best {
                plan.append(.clip(name: best.name, text: String(c[i..<(i + best.n)])))
                i += best.n
            } else {
                plan.append(.gap(String(c[i])))
                if untilGap { return plan }
                i += 1
            }
        }
        return plan
    }

    // MARK: en

    static func isWordChar(_ ch: Character) -> Bool {
        ch.isLetter || ch.isNumber || ch == "'" || ch == "’" || ch == "-"
    }

    func planEn(_ c: [Character], untilGap: Bool = false) -> SplicePlan {
        // Tokens: words (letters, digits, apostrophes, hyphens) and single other characters.
        var tokens: [String] = []
        var i = 0
        while i < c.count {
            if Self.isWordChar(c[i]) {
                var j = i
                while j < c.count, Self.isWordChar(c[j]) { j += 1 }
                tokens.append(String(c[i..<j]))
                i = j
            } else {
                tokens.append(String(c[i]))
                i += 1
            }
        }
        var plan = SplicePlan()
        var t = 0
        while t < tokens.count {
            let tok = tokens[t]
            if tok.count == 1, let ch = tok.first, !Self.isWordChar(ch) {
                if let ms = Self.pauseMs(ch, lang: .en) {
                    plan.append(.pause(ms: ms, text: tok))
                } else if tok == "+", let name = byText["plus"] {
                    plan.append(.clip(name: name, text: tok))
                } else {
                    plan.append(.gap(tok))
                    if untilGap { return plan }
                }
                t += 1
                continue
            }
            // Longest phrase first: words joined by single spaces.
            var k = longestPhrase
            var done = false
            while k > 1 {
                let last = t + 2 * (k - 1)
                if last < tokens.count, stride(from: t + 1, to: last, by: 2).allSatisfy({ tokens[$0] == " " }) {
                    let phrase = stride(from: t, through: last, by: 2).map { tokens[$0] }.joined(separator: " ")
                    if let name = byText[VoiceInventory.key(phrase, lang: .en)] {
                        plan.append(.clip(name: name, text: phrase))
                        t = last + 1
                        done = true
                        break
                    }
                }
                k -= 1
            }
            if done { continue }
            for s in word(tok) { plan.append(s) }
            if untilGap, !plan.covered { return plan }
            t += 1
        }
        return plan
    }

    /// One English word: a clip, its hyphenated parts, its capital letters, or a gap.
    func word(_ w: String) -> [SplicePlan.Step] {
        if let name = byText[VoiceInventory.key(w, lang: .en)] { return [.clip(name: name, text: w)] }
        if w.contains("-") {
            var steps: [SplicePlan.Step] = []
            for (k, part) in w.split(separator: "-", omittingEmptySubsequences: false).enumerated() {
                if k > 0 { steps.append(.pause(ms: 0, text: "-")) }
                if part.isEmpty { continue }
                let sub = word(String(part))
                if sub.contains(where: { if case .gap = $0 { true } else { false } }) { return [.gap(w)] }
                steps += sub
            }
            return steps
        }
        if (2...5).contains(w.count), w.allSatisfy({ $0.isASCII && $0.isUppercase }) {
            let names = w.map { byText[String($0)] }
            if names.allSatisfy({ $0 != nil }) {
                return zip(w, names).map { .clip(name: $1!, text: String($0)) }
            }
        }
        return [.gap(w)]
    }
}
