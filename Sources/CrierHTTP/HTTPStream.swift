import CCurl
import CrierCore

/// One HTTP(S) GET through libcurl, run on the caller's thread until the server ends it, it
/// stalls, or `keepGoing` says stop. Headers and body are handed over as they arrive.
public enum HTTPStream {
    public struct Options: Sendable {
        public var headers: [String] = []
        public var connectTimeout = 10
        /// Seconds with (nearly) no bytes before the transfer counts as stalled.
        public var stallSeconds = 10
        public init() {}
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
        guard global, let c = curl_easy_init() else { return .failed("libcurl could not be initialized") }
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
            _ = crier_curl_set_long(c, CURLOPT_MAXREDIRS, 5)
            _ = crier_curl_set_long(c, CURLOPT_FAILONERROR, 1)
            _ = crier_curl_set_long(c, CURLOPT_CONNECTTIMEOUT, options.connectTimeout)
            _ = crier_curl_set_long(c, CURLOPT_LOW_SPEED_LIMIT, 1)
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
        if ctx.stoppedByUs { return .stopped }
        if rc == CURLE_OK { return .ended }
        let detail = String(decoding: errbuf.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        return .failed(detail.isEmpty ? String(cString: curl_easy_strerror(rc)) : detail)
    }

    public static var version: String { String(cString: curl_version()) }
}
