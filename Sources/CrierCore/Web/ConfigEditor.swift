/// Changes values in a crier.conf the way a careful person would in a text editor: the line
/// that decides a key (its last occurrence) gets the new value, keeping its indentation, the
/// key as written and a comment after the value; a key the file does not set is appended at the
/// end; every other byte (comments, unknown keys, blank lines, line ends, a byte-order mark)
/// stays as it was. The result is read back by the same parser as `crier check-config`: a
/// value that would not read back exactly (a line break, a control character, a quote the
/// format cannot hold) or a change that adds an error is refused, and nothing is written.
public enum ConfigEditor {
    public struct Refusal: Error, Sendable, Equatable, CustomStringConvertible {
        public var key: String?
        public var message: String
        public var description: String { (key.map { "\($0): " } ?? "") + message }
        public init(key: String?, message: String) {
            self.key = key
            self.message = message
        }
    }

    public static func set(_ changes: [(key: String, value: String)], in text: String,
                           parser: ConfigParser = ConfigParser(), file: String = "crier.conf") -> Result<String, Refusal> {
        var lines = ConfigParser.lines(Array(text.utf8)).map { Array($0.1) }
        let bytes = Array(text.utf8)
        let crlf = bytes.firstIndex(of: 0x0D).map { $0 + 1 < bytes.count && bytes[$0 + 1] == 0x0A } ?? false
        let newline: [UInt8] = crlf ? [0x0D, 0x0A] : [0x0A]
        let endsWithNewline = bytes.last == 0x0A || bytes.last == 0x0D
        var appended: [[UInt8]] = []
        for (rawKey, value) in changes {
            let key = rawKey.lowercased()
            guard parser.keys[key] != nil else { return .failure(Refusal(key: rawKey, message: "unknown key")) }
            guard let rendered = render(value) else {
                return .failure(Refusal(key: key, message: "this value cannot be written to crier.conf (a line break, a control or invisible character, or quotes the file format cannot hold)"))
            }
            if let i = lines.lastIndex(where: { keyOf($0) == key }) {
                lines[i] = Array(replaced(line: lines[i], value: value, rendered: rendered).utf8)
            } else {
                appended.append(Array("\(key) = \(rendered)".utf8))
            }
        }
        // Line ends as they were: only the lines' contents changed (a bare CR file stays one).
        var out: [UInt8] = []
        let ends = lineEnds(bytes)
        for (i, l) in lines.enumerated() {
            out += l
            if i < ends.count { out += ends[i] }
        }
        if !appended.isEmpty {
            if !out.isEmpty && !endsWithNewline { out += newline }
            for l in appended { out += l + newline }
        }
        let result = String(decoding: out, as: UTF8.self)
        // The same reading as check-config: each value reads back as given, nothing new is wrong.
        let before = parser.parse(text, file: file)
        let after = parser.parse(result, file: file)
        let old = Set(before.errors.map { "\($0.key ?? "")|\($0.message)" })
        if let e = after.errors.first(where: { !old.contains("\($0.key ?? "")|\($0.message)") }) {
            return .failure(Refusal(key: e.key, message: e.message))
        }
        return .success(result)
    }

    /// The value as it must be written to read back exactly: bare, else in "…", else in '…'.
    public static func render(_ value: String) -> String? {
        for candidate in [value, "\"\(value)\"", "'\(value)'"] {
            if ConfigParser.value(ofLine: Substring("k = " + candidate)) == value { return candidate }
        }
        return nil
    }

    /// The key a line sets, lowercased (nil: a comment, a blank line, not UTF-8, no `=`).
    static func keyOf(_ line: [UInt8]) -> String? {
        var l = line[...]
        if l.starts(with: [0xEF, 0xBB, 0xBF]) { l = l.dropFirst(3) }
        guard let s = String(validating: l, as: UTF8.self) else { return nil }
        let t = ConfigParser.trim(Substring(s))
        guard !t.hasPrefix("#"), !t.hasPrefix(";"), let eq = t.firstIndex(of: "=") else { return nil }
        return ConfigParser.trim(t[..<eq]).lowercased()
    }

    /// `line` with the new value after its `=`, its comment kept when that still reads back.
    static func replaced(line: [UInt8], value: String, rendered: String) -> String {
        let s = String(decoding: line, as: UTF8.self)
        let eq = s.firstIndex(of: "=")!
        let head = String(s[...eq])
        let after = s[s.index(after: eq)...]
        let candidate = head + " " + rendered
        if let c = commentStart(after) {
            let withComment = candidate + "  " + String(after[c...])
            if ConfigParser.value(ofLine: Substring(withComment)) == value { return withComment }
        }
        return candidate
    }

    /// Where an unquoted ` #` comment starts in a value part, as the parser decides it.
    static func commentStart(_ part: Substring) -> Substring.Index? {
        var inQuotes = false
        var prevWasSpace = true
        for i in part.indices {
            let c = part[i]
            if c == "\"" { inQuotes.toggle() }
            if c == "#" && !inQuotes && prevWasSpace { return i }
            prevWasSpace = ConfigParser.isBlank(c)
        }
        return nil
    }

    /// The line end after each line (LF, CRLF or CR), as `ConfigParser.lines` split them.
    static func lineEnds(_ b: [UInt8]) -> [[UInt8]] {
        var out: [[UInt8]] = []
        var i = 0
        while i < b.count {
            if b[i] == 0x0A { out.append([0x0A]) } else if b[i] == 0x0D {
                if i + 1 < b.count && b[i + 1] == 0x0A { out.append([0x0D, 0x0A]); i += 1 } else { out.append([0x0D]) }
            }
            i += 1
        }
        return out
    }
}
