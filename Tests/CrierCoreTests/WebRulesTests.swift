@testable import CrierCore
import Synchronization
import Testing

/// The local page's rules (docs/setup.md, docs/security.md), with an injected clock and
/// random bytes: pairing, lockout, sessions, CSRF, the config editor and hostile requests.
@Suite struct WebRulesTests {
    /// Bytes from a seeded generator.
    final class Bytes: Sendable {
        let g: Mutex<SplitMix>
        init(_ seed: UInt64 = 1) { g = Mutex(SplitMix(state: seed)) }
        @Sendable func next() -> UInt8 { g.withLock { UInt8.random(in: 0...255, using: &$0) } }
    }

    // MARK: pairing

    @Test func aCodeIsFourDigitsValidTwoMinutesAndOnce() {
        var p = Pairing()
        let b = Bytes()
        guard case .speak(let code) = p.request(now: 0, random: b.next) else { Issue.record("no code"); return }
        #expect(code.count == 4 && code.allSatisfy(\.isNumber))
        #expect(p.submit(code, now: 119.9) == .paired)
        #expect(p.submit(code, now: 120) == .noCode)  // used
        guard case .speak(let c2) = p.request(now: 200, random: b.next) else { Issue.record("no code"); return }
        #expect(p.submit(c2, now: 320) == .noCode)     // expired at 200 + 120
    }

