/// One recording a voice pack holds: `name` is the file name without extension (`NAME.wav`),
/// `text` what the speaker says in it. docs/voice.md, "The recording script".
public struct VoiceClip: Sendable, Equatable, Hashable, CustomStringConvertible {
    public enum Kind: String, Sendable {
        /// A fixed fragment of a configured template (新客户来了, "Payment received").
        case template
        /// A number word: digits, tens, scales (四, 十, 万; "twenty-two", "thousand").
        case number
        /// A word SpokenText's rules produce around numbers (点, 号, 元, 年; "point", "o'clock").
        case word
        /// An order-code letter (诶, 比 …; "A", "B" …).
        case letter
    }

    public var name: String
    public var text: String
    public var kind: Kind

    public init(name: String, text: String, kind: Kind) {
        self.name = name
        self.text = text
        self.kind = kind
    }

    public var description: String { "\(name)\t\(text)" }

    /// A clip name is a file name on every file system a pack travels through (FAT on the boot
    /// partition included): 1-64 of `a-z 0-9 _`.
    public static func isValidName(_ s: String) -> Bool {
        !s.isEmpty && s.utf8.count <= 64 && s.utf8.allSatisfy { ($0 >= 0x61 && $0 <= 0x7A) || ($0 >= 0x30 && $0 <= 0x39) || $0 == 0x5F }
    }
}

/// Every clip a language can need: the fixed fragments of the configured templates (status
/// prompts included), then every word SpokenText's rules can produce (number words, units,
/// currencies, dates, times) and the order-code letters. The list is the recording script
/// (`crier voice clips`) and what a pack is checked against (`crier voice check`).
///
/// Each text appears once: a template fragment that is already a vocabulary word (号, "number")
/// uses the vocabulary clip. Names are stable: vocabulary names never change, a template's
/// fragments are `tpl_<template>` (one fragment) or `tpl_<template>_<k>` (k from 1, in order).
public enum VoiceInventory {
    public static func clips(lang: Lang, templates: Templates = Templates()) -> [VoiceClip] {
        let vocabulary = lang == .zh ? zhVocabulary : enVocabulary
        var seen = Set(vocabulary.map { key($0.text, lang: lang) })
        var out: [VoiceClip] = []
        for name in Templates.Name.allCases {
            let fragments = templateFragments(templates[lang, name], lang: lang)
            var k = 0
            var own: [String] = []
            for f in fragments where !seen.contains(key(f, lang: lang)) {
                seen.insert(key(f, lang: lang))
                own.append(f)
            }
            for f in own {
                k += 1
                let n = own.count == 1 ? "tpl_\(name.rawValue)" : "tpl_\(name.rawValue)_\(k)"
                out.append(VoiceClip(name: n, text: f, kind: .template))
            }
        }
        return out + vocabulary
    }

    /// How the planner compares texts: English case-insensitively (a template's "Number" is
    /// the clip "number"), except a single letter, which is an order-code letter only in
    /// capitals ("a" is the article).
    static func key(_ text: String, lang: Lang) -> String {
        lang == .en && text.count > 1 ? text.lowercased() : text
    }

    /// The words a template says around its placeholders, as the announcer renders them
    /// (sanitized, numbers in words), cut at punctuation and spaces between them trimmed.
    static func templateFragments(_ template: String, lang: Lang) -> [String] {
        var pieces: [String] = []
        var current = ""
        var inPlaceholder = false
        for c in template {
            if c == "{" { inPlaceholder = true; pieces.append(current); current = ""; continue }
            if c == "}", inPlaceholder { inPlaceholder = false; continue }
            if !inPlaceholder { current.append(c) }
        }
        pieces.append(current)
        let announcer = Announcer()
        var out: [String] = []
        for p in pieces {
            let words = announcer.render(p, lang: lang).utterance.text
            var part = ""
            for c in words {
                if SplicePlanner.pauseMs(c, lang: lang) != nil, !(c == " " && lang == .en) {
                    out.append(part)
                    part = ""
                } else {
                    part.append(c)
                }
            }
            out.append(part)
        }
        return out.map { $0.trimmingSpaces }.filter { !$0.isEmpty }
    }

