/// Reads `key = value` lines. Rules, chosen for a file edited in a hurry in Notepad, TextEdit or
/// nano on a shop PC (docs/configuration.md lists every case):
/// - Line ends: LF, CRLF and a bare CR (old Mac editors), mixed if need be. A UTF-8 byte-order
///   mark is skipped; a UTF-16 file is refused whole with a message saying how to save it.
/// - Spaces and tabs (and no-break spaces pasted from a web page) around keys and values are
///   ignored; `key=value` is fine; keys are case-insensitive, and so are choices (`ZH`, `On`).
/// - `#` starts a comment at the start of a line or after whitespace; a line starting with `;`
///   is a comment too. Quote a value (`"..."` or `'...'`) to keep a `#` or outer spaces.
/// - A bad value is an error naming file, line and key, and the key keeps its default; so
///   does a value with an unterminated quote, a control character (NUL…), an invisible
///   formatting character (a bidi override, a zero-width space), bytes that are not UTF-8, or
///   a line longer than `maxLineBytes`. An unknown key or a `[section]` line is a warning.
/// - A key set twice: the last occurrence decides, even when it is invalid (then the
///   default is used, not the earlier value), with a warning naming both lines.
/// - Values that are fine alone but not together (`volume.default` above `volume.steps`,
///   `audio.buffer_ms` under two periods) are errors naming the line, and the effective
///   configuration holds what the box will really use, never a value clamped later.
/// Parsing never fails as a whole: the box must come up with whatever is usable.
public struct ConfigParser: Sendable {
    public let keys: [String: ConfigKey]
    /// Longest line read (a template of `speech.max_chars` = 2000 CJK characters is 6000 bytes).
    public static let maxLineBytes = 16 * 1024

    public init(schema: [ConfigKey] = CrierConfig.schema) {
        var map: [String: ConfigKey] = [:]
        for k in schema { map[k.name] = k }
        keys = map
    }

    public struct Result: Sendable {
        public var config: CrierConfig
        public var diagnostics: [ConfigDiagnostic]
        public var errors: [ConfigDiagnostic] { diagnostics.filter { $0.severity == .error } }
        /// Keys set explicitly (and validly) in the file, in file order.
        public var setKeys: [String]
    }

    public func parse(_ text: String, file: String, base: CrierConfig = CrierConfig()) -> Result {
        parse(bytes: Array(text.utf8), file: file, base: base)
    }

    /// One `key = value` occurrence (or a line that tried to be one).
    private struct Occurrence {
        var line: Int
        var key: String
        /// nil: the line itself is unusable (`problem` says why).
        var value: String?
        var problem: String?
    }

