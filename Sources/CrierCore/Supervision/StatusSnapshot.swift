/// Everything `crier status` shows, gathered by the runtime when asked. States of parts this
/// module does not own (the link, alerts) are plain words so each owner can map its own types.
public struct StatusSnapshot: Sendable, Equatable {
    public var version: String
    public var deviceID: String
    /// When the snapshot was taken.
    public var time: WallTime
    /// Seconds since the daemon started.
    public var uptime: Double
    public var components: [ComponentStatus]
    public var link: LinkStatus
    /// The last error-level log line (see `LastErrorSink`).
    public var lastError: LogRecord?
    public var volume: Int
    public var volumeMax: Int
    public var muted: Bool
    /// Alerts waiting to be spoken or acknowledged.
    public var queueLength: Int
    /// The most recent alerts, newest first: the box's "now playing".
    public var lastAlerts: [AlertSummary]

    public init(version: String, deviceID: String, time: WallTime, uptime: Double, components: [ComponentStatus],
                link: LinkStatus, lastError: LogRecord? = nil, volume: Int, volumeMax: Int, muted: Bool,
                queueLength: Int, lastAlerts: [AlertSummary] = []) {
        self.version = version
        self.deviceID = deviceID
        self.time = time
        self.uptime = uptime
        self.components = components
        self.link = link
        self.lastError = lastError
        self.volume = volume
        self.volumeMax = volumeMax
        self.muted = muted
        self.queueLength = queueLength
        self.lastAlerts = lastAlerts
    }

    /// Every component running and on time.
    public var healthy: Bool { components.allSatisfy { $0.state == .running } }
}

public struct LinkStatus: Sendable, Equatable {
    /// `up`, `connecting`, `down` or `off` (no server configured).
    public var state: String
    public var server: String?
    /// Seconds in this state.
    public var since: Double?
    /// e.g. "connection refused".
    public var detail: String?

    public init(state: String, server: String? = nil, since: Double? = nil, detail: String? = nil) {
        self.state = state
        self.server = server
        self.since = since
        self.detail = detail
    }
}

public struct AlertSummary: Sendable, Equatable {
    public var time: WallTime
    public var id: String
    public var lang: String
    /// What was (or will be) said.
    public var text: String
    /// `queued`, `speaking`, `spoken`, `acked`, `expired`...
    public var state: String

    public init(time: WallTime, id: String, lang: String, text: String, state: String) {
        self.time = time
        self.id = id
        self.lang = lang
        self.text = text
        self.state = state
    }
}

/// The three renderings of a snapshot: JSON for `crier status --json`, text for people, and
/// the one-line systemd STATUS.
public enum StatusFormat {
    /// One line of JSON, keys in a fixed order.
    public static func json(_ s: StatusSnapshot) -> String {
        var o = JSONObject()
        o.add("version", .string(s.version))
        o.add("device", .string(s.deviceID))
        o.add("time", .string(s.time.iso8601))
        o.add("uptime_s", .number(s.uptime, decimals: 0))
        o.add("healthy", .bool(s.healthy))
        o.add("components", .array(s.components.map { c in
            var x = JSONObject()
            x.add("name", .string(c.name))
            x.add("state", .string(c.state.rawValue))
            x.add("restarts", .int(c.restarts))
            x.add("last_failure", c.lastFailure.map(JSONValue.string) ?? .null)
            x.add("since_progress_s", c.sinceProgress.map { .number($0, decimals: 1) } ?? .null)
            x.add("detail", c.detail.map(JSONValue.string) ?? .null)
            return .object(x)
        }))
        var link = JSONObject()
        link.add("state", .string(s.link.state))
        link.add("server", s.link.server.map(JSONValue.string) ?? .null)
        link.add("since_s", s.link.since.map { .number($0, decimals: 0) } ?? .null)
        link.add("detail", s.link.detail.map(JSONValue.string) ?? .null)
        o.add("link", .object(link))
        if let e = s.lastError {
            var x = JSONObject()
            x.add("time", .string(e.time.iso8601))
            x.add("component", .string(e.component))
            x.add("message", .string(e.message))
            x.add("line", .string(e.formatted()))
            o.add("last_error", .object(x))
        } else {
            o.add("last_error", .null)
        }
        o.add("volume", .int(s.volume))
        o.add("volume_max", .int(s.volumeMax))
        o.add("muted", .bool(s.muted))
        o.add("queue_length", .int(s.queueLength))
        o.add("last_alerts", .array(s.lastAlerts.map { a in
            var x = JSONObject()
            x.add("time", .string(a.time.iso8601))
            x.add("id", .string(a.id))
            x.add("lang", .string(a.lang))
            x.add("text", .string(a.text))
            x.add("state", .string(a.state))
            return .object(x)
        }))
        return JSONValue.object(o).encoded
    }