    @Test func fiveWrongCodesLockPairingAndTheLockoutDoubles() {
        var p = Pairing()
        let b = Bytes(7)
        guard case .speak(let code) = p.request(now: 0, random: b.next) else { Issue.record("no code"); return }
        let wrong = code == "0000" ? "1111" : "0000"
        for left in [4, 3, 2, 1] { #expect(p.submit(wrong, now: 1) == .wrong(left: left)) }
        #expect(p.submit(wrong, now: 1) == .lockedNow(seconds: 300))
        // Locked: the right code does not help, no new code is said.
        #expect(p.submit(code, now: 2) == .locked(retryAfter: 299))
        #expect(p.request(now: 2, random: b.next) == .locked(retryAfter: 299))
        // After the lockout: five more wrong codes lock for twice as long, up to an hour.
        var expected = 600.0
        var t = 301.0
        for _ in 0..<6 {
            guard case .speak(let c) = p.request(now: t, random: b.next) else { Issue.record("no code at \(t)"); return }
            let w = c == "0000" ? "1111" : "0000"
            for _ in 0..<4 { _ = p.submit(w, now: t) }
            #expect(p.submit(w, now: t) == .lockedNow(seconds: min(expected, 3600)))
            t += min(expected, 3600) + 1
            expected *= 2
        }
        // A correct pairing resets the doubling.
        guard case .speak(let c) = p.request(now: t, random: b.next) else { Issue.record("no code"); return }
        #expect(p.submit(c, now: t) == .paired)
        guard case .speak(let c3) = p.request(now: t + 20, random: b.next) else { Issue.record("no code"); return }
        let w = c3 == "0000" ? "1111" : "0000"
        for _ in 0..<4 { _ = p.submit(w, now: t + 20) }
        #expect(p.submit(w, now: t + 20) == .lockedNow(seconds: 300))
    }

    @Test func askingForANewCodeDoesNotBuyMoreGuessesNorComesFasterThanTenSeconds() {
        var p = Pairing()
        let b = Bytes(3)
        guard case .speak(let c) = p.request(now: 0, random: b.next) else { Issue.record("no code"); return }
        #expect(p.request(now: 5, random: b.next) == .tooSoon(retryAfter: 5))
        let w = c == "0000" ? "1111" : "0000"
        for _ in 0..<3 { _ = p.submit(w, now: 6) }
        guard case .speak(let c2) = p.request(now: 11, random: b.next) else { Issue.record("no code"); return }
        let w2 = c2 == "0000" ? "1111" : "0000"
        #expect(p.submit(w2, now: 12) == .wrong(left: 1))
        #expect(p.submit(w2, now: 12) == .lockedNow(seconds: 300))
    }

    @Test func codesAreUniformDigits() {
        let b = Bytes(11)
        var counts = [Int](repeating: 0, count: 10)
        for _ in 0..<5000 { for ch in Pairing.makeCode(b.next) { counts[Int(String(ch))!] += 1 } }
        // 20 000 digits: each near 2000 (rejection sampling, no modulo bias).
        #expect(counts.allSatisfy { abs($0 - 2000) < 200 }, "\(counts)")
    }

    @Test func theSpokenTextSpellsTheDigitsInBothLanguages() {
        #expect(Pairing.spokenText(code: "4721", lang: .zh).hasPrefix("配对码 4 7 2 1"))
        #expect(Pairing.spokenText(code: "4721", lang: .en).hasPrefix("Pairing code 4 7 2 1"))
        #expect(SpokenText.spell("配对码 4 7 2 1", lang: .zh).contains("四 七 二 一"))
    }

    // MARK: sessions and CSRF

    @Test func theCookieIsHttpOnlySameSiteStrictAndExpires() {
        var s = WebSessions()
        let b = Bytes()
        let session = s.create(now: 100, random: b.next)
        let c = s.cookie(for: session, now: 100)
        #expect(c.hasPrefix("crier_session=\(session.token);"))
        #expect(c.contains("; HttpOnly") && c.contains("; SameSite=Strict") && c.contains("; Path=/") && c.contains("; Max-Age=28800"))
        #expect(session.token.count == 32 && session.csrf.count == 32 && session.token != session.csrf)
        #expect(s.find(session.token, now: 100 + 8 * 3600 - 1) != nil)
        #expect(s.find(session.token, now: 100 + 8 * 3600) == nil)
    }

    @Test func aCSRFTokenWorksOnceForItsOwnSessionOnly() {
        var s = WebSessions()
        let b = Bytes()
        let a = s.create(now: 0, random: b.next)
        let other = s.create(now: 0, random: b.next)
        #expect(s.checkCSRF(session: a.token, csrf: other.csrf, now: 1, random: b.next) == .wrong)
        #expect(s.checkCSRF(session: a.token, csrf: nil, now: 1, random: b.next) == .missing)
        #expect(s.checkCSRF(session: "f" + a.token.dropFirst(), csrf: a.csrf, now: 1, random: b.next) == .noSession)
        guard case .ok(let next) = s.checkCSRF(session: a.token, csrf: a.csrf, now: 1, random: b.next) else { Issue.record("refused"); return }
        #expect(s.checkCSRF(session: a.token, csrf: a.csrf, now: 2, random: b.next) == .wrong)  // replayed
        #expect(s.checkCSRF(session: a.token, csrf: next, now: 2, random: b.next) != .wrong)
    }

    @Test func atMostEightSessionsAndTheyReadBackAfterAReloadButNotForged() {
        var s = WebSessions()
        let b = Bytes()
        let first = s.create(now: 0, random: b.next)
        for _ in 0..<8 { _ = s.create(now: 1, random: b.next) }
        #expect(s.sessions.count == 8)
        #expect(s.find(first.token, now: 2) == nil)
        let back = WebSessions.parse(s.serialized(), now: 2)
        #expect(back.sessions == s.sessions)
        // Hand-written lines: wrong lengths, not hex, a lifetime past 8 h, expired: all dropped.
        let junk = "zz \(first.csrf) 100\n\(first.token) \(first.csrf) 1e12\n\(first.token) \(first.csrf) 1\n\(first.token) x 100"
        #expect(WebSessions.parse(junk, now: 2).sessions.isEmpty)
    }

    // MARK: config editor

    static let owned = """
        \u{FEFF}# The shop's own notes: Wi-Fi is the back office router
        server = tcp://10.0.0.5:7700   # the till
        speech.lang = zh
        my.own.key = kept as it is
        ; a semicolon comment
        speech.lang = en  # the last one decides

        """

    @Test func theEditorKeepsCommentsUnknownKeysAndChangesTheDecidingLine() throws {
        let out = try ConfigEditor.set([("speech.lang", "zh"), ("server", "tls://orders.lan:7701"), ("speech.en.rate", "190")], in: Self.owned).get()
        #expect(out == """
            \u{FEFF}# The shop's own notes: Wi-Fi is the back office router
            server = tls://orders.lan:7701  # the till
            speech.lang = zh
            my.own.key = kept as it is
            ; a semicolon comment
            speech.lang = zh  # the last one decides
            speech.en.rate = 190

            """)
        let c = ConfigParser().parse(out, file: "t").config
        #expect(c.speech.lang == .zh && c.speech.voices[.en]!.rate == 190 && c.link.server?.description == "tls://orders.lan:7701")
    }

    @Test func theEditorKeepsCRLFAndAFileWithoutAFinalNewline() throws {
        let out = try ConfigEditor.set([("speech.lang", "en"), ("wifi.country", "GB")], in: "# c\r\nspeech.lang = zh\r\nx.y = 1").get()
        #expect(out == "# c\r\nspeech.lang = en\r\nx.y = 1\r\nwifi.country = GB\r\n")
        #expect(try ConfigEditor.set([("speech.lang", "en")], in: "").get() == "speech.lang = en\n")
    }

    @Test func valuesThatWouldInjectALineOrCutAtACommentAreQuotedOrRefused() throws {
        for bad in ["x\nserver = tcp://evil:1", "x\rserver = tcp://evil:1", "a\u{0}b", "a\u{202E}b", "x\" # y' # z"] {
            #expect(throws: ConfigEditor.Refusal.self, "\(bad.debugDescription)") {
                try ConfigEditor.set([("template.en.text", bad)], in: "server = tcp://a:1\n").get()
            }
        }
        let tricky = ["Order #{text}", "  {text}  ", "say \"{text}\" # now", "'{text}'", "\"{text}\""]
        for v in tricky {
            let out = try ConfigEditor.set([("template.en.text", v)], in: "# keep\n").get()
            let r = ConfigParser().parse(out, file: "t")
            #expect(r.config.templates[.en, .text] == v, "\(out)")
            #expect(out.hasPrefix("# keep\n") && out.split(separator: "\n").count == 2)
        }
    }

    @Test func aValueCheckConfigWouldRefuseIsRefusedAndNothingNewIsWrong() {
        #expect(throws: ConfigEditor.Refusal.self) { try ConfigEditor.set([("speech.en.rate", "fast")], in: "").get() }
        #expect(throws: ConfigEditor.Refusal.self) { try ConfigEditor.set([("server", "http://x")], in: "").get() }
        // Wi-Fi without a country is refused (check-config's cross check), with one it is fine.
        #expect(throws: ConfigEditor.Refusal.self) { try ConfigEditor.set([("wifi.ssid", "Shop"), ("wifi.psk", "password1")], in: "").get() }
        #expect((try? ConfigEditor.set([("wifi.ssid", "Shop"), ("wifi.psk", "password1"), ("wifi.country", "DE")], in: "").get()) != nil)
        // An error already in the file does not block a change elsewhere.
        #expect((try? ConfigEditor.set([("speech.lang", "en")], in: "audio.rate = fast\n").get()) != nil)
    }

    @Test func seededRandomValuesEitherReadBackExactlyOrAreRefused() {
        var g = SplitMix(state: 34)
        let alphabet = Array("ab #\"'=\\\n\r\t{}[];%中文 ") + ["\u{7F}", "\u{200B}"]
        for i in 0..<500 {
            let v = String((0..<Int.random(in: 0...12, using: &g)).map { _ in alphabet.randomElement(using: &g)! })
            let original = "# c \(i)\nother = 1\ntemplate.zh.text = {text}\n"
            switch ConfigEditor.set([("template.zh.text", v)], in: original) {
            case .failure: continue
            case .success(let out):
                let lines = out.split(separator: "\n", omittingEmptySubsequences: false)
                #expect(lines.count == 4 && lines[0] == "# c \(i)" && lines[1] == "other = 1", "seed 34 #\(i): \(out.debugDescription)")
                let r = ConfigParser().parse(out, file: "t")
                #expect(r.config.templates[.zh, .text] == v || r.errors.contains { $0.key == "template.zh.text" } == false && v.isEmpty,
                         "seed 34 #\(i): \(v.debugDescription) → \(out.debugDescription)")
            }
        }
    }

    // MARK: HTTP input

    @Test func formsDecodeStrictly() {
        #expect(HTTPRules.form(Array("a=1&b=x+y%20z&c=%E4%B8%AD".utf8))!.map { "\($0.0)=\($0.1)" } == ["a=1", "b=x y z", "c=中"])
        #expect(HTTPRules.form(Array("a=%zz".utf8)) == nil)
        #expect(HTTPRules.form(Array("a=%4".utf8)) == nil)
        #expect(HTTPRules.form(Array("a=%FF%FE".utf8)) == nil)
        #expect(HTTPRules.form(Array("v=a%0D%0Ab".utf8))!.first!.1 == "a\r\nb")  // decoded; the editor refuses it
    }

    @Test func languageHostAndCookieRules() {
        #expect(HTTPRules.language(query: "", acceptLanguage: "en-GB,en;q=0.9,zh-CN;q=0.8", fallback: .zh) == .en)
        #expect(HTTPRules.language(query: "", acceptLanguage: "fr-FR,zh-TW;q=0.5,en;q=0.4", fallback: .en) == .zh)
        #expect(HTTPRules.language(query: "lang=en", acceptLanguage: "zh", fallback: .zh) == .en)
        #expect(HTTPRules.language(query: "lang=xx", acceptLanguage: nil, fallback: .en) == .en)
        for ok in ["192.168.1.20", "192.168.1.20:8080", "crier-7f3a.local", "crier", "localhost:80", "[fe80::1]:80"] { #expect(HTTPRules.hostAllowed(ok), "\(ok)") }
        for bad in [nil, "", "evil.example.com", "1.2.3.4.evil.com", "crier.local\r\nX: y", "a b", "192.168.1.256"] { #expect(!HTTPRules.hostAllowed(bad), "\(String(describing: bad))") }
        #expect(HTTPRules.cookie("crier_session", in: "a=1; crier_session=abc; b=2") == "abc")
        #expect(HTTPRules.cookie("crier_session", in: "xcrier_session=abc") == nil)
        #expect(!HTTPRules.headerSafe("a\r\nSet-Cookie: x") && HTTPRules.headerSafe("text/html; charset=utf-8"))
    }

    // MARK: the app

    final class Fake: Sendable {
        let said = Mutex<[(Lang, String, Bool)]>([])
        let done = Mutex<[WebAction]>([])
        let file = Mutex("# owner's comment\nspeech.lang = zh\n")
        let writes = Mutex(0)
        let now = Mutex(1000.0)
        let lines = Mutex<[String]>([])

        var hooks: WebHooks {
            WebHooks(
                status: { StatusSnapshot(version: "1.2", deviceID: "box", time: WallTime(unixMillis: 0), uptime: 1, components: [],
                                         link: LinkStatus(state: "up"), volume: 5, volumeMax: 10, muted: false, queueLength: 0,
                                         lastAlerts: [AlertSummary(time: WallTime(unixMillis: 0), id: "o1", lang: "zh", text: "王先生 42号", state: "spoken")]) },
                logTail: { ["INFO order o1 王先生"] },
                say: { l, t, s in self.said.withLock { $0.append((l, t, s)) } },
                perform: { a in self.done.withLock { $0.append(a) } },
                readConfig: { .success(self.file.withLock { $0 }) },
                writeConfig: { t in self.file.withLock { $0 = t }; self.writes.withLock { $0 += 1 }; return .success("saved; applying") })
        }
    }

    final class Lines: LogSink {
        let all = Mutex<[String]>([])
        func write(_ record: LogRecord) { all.withLock { $0.append(record.formatted()) } }
    }

    static func app(_ f: Fake, _ lines: Lines) -> WebApp {
        let hub = LogHub(clock: { WallTime(unixMillis: 0) })
        hub.add(lines)
        return WebApp(config: CrierConfig(), hooks: f.hooks, log: hub.logger("web"), clock: { f.now.withLock { $0 } }, random: Bytes(5).next)
    }

    static func post(_ path: String, _ body: String, cookie: String? = nil, host: String = "192.168.1.9", origin: String? = nil) -> WebRequest {
        var h = ["host": host]
        if let c = cookie { h["cookie"] = c }
        if let o = origin { h["origin"] = o }
        return WebRequest(method: "POST", path: path, headers: h, body: Array(body.utf8), client: "192.168.1.50")
    }

    static func get(_ path: String, cookie: String? = nil) -> WebRequest {
        WebRequest(method: "GET", path: path, headers: ["host": "192.168.1.9"].merging(cookie.map { ["cookie": $0] } ?? [:]) { a, _ in a })
    }

    static func json(_ r: WebResponse) -> JSONObject {
        guard case .success(.object(let o)) = JSON.parse(r.body) else { return JSONObject() }
        return o
    }

    /// Pairs through the page: the code is taken from what the box was asked to say.
    static func pair(_ app: WebApp, _ f: Fake) async -> (cookie: String, csrf: String)? {
        _ = await app.handle(post("/api/pair/request", ""))
        guard let spoken = f.said.withLock({ $0.last }), spoken.2 else { return nil }
        let code = String(spoken.1.filter(\.isNumber).prefix(4))
        let r = await app.handle(post("/api/pair", "code=\(code)"))
        guard r.status == 200, let set = r.header("Set-Cookie"), case .string(let csrf)? = json(r)["csrf"] else { return nil }
        return (String(set.prefix { $0 != ";" }), csrf)
    }

    @Test func unpairedStatusTellsHealthButNoOrderTextLogOrSettings() async {
        let f = Fake(), l = Lines()
        let r = await Self.app(f, l).handle(Self.get("/api/status"))
        let body = String(decoding: r.body, as: UTF8.self)
        #expect(r.status == 200 && body.contains("\"paired\":false") && body.contains("\"healthy\":true"))
        #expect(!body.contains("王先生") && !body.contains("settings") && !body.contains("csrf"))
    }

    @Test func pairingWorksAndTheCodeIsNeverInAResponseOrALogLine() async {
        let f = Fake(), l = Lines()
        let app = Self.app(f, l)
        guard let s = await Self.pair(app, f) else { Issue.record("did not pair"); return }
        let spoken = f.said.withLock { $0.first! }
        #expect(spoken.2 && spoken.1.hasPrefix("配对码"))
        let digits = String(spoken.1.filter(\.isNumber).prefix(4))
        #expect(!l.all.withLock { $0 }.contains { $0.contains(digits) || $0.contains(spoken.1) })
        let st = await app.handle(Self.get("/api/status", cookie: s.cookie))
        let body = String(decoding: st.body, as: UTF8.self)
        #expect(body.contains("王先生") && body.contains("\"settings\"") && !body.contains(digits + "\""))
    }

    @Test func changesNeedASessionAndAFreshToken() async {
        let f = Fake(), l = Lines()
        let app = Self.app(f, l)
        #expect(await app.handle(Self.post("/api/action", "do=test")).status == 401)
        guard let s = await Self.pair(app, f) else { Issue.record("did not pair"); return }
        #expect(await app.handle(Self.post("/api/action", "do=volume_up", cookie: s.cookie)).status == 403)  // no token
        let ok = await app.handle(Self.post("/api/action", "csrf=\(s.csrf)&do=volume_up", cookie: s.cookie))
        #expect(ok.status == 200)
        #expect(await app.handle(Self.post("/api/action", "csrf=\(s.csrf)&do=volume_up", cookie: s.cookie)).status == 403)  // replayed
        #expect(f.done.withLock { $0 } == [.volumeUp])
        // Expired: 8 h later the cookie names no session.
        guard case .string(let next)? = Self.json(ok)["csrf"] else { Issue.record("no next token"); return }
        f.now.withLock { $0 += 8 * 3600 }
        #expect(await app.handle(Self.post("/api/action", "csrf=\(next)&do=mute", cookie: s.cookie)).status == 401)
        #expect(f.done.withLock { $0 } == [.volumeUp])
    }

    @Test func aForeignOriginOrHostIsRefused() async {
        let f = Fake(), l = Lines()
        let app = Self.app(f, l)
        guard let s = await Self.pair(app, f) else { Issue.record("did not pair"); return }
        #expect(await app.handle(Self.post("/api/action", "csrf=\(s.csrf)&do=mute", cookie: s.cookie, origin: "http://evil.example")).status == 403)
        #expect(await app.handle(Self.post("/api/action", "csrf=\(s.csrf)&do=mute", cookie: s.cookie, host: "evil.example")).status == 421)
        #expect(await app.handle(Self.post("/api/action", "csrf=\(s.csrf)&do=mute", cookie: s.cookie, origin: "http://192.168.1.9")).status == 200)
    }

    @Test func pathTraversalAndOtherPathsAre404AndMethodsAreChecked() async {
        let f = Fake(), l = Lines()
        let app = Self.app(f, l)
        for p in ["/../../etc/passwd", "/app.js/../../../boot/firmware/crier.conf", "/%2e%2e/crier.conf", "//etc/shadow", "/api/status/../../x", "/index.html"] {
            #expect(await app.handle(Self.get(p)).status == 404, "\(p)")
        }
        #expect(await app.handle(WebRequest(method: "DELETE", path: "/", headers: ["host": "crier.local"])).status == 405)
        #expect(await app.handle(Self.get("/app.js")).header("Content-Type") == "text/javascript; charset=utf-8")
    }

    @Test func settingsAreWrittenKeepingTheOwnersLinesAndInjectionIsRefused() async {
        let f = Fake(), l = Lines()
        let app = Self.app(f, l)
        guard var s = await Self.pair(app, f) else { Issue.record("did not pair"); return }
        let r = await app.handle(Self.post("/api/settings", "csrf=\(s.csrf)&speech.lang=en&wifi.psk=&template.en.text=Order+%23%7Btext%7D", cookie: s.cookie))
        #expect(r.status == 200)
        #expect(f.file.withLock { $0 } == "# owner's comment\nspeech.lang = en\ntemplate.en.text = \"Order #{text}\"\n")
        guard case .string(let n)? = Self.json(r)["csrf"] else { Issue.record("no token"); return }
        s.csrf = n
        let bad = await app.handle(Self.post("/api/settings", "csrf=\(s.csrf)&template.en.text=x%0Aserver+%3D+tcp%3A%2F%2Fevil%3A1", cookie: s.cookie))
        #expect(bad.status == 422)
        guard case .string(let n2)? = Self.json(bad)["csrf"] else { Issue.record("no token"); return }
        let notAllowed = await app.handle(Self.post("/api/settings", "csrf=\(n2)&server.key=00112233445566778899aabbccddeeff", cookie: s.cookie))
        #expect(notAllowed.status == 400)
        #expect(f.writes.withLock { $0 } == 1)
        #expect(!f.file.withLock { $0 }.contains("evil") && !f.file.withLock { $0 }.contains("server.key"))
    }

    @Test func thePageIsSmallAndHasNoExternalReference() {
        for l in Lang.allCases {
            let html = WebPage.html(lang: l, device: "<b>x</b>")
            #expect(!html.contains("<b>x</b>") && html.contains("&lt;b&gt;x&lt;/b&gt;"))
            let all = html + WebPage.script + WebPage.style
            #expect(!all.contains("http://") && !all.contains("https://") && !all.contains("//cdn"))
            #expect(all.utf8.count < 16 * 1024, "\(all.utf8.count) bytes")
        }
    }
}

extension WebRulesTests {
    @Test func fiveCodesSaidWithoutAPairingLockTheRequestsToo() {
        var p = Pairing()
        let b = Bytes(9)
        var t = 0.0
        for _ in 0..<5 {
            guard case .speak = p.request(now: t, random: b.next) else { Issue.record("no code at \(t)"); return }
            t += 10
        }
        #expect(p.request(now: t, random: b.next) == .lockedNow(seconds: 300))
        #expect(p.request(now: t + 299, random: b.next) == .locked(retryAfter: 1))
        // Then five more, and the next lockout is twice as long; a pairing resets both.
        t += 300
        for _ in 0..<5 { _ = p.request(now: t, random: b.next); t += 10 }
        #expect(p.request(now: t, random: b.next) == .lockedNow(seconds: 600))
        t += 600
        guard case .speak(let c) = p.request(now: t, random: b.next) else { Issue.record("no code"); return }
        #expect(p.submit(c, now: t) == .paired)
        for _ in 0..<5 { guard case .speak = p.request(now: t, random: b.next) else { Issue.record("no code after pairing"); return }; t += 10 }
    }

    @Test func aSettingsFormWithEveryFieldWritesOnlyWhatChanged() async {
        let f = Fake(), l = Lines()
        let app = Self.app(f, l)
        guard let s = await Self.pair(app, f) else { Issue.record("did not pair"); return }
        // What the page sends: every field, most of them at the running values.
        var form = ["csrf=\(s.csrf)"]
        let c = CrierConfig()
        for k in WebApp.settingKeys {
            let v = CrierConfig.schema.first { $0.name == k }!.value(in: c)
            form.append("\(k)=\(k == "speech.en.rate" ? "200" : k == "wifi.psk" ? "" : v)".replacingAll("{", with: "%7B").replacingAll("}", with: "%7D").replacingAll(" ", with: "+").replacingAll("#", with: "%23"))
        }
        let r = await app.handle(Self.post("/api/settings", form.joined(separator: "&"), cookie: s.cookie))
        #expect(r.status == 200, "\(String(decoding: r.body, as: UTF8.self))")
        #expect(f.file.withLock { $0 } == "# owner's comment\nspeech.lang = zh\nspeech.en.rate = 200\n")
    }

    @Test func anSSIDWithQuotesAndNetworkBlockTextStaysOneNetworkInWpaSupplicantsFile() throws {
        let ssid = "A\" network={ key_mgmt=NONE } #"
        let out = try ConfigEditor.set([("wifi.ssid", ssid), ("wifi.psk", "pass\"word # 1"), ("wifi.country", "DE")], in: "# mine\n").get()
        let c = ConfigParser().parse(out, file: "t").config
        #expect(c.wifi.ssid?.text == ssid)
        let wpa = WpaSupplicantConf.render(c.wifi) ?? ""
        #expect(wpa.split(separator: "\n").filter { $0.contains("network={") }.count == 1, "\(wpa)")
        #expect(!wpa.contains("key_mgmt=NONE"))
    }
}

extension WebRulesTests {
    @Test func theCodeIsSaidInThePagesLanguage() async {
        let f = Fake(), l = Lines()
        let app = Self.app(f, l)
        var r = Self.post("/api/pair/request", "")
        r.query = "lang=en"
        r.headers["accept-language"] = "zh-CN"
        #expect(await app.handle(r).status == 200)
        #expect(f.said.withLock { $0.last.map { $0.0 == .en && $0.1.hasPrefix("Pairing code ") && $0.2 } } == true)
    }
}

extension WebRulesTests {
    @Test func webListenReadsBackAndRefusesWhatCannotBeBound() {
        for (text, shown) in [("off", "off"), ("0.0.0.0:80", "0.0.0.0:80"), ("8080", "0.0.0.0:8080"), ("[::]:80", "[::]:80"),
                              ("127.0.0.1:8080", "127.0.0.1:8080"), ("OFF", "off")] {
            let r = ConfigParser().parse("web.listen = \(text)\n", file: "t")
            #expect(r.errors.isEmpty, "\(text): \(r.errors)")
            let rendered = CrierConfig.schema.first { $0.name == "web.listen" }!.value(in: r.config)
            #expect(rendered == shown)
            #expect(ConfigParser().parse("web.listen = \(rendered)\n", file: "t").config == r.config)
        }
        for bad in ["80000", "localhost:80", "0.0.0.0", "1.2.3:80", "[::1]80", "0.0.0.0:0", "http://0.0.0.0:80"] {
            let r = ConfigParser().parse("web.listen = \(bad)\n", file: "t")
            #expect(r.errors.first?.key == "web.listen", "\(bad)")
            #expect(r.config.web.listen == nil)
        }
    }
}

/// The captive portal (docs/setup.md section 6): the page joined to the setup hotspot.
extension WebRulesTests {
    @Test func probesAreRedirectedOnlyWhileSetupIsOpenAndAForeignPostNever() {
        let portal = "http://10.42.0.1/"
        let probes = ["connectivitycheck.gstatic.com", "clients3.google.com", "captive.apple.com", "www.msftconnecttest.com",
                      "evil.example.com", "1.2.3.4.evil.com", "crier.local\r\nX: y", "", nil]
        for h in probes {
            // Setup closed: the refusal exactly as hostAllowed says (the DNS-rebinding defence).
            for m in ["GET", "HEAD", "POST", "PUT"] { #expect(HTTPRules.hostVerdict(method: m, host: h, portal: nil) == .refuse, "\(m) \(String(describing: h))") }
            // Open: a GET or HEAD is a probe; a change with a foreign Host is never accepted.
            #expect(HTTPRules.hostVerdict(method: "GET", host: h, portal: portal) == .redirect(portal))
            #expect(HTTPRules.hostVerdict(method: "HEAD", host: h, portal: portal) == .redirect(portal))
            for m in ["POST", "PUT", "DELETE", "OPTIONS", "get"] { #expect(HTTPRules.hostVerdict(method: m, host: h, portal: portal) == .refuse, "\(m)") }
        }
        for h in ["10.42.0.1", "10.42.0.1:80", "crier-7f3a.local", "192.168.1.20:8080", "crier"] {
            for p in [nil, portal] { #expect(HTTPRules.hostVerdict(method: "POST", host: h, portal: p) == .serve) }
        }
    }

    final class Hotspot: Sendable {
        let state = Mutex<SetupPortal.State?>(nil)
        let submitted = Mutex<[(String, String, Bool, String?)]>([])
        let rescans = Mutex(0)
        let closes = Mutex(0)
        let uses = Mutex(0)
    }

    static func portalApp(_ f: Fake, _ h: Hotspot, _ lines: Lines) -> WebApp {
        var hooks = f.hooks
        hooks.setupState = { h.uses.withLock { $0 += 1 }; return h.state.withLock { $0 } }
        hooks.setupSubmit = { s, p, hid, c in
            h.submitted.withLock { $0.append((s, p, hid, c)) }
            switch SetupNetwork.validate(ssid: s, psk: p, hidden: hid, country: c, configuredCountry: nil) {
            case .failure(let e): return e
            case .success: h.state.withLock { $0?.phase = .trying }; return nil
            }
        }
        hooks.setupRescan = { h.rescans.withLock { $0 += 1 } }
        hooks.setupClose = { h.closes.withLock { $0 += 1 }; h.state.withLock { $0?.phase = .closed } }
        let hub = LogHub(clock: { WallTime(unixMillis: 0) })
        hub.add(lines)
        return WebApp(config: CrierConfig(), hooks: hooks, log: hub.logger("web"), clock: { f.now.withLock { $0 } }, random: Bytes(5).next)
    }

    static func openState() -> SetupPortal.State {
        SetupPortal.State(phase: .open, apName: "Crier-1234",
                          networks: [ScannedNetwork(ssid: Array("Shop".utf8), signal: -45, frequency: 2437, security: .wpa),
                                     ScannedNetwork(ssid: Array("Cafe <b>".utf8), signal: -70, frequency: 2412, security: .open)],
                          lastSSID: nil, lastOutcome: nil, closesIn: 900, needsCountry: true)
    }

    static func probe(_ host: String, _ path: String, method: String = "GET") -> WebRequest {
        WebRequest(method: method, path: path, headers: ["host": host], client: "10.42.0.50")
    }

    @Test func whileSetupIsOpenProbesGet302ToThePortalAndClosedTheyAre421() async {
        let f = Fake(), h = Hotspot(), l = Lines()
        let app = Self.portalApp(f, h, l)
        let probes = [("connectivitycheck.gstatic.com", "/generate_204"), ("clients3.google.com", "/generate_204"),
                      ("captive.apple.com", "/hotspot-detect.html"), ("www.msftconnecttest.com", "/connecttest.txt"), ("anything.example", "/x")]
        for (host, path) in probes { #expect(await app.handle(Self.probe(host, path)).status == 421) }  // no hotspot
        h.state.withLock { $0 = Self.openState(); $0?.phase = .closed }
        for (host, path) in probes { #expect(await app.handle(Self.probe(host, path)).status == 421) }  // closed
        h.state.withLock { $0 = Self.openState() }
        for (host, path) in probes {
            let r = await app.handle(Self.probe(host, path))
            #expect(r.status == 302 && r.header("Location") == "http://10.42.0.1/", "\(host)")
        }
        // A change with a foreign Host is refused even now, paired or not.
        guard let s = await Self.pair(app, f) else { Issue.record("did not pair"); return }
        let post = await app.handle(Self.post("/api/setup", "csrf=\(s.csrf)&ssid=Shop&psk=password1&country=GB", cookie: s.cookie, host: "captive.apple.com"))
        #expect(post.status == 421 && h.submitted.withLock { $0.isEmpty })
        // The portal itself, by the box's address.
        let page = await app.handle(Self.probe("10.42.0.1", "/"))
        #expect(page.status == 200 && String(decoding: page.body, as: UTF8.self).contains("id=\"setupf\""))
    }

    @Test func theStatusCarriesTheNetworksAndASubmitNeedsAPairedSessionAndAToken() async {
        let f = Fake(), h = Hotspot(), l = Lines()
        let app = Self.portalApp(f, h, l)
        #expect(!String(decoding: await app.handle(Self.get("/api/status")).body, as: UTF8.self).contains("\"setup\""))
        h.state.withLock { $0 = Self.openState() }
        let st = Self.json(await app.handle(Self.get("/api/status")))
        guard case .object(let su)? = st["setup"], case .array(let nets)? = su["networks"] else { Issue.record("no setup in the status"); return }
        #expect(nets.count == 2 && su["ap"] == .string("Crier-1234") && su["needs_country"] == .bool(true))
        // Unpaired, or paired without the token: refused, nothing tried.
        #expect(await app.handle(Self.post("/api/setup", "ssid=Shop&psk=password1&country=GB")).status == 401)
        guard let s = await Self.pair(app, f) else { Issue.record("did not pair"); return }
        #expect(await app.handle(Self.post("/api/setup", "ssid=Shop&psk=password1&country=GB", cookie: s.cookie)).status == 403)
        #expect(h.submitted.withLock { $0.isEmpty })
        // A refusal comes back with its field and code, never the password.
        let bad = await app.handle(Self.post("/api/setup", "csrf=\(s.csrf)&ssid=Shop&psk=short77", cookie: s.cookie))
        let bj = Self.json(bad)
        #expect(bad.status == 422 && bj["error"] == .string("psk_length") && !String(decoding: bad.body, as: UTF8.self).contains("short77"))
        guard case .string(let next)? = bj["csrf"] else { Issue.record("no next token"); return }
        let ok = await app.handle(Self.post("/api/setup", "csrf=\(next)&ssid=Shop&psk=pa%22ss+%23x1&hidden=on&country=gb", cookie: s.cookie))
        #expect(ok.status == 200 && Self.json(ok)["trying"] == .bool(true))
        let sent = h.submitted.withLock { $0.last }
        #expect(sent?.0 == "Shop" && sent?.1 == "pa\"ss #x1" && sent?.2 == true && sent?.3 == "GB")
        #expect(!l.all.withLock { $0 }.contains { $0.contains("pa\"ss") || $0.contains("short77") })
        // Trying: a second submit is 409 (the hotspot is down meanwhile).
        guard case .string(let n2)? = Self.json(ok)["csrf"] else { Issue.record("no next token"); return }
        #expect(await app.handle(Self.post("/api/setup", "csrf=\(n2)&ssid=Shop&psk=password1&country=GB", cookie: s.cookie)).status == 409)
        #expect(h.uses.withLock { $0 } > 5)  // every request counts as use
    }

    @Test func closingSetupFromThePageNeedsAPairedSessionAndATokenAndAnOpenHotspot() async {
        let f = Fake(), h = Hotspot(), l = Lines()
        let app = Self.portalApp(f, h, l)
        h.state.withLock { $0 = Self.openState() }
        // Anyone in radio range can join the open hotspot: unpaired, or without the token, nothing closes.
        #expect(await app.handle(Self.post("/api/setup/close", "")).status == 401)
        guard let s = await Self.pair(app, f) else { Issue.record("did not pair"); return }
        #expect(await app.handle(Self.post("/api/setup/close", "", cookie: s.cookie)).status == 403)
        #expect(await app.handle(Self.post("/api/setup/close", "csrf=not-it", cookie: s.cookie)).status == 403)
        // A foreign Host (a rebinding page) is refused whatever the state.
        #expect(await app.handle(Self.post("/api/setup/close", "csrf=\(s.csrf)", cookie: s.cookie, host: "captive.apple.com")).status == 421)
        #expect(h.closes.withLock { $0 } == 0)
        let ok = await app.handle(Self.post("/api/setup/close", "csrf=\(s.csrf)", cookie: s.cookie))
        #expect(ok.status == 200 && Self.json(ok)["ok"] == .bool(true))
        #expect(h.closes.withLock { $0 } == 1)
        #expect(l.all.withLock { $0 }.contains { $0.contains("local page: setup closed") })
        // Closed now: the status has no setup, and a second close is 409 (nothing to close).
        #expect(!String(decoding: await app.handle(Self.get("/api/status", cookie: s.cookie)).body, as: UTF8.self).contains("\"setup\""))
        guard case .string(let next)? = Self.json(ok)["csrf"] else { Issue.record("no next token"); return }
        let again = await app.handle(Self.post("/api/setup/close", "csrf=\(next)", cookie: s.cookie))
        #expect(again.status == 409 && Self.json(again)["error"] == .string("setup_closed"))
        #expect(h.closes.withLock { $0 } == 1)
        // The button is on the portal view, in both languages.
        for lang in Lang.allCases { #expect(WebPage.html(lang: lang, device: "box").contains("id=\"su-close\"")) }
        #expect(WebPage.script.contains("'/api/setup/close'"))
    }

    @Test func thePortalViewIsInBothLanguagesEscapedAndSmall() {
        for l in Lang.allCases {
            let html = WebPage.html(lang: l, device: "box")
            #expect(html.contains("id=\"setup\"") && html.contains("id=\"nets\"") && html.contains("name=\"psk\"") && html.contains("name=\"country\""))
            #expect(html.contains(l == .zh ? "设置无线网络" : "Set up the Wi-Fi"))
        }
        for k in ["wrong_password", "not_found", "connected", "trying"] { #expect(WebPage.script.ranges(of: k + ":'").count == 2, "\(k)") }
        // Names from the air go in as text, never as markup.
        #expect(WebPage.script.contains("b.textContent=") && !WebPage.script.contains("b.innerHTML"))
    }
}