    public func parse(bytes: [UInt8], file: String, base: CrierConfig = CrierConfig()) -> Result {
        var diags: [ConfigDiagnostic] = []
        func error(_ line: Int, _ key: String?, _ m: String) { diags.append(.init(file: file, line: line, key: key, message: m, severity: .error)) }
        func warning(_ line: Int, _ key: String?, _ m: String) { diags.append(.init(file: file, line: line, key: key, message: m, severity: .warning)) }

        if bytes.starts(with: [0xFF, 0xFE]) || bytes.starts(with: [0xFE, 0xFF]) {
            error(1, nil, "the file is saved as UTF-16 (\"Unicode\" in Notepad); save it as UTF-8 and try again; using the defaults for every key")
            return Result(config: base, diagnostics: diags, setKeys: [])
        }
        var occurrences: [Occurrence] = []
        var section: String?
        for (lineNo, raw) in Self.lines(bytes) {
            var lineBytes = raw[...]
            if lineBytes.starts(with: [0xEF, 0xBB, 0xBF]) { lineBytes = lineBytes.dropFirst(3) }
            // The key, if the line has one we can read, so that a broken line still counts as
            // that key's (invalid) setting.
            let keyGuess: String? = lineBytes.firstIndex(of: UInt8(ascii: "=")).flatMap { eq in
                String(validating: lineBytes[..<eq].prefix(200), as: UTF8.self).map { Self.trim(Substring($0)).lowercased() }
            }.flatMap { keys[$0] == nil ? nil : $0 }
            if lineBytes.count > Self.maxLineBytes {
                let m = "the line is \(lineBytes.count) bytes long; at most \(Self.maxLineBytes) are read"
                if let k = keyGuess { occurrences.append(.init(line: lineNo, key: k, value: nil, problem: m)) } else { error(lineNo, nil, m + "; ignored") }
                continue
            }
            guard let text = String(validating: lineBytes, as: UTF8.self) else {
                let (col, byte) = Self.firstInvalidUTF8(lineBytes)
                let m = "the line is not UTF-8 text (byte 0x\(String(byte, radix: 16, uppercase: true)) at column \(col)); save the file as UTF-8 (Notepad: Save as, Encoding UTF-8)"
                if let k = keyGuess { occurrences.append(.init(line: lineNo, key: k, value: nil, problem: m)) } else { error(lineNo, nil, m + "; ignored") }
                continue
            }
            var line = Substring(text)
            while line.unicodeScalars.first == "\u{FEFF}" { line = Substring(line.unicodeScalars.dropFirst()) }
            let stripped = Self.trim(line)
            if stripped.isEmpty || stripped.hasPrefix("#") || stripped.hasPrefix(";") { continue }
            let header = Self.stripComment(Substring(stripped)).value
            if header.hasPrefix("["), header.hasSuffix("]"), !header.contains("=") {
                section = Self.trim(header.dropFirst().dropLast()).lowercased()
                warning(lineNo, nil, "\(ConfigValue.shown(header)): crier.conf has no sections; write every key in full (audio.device = hw:1); ignored")
                continue
            }
            guard let eq = stripped.firstIndex(of: "=") else {
                let lower = stripped.lowercased()
                // `server.key 00112233…` (the = forgotten) must not put the secret in a log.
                let secret = ["server.key", "server.token"].contains { lower.hasPrefix($0) }
                // A Wi-Fi password is short: not even its first characters are shown.
                let wifiSecret = ["wifi.backup_psk", "wifi.psk"].first { lower.hasPrefix($0) }
                let shown = wifiSecret.map { "\"\($0) …\"" }
                    ?? (secret ? "\"" + String(stripped.prefix(12)) + "…\"" : ConfigValue.shown(String(stripped)))
                var m = "expected \"key = value\", got \(shown)"
                if let colon = stripped.firstIndex(of: ":"), keys[Self.trim(stripped[..<colon]).lowercased()] != nil {
                    m += " (write \(Self.trim(stripped[..<colon]).lowercased()) = …, with = rather than :)"
                }
                error(lineNo, nil, m)
                continue
            }
            let key = Self.trim(stripped[..<eq]).lowercased()
            guard keys[key] != nil else {
                var hint = Self.closest(to: key, in: Array(keys.keys)).map { " (did you mean \($0)?)" } ?? ""
                if let s = section, keys[s + "." + key] != nil { hint = " (did you mean \(s).\(key)? sections are not used)" }
                warning(lineNo, key, "unknown key, ignored\(hint)")
                continue
            }
            switch Self.lexValue(stripped[stripped.index(after: eq)...]) {
            case .success(let v): occurrences.append(.init(line: lineNo, key: key, value: v, problem: nil))
            case .failure(let e): occurrences.append(.init(line: lineNo, key: key, value: nil, problem: e.message))
            }
        }

        // The last occurrence of each key decides; earlier ones are still checked and reported.
        var last: [String: Int] = [:]
        var first: [String: Int] = [:]
        for o in occurrences {
            last[o.key] = o.line
            if first[o.key] == nil { first[o.key] = o.line }
        }
        var config = base
        var setKeys: [String] = []
        var lineOf: [String: Int] = [:]
        for o in occurrences {
            let spec = keys[o.key]!
            let isLast = last[o.key] == o.line
            let defaultText = spec.defaultText.isEmpty ? "empty" : spec.defaultText
            if let f = first[o.key], f != o.line {
                warning(o.line, o.key, "set again (first set on line \(f)); the last value wins")
            }
            var problem = o.problem
            var trial = config
            if let v = o.value {
                do throws(ConfigValueError) {
                    try spec.apply(&trial, v)
                } catch {
                    problem = error.message
                }
            }
            if let p = problem {
                if isLast {
                    let earlier = first[o.key] != o.line ? ", not the value from an earlier line" : ""
                    error(o.line, o.key, p + "; using the default (\(defaultText))\(earlier)")
                } else {
                    warning(o.line, o.key, p + "; line \(last[o.key]!) sets it again")
                }
            } else if isLast {
                config = trial
                lineOf[o.key] = o.line
                if !setKeys.contains(o.key) { setKeys.append(o.key) }
            }
        }
        for d in Self.crossCheck(&config, lineOf: lineOf, base: base) {
            diags.append(.init(file: file, line: d.line, key: d.key, message: d.message, severity: d.severity))
        }
        diags.sort { $0.line < $1.line }
        return Result(config: config, diagnostics: diags, setKeys: setKeys)
    }

