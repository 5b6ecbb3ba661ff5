import CCurl
import CrierCore

/// One HTTP(S) GET through libcurl, run on the caller's thread until the server ends it, it
/// stalls, or `keepGoing` says stop. Headers and body are handed over as they arrive.
public enum HTTPStream {
    public struct Options: Sendable {
        public var headers: [String] = []
        public var connectTimeout = 10
        /// Seconds with (nearly) no bytes before the transfer counts as stalled: fewer than
        /// `minBytesPerSecond` for this long, the wait for the answer included.
        public var stallSeconds = 10
        public var minBytesPerSecond = 1
        /// Redirects followed (libcurl: "Maximum (N) redirects followed" past it).
        public var maxRedirects = 5
        public init() {}
    }

    /// How `perform` ended, with libcurl's own code (CURLcode) for a caller that words it.
    public struct Finished: Sendable {
        public var outcome: Outcome
        public var code: Int
    }

    /// CURLcode values a caller may tell apart (libcurl's numbers, stable across versions).
    public enum Code {
        public static let unsupportedProtocol = Int(CURLE_UNSUPPORTED_PROTOCOL.rawValue)
        public static let badURL = Int(CURLE_URL_MALFORMAT.rawValue)
        public static let timedOut = Int(CURLE_OPERATION_TIMEDOUT.rawValue)
        public static let tooManyRedirects = Int(CURLE_TOO_MANY_REDIRECTS.rawValue)
        public static let httpError = Int(CURLE_HTTP_RETURNED_ERROR.rawValue)
        public static let peerVerification = Int(CURLE_PEER_FAILED_VERIFICATION.rawValue)
        public static let caCert = Int(CURLE_SSL_CACERT_BADFILE.rawValue)
        public static let loginDenied = Int(CURLE_LOGIN_DENIED.rawValue)
    }

    public enum Outcome: Sendable, Equatable {
        case ended
        case stopped
        case failed(String)
    }

    final class Context {
        let onHeader: (String) -> Void
        let onData: (UnsafeBufferPointer<UInt8>) -> Bool
        let keepGoing: () -> Bool
        var stoppedByUs = false
        init(onHeader: @escaping (String) -> Void, onData: @escaping (UnsafeBufferPointer<UInt8>) -> Bool, keepGoing: @escaping () -> Bool) {
            self.onHeader = onHeader
            self.onData = onData
            self.keepGoing = keepGoing
        }
    }

    private static let global: Bool = { curl_global_init(Int(CURL_GLOBAL_DEFAULT)) == CURLE_OK }()

    /// `onData` returns false to stop; `keepGoing` is asked about once a second (and per block).
    public static func get(_ url: String, options: Options, onHeader: @escaping (String) -> Void,
                           onData: @escaping (UnsafeBufferPointer<UInt8>) -> Bool, keepGoing: @escaping () -> Bool) -> Outcome {
        perform(url, options: options, onHeader: onHeader, onData: onData, keepGoing: keepGoing).outcome
    }

