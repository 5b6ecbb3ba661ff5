import Synchronization

/// `web.listen`: where the local page is served (docs/setup.md). nil: off.
public struct WebConfig: Sendable, Equatable {
    public init() {}
    public var listen: Listen?

    public struct Listen: Sendable, Equatable, CustomStringConvertible {
        public var host: String
        public var port: Int
        public init(host: String, port: Int) {
            self.host = host
            self.port = port
        }
        public var description: String { host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)" }

        /// `HOST:PORT` (an IPv4 address, `[IPv6]`) or a bare `PORT` (every address).
        public init(parsing s: String) throws(ConfigValueError) {
            var host = "0.0.0.0", portText = Substring(s)
            if s.hasPrefix("["), let close = s.firstIndex(of: "]") {
                host = String(s[s.index(after: s.startIndex)..<close])
                let rest = s[s.index(after: close)...]
                guard rest.hasPrefix(":") else { throw ConfigValueError("expected [IPv6]:PORT, got \(ConfigValue.shown(s))") }
                portText = rest.dropFirst()
                guard !host.isEmpty, host.allSatisfy({ $0.isHexDigit || $0 == ":" || $0 == "." }) else {
                    throw ConfigValueError("expected an IPv6 address inside [ ], got \(ConfigValue.shown(s))")
                }
            } else if let colon = s.lastIndex(of: ":") {
                host = String(s[..<colon])
                portText = s[s.index(after: colon)...]
                let parts = host.split(separator: ".", omittingEmptySubsequences: false)
                guard parts.count == 4, parts.allSatisfy({ Int($0).map { (0...255).contains($0) } ?? false }) else {
                    throw ConfigValueError("expected an IPv4 address before the port (0.0.0.0:80 for every address, 127.0.0.1:8080 for this box only), got \(ConfigValue.shown(s))")
                }
            }
            guard let p = Int(portText), (1...65535).contains(p) else {
                throw ConfigValueError("expected off, PORT or ADDRESS:PORT (0.0.0.0:80), got \(ConfigValue.shown(s))")
            }
            self.init(host: host, port: p)
        }
    }

    static let keys: [ConfigKey] = [
        ConfigKey("web.listen", section: "local page", default: "off",
                  doc: "Address and port of the local page for phones (docs/setup.md): off, PORT or ADDRESS:PORT, e.g. 0.0.0.0:80 (the image's crier.conf sets it; port 80 comes from crier.socket). Changes need a paired phone: the box says the pairing code aloud.",
                  apply: { c, v throws(ConfigValueError) in
                      c.web.listen = ["off", "no", "false", "0", ""].contains(v.lowercased()) ? nil : try Listen(parsing: v)
                  }, render: { $0.web.listen?.description ?? "off" }),
    ]
}

/// What the page can ask the box to do; the runtime performs it through the same entry points
/// as the buttons and the control socket.
public enum WebAction: String, Sendable, CaseIterable {
    case volumeUp = "volume_up", volumeDown = "volume_down", mute, replay, test
}

/// The runtime's side of the page.
public struct WebHooks: Sendable {
    public var status: @Sendable () async -> StatusSnapshot
    public var logTail: @Sendable () -> [String]
    /// Say `text` now (through the daemon's `request`); `secret`: never log the text.
    public var say: @Sendable (_ lang: Lang, _ text: String, _ secret: Bool) async -> Void
    public var perform: @Sendable (WebAction) async -> Void
    /// The config file's text as it is on disk now.
    public var readConfig: @Sendable () -> Result<String, ConfigEditor.Refusal>
    /// Writes the checked text atomically and applies it as SIGHUP would; a message for the page.
    public var writeConfig: @Sendable (String) async -> Result<String, ConfigEditor.Refusal>
    /// The setup hotspot (DaemonSetup.swift): its state (nil: `setup.hotspot = off`; each call
    /// counts as use), a network to try (a refusal, or nil: trying), a new scan, closing it (the
    /// speaker policy's `SetupMode.close(.page)`: the idle close's path, by=page).
    public var setupState: @Sendable () async -> SetupPortal.State?
    public var setupSubmit: @Sendable (_ ssid: String, _ psk: String, _ hidden: Bool, _ country: String?) async -> SetupNetwork.Problem?
    public var setupRescan: @Sendable () async -> Void
    public var setupClose: @Sendable () async -> Void