    /// Keys whose allowed values depend on other keys. Each adjusts the effective value (so
    /// what check-config prints is what runs) and names the line to change.
    typealias CrossDiagnostic = (line: Int, key: String, message: String, severity: ConfigDiagnostic.Severity)

    /// Keys whose allowed values depend on other keys. Each adjusts the effective value (so
    /// what check-config prints is what runs, nothing is clamped later) and names the line to
    /// change: an error when the adjusted key was set in the file, a warning when only the
    /// other key was (its default no longer fits).
    static func crossCheck(_ c: inout CrierConfig, lineOf: [String: Int], base: CrierConfig) -> [CrossDiagnostic] {
        var out: [CrossDiagnostic] = []
        func report(_ key: String, other: String, _ message: String) {
            if let l = lineOf[key] {
                out.append((l, key, message, .error))
            } else if let l = lineOf[other] {
                out.append((l, other, message, .warning))
            }
        }
        let steps = c.buttons.volumeSteps
        if c.buttons.volumeDefault > steps {
            let use = min(base.buttons.volumeDefault, steps)
            report("volume.default", other: "volume.steps", "\(c.buttons.volumeDefault) is above volume.steps = \(steps) (the loudest level); using \(use)")
            c.buttons.volumeDefault = use
        }
        if c.buttons.alertFloor > steps {
            let use = min(base.buttons.alertFloor, steps)
            report("volume.alert_floor", other: "volume.steps", "\(c.buttons.alertFloor) is above volume.steps = \(steps) (the loudest level); using \(use)")
            c.buttons.alertFloor = use
        }
        if c.audio.bufferMs < 2 * c.audio.periodMs {
            let use = max(base.audio.bufferMs, 2 * c.audio.periodMs)
            report("audio.buffer_ms", other: "audio.period_ms",
                   "\(c.audio.bufferMs) is less than two periods (2 × audio.period_ms = \(2 * c.audio.periodMs)); using \(use)")
            c.audio.bufferMs = use
        }
        // The audio thread must run before the speech thread it plays: a speech thread at the
        // same or a higher priority could hold a core through a period's deadline.
        if c.speech.realtimePriority > 0 && c.audio.realtimePriority > 0 && c.speech.realtimePriority >= c.audio.realtimePriority {
            let use = min(base.speech.realtimePriority, c.audio.realtimePriority - 1)
            report("speech.realtime_priority", other: "audio.realtime_priority",
                   "\(c.speech.realtimePriority) is not below audio.realtime_priority = \(c.audio.realtimePriority) (the audio thread must run first); using \(use)")
            c.speech.realtimePriority = use
        }
        // The event thread hands utterances to the speech thread, which must then run first.
        let above = c.speech.realtimePriority > 0 ? c.speech.realtimePriority : c.audio.realtimePriority
        if c.speech.startPriority > 0 && above > 0 && c.speech.startPriority >= above {
            let use = min(base.speech.startPriority, above - 1)
            let other = c.speech.realtimePriority > 0 ? "speech.realtime_priority" : "audio.realtime_priority"
            // Lowered because the audio line lowered the speech thread: said on the audio line.
            let shownOn = lineOf[other] == nil && lineOf["audio.realtime_priority"] != nil ? "audio.realtime_priority" : other
            report("speech.start_priority", other: shownOn,
                   "\(c.speech.startPriority) is not below \(other) = \(above) (the thread it hands speech to must run first); using \(use)")
            c.speech.startPriority = use
        }
        let p = c.supervision.policy
        if p.initialBackoff > p.maxBackoff {
            let use = min(base.supervision.policy.initialBackoff, p.maxBackoff)
            report("supervisor.backoff_initial", other: "supervisor.backoff_max",
                   "\(ConfigValue.fmt(p.initialBackoff)) is above supervisor.backoff_max = \(ConfigValue.fmt(p.maxBackoff)); using \(ConfigValue.fmt(use))")
            c.supervision.policy.initialBackoff = use
        }
        // A device.id that cannot be an MQTT topic level: the link would refuse to start, so
        // the effective server is none (what check-config prints is what runs).
        if let server = c.link.server, server.isMQTT, let problem = MQTTConfig.deviceIDProblem(c.deviceID) {
            report("device.id", other: "server", "\(problem); with an MQTT server (\(server.scheme)://) device.id names the topics and may hold letters, digits, - and _ only; the MQTT link stays off until it is fixed")
            c.link.server = nil
        }
        // Wi-Fi without a country: the radio's channels and power are the law of the country
        // it is in, and the "world" fallback misses channels many routers use. Wi-Fi stays off
        // (the effective wifi.ssid is empty) until it is set, so check-config shows what runs.
        if c.wifi.enabled && c.wifi.country == nil {
            let key = lineOf["wifi.ssid"] != nil ? "wifi.ssid" : "wifi.backup_ssid"
            if let l = lineOf[key] {
                out.append((l, "wifi.country", "missing: Wi-Fi needs the country the box is in (wifi.country = GB, DE, CN, US…: it decides the legal channels and power); Wi-Fi stays off until it is set", .error))
            }
            c.wifi.ssid = nil
            c.wifi.backupSSID = nil
        }
        // A network without a usable password is not joined: a mistyped wifi.psk must never
        // become an open network (a stranger's hotspot of the same name).
        for (ssidKey, pskKey) in [("wifi.ssid", "wifi.psk"), ("wifi.backup_ssid", "wifi.backup_psk")] {
            let primary = ssidKey == "wifi.ssid"
            let hasSSID = primary ? c.wifi.ssid != nil : c.wifi.backupSSID != nil
            let hasPSK = primary ? c.wifi.psk != nil : c.wifi.backupPSK != nil
            if hasSSID && !hasPSK {
                if let l = lineOf[ssidKey] {
                    out.append((l, pskKey, "missing or invalid: write the network's password (8-63 characters or 64 hex digits), or `\(pskKey) = open` for a network without one; this network is not joined", .error))
                }
                if primary { c.wifi.ssid = nil } else { c.wifi.backupSSID = nil }
            } else if !hasSSID && hasPSK, let l = lineOf[pskKey] {
                out.append((l, pskKey, "set without \(ssidKey); it is not used", .warning))
            }
        }
        if let a = c.wifi.ssid, a == c.wifi.backupSSID, let l = lineOf["wifi.backup_ssid"] {
            out.append((l, "wifi.backup_ssid", "is the same network as wifi.ssid; a backup should be another network (e.g. a phone's hotspot)", .warning))
        }
        // A template that lost what it is for: "Order #{number}" unquoted is "Order" (a `#`
        // after a space starts a comment), and every customer would hear no number.
        for lang in Lang.allCases {
            for t in OrderKindSpec.templates {
                let name = Templates.Name(rawValue: t.name), wanted = t.placeholder
                let key = "template.\(lang.rawValue).\(name.rawValue)"
                guard let l = lineOf[key] else { continue }
                if !Templates.placeholderNames(in: c.templates[lang, name]).contains(wanted) {
                    out.append((l, key, "has no {\(wanted)}, so the \(wanted.replacingAll("_", with: " ")) is never said; if the line has a # after a space, the rest was read as a comment: put the value in quotes (\"Order #{\(wanted)}\")", .warning))
                }
            }
        }
        // Two buttons on one GPIO line. Lines set in the file are served first (in file order),
        // then the defaults: a button left on a default line someone else now uses is not
        // fitted (a warning), a second button set to the same line in the file is an error.
        var owner: [LineRef: ButtonAction] = [:]
        let explicit = ButtonAction.allCases.filter { lineOf["button.\($0.rawValue)"] != nil }
            .sorted { lineOf["button.\($0.rawValue)"]! < lineOf["button.\($1.rawValue)"]! }
        for a in explicit + ButtonAction.allCases.filter({ !explicit.contains($0) }) {
            guard let l = c.buttons[a].line else { continue }
            guard let o = owner[l] else { owner[l] = a; continue }
            let key = "button.\(a.rawValue)", ownerKey = "button.\(o.rawValue)"
            if let line = lineOf[key] {
                out.append((line, key, "\(l) is already the \(o.rawValue) button; one line cannot be two buttons, so \(a.rawValue) is not fitted", .error))
            } else if let line = lineOf[ownerKey] {
                out.append((line, ownerKey, "\(l) is also the default line of the \(a.rawValue) button, which is therefore not fitted (set \(key) to its own line, or empty)", .warning))
            }
            c.buttons[a].line = nil
        }
        return out
    }

