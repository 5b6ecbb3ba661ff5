/// The rules of downloading a bundle onto the card before RAUC installs it (docs/updates.md,
/// "Downloads"). A shop's Wi-Fi drops; a server may ignore a range request, send a bundle
/// bigger than the card, or a different file halfway through. The I/O is CrierHTTP's
/// `HTTPDownload`; what to do with each answer is decided here, with no network and no clock.
public enum BundleDownload {
    /// What one HTTP answer said, from its header lines (a redirect's answer is replaced by the
    /// next one: each status line starts over).
    public struct Response: Sendable, Equatable {
        public var status: Int?
        public var contentLength: Int64?
        /// `Content-Range: bytes START-END/TOTAL` (TOTAL nil for `*`).
        public var rangeStart: Int64?
        public var rangeTotal: Int64?
        public var etag: String?

        public init() {}

        public mutating func header(_ raw: String) {
            let line = raw.trimmingWhitespace
            if line.hasPrefix("HTTP/") {
                self = Response()
                let parts = line.split(separator: " ", maxSplits: 2)
                if parts.count >= 2 { status = Int(parts[1]) }
                return
            }
            guard let colon = line.firstIndex(of: ":") else { return }
            let name = line[..<colon].lowercased()
            let value = String(line[line.index(after: colon)...]).trimmingWhitespace
            switch name {
            case "content-length":
                contentLength = Int64(value).flatMap { $0 >= 0 ? $0 : nil }
            case "content-range":
                // bytes 100-199/1000
                guard value.hasPrefix("bytes ") else { return }
                let spec = value.dropFirst(6)
                let halves = spec.split(separator: "/", maxSplits: 1)
                if halves.count == 2, halves[0] == "*" {  // 416's "bytes */TOTAL"
                    rangeTotal = Int64(halves[1]).flatMap { $0 >= 0 ? $0 : nil }
                    return
                }
                guard halves.count == 2, let dash = halves[0].firstIndex(of: "-"),
                      let start = Int64(halves[0][..<dash]), start >= 0 else { return }
                rangeStart = start
                rangeTotal = halves[1] == "*" ? nil : Int64(halves[1]).flatMap { $0 >= 0 ? $0 : nil }
            case "etag":
                etag = value
            default:
                break
            }
        }

        /// The whole file's size, when the answer says it.
        public var total: Int64? {
            status == 206 ? rangeTotal : contentLength
        }
    }

    public enum Decision: Sendable, Equatable {
        /// Keep the bytes on the card and append the body; the file ends at `total` (nil: unknown).
        case append(total: Int64?)
        /// Throw away what is on the card and write the body from its first byte.
        case restart(total: Int64?)
        case fail(String)
    }

    /// What to do with the body of `r`, with `have` bytes of the file already on the card
    /// (asked for with `Range: bytes=have-` when `have` > 0).
    public static func decide(have: Int64, _ r: Response, maxBytes: Int64) -> Decision {
        guard let status = r.status else { return .fail("the server's answer has no HTTP status line") }
        let total: Int64?
        let keep: Bool
        switch status {
        case 206 where have > 0:
            guard r.rangeStart == have else {
                return .fail("the server sent bytes from \(r.rangeStart.map(String.init) ?? "?") when asked for bytes from \(have)")
            }
            total = r.rangeTotal
            keep = true
        case 200:
            // No range support (or a new file): start over.
            total = r.contentLength
            keep = false
        default:
            return .fail("the server answered HTTP \(status)")
        }
        if let t = total {
            if t > maxBytes { return .fail("the bundle is \(mib(t)) MiB, more than the \(mib(maxBytes)) MiB a bundle may be") }
            if keep && t < have { return .fail("the server's file (\(t) bytes) is shorter than the \(have) bytes already downloaded") }
        }
        return keep ? .append(total: total) : .restart(total: total)
    }

    /// Nil when `need` more bytes fit on a file system with `free` bytes available, keeping
    /// `reserve` free for crier's state and the journal; otherwise what to tell the shop.
    public static func spaceProblem(need: Int64, free: Int64, reserve: Int64, dir: String) -> String? {
        guard need > 0, need > free - reserve else { return nil }
        return "not enough space in \(dir) for the bundle: \(mib(need)) MiB more are needed, \(mib(max(0, free - reserve))) MiB are free "
            + "(\(mib(reserve)) MiB kept for crier's state); free some space on crier-data, or set update.download = off to stream it"
    }

    /// Seconds to wait before connection attempt `n` (1-based; attempt 1 waits nothing).
    public static func retryDelay(attempt n: Int) -> Double {
        let delays: [Double] = [0, 1, 3, 10, 30, 60]
        return delays[min(max(n - 1, 0), delays.count - 1)]
    }

    static func mib(_ b: Int64) -> String { Format.fixed(Double(b) / 1_048_576, b < 10_485_760 ? 1 : 0) }
}

extension String {
    /// Without spaces, tabs, CR and LF at the ends (header lines end in CRLF, one Character).
    var trimmingWhitespace: String {
        var u = Substring(self).unicodeScalars
        func ws(_ c: Unicode.Scalar) -> Bool { c == " " || c == "\t" || c == "\r" || c == "\n" }
        while let f = u.first, ws(f) { u.removeFirst() }
        while let l = u.last, ws(l) { u.removeLast() }
        return String(u)
    }
}
