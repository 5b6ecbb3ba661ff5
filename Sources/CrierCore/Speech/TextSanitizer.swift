/// Makes text from outside (the network, the command line) safe to hand to the synthesizer:
/// control and invisible formatting characters become spaces, runs of whitespace collapse,
/// and the length is capped. SSML is never enabled for such text (see SpeechEngine), so markup
/// is read out literally rather than interpreted.
public enum TextSanitizer {
    public struct Result: Sendable, Equatable {
        public var text: String
        /// Characters dropped by the length cap (0 when nothing was cut).
        public var truncated: Int
        /// Control or formatting characters replaced.
        public var replaced: Int
        /// Characters of scripts the language's voice leaves out (`leftOut(_:lang:)`).
        public var leftOut = 0
    }

    /// `lang`: the voice the text is for; its scripts left out (`leftOut(_:lang:)`) become
    /// spaces. nil: no script is left out.
    public static func clean(_ input: String, maxChars: Int, lang: Lang? = nil) -> Result {
        // Entities first, so a decoded control character (&#7;) is caught like a raw one.
        let input = decodeEntities(input)
        // Grapheme breaking (the Character walk below, then `count` and `prefix` again) was most
        // of the time before a long text's first sound (issue 16). Text whose every scalar is a
        // grapheme of its own gives the same result scalar by scalar.
        if input.unicodeScalars.allSatisfy(standsAlone) { return cleanScalars(input, maxChars: maxChars) }
        return cleanCharacters(input, maxChars: maxChars, lang: lang)
    }

    /// True for letters the `lang` voice must not be given. Chinese text goes to espeak-ng's
    /// Mandarin voice, which reads a Latin word through a second (English) translator; a letter
    /// in that word from an alphabet espeak-ng reads in yet another language (its table: Greek,
    /// Armenian, Hebrew, Arabic, the Indic scripts, Sinhala, Georgian, Korean, Shavian) makes
    /// espeak-ng 1.51 (Debian 12, Raspberry Pi OS bookworm) replace that translator while it is
    /// in use: a heap use-after-free inside espeak_Synth, found by `scripts/fuzz.sh speech`
    /// with "Ϩϛ" (fixed upstream in 1.52, "Add tertiary translator", 2022). A hostile or careless
    /// server must not be able to corrupt the daemon's memory with a customer name, so those
    /// scripts are left out of Chinese text whatever espeak-ng the box has; a Mandarin voice
    /// reading a Hindi or Greek word in Hindi or Greek is nothing a shop would miss. English
    /// text keeps them (its voice reads such words with one switch; fuzzed clean).
    /// Every scalar here is outside `standsAlone`, so only `cleanCharacters` needs the check.
    public static func leftOut(_ u: Unicode.Scalar, lang: Lang) -> Bool {
        guard lang == .zh else { return false }
        switch u.value {
        case 0x0370...0x03FF,  // Greek and Coptic
             0x0530...0x06FF,  // Armenian, Hebrew, Arabic
             0x0900...0x0DFF,  // Devanagari to Sinhala (espeak-ng's Indic alphabets)
             0x10A0...0x11FF,  // Georgian, Hangul Jamo
             0xA700...0xD7FF,  // espeak-ng's second Korean range (Hangul syllables among it)
             0x10450...0x1047F: return true  // Shavian (read as English)
        default: return false
        }
    }

    /// True for scalars that never join a neighbour into one grapheme cluster (UAX #29): Latin
    /// up to U+02FF, general punctuation but ZWNJ/ZWJ, super/subscripts and currency, CJK
    /// punctuation but its tone marks, kana but the voicing marks, CJK ideographs, fullwidth
    /// forms. Everything else (combining marks, ZWJ, variation selectors, emoji modifiers,
    /// regional indicators, Hangul, Indic scripts, prepend marks) takes the Character walk.
    static func standsAlone(_ u: Unicode.Scalar) -> Bool {
        switch u.value {
        case 0x0000...0x02FF: return true
        case 0x200C, 0x200D: return false
        case 0x2000...0x20CF: return true
        case 0x302A...0x302F: return false
        case 0x3000...0x3098, 0x309B...0x30FF: return true
        case 0x4E00...0x9FFF: return true
        case 0xFF01...0xFF60: return true
        default: return false
        }
    }