    /// The value a `key = value` line gives, exactly as `parse` reads it (nil: not such a line,
    /// or its value would be refused before any key sees it).
    public static func value(ofLine raw: Substring) -> String? {
        let stripped = trim(raw)
        guard let eq = stripped.firstIndex(of: "=") else { return nil }
        return try? lexValue(stripped[stripped.index(after: eq)...]).get()
    }

    /// Lines with their numbers, split on LF, CRLF or a bare CR.
    static func lines(_ b: [UInt8]) -> [(Int, ArraySlice<UInt8>)] {
        var out: [(Int, ArraySlice<UInt8>)] = []
        var start = 0
        var i = 0
        while i < b.count {
            if b[i] == 0x0A || b[i] == 0x0D {
                out.append((out.count + 1, b[start..<i]))
                if b[i] == 0x0D && i + 1 < b.count && b[i + 1] == 0x0A { i += 1 }
                start = i + 1
            }
            i += 1
        }
        if start < b.count { out.append((out.count + 1, b[start...])) }
        return out
    }

    static func firstInvalidUTF8(_ b: ArraySlice<UInt8>) -> (column: Int, byte: UInt8) {
        var i = b.startIndex
        var col = 1
        while i < b.endIndex {
            let lead = b[i]
            let n = lead < 0x80 ? 1 : (0xC2...0xDF).contains(lead) ? 2 : (0xE0...0xEF).contains(lead) ? 3 : (0xF0...0xF4).contains(lead) ? 4 : 0
            guard n > 0, i + n <= b.endIndex, String(validating: b[i..<(i + n)], as: UTF8.self) != nil else { return (col, lead) }
            i += n
            col += 1
        }
        return (col, 0)
    }