    public init(status: @escaping @Sendable () async -> StatusSnapshot, logTail: @escaping @Sendable () -> [String],
                say: @escaping @Sendable (Lang, String, Bool) async -> Void, perform: @escaping @Sendable (WebAction) async -> Void,
                readConfig: @escaping @Sendable () -> Result<String, ConfigEditor.Refusal>,
                writeConfig: @escaping @Sendable (String) async -> Result<String, ConfigEditor.Refusal>,
                setupState: @escaping @Sendable () async -> SetupPortal.State? = { nil },
                setupSubmit: @escaping @Sendable (String, String, Bool, String?) async -> SetupNetwork.Problem? = { _, _, _, _ in nil },
                setupRescan: @escaping @Sendable () async -> Void = {},
                setupClose: @escaping @Sendable () async -> Void = {}) {
        self.setupState = setupState
        self.setupClose = setupClose
        self.setupSubmit = setupSubmit
        self.setupRescan = setupRescan
        self.status = status
        self.logTail = logTail
        self.say = say
        self.perform = perform
        self.readConfig = readConfig
        self.writeConfig = writeConfig
    }
}

/// The local page's rules: routes, pairing, sessions, CSRF, what each change does. Pure but for
/// the hooks; the clock and the random bytes are injected.
public final class WebApp: Sendable {
    struct State: Sendable {
        var pairing: Pairing
        var sessions: WebSessions
    }

    /// Keys the settings form may change (secrets other than the Wi-Fi password are not on the
    /// page; that one is write-only).
    public static let settingKeys: [String] = {
        var k = ["speech.lang"]
        for l in Lang.allCases { k += ["speech.\(l.rawValue).voice", "speech.\(l.rawValue).rate"] }
        for l in Lang.allCases { for t in OrderKindSpec.templates { k.append("template.\(l.rawValue).\(t.name)") } }
        return k + ["server", "wifi.ssid", "wifi.psk", "wifi.country"]
    }()
    static let writeOnly: Set<String> = ["wifi.psk"]

    let config: CrierConfig
    let hooks: WebHooks
    let log: Logger
    let clock: @Sendable () -> Double
    let random: @Sendable () -> UInt8
    let state: Mutex<State>
    /// Called with the sessions after each change, to keep them across a reload.
    let persist: @Sendable (String) -> Void

    public init(config: CrierConfig, hooks: WebHooks, log: Logger, clock: @escaping @Sendable () -> Double,
                random: @escaping @Sendable () -> UInt8 = WebApp.systemRandom,
                pairing: Pairing.Limits = Pairing.Limits(), sessions: WebSessions = WebSessions(),
                persist: @escaping @Sendable (String) -> Void = { _ in }) {
        self.config = config
        self.hooks = hooks
        self.log = log
        self.clock = clock
        self.random = random
        self.persist = persist
        state = Mutex(State(pairing: Pairing(limits: pairing), sessions: sessions))
    }

    @Sendable public static func systemRandom() -> UInt8 {
        var g = SystemRandomNumberGenerator()
        return UInt8.random(in: 0...255, using: &g)
    }

    /// Headers on every answer: nothing cached, nothing framed or sniffed, scripts only from here.
    static let common: [(String, String)] = [
        ("Cache-Control", "no-store"),
        ("X-Content-Type-Options", "nosniff"),
        ("X-Frame-Options", "DENY"),
        ("Referrer-Policy", "no-referrer"),
        ("Content-Security-Policy", "default-src 'self'; img-src 'self' data:; frame-ancestors 'none'; form-action 'self'; base-uri 'none'"),
    ]

    static func respond(_ status: Int, _ type: String, _ body: [UInt8], _ extra: [(String, String)] = []) -> WebResponse {
        WebResponse(status: status, headers: [("Content-Type", type)] + common + extra, body: body)
    }

    static func json(_ status: Int, _ o: JSONObject, _ extra: [(String, String)] = []) -> WebResponse {
        respond(status, "application/json; charset=utf-8", JSON.write(.object(o)), extra)
    }

    static func error(_ status: Int, _ code: String, _ message: String, _ extra: [(String, String)] = []) -> WebResponse {
        json(status, JSONObject([("ok", .bool(false)), ("error", .string(code)), ("message", .string(message))]), extra)
    }

