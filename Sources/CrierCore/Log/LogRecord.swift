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
    public func formatted(syslogPrefix: Bool = false) -> String {
        var s = syslogPrefix ? "<\(level.rawValue)>" : ""
        s += time.iso8601
        s += " \(level.label) \(component): \(LogRecord.sanitize(message))"
        for (k, v) in fields {
            s += " \(k)=\(LogRecord.quoteIfNeeded(v))"
        }
        return s
    }

    /// Messages may carry text from the network; a newline in it must not forge a second line.
    static func sanitize(_ s: String) -> String {
        var out = ""
        out.unicodeScalars.reserveCapacity(s.unicodeScalars.count)
        for u in s.unicodeScalars {
            if u.value < 0x20 || u.value == 0x7f {
                out += u == "\n" ? "\\n" : (u == "\t" ? " " : "?")
            } else {
                out.unicodeScalars.append(u)
            }
        }
        return out
    }

    static func quoteIfNeeded(_ v: String) -> String {
        if v.isEmpty { return "\"\"" }
        if v.contains(where: { $0 == " " || $0 == "\"" || $0 == "=" || $0 == "\\" || $0.isNewline }) {
            return "\"" + sanitize(v.replacingAll("\\", with: "\\\\").replacingAll("\"", with: "\\\"")) + "\""
        }
        return sanitize(v)
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
