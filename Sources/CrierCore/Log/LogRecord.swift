/// Severity of a log line. Raw values are syslog priorities so journald keeps them.
public enum LogLevel: Int, Sendable, Comparable, CaseIterable {
    case error = 3, warning = 4, notice = 5, info = 6, debug = 7

    public static func < (a: LogLevel, b: LogLevel) -> Bool { a.rawValue > b.rawValue }

    public var label: String {
        switch self {
        case .error: "ERROR"
        case .warning: "WARN"
        case .notice: "NOTICE"
        case .info: "INFO"
        case .debug: "DEBUG"
        }
    }

    public init?(name: String) {
        switch name.lowercased() {
        case "error": self = .error
        case "warn", "warning": self = .warning
        case "notice": self = .notice
        case "info": self = .info
        case "debug": self = .debug
        default: return nil
        }
    }
}

/// One event: `2026-11-30T07:00:00.123Z INFO link: connected server=tcp://10.0.0.5:7700 after=3.2s`.
public struct LogRecord: Sendable, Equatable {
    public var time: WallTime
    public var level: LogLevel
    public var component: String
    public var message: String
    public var fields: [(String, String)]

    public init(time: WallTime, level: LogLevel, component: String, message: String, fields: [(String, String)] = []) {
        self.time = time
        self.level = level
        self.component = component
        self.message = message
        self.fields = fields
    }

    public static func == (a: LogRecord, b: LogRecord) -> Bool {
        a.time == b.time && a.level == b.level && a.component == b.component && a.message == b.message
            && a.fields.elementsEqual(b.fields, by: { $0 == $1 })
    }

    /// The line without a trailing newline. `syslogPrefix` adds `<N>` for journald's
    /// SyslogLevelPrefix.
    ///
    /// This is the one place a record becomes text, so it is where escaping happens: every
    /// sink (stderr and the journal, the serial console, `crier status`) gets one line of
    /// printable text whatever an order id, a server's message or a file name contained.
    /// - The component, the message and field keys are written bare with `escape` applied.
    /// - A field value is bare when it has nothing to escape and no space, `"`, `=` or `\`;
    ///   otherwise it is quoted, with `\"` and `\\` inside.
    /// - Escapes: `\n`, `\r`, `\t`, `\\`, and `\u{XXXX}` for every other scalar in
    ///   `needsEscape` (C0 and C1 controls, DEL, bidi overrides and isolates, zero-width and
    ///   other format characters, line and paragraph separators, private-use and unassigned
    ///   code points). `LogRecord.unescape` gives the original text back.
    /// Invalid UTF-8 cannot reach a record: a Swift `String` is always valid Unicode, and
    /// bytes from the network are decoded with U+FFFD for what is not UTF-8.
    public func formatted(syslogPrefix: Bool = false) -> String {
        var s = syslogPrefix ? "<\(level.rawValue)>" : ""
        s += time.iso8601
        s += " \(level.label) \(LogRecord.escape(component)): \(LogRecord.escape(message))"
        for (k, v) in fields {
            s += " \(LogRecord.escape(k))=\(LogRecord.quoteIfNeeded(v))"
        }
        return s
    }

    /// The message as the log line shows it (escaped), for places that show it outside a line.
    public var escapedMessage: String { LogRecord.escape(message) }

    /// Text that cannot be shown as itself on a terminal, a serial console or the journal
    /// without changing what the rest of the line looks like.
    public static func needsEscape(_ u: Unicode.Scalar) -> Bool {
        let v = u.value
        if v >= 0x20 && v < 0x7f { return false }
        if v < 0x20 || v == 0x7f || (v >= 0x80 && v < 0xa0) { return true }
        switch u.properties.generalCategory {
        case .control, .format, .lineSeparator, .paragraphSeparator, .privateUse, .unassigned, .surrogate:
            return true
        default:
            return false
        }
    }