    public func handle(_ r: WebRequest) async -> WebResponse {
        let now = clock()
        // The hotspot's state once per request (a request from a phone is use: the idle timer
        // restarts), for the captive-portal redirect and the portal view.
        let setup = await hooks.setupState()
        let setupOpen = setup.map { $0.phase != .closed } ?? false
        switch HTTPRules.hostVerdict(method: r.method, host: r.header("host"), portal: setupOpen ? Self.portalURL : nil) {
        case .serve: break
        case .refuse: return Self.error(421, "host", "open the page by the box's address or DEVICE-ID.local")
        case .redirect(let to):
            return Self.respond(302, "text/html; charset=utf-8", Array("<a href=\"\(to)\">\(to)</a>\n".utf8), [("Location", to)])
        }
        let lang = HTTPRules.language(query: r.query, acceptLanguage: r.header("accept-language"), fallback: config.speech.lang)
        let token = HTTPRules.cookie(WebSessions.cookieName, in: r.header("cookie"))
        switch (r.method, r.path) {
        case ("GET", "/"), ("HEAD", "/"):
            return Self.respond(200, "text/html; charset=utf-8", Array(WebPage.html(lang: lang, device: config.deviceID).utf8),
                                [("Content-Language", lang.rawValue)])
        case ("GET", "/app.js"), ("HEAD", "/app.js"):
            return Self.respond(200, "text/javascript; charset=utf-8", Array(WebPage.script.utf8))
        case ("GET", "/app.css"), ("HEAD", "/app.css"):
            return Self.respond(200, "text/css; charset=utf-8", Array(WebPage.style.utf8))
        case ("GET", "/api/status"):
            return await status(session: token, now: now, setup: setup)
        case ("POST", _):
            break
        case (_, "/"), (_, "/app.js"), (_, "/app.css"), (_, "/api/status"):
            return Self.error(405, "method", "method not allowed", [("Allow", "GET, HEAD")])
        default:
            return Self.error(404, "not_found", "no such page")
        }
        // A change: from this page only (a browser always sends Origin on a POST).
        if let origin = r.header("origin"), !origin.hasSuffix("://" + (r.header("host") ?? "")) {
            return Self.error(403, "origin", "changes are accepted from the box's own page only")
        }
        guard let form = HTTPRules.form(r.body) else { return Self.error(400, "form", "the form is not valid UTF-8 form data") }
        func field(_ name: String) -> String? { form.last { $0.0 == name }?.1 }
        switch r.path {
        case "/api/pair/request":
            return await pairRequest(lang: lang, now: now)
        case "/api/pair":
            return pair(code: field("code") ?? "", now: now)
        default:
            break
        }
        guard ["/api/action", "/api/settings", "/api/logout", "/api/setup", "/api/setup/rescan", "/api/setup/close"].contains(r.path) else { return Self.error(404, "not_found", "no such page") }
        let check = state.withLock { $0.sessions.checkCSRF(session: token, csrf: field("csrf"), now: now, random: random) }
        let next: String
        switch check {
        case .noSession: return Self.error(401, "not_paired", "pair this phone first: the box says a code")
        case .missing: return Self.error(403, "csrf", "the form had no token; reload the page")
        case .wrong:
            log.warning("local page: a change with a wrong or used form token refused", ["client": r.client])
            return Self.error(403, "csrf", "the form's token is not valid (used already, or from another page); reload the page")
        case .ok(let n): next = n
        }
        saveSessions()
        let nextField: (String, JSONValue) = ("csrf", .string(next))
        switch r.path {
        case "/api/logout":
            state.withLock { $0.sessions.end(token) }
            saveSessions()
            return Self.json(200, JSONObject([("ok", .bool(true))]), [("Set-Cookie", WebSessions.clearCookie)])
        case "/api/setup", "/api/setup/rescan", "/api/setup/close":
            guard let st = setup, st.phase == .open else {
                let phase = setup?.phase.rawValue ?? "off"
                return Self.json(409, JSONObject([("ok", .bool(false)), ("error", .string("setup_" + phase)),
                                                  ("message", .string(phase == "off" ? "the setup hotspot is off (setup.hotspot in crier.conf)" : "the setup hotspot is \(phase), not open; wait a moment")), nextField]))
            }
            if r.path == "/api/setup/close" {
                await hooks.setupClose()
                log.info("local page: setup closed", ["client": r.client])
                return Self.json(200, JSONObject([("ok", .bool(true)), nextField]))
            }
            if r.path == "/api/setup/rescan" {
                await hooks.setupRescan()
                log.info("local page: setup rescan", ["client": r.client])
                return Self.json(200, JSONObject([("ok", .bool(true)), nextField]))
            }
            let country = field("country").map { $0.trimmed.uppercased() }.flatMap { $0.isEmpty ? nil : $0 }
            if let p = await hooks.setupSubmit(field("ssid") ?? "", field("psk") ?? "", ["on", "1", "true"].contains(field("hidden") ?? ""), country) {
                // The refusal's message never holds the password (SetupNetwork.validate).
                return Self.json(422, JSONObject([("ok", .bool(false)), ("error", .string(p.code.rawValue)), ("field", .string(p.field)),
                                                  ("message", .string(p.message)), nextField]))
            }
            log.info("local page: setup network submitted", ["client": r.client])
            return Self.json(200, JSONObject([("ok", .bool(true)), ("trying", .bool(true)), nextField]))
        case "/api/action":
            guard let a = field("do").flatMap(WebAction.init(rawValue:)) else {
                return Self.error(400, "action", "unknown action", [])
            }
            if a == .test {
                await hooks.say(lang, Self.testText(lang), false)
            } else {
                await hooks.perform(a)
            }
            log.info("local page: \(a.rawValue)", ["client": r.client])
            return Self.json(200, JSONObject([("ok", .bool(true)), nextField]))
        default:
            let changes = form.filter { $0.0 != "csrf" }
            if let bad = changes.first(where: { !Self.settingKeys.contains($0.0) }) {
                return Self.json(400, JSONObject([("ok", .bool(false)), ("error", .string("key")), ("message", .string("not a setting the page may change: \(ConfigValue.short(bad.0))")), nextField]))
            }
            // Only what differs from the running values (the form sends every field), and the
            // Wi-Fi password field left empty keeps the one in the file.
            let schema = Dictionary(CrierConfig.schema.map { ($0.name, $0) }, uniquingKeysWith: { a, _ in a })
            let wanted = changes.filter { c in
                Self.writeOnly.contains(c.0) ? !c.1.isEmpty : schema[c.0].map { $0.value(in: config) != c.1 } ?? true
            }
            let result: Result<String, ConfigEditor.Refusal>
            switch hooks.readConfig() {
            case .failure(let e): result = .failure(e)
            case .success(let text):
                switch ConfigEditor.set(wanted.map { (key: $0.0, value: $0.1) }, in: text) {
                case .failure(let e): result = .failure(e)
                case .success(let new):
                    result = new == text ? .success("unchanged") : await hooks.writeConfig(new)
                }
            }
            switch result {
            case .success(let m):
                // Names only: values may be secrets (wifi.psk).
                log.info("local page: settings saved", ["keys": wanted.map(\.0).joined(separator: ","), "client": r.client])
                return Self.json(200, JSONObject([("ok", .bool(true)), ("message", .string(m)), nextField]))
            case .failure(let e):
                log.notice("local page: settings refused", ["key": e.key ?? "-", "client": r.client])
                let shown = e.key.map { Self.writeOnly.contains($0) ? "\($0): invalid (8-63 characters, or 64 hex digits)" : e.description } ?? e.description
                return Self.json(422, JSONObject([("ok", .bool(false)), ("error", .string("invalid")), ("message", .string(shown)), nextField]))
            }
        }
    }

