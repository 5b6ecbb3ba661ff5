/// `crier voice render --tts 'COMMAND {text} {out}'` (docs/voice.md, "Rendering a pack with a
/// TTS"): the template is split into arguments once, the way a shell splits words (blanks;
/// '…' and "…" quote; \ escapes) but with nothing expanded, and `{text}` / `{out}` are then
/// replaced inside each argument. A clip's text is therefore always part of one argument,
/// whatever it holds (spaces, quotes, `;`, `$(…)`): no shell sees it unless the integrator
/// writes one (`sh -c '… "$1" …' sh {text}`).
public struct TTSCommand: Sendable, Equatable {
    public var words: [String]

    public struct Problem: Error, Sendable, Equatable, CustomStringConvertible {
        public var description: String
    }

    public static func parse(_ template: String) -> Result<TTSCommand, Problem> {
        var words: [String] = []
        var cur = ""
        var inWord = false
        var quote: Character?
        var escape = false
        for ch in template {
            if escape {
                cur.append(ch)
                escape = false
                continue
            }
            if let q = quote {
                if ch == q {
                    quote = nil
                } else if ch == "\\" && q == "\"" {
                    escape = true
                } else {
                    cur.append(ch)
                }
                continue
            }
            switch ch {
            case " ", "\t", "\n":
                if inWord { words.append(cur) }
                cur = ""
                inWord = false
            case "'", "\"":
                quote = ch
                inWord = true
            case "\\":
                escape = true
                inWord = true
            default:
                cur.append(ch)
                inWord = true
            }
        }
        if quote != nil { return .failure(Problem(description: "--tts: a quote (\(quote!)) is not closed")) }
        if escape { return .failure(Problem(description: "--tts: ends with a lone \\")) }
        if inWord { words.append(cur) }
        guard let first = words.first, !first.contains("{text}"), !first.contains("{out}") else {
            return .failure(Problem(description: "--tts: expected a command first, e.g. --tts 'espeak-ng -v cmn -w {out} {text}'"))
        }
        guard words.contains(where: { $0.contains("{out}") }) else {
            return .failure(Problem(description: "--tts: no {out}; the command must write the clip to {out} (a .wav path crier chooses)"))
        }
        guard words.contains(where: { $0.contains("{text}") }) else {
            return .failure(Problem(description: "--tts: no {text}; the command must be given the clip's text as {text}"))
        }
        return .success(TTSCommand(words: words))
    }

    /// The program and its arguments for one clip: `{text}` and `{out}` replaced inside each
    /// word, never splitting or joining words.
    public func argv(text: String, out: String) -> (program: String, arguments: [String]) {
        let w = words.map { Self.substitute($0, text: text, out: out) }
        return (w[0], Array(w.dropFirst()))
    }

    static func substitute(_ word: String, text: String, out: String) -> String {
        // One left-to-right pass: a {out} inside the substituted text is not replaced again.
        var result = ""
        var rest = Substring(word)
        while let i = rest.firstIndex(of: "{") {
            result += rest[..<i]
            let tail = rest[i...]
            if tail.hasPrefix("{text}") {
                result += text
                rest = tail.dropFirst(6)
            } else if tail.hasPrefix("{out}") {
                result += out
                rest = tail.dropFirst(5)
            } else {
                result += "{"
                rest = tail.dropFirst()
            }
        }
        return result + rest
    }
}