    /// What `crier status` prints.
    public static func human(_ s: StatusSnapshot) -> String {
        var out = "crier \(s.version) on \(s.deviceID), up \(duration(s.uptime)), \(s.healthy ? "healthy" : "NOT healthy")\n"
        var link = "link: \(s.link.state)"
        if let server = s.link.server { link += " \(server)" }
        if let since = s.link.since { link += " for \(duration(since))" }
        if let d = s.link.detail { link += " (\(d))" }
        out += link + "\n"
        out += "volume: \(s.volume)/\(s.volumeMax)\(s.muted ? " (muted)" : "")\n"
        out += "queue: \(s.queueLength) waiting\n"
        out += "components:\n"
        let width = s.components.map(\.name.count).max() ?? 0
        for c in s.components {
            var line = "  " + c.name.padded(to: width) + "  " + c.state.rawValue.padded(to: 10)
            line += "  restarts \(c.restarts)"
            if let d = c.detail { line += "  \(d)" }
            if let f = c.lastFailure { line += "  last failure: \(f)" }
            out += line + "\n"
        }
        out += "last error: " + (s.lastError.map { "\($0.time.iso8601) \($0.component): \($0.message)" } ?? "none") + "\n"
        if s.lastAlerts.isEmpty {
            out += "last alerts: none\n"
        } else {
            out += "last alerts:\n"
            for a in s.lastAlerts {
                out += "  \(a.time.iso8601)  \(a.state.padded(to: 8))  \(a.id)  \(a.lang)  \(LogRecord.sanitize(a.text))\n"
            }
        }
        return out
    }

    /// systemd's STATUS line: `link up; volume 6/10; 0 queued`, plus what is down.
    public static func systemdLine(_ s: StatusSnapshot) -> String {
        var parts = ["link \(s.link.state)", "volume \(s.volume)/\(s.volumeMax)\(s.muted ? " muted" : "")",
                     "\(s.queueLength) queued"]
        let down = s.components.filter { $0.state != .running }.map(\.name)
        if !down.isEmpty { parts.append("down: " + down.joined(separator: ",")) }
        return parts.joined(separator: "; ")
    }

    /// `3d 4h`, `2h 3m`, `5m 12s`, `42s`.
    public static func duration(_ seconds: Double) -> String {
        let t = max(0, Int(seconds))
        let d = t / 86400, h = t % 86400 / 3600, m = t % 3600 / 60, sec = t % 60
        if d > 0 { return "\(d)d \(h)h" }
        if h > 0 { return "\(h)h \(m)m" }
        if m > 0 { return "\(m)m \(sec)s" }
        return "\(sec)s"
    }
}

extension String {
    fileprivate func padded(to width: Int) -> String {
        count >= width ? self : self + String(repeating: " ", count: width - count)
    }
}

/// A minimal JSON writer (CrierCore has no Foundation).
enum JSONValue {
    case string(String)
    case int(Int)
    /// Rounded to `decimals` places.
    case number(Double, decimals: Int)
    case bool(Bool)
    case null
    case array([JSONValue])
    case object(JSONObject)

    var encoded: String {
        switch self {
        case .string(let s): return JSONValue.quote(s)
        case .int(let i): return String(i)
        case .number(let d, let decimals):
            guard d.isFinite else { return "null" }
            if decimals == 0 { return String(Int(d.rounded())) }
            var scale = 1
            for _ in 0..<decimals { scale *= 10 }
            let v = Int((d * Double(scale)).rounded())
            let sign = v < 0 ? "-" : ""
            let a = abs(v)
            let frac = String(a % scale)
            return "\(sign)\(a / scale).\(String(repeating: "0", count: decimals - frac.count))\(frac)"
        case .bool(let b): return b ? "true" : "false"
        case .null: return "null"
        case .array(let a): return "[" + a.map(\.encoded).joined(separator: ",") + "]"
        case .object(let o): return "{" + o.members.map { JSONValue.quote($0.0) + ":" + $0.1.encoded }.joined(separator: ",") + "}"
        }
    }

    static func quote(_ s: String) -> String {
        var out = "\""
        for u in s.unicodeScalars {
            switch u {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            default:
                if u.value < 0x20 || u.value == 0x7f || u.value == 0x2028 || u.value == 0x2029 {
                    let hex = String(u.value, radix: 16)
                    out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
                } else {
                    out.unicodeScalars.append(u)
                }
            }
        }
        return out + "\""
    }
}

struct JSONObject {
    var members: [(String, JSONValue)] = []
    mutating func add(_ key: String, _ value: JSONValue) { members.append((key, value)) }
}