    /// Where a captive-portal probe is sent while the hotspot is open: the box on its own AP.
    public static let portalURL = "http://\(HotspotConf.address)/"

    static func testText(_ lang: Lang) -> String {
        lang == .zh ? "测试播报，声音正常。" : "Test announcement. The speaker works."
    }

    func saveSessions() { persist(state.withLock { $0.sessions.serialized() }) }

    func pairRequest(lang: Lang, now: Double) async -> WebResponse {
        let r = state.withLock { $0.pairing.request(now: now, random: random) }
        switch r {
        case .lockedNow(let s):
            log.warning("local page: pairing locked after \(state.withLock { $0.pairing.limits.maxUnused }) codes said without a pairing", ["for_s": Int(s)])
            return Self.error(429, "locked", "too many codes asked for; pairing is locked for \(Int(s)) s", [("Retry-After", "\(Int(s))")])
        case .speak(let code):
            // The code is said, never logged, never in a response.
            log.notice("local page: pairing requested; saying a pairing code (valid \(Int(Pairing.Limits().codeLifetime)) s)")
            await hooks.say(lang, Pairing.spokenText(code: code, lang: lang), true)
            return Self.json(200, JSONObject([("ok", .bool(true)), ("valid_s", .number(JSONNumber(Int(state.withLock { $0.pairing.limits.codeLifetime }))))]))
        case .tooSoon(let s):
            return Self.error(429, "too_soon", "a code was said just now; enter it, or ask again in \(Int(s.rounded(.up))) s", [("Retry-After", "\(Int(s.rounded(.up)))")])
        case .locked(let s):
            return Self.error(429, "locked", "pairing is locked after wrong codes; try again in \(Int(s.rounded(.up))) s", [("Retry-After", "\(Int(s.rounded(.up)))")])
        }
    }

