/// Reads `key = value` lines. Rules, chosen for a file edited in Notepad on a shop PC:
/// - `#` starts a comment at the start of a line or after whitespace; quote a value
///   (`"..."`) to keep a `#` or surrounding spaces in it.
/// - CRLF line ends and a UTF-8 byte-order mark are accepted.
/// - A bad value is reported and the key keeps its default; an unknown key is a warning.
///   Parsing never fails as a whole: the box must come up with whatever is usable.
public struct ConfigParser: Sendable {
    public let keys: [String: ConfigKey]

    public init(schema: [ConfigKey] = CrierConfig.schema) {
        var map: [String: ConfigKey] = [:]
        for k in schema { map[k.name] = k }
        keys = map
    }

    public struct Result: Sendable {
        public var config: CrierConfig
        public var diagnostics: [ConfigDiagnostic]
        public var errors: [ConfigDiagnostic] { diagnostics.filter { $0.severity == .error } }
        /// Keys set explicitly in the file, in file order.
        public var setKeys: [String]
    }

    public func parse(_ text: String, file: String, base: CrierConfig = CrierConfig()) -> Result {
        var config = base
        var diags: [ConfigDiagnostic] = []
        var seen: [String: Int] = [:]
        var setKeys: [String] = []
        var body = Substring(text)
        if body.hasPrefix("\u{FEFF}") { body = body.dropFirst() }
        var lineNo = 0
        // "\r\n" is one Character in Swift: split on both forms.
        for rawLine in body.split(omittingEmptySubsequences: false, whereSeparator: { $0 == "\n" || $0 == "\r\n" }) {
            lineNo += 1
            var line = rawLine
            if line.hasSuffix("\r") { line = line.dropLast() }
            let stripped = Self.stripComment(line).trimmed
            if stripped.isEmpty { continue }
            guard let eq = stripped.firstIndex(of: "=") else {
                diags.append(.init(file: file, line: lineNo, key: nil,
                                   message: "expected \"key = value\", got \"\(stripped)\"", severity: .error))
                continue
            }
            let key = stripped[..<eq].trimmed.lowercased()
            var value = stripped[stripped.index(after: eq)...].trimmed
            if value.count >= 2, value.hasPrefix("\""), value.hasSuffix("\"") {
                value = String(value.dropFirst().dropLast())
            }
            guard let spec = keys[key] else {
                let hint = Self.closest(to: key, in: Array(keys.keys)).map { " (did you mean \($0)?)" } ?? ""
                diags.append(.init(file: file, line: lineNo, key: key,
                                   message: "unknown key, ignored\(hint)", severity: .warning))
                continue
            }
            if let first = seen[key] {
                diags.append(.init(file: file, line: lineNo, key: key,
                                   message: "set again (first set on line \(first)); the last value wins", severity: .warning))
            }
            seen[key] = lineNo
            do throws(ConfigValueError) {
                try spec.apply(&config, value)
                if !setKeys.contains(key) { setKeys.append(key) }
            } catch {
                diags.append(.init(file: file, line: lineNo, key: key,
                                   message: error.message + "; using the default (\(spec.defaultText.isEmpty ? "empty" : spec.defaultText))",
                                   severity: .error))
            }
        }
        return Result(config: config, diagnostics: diags, setKeys: setKeys)
    }

    /// The value a `key = value` line gives, exactly as `parse` reads it (nil: not such a line).
    public static func value(ofLine raw: Substring) -> String? {
        var line = raw
        if line.hasSuffix("\r") { line = line.dropLast() }
        let stripped = stripComment(line).trimmed
        guard let eq = stripped.firstIndex(of: "=") else { return nil }
        var value = stripped[stripped.index(after: eq)...].trimmed
        if value.count >= 2, value.hasPrefix("\""), value.hasSuffix("\"") {
            value = String(value.dropFirst().dropLast())
        }
        return value
    }

    /// Everything from an unquoted `#` that starts the line or follows whitespace.
    static func stripComment(_ line: Substring) -> Substring {
        var inQuotes = false
        var prevWasSpace = true
        for i in line.indices {
            let c = line[i]
            if c == "\"" { inQuotes.toggle() }
            if c == "#" && !inQuotes && prevWasSpace { return line[..<i] }
            prevWasSpace = c == " " || c == "\t"
        }
        return line
    }

    static func closest(to key: String, in candidates: [String]) -> String? {
        var best: (String, Int)?
        // The distance is at least the difference in length: skip hopeless candidates, so a
        // long garbage line costs nothing (found by the config fuzz target: 8 KiB of junk keys
        // took ~100 edit distances of 8000 × 25 each).
        let n = key.utf8.count
        for c in candidates where abs(c.utf8.count - n) <= 3 {
            let d = editDistance(key, c)
            if d <= 3, best == nil || d < best!.1 || (d == best!.1 && c < best!.0) { best = (c, d) }
        }
        return best?.0
    }

    static func editDistance(_ a: String, _ b: String) -> Int {
        let a = Array(a.utf8), b = Array(b.utf8)
        if a.isEmpty { return b.count }
        var prev = Array(0...b.count)
        for i in 1...a.count {
            var cur = [i] + Array(repeating: 0, count: b.count)
            for j in stride(from: 1, through: b.count, by: 1) {
                cur[j] = min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1))
            }
            prev = cur
        }
        return prev[b.count]
    }
}

extension Substring {
    var trimmed: String {
        var s = self
        while let f = s.first, f == " " || f == "\t" { s = s.dropFirst() }
        while let l = s.last, l == " " || l == "\t" { s = s.dropLast() }
        return String(s)
    }
}

extension String {
    var trimmed: String { Substring(self).trimmed }
}
