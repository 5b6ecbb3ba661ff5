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
        /// A redirect's target, as sent.
        public var location: String?

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
            case "location":
                location = value
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
            if t > maxBytes { return .fail("the bundle is \(mib(t)) MiB, more than the \(mib(maxBytes)) MiB a bundle may be (update.max_download_mib)") }
            if keep && t < have { return .fail("the server's file (\(t) bytes) is shorter than the \(have) bytes already downloaded") }
        }
        return keep ? .append(total: total) : .restart(total: total)
    }

    /// Nil when `need` more bytes fit on a file system with `free` bytes available, keeping
    /// `reserve` free for crier's state and the journal; otherwise what to tell the shop.
    public static func spaceProblem(need: Int64, free: Int64, reserve: Int64, dir: String) -> String? {
        guard need > 0, need > free - reserve else { return nil }
        return "not enough space in \(dir) for the bundle: \(mib(need)) MiB more are needed, \(mib(max(0, free - reserve))) MiB are free "
            + "(\(mib(reserve)) MiB kept for crier's state, update.keep_free_mib); free some space on crier-data, or set update.download = off to stream it"
    }

    /// Keeps a download from taking the space crier's journals need (docs/updates.md,
    /// "Downloads"): before each write, the free space the file system last reported, less what
    /// was written since, must stay at or above `reserve` after the write (rounded up to whole
    /// blocks, plus one block for the file's own metadata); and the file may not grow past
    /// `maxBytes`, announced size or not. Free space is measured (statvfs, the caller's I/O) after
    /// every MiB written, and before every write once it is within 1 MiB of the reserve.
    public struct SpaceWatch: Sendable, Equatable {
        public let reserve: Int64
        public let maxBytes: Int64
        public let dir: String
        public static let measureEvery: Int64 = 1 << 20
        /// Free bytes last measured, less what was written since.
        var free: Int64?
        var sinceMeasured: Int64 = 0
        var blockSize: Int64 = 4096

        public init(reserve: Int64, maxBytes: Int64, dir: String) {
            self.reserve = reserve
            self.maxBytes = maxBytes
            self.dir = dir
        }

        /// Whether free space must be measured before `n` more bytes are written.
        public func mustMeasure(before n: Int64) -> Bool {
            guard let f = free else { return true }
            return sinceMeasured + n >= Self.measureEvery || f - cost(n) < reserve + Self.measureEvery
        }

        /// Free bytes as statvfs says (`f_bavail` × `f_frsize`: what an unprivileged writer may use).
        public mutating func measured(free: Int64, blockSize: Int64) {
            self.free = free
            self.blockSize = max(blockSize, 512)
            sinceMeasured = 0
        }

        /// Nil: write the `n` bytes (the file holds `have`); otherwise why the download stops.
        /// Call `mustMeasure` first: without a measurement nothing may be written.
        public mutating func admit(have: Int64, _ n: Int64) -> String? {
            if have + n > maxBytes {
                return "the server sent more than \(mib(maxBytes)) MiB, the most a bundle may be (update.max_download_mib); stopped there"
            }
            guard let f = free else { return "the free space in \(dir) is unknown (statvfs failed); nothing written" }
            if f - cost(n) < reserve {
                return "stopped at \(mib1(have)) MiB: writing on would leave less than the \(mib(reserve)) MiB kept free in \(dir) for crier's state "
                    + "(update.keep_free_mib; \(mib1(max(0, f))) MiB free now); the bundle does not fit: free some space on crier-data, or set update.download = off to stream it"
            }
            free = f - n
            sinceMeasured += n
            return nil
        }

        func cost(_ n: Int64) -> Int64 { (n + blockSize - 1) / blockSize * blockSize + blockSize }
    }

    /// How one connection ended, when it did not bring the whole file (the I/O adapter's reading
    /// of libcurl's result).
    public enum ConnectionEnd: Sendable, Equatable {
        /// Refused, reset, timed out connecting, cut short, a name that did not resolve.
        case network(String)
        /// Connected, but no answer (not even a status line) for `seconds`.
        case noAnswer(seconds: Int)
        /// Fewer than `minRate` bytes a second, over `seconds` in a row.
        case tooSlow(seconds: Int, minRate: Int)
        case httpStatus(Int)
        case tooManyRedirects(Int)
        /// A redirect to something other than http(s) (`file://`, `ftp://`…): the scheme.
        case redirectRefused(String)
        /// The URL itself cannot be fetched (bad form, a TLS certificate that does not verify…).
        case refused(String)
    }

    /// Whether another connection may help: a network that drops or stalls, a server error
    /// (5xx). A redirect loop, a redirect off http(s), a 4xx, a bad certificate answer the same
    /// every time: given up at once.
    public static func retried(_ e: ConnectionEnd) -> Bool {
        switch e {
        case .network, .noAnswer, .tooSlow: true
        case .httpStatus(let s): s >= 500 || s == 408 || s == 429
        case .tooManyRedirects, .redirectRefused, .refused: false
        }
    }

    public static func message(_ e: ConnectionEnd) -> String {
        switch e {
        case .network(let why): why
        case .noAnswer(let s): "the server accepted the connection but sent no answer for \(s) s"
        case .tooSlow(let s, let rate): "the server sent less than \(rate >= 1024 ? "\(rate / 1024) KiB" : "\(rate) bytes") a second for \(s) s (update.stall_seconds)"
        case .httpStatus(let s): "the server answered HTTP \(s)"
        case .tooManyRedirects(let n): "the server redirected more than \(n) times (a redirect loop?); not retried"
        case .redirectRefused(let scheme): "the server redirected to a \(scheme):// URL; only http and https redirects are followed; not retried"
        case .refused(let why): "\(why); not retried"
        }
    }

    /// Seconds to wait before connection attempt `n` (1-based; attempt 1 waits nothing).
    public static func retryDelay(attempt n: Int) -> Double {
        let delays: [Double] = [0, 1, 3, 10, 30, 60]
        return delays[min(max(n - 1, 0), delays.count - 1)]
    }

    /// Seconds to wait before connection `n`, `elapsed` seconds after the download began, when
    /// all of it may take `limit` (update.download_limit_seconds); nil: the wait would end past
    /// the limit, so give up now rather than wait for nothing.
    public static func nextWait(attempt n: Int, elapsed: Double, limit: Double) -> Double? {
        let d = retryDelay(attempt: n)
        return elapsed + d < limit ? d : nil
    }

    /// Bytes a second under which a connection counts as stalled (over update.stall_seconds).
    public static let minRate = 1024

    static func mib(_ b: Int64) -> String { Format.fixed(Double(b) / 1_048_576, b < 10_485_760 ? 1 : 0) }
    static func mib1(_ b: Int64) -> String { Format.fixed(Double(b) / 1_048_576, 1) }
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