    /// `cleanCharacters` for text of `standsAlone` scalars only: one scalar is one Character.
    static func cleanScalars(_ input: String, maxChars: Int) -> Result {
        var out = String.UnicodeScalarView()
        var count = 0
        var replaced = 0
        var lastWasSpace = true
        for u in input.unicodeScalars {
            let c = classify(u)
            var isSpace = c.space
            if c.unwanted {
                replaced += 1
                isSpace = true
            }
            if isSpace {
                if !lastWasSpace { out.append(" "); count += 1 }
                lastWasSpace = true
            } else {
                out.append(u)
                count += 1
                lastWasSpace = false
            }
        }
        if lastWasSpace, count > 0 { out.removeLast(); count -= 1 }
        var truncated = 0
        if count > maxChars {
            truncated = count - maxChars
            out = String.UnicodeScalarView(out.prefix(max(0, maxChars)))
        }
        return Result(text: String(out), truncated: truncated, replaced: replaced)
    }

    /// `(properties.isWhitespace, isUnwanted)` without the Unicode property tables for the
    /// scalars most order text is made of: a table lookup per scalar was ~0.2 µs, i.e. ~120 µs
    /// of a 500-character Chinese text's time to first sound (issue 16; `crier-textpath-bench`).
    /// The ranges are all assigned, printable and not whitespace; a test checks each of them
    /// against the tables of the toolchain it is built with.
    @inline(__always)
    static func classify(_ u: Unicode.Scalar) -> (space: Bool, unwanted: Bool) {
        if fastPrintable(u.value) { return (false, false) }
        if u.value == 0x20 { return (true, false) }
        return (u.properties.isWhitespace, isUnwanted(u))
    }

    @inline(__always)
    static func fastPrintable(_ v: UInt32) -> Bool {
        switch v {
        case 0x21...0x7E, 0x3001...0x3029, 0x4E00...0x9FFF, 0xFF01...0xFF60: return true
        default: return false
        }
    }

