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
    /// nil: Wi-Fi not configured.
    public var wifi: WifiStatus?
    /// Background music; nil when `music.source = off`.
    public var music: MusicStatus?
    /// Slots and updates; nil on a box not booted through the A/B boot script with no update
    /// records (a development machine).
    public var update: UpdateStatus?
    /// The audio thread's scheduling (docs/audio.md); nil before the thread has started.
    public var audioThread: ThreadPolicy?
    /// The speech thread's scheduling while it waits and until each first chunk; nil: not asked.
    public var speechThread: ThreadPolicy?
    /// The daemon's event thread (orders, buttons, timers; `speech.start_priority`).
    public var eventThread: ThreadPolicy?
    /// Power and heat (docs/operations.md); nil before the first reading.
    public var power: PowerStatus?
    /// How the previous run ended; nil when unknown (no data partition).
    public var lastStart: LastStart?

    public init(version: String, deviceID: String, time: WallTime, uptime: Double, components: [ComponentStatus],
                link: LinkStatus, lastError: LogRecord? = nil, volume: Int, volumeMax: Int, muted: Bool,
                queueLength: Int, lastAlerts: [AlertSummary] = [], wifi: WifiStatus? = nil) {
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
        self.wifi = wifi
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

/// The Wi-Fi part of `crier status`.
public struct WifiStatus: Sendable, Equatable {
    /// `WifiMonitor.State`'s words: online, connecting, searching, not_found, wrong_password,
    /// no_address, no_supplicant, starting.
    public var state: String
    public var ssid: String?
    /// `primary` or `backup`.
    public var network: String?
    public var signalDbm: Int?
    public var address: String?
    public var frequency: Int?
    /// Seconds in this state.
    public var since: Double?

    public init(state: String, ssid: String? = nil, network: String? = nil, signalDbm: Int? = nil,
                address: String? = nil, frequency: Int? = nil, since: Double? = nil) {
        self.state = state
        self.ssid = ssid
        self.network = network
        self.signalDbm = signalDbm
        self.address = address
        self.frequency = frequency
        self.since = since
    }
}

/// What the music is doing (docs/music.md).
public struct MusicStatus: Sendable, Equatable {
    /// `files`, `stream` or `fifo`.
    public var kind: String
    /// `playing`, `connecting`, `reconnecting`, `waiting for the player`, `no files`, …
    public var state: String
    public var title: String?
    /// File, URL or `fifo:PATH`.
    public var location: String?
    /// music.level_db, and whether mute (or the level) silences it now.
    public var levelDb: Double
    public var silenced: Bool
    public var ducked: Bool

    public init(kind: String, state: String, title: String? = nil, location: String? = nil, levelDb: Double, silenced: Bool, ducked: Bool) {
        self.kind = kind
        self.state = state
        self.title = title
        self.location = location
        self.levelDb = levelDb
        self.silenced = silenced
        self.ducked = ducked
    }

    /// `playing "Song" (stream http://…), level -12 dB, ducked`.
    public var line: String {
        var out = state
        if let t = title { out += " \"" + LogRecord.sanitize(t) + "\"" }
        if let l = location { out += " (\(kind) \(LogRecord.escape(l)))" } else { out += " (\(kind))" }
        out += ", level \(Format.fixed(levelDb, 0)) dB"
        if silenced { out += ", muted" }
        out += ducked ? ", ducked" : ", not ducked"
        return out
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
    /// One line of JSON, keys in a fixed order (written with the protocol's `JSON`).
    public static func json(_ s: StatusSnapshot) -> String {
        func str(_ v: String?) -> JSONValue { v.map(JSONValue.string) ?? .null }
        func int(_ v: Int) -> JSONValue { .number(JSONNumber(v)) }
        func num(_ v: Double?, _ decimals: Int) -> JSONValue {
            v.map { d in d.isFinite ? .number(JSONNumber(literal: fixed(d, decimals))) : .null } ?? .null
        }
        let components: [JSONValue] = s.components.map { c in
            .object(JSONObject([
                ("name", .string(c.name)), ("state", .string(c.state.rawValue)), ("restarts", int(c.restarts)),
                ("last_failure", str(c.lastFailure)), ("since_progress_s", num(c.sinceProgress, 1)),
                ("detail", str(c.detail)),
            ]))
        }
        let link = JSONObject([
            ("state", .string(s.link.state)), ("server", str(s.link.server)), ("since_s", num(s.link.since, 0)),
            ("detail", str(s.link.detail)),
        ])
        let lastError: JSONValue = s.lastError.map { e in
            .object(JSONObject([
                ("time", .string(e.time.iso8601)), ("component", .string(e.component)),
                ("message", .string(e.escapedMessage)), ("line", .string(e.formatted())),
            ]))
        } ?? .null
        let alerts: [JSONValue] = s.lastAlerts.map { a in
            .object(JSONObject([
                ("time", .string(a.time.iso8601)), ("id", .string(a.id)), ("lang", .string(a.lang)),
                ("text", .string(a.text)), ("state", .string(a.state)),
            ]))
        }
        var fields: [(String, JSONValue)] = [
            ("version", .string(s.version)), ("device", .string(s.deviceID)), ("time", .string(s.time.iso8601)),
            ("uptime_s", num(s.uptime, 0)), ("healthy", .bool(s.healthy)), ("components", .array(components)),
            ("link", .object(link)), ("last_error", lastError), ("volume", int(s.volume)),
            ("volume_max", int(s.volumeMax)), ("muted", .bool(s.muted)), ("queue_length", int(s.queueLength)),
            ("last_alerts", .array(alerts)),
            ("wifi", s.wifi.map { w in
                .object(JSONObject([
                    ("state", .string(w.state)), ("ssid", str(w.ssid)), ("network", str(w.network)),
                    ("signal_dbm", w.signalDbm.map(int) ?? .null), ("ip_address", str(w.address)),
                    ("frequency_mhz", w.frequency.map(int) ?? .null), ("since_s", num(w.since, 0)),
                ]))
            } ?? .null),
        ]
        // Only with music configured (`music.source` not off): the line stays as it was without.
        if let m = s.music {
            fields.append(("music", .object(JSONObject([
                ("kind", .string(m.kind)), ("state", .string(m.state)), ("title", str(m.title)),
                ("location", str(m.location)), ("level_db", num(m.levelDb, 1)), ("muted", .bool(m.silenced)),
                ("ducked", .bool(m.ducked)),
            ]))))
        }
        if let p = s.audioThread {
            fields.append(("audio_thread", .object(JSONObject([
                ("policy", .string(p.kind.rawValue)), ("priority", int(p.priority)), ("detail", str(p.detail)),
            ]))))
        }
        if let p = s.speechThread {
            fields.append(("speech_thread", .object(JSONObject([
                ("policy", .string(p.kind.rawValue)), ("priority", int(p.priority)), ("detail", str(p.detail)),
            ]))))
        }
        if let p = s.eventThread {
            fields.append(("event_thread", .object(JSONObject([
                ("policy", .string(p.kind.rawValue)), ("priority", int(p.priority)), ("detail", str(p.detail)),
            ]))))
        }
        if let p = s.power {
            fields.append(("power", .object(JSONObject([
                ("source", .string(p.source)), ("summary", .string(p.summary)),
                ("now", .array(p.now.map(JSONValue.string))), ("seen", .array(p.seen.map(JSONValue.string))),
                ("temp_c", num(p.celsius, 1)), ("temp_max_c", num(p.maxCelsius, 1)),
            ]))))
        }
        if let l = s.lastStart { fields.append(("last_start", .string(l.rawValue))) }
        // A separate object after the rest: crier-mark-good reads `"link": {"state": …` as it is.
        if let u = s.update { fields.append(("update", u.json())) }
        let o = JSONObject(fields)
        return String(decoding: JSON.write(.object(o)), as: UTF8.self)
    }

    /// `d` rounded to `decimals` places, as a JSON number literal.
    static func fixed(_ d: Double, _ decimals: Int) -> String { Format.fixed(d, decimals) }

    /// What `crier status` prints.
    public static func human(_ s: StatusSnapshot) -> String {
        var out = "crier \(s.version) on \(LogRecord.escape(s.deviceID)), up \(duration(s.uptime)), \(s.healthy ? "healthy" : "NOT healthy")\n"
        var link = "link: \(s.link.state)"
        if let server = s.link.server { link += " \(server)" }
        if let since = s.link.since { link += " for \(duration(since))" }
        if let d = s.link.detail { link += " (\(LogRecord.escape(d)))" }
        out += link + "\n"
        if let w = s.wifi {
            var line = "wifi: \(w.state)"
            if let ssid = w.ssid { line += " \"\(LogRecord.escape(ssid))\"" }
            if let n = w.network { line += " (\(n))" }
            if let d = w.signalDbm { line += ", signal \(d) dBm" }
            if let f = w.frequency { line += ", \(f) MHz" }
            line += ", IP " + (w.address ?? "none")
            if let since = w.since { line += " for \(duration(since))" }
            out += line + "\n"
        }
        out += "volume: \(s.volume)/\(s.volumeMax)\(s.muted ? " (muted)" : "")\n"
        out += "queue: \(s.queueLength) waiting\n"
        if let m = s.music { out += "music: \(m.line)\n" }
        if let p = s.audioThread { out += "audio thread: \(p.line)\n" }
        if let p = s.speechThread { out += "speech thread: \(p.line)\(p.kind == .fifo ? " (waiting and until each first chunk)" : "")\n" }
        if let p = s.eventThread { out += "event thread: \(p.line)\n" }
        if let p = s.power { out += "power: \(p.line)\n" }
        if let l = s.lastStart { out += "last start: \(l.words)\n" }
        if let u = s.update { out += u.human() }
        out += "components:\n"
        let width = s.components.map(\.name.count).max() ?? 0
        for c in s.components {
            var line = "  " + c.name.padded(to: width) + "  " + c.state.rawValue.padded(to: 10)
            line += "  restarts \(c.restarts)"
            if let d = c.detail { line += "  \(LogRecord.escape(d))" }
            if let f = c.lastFailure { line += "  last failure: \(LogRecord.escape(f))" }
            out += line + "\n"
        }
        out += "last error: " + (s.lastError.map { "\($0.time.iso8601) \(LogRecord.escape($0.component)): \($0.escapedMessage)" } ?? "none") + "\n"
        if s.lastAlerts.isEmpty {
            out += "last alerts: none\n"
        } else {
            out += "last alerts:\n"
            for a in s.lastAlerts {
                out += "  \(a.time.iso8601)  \(a.state.padded(to: 8))  \(LogRecord.escape(a.id))  \(a.lang)  \(LogRecord.sanitize(a.text))\n"
            }
        }
        return out
    }

    /// systemd's STATUS line: `link up; volume 6/10; 0 queued`, plus what is down.
    public static func systemdLine(_ s: StatusSnapshot) -> String {
        var parts = (s.wifi.map { ["wifi \($0.state)"] } ?? []) + ["link \(s.link.state)", "volume \(s.volume)/\(s.volumeMax)\(s.muted ? " muted" : "")",
                     "\(s.queueLength) queued"]
        if let p = s.power, !p.now.isEmpty { parts.append("power " + p.summary) }
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