    /// As `get`, with libcurl's code. Only http and https are fetched, the URL and every
    /// redirect (a redirect to `file://` or `ftp://` fails with `Code.unsupportedProtocol`).
    public static func perform(_ url: String, options: Options, onHeader: @escaping (String) -> Void,
                               onData: @escaping (UnsafeBufferPointer<UInt8>) -> Bool, keepGoing: @escaping () -> Bool) -> Finished {
        guard global, let c = curl_easy_init() else { return Finished(outcome: .failed("libcurl could not be initialized"), code: -1) }
        defer { curl_easy_cleanup(c) }
        let ctx = Context(onHeader: onHeader, onData: onData, keepGoing: keepGoing)
        let user = Unmanaged.passUnretained(ctx).toOpaque()
        var list: UnsafeMutablePointer<curl_slist>?
        for h in options.headers { list = curl_slist_append(list, h) }
        defer { curl_slist_free_all(list) }
        var errbuf = [CChar](repeating: 0, count: Int(CURL_ERROR_SIZE) + 1)
        let rc: CURLcode = errbuf.withUnsafeMutableBufferPointer { eb in
            _ = crier_curl_set_string(c, CURLOPT_URL, url)
            _ = crier_curl_set_long(c, CURLOPT_NOSIGNAL, 1)
            _ = crier_curl_set_long(c, CURLOPT_FOLLOWLOCATION, 1)
            _ = crier_curl_set_long(c, CURLOPT_MAXREDIRS, options.maxRedirects)
            // (the _STR forms exist since libcurl 7.85: Debian 12 has 7.88, Debian 13 8.14)
            _ = crier_curl_set_string(c, CURLOPT_PROTOCOLS_STR, "http,https")
            _ = crier_curl_set_string(c, CURLOPT_REDIR_PROTOCOLS_STR, "http,https")
            _ = crier_curl_set_long(c, CURLOPT_FAILONERROR, 1)
            _ = crier_curl_set_long(c, CURLOPT_CONNECTTIMEOUT, options.connectTimeout)
            _ = crier_curl_set_long(c, CURLOPT_LOW_SPEED_LIMIT, max(1, options.minBytesPerSecond))
            _ = crier_curl_set_long(c, CURLOPT_LOW_SPEED_TIME, options.stallSeconds)
            _ = crier_curl_set_long(c, CURLOPT_NOPROGRESS, 0)
            _ = crier_curl_set_string(c, CURLOPT_USERAGENT, "crier/\(CrierVersion.string)")
            _ = crier_curl_set_pointer(c, CURLOPT_ERRORBUFFER, eb.baseAddress)
            if list != nil { _ = crier_curl_set_pointer(c, CURLOPT_HTTPHEADER, UnsafeMutableRawPointer(list)) }
            _ = crier_curl_set_pointer(c, CURLOPT_WRITEDATA, user)
            _ = crier_curl_set_pointer(c, CURLOPT_HEADERDATA, user)
            _ = crier_curl_set_pointer(c, CURLOPT_XFERINFODATA, user)
            _ = crier_curl_set_data_fn(c, CURLOPT_WRITEFUNCTION) { ptr, size, n, u in
                let ctx = Unmanaged<Context>.fromOpaque(u!).takeUnretainedValue()
                let count = size * n
                let ok = ptr.map { p in
                    p.withMemoryRebound(to: UInt8.self, capacity: count) { ctx.onData(UnsafeBufferPointer(start: $0, count: count)) }
                } ?? true
                if !ok || !ctx.keepGoing() { ctx.stoppedByUs = true; return 0 }
                return count
            }
            _ = crier_curl_set_data_fn(c, CURLOPT_HEADERFUNCTION) { ptr, size, n, u in
                let ctx = Unmanaged<Context>.fromOpaque(u!).takeUnretainedValue()
                let count = size * n
                if let p = ptr {
                    let line = p.withMemoryRebound(to: UInt8.self, capacity: count) { String(decoding: UnsafeBufferPointer(start: $0, count: count), as: UTF8.self) }
                    ctx.onHeader(line)
                }
                return count
            }
            _ = crier_curl_set_progress_fn(c) { u, _, _, _, _ in
                let ctx = Unmanaged<Context>.fromOpaque(u!).takeUnretainedValue()
                if !ctx.keepGoing() { ctx.stoppedByUs = true; return 1 }
                return 0
            }
            return curl_easy_perform(c)
        }
        let code = Int(rc.rawValue)
        if ctx.stoppedByUs { return Finished(outcome: .stopped, code: code) }
        if rc == CURLE_OK { return Finished(outcome: .ended, code: code) }
        let detail = String(decoding: errbuf.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        return Finished(outcome: .failed(detail.isEmpty ? String(cString: curl_easy_strerror(rc)) : detail), code: code)
    }

    public static var version: String { String(cString: curl_version()) }
}