    static func cleanCharacters(_ input: String, maxChars: Int, lang: Lang? = nil) -> Result {
        var out = ""
        var replaced = 0
        var leftOutCount = 0
        var lastWasSpace = true
        for ch in input {
            var isSpace = ch.isWhitespace
            if ch.unicodeScalars.contains(where: isUnwanted) {
                replaced += 1
                isSpace = true
            } else if let lang, ch.unicodeScalars.contains(where: { leftOut($0, lang: lang) }) {
                leftOutCount += 1
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
        return Result(text: out, truncated: truncated, replaced: replaced, leftOut: leftOutCount)
    }

    static func isUnwanted(_ u: Unicode.Scalar) -> Bool {
        switch u.value {
        case 0x00...0x08, 0x0B...0x0C, 0x0E...0x1F, 0x7F...0x9F: return true  // C0/C1 except \t \n \r
        case 0x200B...0x200F, 0x202A...0x202E, 0x2060...0x206F, 0xFEFF: return true  // zero-width, bidi
        case 0xFFF9...0xFFFB, 0xFFFE, 0xFFFF: return true
        case 0xE000...0xF8FF: return true  // private use: no voice has a reading for it
        default: return u.properties.generalCategory == .surrogate || u.properties.generalCategory == .unassigned
        }
    }

    /// Longest run of letters, digits and symbols handed to espeak-ng as one word. espeak-ng
    /// keeps a word in fixed 160-byte buffers (N_WORD_BYTES, N_WORD_PHONEMES 200) and overruns
    /// them: "a." before a 161-letter word, or "s'" 80 times (each a stackable English suffix,
    /// fixed upstream only in 2026), abort the process with "stack smashing detected" in 1.51
    /// (fuzz finding 4, docs/security.md). No word a shop says is longer than 40 characters;
    /// a longer run is a code, a link or garbage, and is said in pieces.
    public static let maxWordScalars = 40

    /// True where a word ends for `breakLongWords`: whitespace, a CJK ideograph (espeak-ng
    /// reads those one by one) or CJK punctuation.
    @inline(__always)
    static func endsWord(_ u: Unicode.Scalar) -> Bool {
        switch u.value {
        case 0x20, 0x09...0x0D, 0x3000...0x303F, 0x3400...0x4DBF, 0x4E00...0x9FFF, 0xF900...0xFAFF, 0x20000...0x3FFFF: return true
        default: return u.value > 0x7F && u.properties.isWhitespace
        }
    }

    /// `text` with a space put into every run of more than `max` scalars between word ends
    /// (`endsWord`), at a Character boundary (a letter keeps its accents) unless one Character
    /// alone is longer than `max`; `broken` counts the
    /// runs broken. Text with no such run (all order text so far) comes back as it was.
    public static func breakLongWords(_ text: String, max: Int = maxWordScalars) -> (text: String, broken: Int) {
        var run = 0
        var long = false
        for u in text.unicodeScalars {
            run = endsWord(u) ? 0 : run + 1
            if run > max { long = true; break }
        }
        guard long else { return (text, 0) }
        var out = ""
        var broken = 0
        run = 0
        var counted = false  // this run is already counted in `broken`
        for ch in text {
            // A Character can hold a word end after its first scalar (a space or a hanzi with
            // a combining mark on it), so it is measured scalar by scalar as the rule reads it.
            var leading = 0, trailing = 0, longestInside = 0, ends = false
            for u in ch.unicodeScalars {
                if endsWord(u) {
                    ends = true
                    trailing = 0
                } else {
                    trailing += 1
                    if !ends { leading += 1 }
                    longestInside = Swift.max(longestInside, trailing)
                }
            }
            if run > 0, run + leading > max {
                out.append(" ")
                if !counted { broken += 1; counted = true }
                run = 0
            }
            if longestInside > max {
                // One letter under more marks than a word may hold ("Zalgo" text: espeak-ng
                // overruns on a letter with 200 accents as on a 200-letter word): scalars.
                if !counted { broken += 1; counted = true }
                for u in ch.unicodeScalars {
                    if endsWord(u) {
                        run = 0
                    } else if run == max {
                        out.unicodeScalars.append(" ")
                        run = 0
                    }
                    out.unicodeScalars.append(u)
                    if !endsWord(u) { run += 1 }
                }
                if ends { counted = false }
                continue
            }
            out.append(ch)
            if ends {
                run = trailing
                counted = false
            } else {
                run += trailing
            }
        }
        return (out, broken)
    }

    /// HTML character references that order systems leave in text (`&amp;` `&lt;` `&#39;`
    /// `&#x4E2D;` `&nbsp;`) become the characters they stand for; anything else stays as written.
    public static func decodeEntities(_ s: String) -> String {
        // Bytes, not Characters: `contains("&")` would break the whole text into graphemes.
        guard s.utf8.contains(UInt8(ascii: "&")) else { return s }
        let named: [String: String] = ["amp": "&", "lt": "<", "gt": ">", "quot": "\"", "apos": "'", "nbsp": " ",
                                       "yen": "¥", "euro": "€", "pound": "£", "cent": "¢", "times": "×", "deg": "°"]
        let chars = Array(s)
        var out = ""
        var i = 0
        while i < chars.count {
            if chars[i] == "&", let semi = chars[(i + 1)...].prefix(10).firstIndex(of: ";") {
                let name = String(chars[(i + 1)..<semi])
                var value: String?
                if name.hasPrefix("#x") || name.hasPrefix("#X") {
                    value = UInt32(name.dropFirst(2), radix: 16).flatMap(Unicode.Scalar.init).map { String(Character($0)) }
                } else if name.hasPrefix("#") {
                    value = UInt32(name.dropFirst(), radix: 10).flatMap(Unicode.Scalar.init).map { String(Character($0)) }
                } else {
                    value = named[name]
                }
                if let value {
                    out += value
                    i = semi + 1
                    continue
                }
            }
            out.append(chars[i])
            i += 1
        }
        return out
    }

    /// Something a voice can say: at least one letter (any script, so hanzi too) or digit. Text
    /// of only emoji, symbols, punctuation or invisible characters is not: it would be "said"
    /// in 0 s of audio and acked as heard.
    public static func isSpeakable(_ s: String) -> Bool {
        s.unicodeScalars.contains { u in
            switch u.properties.generalCategory {
            case .uppercaseLetter, .lowercaseLetter, .titlecaseLetter, .modifierLetter, .otherLetter,
                 .decimalNumber, .letterNumber, .otherNumber: true
            default: false
            }
        }
    }
}