    // MARK: zh

    static let zhVocabulary: [VoiceClip] = {
        var v: [VoiceClip] = []
        let digitNames = ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine"]
        for (i, d) in NumberWords.zhDigits.enumerated() { v.append(.init(name: digitNames[i], text: d, kind: .number)) }
        v += [
            .init(name: "two_liang", text: "两", kind: .number),
            .init(name: "one_yao", text: "幺", kind: .number),
            .init(name: "ten", text: "十", kind: .number),
            .init(name: "hundred", text: "百", kind: .number),
            .init(name: "thousand", text: "千", kind: .number),
            .init(name: "wan", text: "万", kind: .number),
            .init(name: "yi", text: "亿", kind: .number),
        ]
        let words: [(String, String)] = [
            ("point", "点"), ("minus", "负"), ("ordinal", "第"), ("to", "到"), ("fraction", "分之"),
            ("percent", "百分之"), ("per_mille", "千分之"), ("plus", "加"), ("off", "减"), ("dash", "杠"), ("about", "约"),
            ("more_than", "多"), ("times", "乘"), ("divided_by", "除以"), ("equals", "等于"), ("and", "和"), ("at", "艾特"),
            ("degree", "度"), ("fahrenheit", "华氏度"), ("per", "每"), ("or", "或"), ("number", "号"),
            ("yuan", "元"), ("dollar", "美元"), ("euro", "欧元"), ("pound", "英镑"),
            ("year", "年"), ("month", "月"), ("day", "日"), ("minute", "分"), ("second", "秒"),
        ]
        v += words.map { VoiceClip(name: $0.0, text: $0.1, kind: .word) }
        // 比 is the letter B and the ratio word (三比一): one clip, the letter's name.
        for (i, l) in Reader.zhLetterNames.enumerated() {
            v.append(.init(name: "letter_" + String(UnicodeScalar(UInt8(97 + i))), text: l, kind: .letter))
        }
        return v
    }()

    // MARK: en

    static func slug(_ s: String) -> String {
        var out = ""
        for u in s.lowercased().unicodeScalars {
            if (u.value >= 0x61 && u.value <= 0x7A) || (u.value >= 0x30 && u.value <= 0x39) { out.unicodeScalars.append(u) }
            else if u == " " || u == "-" { out += "_" }
        }
        return out
    }

    static let enVocabulary: [VoiceClip] = {
        var v: [VoiceClip] = []
        func add(_ text: String, _ kind: VoiceClip.Kind) { v.append(.init(name: slug(text), text: text, kind: kind)) }
        // 0-99 as one clip each: "twenty-two" recorded whole sounds like one word.
        for n in 0...99 { add(NumberWords.en(UInt64(n)), .number) }
        for s in ["hundred", "thousand", "million", "billion", "trillion"] { add(s, .number) }
        // Ordinals 0-99 ("0th" is written too), hundredth, thousandth (dates, 1st floor, one hundred third).
        for n in 0...99 { add(Reader.enOrdinal(n), .number) }
        add("hundredth", .number)
        add("thousandth", .number)
        for w in ["number", "point", "minus", "about", "plus", "times", "to", "and", "dash", "percent", "per mille",
                  "oh", "o'clock", "midnight", "second", "seconds",
                  "half", "halves", "thirds", "quarter", "quarters", "fifths", "sixths", "sevenths", "eighths", "ninths", "tenths",
                  "yuan", "dollar", "dollars", "cent", "cents", "euro", "euros", "pound", "pounds", "penny", "pence",
                  "degrees", "degrees Celsius", "degrees Fahrenheit"] where !v.contains(where: { $0.text == w }) {
            add(w, .word)
        }
        for m in Reader.enMonths { add(m, .word) }
        for i in 0..<26 {
            let l = String(UnicodeScalar(UInt8(65 + i)))
            v.append(.init(name: "letter_" + l.lowercased(), text: l, kind: .letter))
        }
        return v
    }()
}

extension String {
    var trimmingSpaces: String {
        var s = Substring(self)
        while s.first == " " { s = s.dropFirst() }
        while s.last == " " { s = s.dropLast() }
        return String(s)
    }
}
