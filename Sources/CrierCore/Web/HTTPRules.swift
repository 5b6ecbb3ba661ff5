/// One HTTP request as the page's rules see it (the adapter fills it from libmicrohttpd).
public struct WebRequest: Sendable, Equatable {
    public var method: String
    /// The path as sent, without the query.
    public var path: String
    public var query: String
    /// Header names lowercased.
    public var headers: [String: String]
    public var body: [UInt8]
    public var client: String

    public init(method: String, path: String, query: String = "", headers: [String: String] = [:], body: [UInt8] = [], client: String = "") {
        self.method = method
        self.path = path
        self.query = query
        self.headers = headers
        self.body = body
        self.client = client
    }

    public func header(_ name: String) -> String? { headers[name.lowercased()] }
}

public struct WebResponse: Sendable, Equatable {
    public var status: Int
    public var headers: [(String, String)]
    public var body: [UInt8]

    public init(status: Int, headers: [(String, String)] = [], body: [UInt8] = []) {
        self.status = status
        self.headers = headers
        self.body = body
    }

    public static func == (a: WebResponse, b: WebResponse) -> Bool {
        a.status == b.status && a.body == b.body && a.headers.map { "\($0.0): \($0.1)" } == b.headers.map { "\($0.0): \($0.1)" }
    }

    public func header(_ name: String) -> String? { headers.first { $0.0.lowercased() == name.lowercased() }?.1 }
}

/// The parsing rules of the page's HTTP input: strict, bounded, never trusting a byte.
public enum HTTPRules {
    /// Largest request body read (a settings form with every template is ~3 KiB); a larger one
    /// is refused with 413 before it is read.
    public static let maxBody = 16 * 1024

    /// `application/x-www-form-urlencoded` into pairs; nil when a name or value is not UTF-8
    /// after decoding, or a `%` escape is broken.
    public static func form(_ body: [UInt8]) -> [(String, String)]? {
        var out: [(String, String)] = []
        for part in body.split(separator: UInt8(ascii: "&"), omittingEmptySubsequences: true) {
            let kv = part.split(separator: UInt8(ascii: "="), maxSplits: 1, omittingEmptySubsequences: false)
            guard let k = percentDecode(kv[0]), let v = percentDecode(kv.count > 1 ? kv[1] : []) else { return nil }
            out.append((k, v))
        }
        return out
    }

    public static func percentDecode(_ s: ArraySlice<UInt8>) -> String? {
        var bytes: [UInt8] = []
        var i = s.startIndex
        while i < s.endIndex {
            let c = s[i]
            if c == UInt8(ascii: "+") {
                bytes.append(0x20)
            } else if c == UInt8(ascii: "%") {
                guard s.distance(from: i, to: s.endIndex) >= 3,
                      let h = Hex.decode(String(decoding: s[(i + 1)...(i + 2)], as: UTF8.self)) else { return nil }
                bytes.append(h[0])
                i += 2
            } else {
                bytes.append(c)
            }
            i += 1
        }
        return String(validating: bytes, as: UTF8.self)
    }

    /// The value of one cookie in a `Cookie:` header.
    public static func cookie(_ name: String, in header: String?) -> String? {
        guard let h = header else { return nil }
        for part in h.split(separator: ";") {
            let t = part.trimmed
            guard let eq = t.firstIndex(of: "=") else { continue }
            if t[..<eq] == name { return String(t[t.index(after: eq)...]) }
        }
        return nil
    }

    /// The page's language: `?lang=` first, then the first of zh/en in Accept-Language by
    /// weight, then the box's own.
    public static func language(query: String, acceptLanguage: String?, fallback: Lang) -> Lang {
        for part in query.split(separator: "&") where part.hasPrefix("lang=") {
            if let l = Lang(rawValue: String(part.dropFirst(5))) { return l }
        }
        guard let h = acceptLanguage else { return fallback }
        var best: (Lang, Double)?
        for (n, item) in h.split(separator: ",").prefix(32).enumerated() {
            let fields = item.split(separator: ";")
            let tag = (fields.first.map { $0.trimmed } ?? "").lowercased()
            var q = 1.0
            for f in fields.dropFirst() where f.trimmed.hasPrefix("q=") { q = Double(f.trimmed.dropFirst(2)) ?? 0 }
            let l: Lang? = tag.hasPrefix("zh") ? .zh : tag.hasPrefix("en") ? .en : nil
            // Earlier wins ties: a tiny tie-breaker by position.
            if let l, q > 0, best == nil || q - Double(n) * 1e-6 > best!.1 { best = (l, q - Double(n) * 1e-6) }
        }
        return best?.0 ?? fallback
    }

    /// Hosts the page answers to: an IP address, `localhost`, a name without dots (the box's
    /// own) or a `.local` name. Anything else is a DNS-rebinding attempt (a web page on the
    /// internet that made its own name point at the box) and is refused.
    public static func hostAllowed(_ host: String?) -> Bool {
        guard var h = host?.lowercased(), !h.isEmpty, h.utf8.count <= 255 else { return false }
        if h.hasPrefix("[") { return h.contains("]") && h.utf8.allSatisfy { isHostByte($0) || $0 == UInt8(ascii: "[") || $0 == UInt8(ascii: "]") || $0 == UInt8(ascii: ":") } }
        if let colon = h.lastIndex(of: ":") {
            guard Int(h[h.index(after: colon)...]) != nil else { return false }
            h = String(h[..<colon])
        }
        guard h.utf8.allSatisfy(isHostByte) else { return false }
        if h == "localhost" || h.hasSuffix(".local") || !h.contains(".") { return true }
        let parts = h.split(separator: ".", omittingEmptySubsequences: false)
        return parts.count == 4 && parts.allSatisfy { p in Int(p).map { (0...255).contains($0) && p.count <= 3 } ?? false }
    }

    /// What the page does with a request's Host (docs/security.md).
    public enum HostVerdict: Sendable, Equatable {
        case serve
        /// 421: a foreign name (the DNS-rebinding defence).
        case refuse
        /// 302 to the portal: a phone's captive-portal probe while the setup hotspot is open.
        case redirect(String)
    }

    /// `portal`: the setup page's URL while the setup hotspot is open (`http://10.42.0.1/`),
    /// nil otherwise. A Host the page answers to is served. Any other Host is refused, except
    /// a GET or HEAD while the hotspot is open: then it is a phone's captive-portal probe
    /// (dnsmasq answers every name with the box: connectivitycheck.gstatic.com/generate_204,
    /// captive.apple.com/hotspot-detect.html, www.msftconnecttest.com/connecttest.txt, …) and
    /// gets a 302 to the portal, so the phone opens its sign-in sheet there. A redirect reveals
    /// nothing to a rebinding page (it cannot read a cross-origin answer), and a change (POST
    /// or any other method) with a foreign Host is refused whatever the state.
    public static func hostVerdict(method: String, host: String?, portal: String?) -> HostVerdict {
        if hostAllowed(host) { return .serve }
        guard let portal, method == "GET" || method == "HEAD" else { return .refuse }
        return .redirect(portal)
    }

    static func isHostByte(_ b: UInt8) -> Bool {
        (b >= 0x30 && b <= 0x39) || (b >= 0x61 && b <= 0x7a) || b == 0x2e || b == 0x2d
    }

    /// A header value the adapter may send: printable, no line break (no header injection).
    public static func headerSafe(_ s: String) -> Bool {
        s.unicodeScalars.allSatisfy { $0.value >= 0x20 && $0.value < 0x7f }
    }
}