    /// The value part after `=`: quoted (`"…"` or `'…'`, ending at the first matching quote
    /// followed only by whitespace or a comment) or bare (up to a `#` after whitespace, outside
    /// double quotes). Refuses unterminated quotes and characters that cannot be meant.
    static func lexValue(_ s: Substring) -> Swift.Result<String, ConfigValueError> {
        let raw = trimLeading(s)
        var value: Substring
        if let q = raw.first, q == "\"" || q == "'" {
            var close: Substring.Index?
            var sawQuote = false
            var i = raw.index(after: raw.startIndex)
            while i < raw.endIndex {
                if raw[i] == q {
                    sawQuote = true
                    let rest = trim(raw[raw.index(after: i)...])
                    if rest.isEmpty || rest.hasPrefix("#") { close = i; break }
                }
                i = raw.index(after: i)
            }
            if let c = close {
                value = raw[raw.index(after: raw.startIndex)..<c]
            } else if q == "'" {
                // An apostrophe that starts a bare value (`'til 9`): not a quote.
                value = Substring(stripComment(raw).value)
            } else if sawQuote {
                return .failure(ConfigValueError("text after the closing quote (a comment starts with #; a \" inside a value is fine between the outer quotes)"))
            } else {
                return .failure(ConfigValueError("unterminated quote: the value starts with \" but no closing \" ends it"))
            }
        } else {
            let (v, open) = stripComment(raw)
            if open { return .failure(ConfigValueError("unterminated quote: a \" in the value is not closed")) }
            value = Substring(trim(Substring(v)))
        }
        var col = 1
        for u in value.unicodeScalars {
            if u != "\t" && (u.value < 0x20 || (0x7f...0x9f).contains(u.value)) {
                return .failure(ConfigValueError("the value contains a control character (U+\(hex(u))) at column \(col); remove it"))
            }
            if u.properties.generalCategory == .format || u.properties.generalCategory == .lineSeparator
                || u.properties.generalCategory == .paragraphSeparator {
                return .failure(ConfigValueError("the value contains an invisible character (U+\(hex(u)), pasted from a web page or a chat?) at column \(col); type the value again"))
            }
            col += 1
        }
        return .success(String(value))
    }