    /// `s` with `\` and every `needsEscape` scalar escaped; with `quote`, `"` too.
    public static func escape(_ s: String, quote: Bool = false) -> String {
        // Fast path: plain ASCII text without backslashes (almost every line).
        if s.utf8.allSatisfy({ $0 >= 0x20 && $0 < 0x7f && $0 != 0x5c && (!quote || $0 != 0x22) }) { return s }
        var out = String.UnicodeScalarView()
        // A combining mark with nothing of its own to attach to (at the start, after an escape,
        // a space or ASCII punctuation) would merge with a separator: escape it too.
        var attached = false
        for u in s.unicodeScalars {
            defer {
                let v = u.value
                attached = out.last == u && (v >= 0x80 || (v >= 0x30 && v <= 0x39) || (v | 0x20 >= 0x61 && v | 0x20 <= 0x7a))
            }
            if !attached && isCombining(u) {
                out.append(contentsOf: "\\u{\(hex4(u))}".unicodeScalars)
                continue
            }
            switch u {
            case "\\": out.append(contentsOf: "\\\\".unicodeScalars)
            case "\"" where quote: out.append(contentsOf: "\\\"".unicodeScalars)
            case "\n": out.append(contentsOf: "\\n".unicodeScalars)
            case "\r": out.append(contentsOf: "\\r".unicodeScalars)
            case "\t": out.append(contentsOf: "\\t".unicodeScalars)
            default:
                if needsEscape(u) {
                    out.append(contentsOf: "\\u{\(hex4(u))}".unicodeScalars)
                } else {
                    out.append(u)
                }
            }
        }
        return String(out)
    }

    static func isCombining(_ u: Unicode.Scalar) -> Bool {
        guard u.value >= 0x300 else { return false }
        switch u.properties.generalCategory {
        case .nonspacingMark, .spacingMark, .enclosingMark: return true
        default: return false
        }
    }

    private static func hex4(_ u: Unicode.Scalar) -> String {
        var hex = String(u.value, radix: 16, uppercase: true)
        while hex.utf8.count < 4 { hex = "0" + hex }
        return hex
    }

    /// The inverse of `escape` (of a quoted value's inside, with `quote`): what was logged.
    /// nil when `s` is not something `escape` produces.
    public static func unescape(_ s: String) -> String? {
        var out = String.UnicodeScalarView()
        var it = s.unicodeScalars.makeIterator()
        while let u = it.next() {
            guard u == "\\" else { out.append(u); continue }
            switch it.next() {
            case "\\": out.append("\\")
            case "\"": out.append("\"")
            case "n": out.append("\n")
            case "r": out.append("\r")
            case "t": out.append("\t")
            case "u":
                guard it.next() == "{" else { return nil }
                var hex = ""
                var closed = false
                while let h = it.next() {
                    if h == "}" { closed = true; break }
                    hex.unicodeScalars.append(h)
                    if hex.utf8.count > 6 { return nil }
                }
                guard closed, let v = UInt32(hex, radix: 16), let scalar = Unicode.Scalar(v) else { return nil }
                out.append(scalar)
            default: return nil
            }
        }
        return String(out)
    }

    /// Kept for callers outside this file: the message form of `escape`.
    static func sanitize(_ s: String) -> String { escape(s) }

    static func quoteIfNeeded(_ v: String) -> String {
        if v.isEmpty { return "\"\"" }
        let bare = !(v.unicodeScalars.first.map(isCombining) ?? false) && v.unicodeScalars.allSatisfy { u in
            u != " " && u != "\"" && u != "=" && u != "\\" && !needsEscape(u) && !u.properties.isWhitespace
        }
        return bare ? v : "\"" + escape(v, quote: true) + "\""
    }
}

extension String {
    /// Foundation-free replace, so CrierCore stays pure and portable.
    func replacingAll(_ target: Character, with replacement: String) -> String {
        var out = ""
        for c in self { if c == target { out += replacement } else { out.append(c) } }
        return out
    }
}
