/// A URL as crier may print it (docs/updates.md, "Downloads"): a bundle URL can carry
/// credentials (`https://user:secret@host/b.raucb`) or a signed query (`?X-Amz-Signature=…`,
/// `?token=…`); neither may reach a log line, `crier update`'s output, an error or the status.
public enum ShownURL {
    /// The user-info (`user:secret@`, all of it) and the values of query parameters whose names
    /// look secret become `***`; the scheme, host, port and path stay, to say which URL it was.
    public static func redacted(_ url: String) -> String {
        let p = Parts(url)
        guard p.userInfo != nil || !p.secretValues.isEmpty else { return url }
        var out = p.head
        if p.userInfo != nil { out += "***@" }
        out += p.hostPath
        if let q = p.query {
            out += "?" + q.split(separator: "&", omittingEmptySubsequences: false).map { pair -> String in
                guard let eq = pair.firstIndex(of: "="), Self.secretName(pair[..<eq]) else { return String(pair) }
                return pair[..<eq] + "=***"
            }.joined(separator: "&")
        }
        if let f = p.fragment { out += "#" + f }
        return out
    }

    /// `text` (a line from libcurl or RAUC, which may quote the URL) with the URL and each of
    /// its secrets (4 characters or more: a shorter one would mangle every word) replaced.
    public static func scrub(_ text: String, secretsOf url: String) -> String {
        let p = Parts(url)
        var secrets = p.secretValues
        if let u = p.userInfo {
            secrets.append(u)
            if let colon = u.firstIndex(of: ":") { secrets.append(String(u[u.index(after: colon)...])) }
        }
        secrets = secrets.filter { $0.count >= 4 }
        guard !secrets.isEmpty || text.contains(url) else { return text }
        var out = text.replacing(url, with: redacted(url))
        for s in secrets.sorted(by: { $0.count > $1.count }) { out = out.replacing(s, with: "***") }
        return out
    }

    static func secretName(_ name: Substring) -> Bool {
        let n = name.lowercased()
        return ["token", "sig", "secret", "pass", "key", "auth", "credential"].contains { n.contains($0) }
    }

    struct Parts {
        /// "scheme://"
        var head = ""
        var userInfo: String?
        var hostPath = ""
        var query: String?
        var fragment: String?
        var secretValues: [String] = []

        init(_ url: String) {
            var rest = Substring(url)
            if let r = rest.firstRange(of: "://") {
                head = String(rest[..<r.upperBound])
                rest = rest[r.upperBound...]
                let authorityEnd = rest.firstIndex { $0 == "/" || $0 == "?" || $0 == "#" } ?? rest.endIndex
                if let at = rest[..<authorityEnd].lastIndex(of: "@") {
                    userInfo = String(rest[..<at])
                    rest = rest[rest.index(after: at)...]
                }
            }
            if let h = rest.firstIndex(of: "#") {
                fragment = String(rest[rest.index(after: h)...])
                rest = rest[..<h]
            }
            if let q = rest.firstIndex(of: "?") {
                query = String(rest[rest.index(after: q)...])
                rest = rest[..<q]
            }
            hostPath = String(rest)
            for pair in (query ?? "").split(separator: "&") {
                if let eq = pair.firstIndex(of: "="), ShownURL.secretName(pair[..<eq]) {
                    let v = String(pair[pair.index(after: eq)...])
                    if !v.isEmpty { secretValues.append(v) }
                }
            }
        }
    }
}