    private static func hex(_ u: Unicode.Scalar) -> String {
        var h = String(u.value, radix: 16, uppercase: true)
        while h.utf8.count < 4 { h = "0" + h }
        return h
    }

    /// Everything before an unquoted `#` that starts the value or follows whitespace, and
    /// whether a `"` was left open.
    static func stripComment(_ line: Substring) -> (value: String, openQuote: Bool) {
        var inQuotes = false
        var prevWasSpace = true
        for i in line.indices {
            let c = line[i]
            if c == "\"" { inQuotes.toggle() }
            if c == "#" && !inQuotes && prevWasSpace { return (trim(line[..<i]), false) }
            prevWasSpace = isBlank(c)
        }
        return (trim(line), inQuotes)
    }

    static func isBlank(_ c: Character) -> Bool {
        c == " " || c == "\t" || c.unicodeScalars.allSatisfy { $0.properties.generalCategory == .spaceSeparator }
    }

    static func trimLeading(_ s: Substring) -> Substring {
        var s = s
        while let f = s.first, isBlank(f) { s = s.dropFirst() }
        return s
    }

    static func trim(_ s: Substring) -> String {
        var s = trimLeading(s)
        while let l = s.last, isBlank(l) { s = s.dropLast() }
        return String(s)
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
    /// Without spaces and tabs at the ends (config values, RAUC's messages).
    public var trimmed: String {
        var s = self
        while let f = s.first, f == " " || f == "\t" { s = s.dropFirst() }
        while let l = s.last, l == " " || l == "\t" { s = s.dropLast() }
        return String(s)
    }
}

extension String {
    public var trimmed: String { Substring(self).trimmed }
}
