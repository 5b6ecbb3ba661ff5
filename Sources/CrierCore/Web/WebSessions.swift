/// Paired sessions of the local page. A session is a 128-bit random token in an HttpOnly,
/// SameSite=Strict cookie; each has its own CSRF token, which every change must carry and which
/// is replaced after each accepted change (a captured or replayed token is refused). Pure: time
/// and random bytes come from the caller.
public struct WebSessions: Sendable, Equatable {
    public struct Session: Sendable, Equatable {
        public var token: String
        public var csrf: String
        public var expires: Double
    }

    public static let cookieName = "crier_session"
    /// Hours a pairing lasts: a working day; then the box must be heard again.
    public var lifetime = 8 * 3600.0
    /// Phones paired at once; the oldest session ends when another pairs.
    public var maxSessions = 8
    public private(set) var sessions: [Session] = []

    public init() {}

    /// 16 random bytes as 32 hex digits.
    public static func token(_ random: () -> UInt8) -> String {
        Hex.encode((0..<16).map { _ in random() })
    }

    public mutating func create(now: Double, random: () -> UInt8) -> Session {
        expire(now: now)
        if sessions.count >= maxSessions { sessions.removeFirst(sessions.count - maxSessions + 1) }
        let s = Session(token: Self.token(random), csrf: Self.token(random), expires: now + lifetime)
        sessions.append(s)
        return s
    }

    public mutating func expire(now: Double) { sessions.removeAll { $0.expires <= now } }

    /// The live session this cookie names.
    public func find(_ token: String?, now: Double) -> Session? {
        guard let t = token, t.utf8.count == 32 else { return nil }
        return sessions.first { Self.same($0.token, t) && $0.expires > now }
    }

    public enum CSRFCheck: Sendable, Equatable {
        /// Accepted; the page must use `next` for its next change.
        case ok(next: String)
        case noSession
        case missing
        /// Not this session's current token (replayed, from another session, or made up).
        case wrong
    }

    /// Checks and rotates the CSRF token of the session named by `token`.
    public mutating func checkCSRF(session token: String?, csrf: String?, now: Double, random: () -> UInt8) -> CSRFCheck {
        guard let s = find(token, now: now), let i = sessions.firstIndex(of: s) else { return .noSession }
        guard let c = csrf, !c.isEmpty else { return .missing }
        guard Self.same(s.csrf, c) else { return .wrong }
        let next = Self.token(random)
        sessions[i].csrf = next
        return .ok(next: next)
    }

    public mutating func end(_ token: String?) {
        guard let t = token else { return }
        sessions.removeAll { Self.same($0.token, t) }
    }

    /// The Set-Cookie value for a new session (no Secure: the page is plain HTTP on the shop's
    /// network; docs/security.md says what that leaves open).
    public func cookie(for s: Session, now: Double) -> String {
        "\(Self.cookieName)=\(s.token); Path=/; Max-Age=\(Int(max(0, s.expires - now))); HttpOnly; SameSite=Strict"
    }

    public static var clearCookie: String { "\(cookieName)=; Path=/; Max-Age=0; HttpOnly; SameSite=Strict" }

    /// Equal in constant time for equal lengths.
    static func same(_ a: String, _ b: String) -> Bool {
        let x = Array(a.utf8), y = Array(b.utf8)
        guard x.count == y.count else { return false }
        var d: UInt8 = 0
        for i in 0..<x.count { d |= x[i] ^ y[i] }
        return d == 0
    }

    /// Sessions as lines (`token csrf expires`) for the runtime directory, so a reload (which
    /// re-executes the daemon) does not unpair the phone that saved a setting.
    public func serialized() -> String {
        sessions.map { "\($0.token) \($0.csrf) \(Format.fixed($0.expires, 3))" }.joined(separator: "\n")
    }

    public static func parse(_ text: String, now: Double) -> WebSessions {
        var w = WebSessions()
        for line in text.split(separator: "\n") {
            let p = line.split(separator: " ")
            guard p.count == 3, p[0].utf8.count == 32, p[1].utf8.count == 32,
                  Hex.decode(String(p[0])) != nil, Hex.decode(String(p[1])) != nil,
                  let e = Double(p[2]), e.isFinite, e > now, e <= now + w.lifetime else { continue }
            w.sessions.append(Session(token: String(p[0]), csrf: String(p[1]), expires: e))
        }
        if w.sessions.count > w.maxSessions { w.sessions.removeFirst(w.sessions.count - w.maxSessions) }
        return w
    }
}