    func pair(code: String, now: Double) -> WebResponse {
        let r = state.withLock { $0.pairing.submit(code.trimmed, now: now) }
        switch r {
        case .paired:
            let (s, cookie) = state.withLock { st in
                let s = st.sessions.create(now: now, random: random)
                return (s, st.sessions.cookie(for: s, now: now))
            }
            saveSessions()
            log.notice("local page: a phone paired", ["sessions": state.withLock { $0.sessions.sessions.count }])
            return Self.json(200, JSONObject([("ok", .bool(true)), ("csrf", .string(s.csrf))]), [("Set-Cookie", cookie)])
        case .wrong(let left):
            log.notice("local page: wrong pairing code", ["tries_left": left])
            return Self.error(403, "wrong_code", "wrong code; \(left) tries left")
        case .lockedNow(let s):
            log.warning("local page: pairing locked after \(state.withLock { $0.pairing.limits.maxWrong }) wrong codes", ["for_s": Int(s)])
            return Self.error(429, "locked", "wrong code; pairing is locked for \(Int(s)) s", [("Retry-After", "\(Int(s))")])
        case .locked(let s):
            return Self.error(429, "locked", "pairing is locked after wrong codes; try again in \(Int(s.rounded(.up))) s", [("Retry-After", "\(Int(s.rounded(.up)))")])
        case .noCode:
            return Self.error(403, "no_code", "no valid code: ask the box for a new one")
        }
    }

    /// Unpaired: the device, version and whether it is healthy and linked. Paired: everything
    /// `crier status --json` says, the log tail and the settings (order text, customer names,
    /// the server and the Wi-Fi are for the shop only).
    /// While the setup hotspot is open, `setup` (SetupPortal.json) for everyone: the networks
    /// the box sees are no secret to a phone in radio range.
    func status(session token: String?, now: Double, setup: SetupPortal.State? = nil) async -> WebResponse {
        let session = state.withLock { $0.sessions.find(token, now: now) }
        let snap = await hooks.status()
        var o = JSONObject([("paired", .bool(session != nil)), ("device", .string(snap.deviceID)), ("version", .string(snap.version)),
                            ("healthy", .bool(snap.healthy)), ("link", .string(snap.link.state))])
        if let st = setup, st.phase != .closed,
           case .success(let v) = JSON.parse(Array(SetupPortal.json(st).utf8), limits: JSON.Limits(maxDepth: 8, maxBytes: 1 << 20)) {
            o["setup"] = v
        }
        if let locked = state.withLock({ $0.pairing.locked(now: now) }) { o["pairing_locked_s"] = .number(JSONNumber(Int(locked.rounded(.up)))) }
        guard let s = session else { return Self.json(200, o) }
        o["csrf"] = .string(s.csrf)
        if case .success(let v) = JSON.parse(Array(StatusFormat.json(snap).utf8), limits: JSON.Limits(maxDepth: 16, maxBytes: 1 << 20)) {
            o["status"] = v
        }
        o["log"] = .array(hooks.logTail().map(JSONValue.string))
        var settings = JSONObject()
        let schema = Dictionary(CrierConfig.schema.map { ($0.name, $0) }, uniquingKeysWith: { a, _ in a })
        for k in Self.settingKeys {
            guard let key = schema[k] else { continue }
            settings[k] = .string(Self.writeOnly.contains(k) ? "" : key.value(in: config))
        }
        o["settings"] = .object(settings)
        return Self.json(200, o)
    }
}

/// The last lines of the log, for the page (escaped, one record a line, like the journal).
public final class LogTailSink: LogSink {
    private let lines = Mutex<[String]>([])
    public let capacity: Int
    public init(capacity: Int = 40) { self.capacity = capacity }
    public func write(_ record: LogRecord) {
        let l = record.formatted()
        lines.withLock { a in
            a.append(l)
            if a.count > capacity { a.removeFirst(a.count - capacity) }
        }
    }
    public var tail: [String] { lines.withLock { $0 } }
}
