import CMicroHTTPD
import CrierCore
import CrierPosix
import Dispatch
import Glibc
import Synchronization

/// The local page's HTTP server: libmicrohttpd behind one thin adapter (docs/setup.md). MHD's
/// own worker threads (epoll) accept and read; every rule is in CrierCore's `WebApp`, reached
/// through `handler`. Bounded: `connectionLimit` connections, `perIPLimit` from one address,
/// idle ones closed after `timeout`, 32 KiB of header memory each, and a body larger than
/// `HTTPRules.maxBody` refused with 413 from its Content-Length before a byte of it is read
/// (one without a length is counted and dropped, never kept).
public final class WebServer: Sendable {
    public struct Limits: Sendable {
        public var threads = 2
        public var connectionLimit = 64
        public var perIPLimit = 16
        public var timeout = 10
        public var memoryPerConnection = 32 * 1024
        /// Longest a handler may take before the client gets 503.
        public var handlerTimeout = 10.0
        public init() {}
    }

    public typealias Handler = @Sendable (WebRequest) async -> WebResponse

    let handler: Handler
    let limits: Limits
    let log: Logger
    /// The MHD daemon, as an address (a C pointer is not Sendable; it is only used by start/stop).
    private let daemon: Mutex<UInt?>
    private let listenFD: Int32
    /// Passed by systemd (crier.socket): kept open (not ours to close) across a reload's exec.
    private let inherited: Bool
    public let address: String

    /// Serves on `listen`, or on the socket systemd passed when it is listening on that port.
    public init(listen: WebConfig.Listen, limits: Limits = Limits(), log: Logger, handler: @escaping Handler) throws(SystemError) {
        self.handler = handler
        self.limits = limits
        self.log = log
        var fd: Int32 = -1
        var inherited = false
        if let passed = Self.systemdSocket(port: listen.port) {
            fd = passed
            inherited = true
        } else {
            fd = try Self.bind(listen)
        }
        listenFD = fd
        self.inherited = inherited
        address = listen.description + (inherited ? " (socket from systemd)" : "")
        daemon = Mutex(nil)
        let me = Unmanaged.passUnretained(self).toOpaque()
        guard let d = crier_mhd_start(fd, UInt32(limits.threads), UInt32(limits.connectionLimit), UInt32(limits.perIPLimit),
                                      UInt32(limits.timeout), limits.memoryPerConnection, webAccess, webCompleted, me) else {
            if !inherited { Glibc.close(fd) }
            throw SystemError("libmicrohttpd MHD_start_daemon on \(listen)", code: EINVAL)
        }
        daemon.withLock { $0 = UInt(bitPattern: d) }
        if inherited { _ = fcntl(fd, F_SETFD, 0) }  // still there for the new image after a reload
    }

    // MHD's threads hold a pointer to this object: they are stopped before it goes.
    deinit { stop() }

    /// Stops the worker threads (requests in progress are cut); the socket is closed unless
    /// systemd passed it.
    public func stop() {
        guard let raw = daemon.withLock({ d -> UInt? in defer { d = nil }; return d }),
              let d = OpaquePointer(bitPattern: raw) else { return }
        _ = MHD_quiesce_daemon(d)
        MHD_stop_daemon(d)
        if !inherited { Glibc.close(listenFD) }
    }

    /// A listening TCP socket on `port` among those systemd passed (LISTEN_FDS, LISTEN_PID).
    static func systemdSocket(port: Int) -> Int32? {
        guard let pid = FileIO.env("LISTEN_PID").flatMap(Int32.init), pid == getpid(),
              let n = FileIO.env("LISTEN_FDS").flatMap(Int32.init), n > 0, n < 64 else { return nil }
        for fd in 3..<(3 + n) {
            var ss = sockaddr_storage()
            var len = socklen_t(MemoryLayout<sockaddr_storage>.size)
            let ok = withUnsafeMutablePointer(to: &ss) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &len) } } == 0
            guard ok else { continue }
            var p: UInt16 = 0
            if ss.ss_family == sa_family_t(AF_INET) {
                p = withUnsafePointer(to: &ss) { $0.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { UInt16(bigEndian: $0.pointee.sin_port) } }
            } else if ss.ss_family == sa_family_t(AF_INET6) {
                p = withUnsafePointer(to: &ss) { $0.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { UInt16(bigEndian: $0.pointee.sin6_port) } }
            }
            if Int(p) == port {
                _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
                return fd
            }
        }
        return nil
    }

    static func bind(_ l: WebConfig.Listen) throws(SystemError) -> Int32 {
        let v6 = l.host.contains(":")
        let fd = socket(v6 ? AF_INET6 : AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
        guard fd >= 0 else { throw SystemError("socket for the local page") }
        var one: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        var rc: Int32
        if v6 {
            var a = sockaddr_in6()
            a.sin6_family = sa_family_t(AF_INET6)
            a.sin6_port = UInt16(l.port).bigEndian
            guard inet_pton(AF_INET6, l.host, &a.sin6_addr) == 1 else {
                Glibc.close(fd)
                throw SystemError("web.listen address \(l.host)", code: EINVAL)
            }
            rc = withUnsafePointer(to: &a) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in6>.size)) } }
        } else {
            var a = sockaddr_in()
            a.sin_family = sa_family_t(AF_INET)
            a.sin_port = UInt16(l.port).bigEndian
            guard inet_pton(AF_INET, l.host, &a.sin_addr) == 1 else {
                Glibc.close(fd)
                throw SystemError("web.listen address \(l.host)", code: EINVAL)
            }
            rc = withUnsafePointer(to: &a) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
        }
        guard rc == 0, listen(fd, 64) == 0 else {
            let e = SystemError("bind \(l)")
            Glibc.close(fd)
            throw e
        }
        return fd
    }

    /// Runs the async handler from MHD's worker thread and waits for it, bounded.
    func run(_ r: WebRequest) -> WebResponse {
        let result = Mutex<WebResponse?>(nil)
        let done = DispatchSemaphore(value: 0)
        let handler = self.handler
        let task = Task {
            let resp = await handler(r)
            result.withLock { $0 = resp }
            done.signal()
        }
        if done.wait(timeout: .now() + limits.handlerTimeout) == .timedOut {
            task.cancel()
            return WebResponse(status: 503, headers: [("Content-Type", "text/plain; charset=utf-8")], body: Array("busy; try again\n".utf8))
        }
        return result.withLock { $0 } ?? WebResponse(status: 500)
    }
}

/// One request's state between MHD's calls (the body so far); owned by MHD's `con_cls` until
/// the completion callback releases it. Touched by the one worker thread serving the connection.
final class WebRequestBox {
    var body: [UInt8] = []
    var tooLarge = false
}

// libmicrohttpd's closed C enums, by value (the importer's case names differ between versions).
private let mhdYes = MHD_Result(rawValue: 1)!
private let mhdNo = MHD_Result(rawValue: 0)!
private let headerKind = MHD_ValueKind(rawValue: 1)!
private let argumentKind = MHD_ValueKind(rawValue: 8)!

private func header(_ c: OpaquePointer, _ name: String) -> String? {
    MHD_lookup_connection_value(c, headerKind, name).map { String(cString: $0) }
}

private func send(_ c: OpaquePointer, _ r: WebResponse) -> MHD_Result {
    let resp: OpaquePointer? = r.body.withUnsafeBytes { b in crier_mhd_response(b.baseAddress, b.count) }
    guard let resp else { return mhdNo }
    // Header values come from CrierCore, never from the request; checked anyway (no CR/LF).
    for (k, v) in r.headers where HTTPRules.headerSafe(k) && HTTPRules.headerSafe(v) {
        _ = MHD_add_response_header(resp, k, v)
    }
    let rc = MHD_queue_response(c, UInt32(r.status), resp)
    MHD_destroy_response(resp)
    return rc
}

private let webAccess: crier_mhd_access_fn = { cls, connection, url, method, _, upload, uploadSize, conCls in
    guard let cls, let connection, let url, let method, let uploadSize, let conCls else { return mhdNo }
    let server = Unmanaged<WebServer>.fromOpaque(cls).takeUnretainedValue()
    if conCls.pointee == nil {
        let box = WebRequestBox()
        conCls.pointee = Unmanaged.passRetained(box).toOpaque()
        // Refused from its length, before the body is read (MHD then closes the connection).
        if let len = header(connection, "Content-Length"), let n = Int(len.trimmed), n > HTTPRules.maxBody {
            return send(connection, WebResponse(status: 413, headers: [("Content-Type", "text/plain; charset=utf-8"), ("Connection", "close")],
                                                body: Array("request body over \(HTTPRules.maxBody) bytes\n".utf8)))
        }
        return mhdYes
    }
    let box = Unmanaged<WebRequestBox>.fromOpaque(conCls.pointee!).takeUnretainedValue()
    if uploadSize.pointee > 0 {
        let n = uploadSize.pointee
        if !box.tooLarge, box.body.count + n <= HTTPRules.maxBody, let upload {
            upload.withMemoryRebound(to: UInt8.self, capacity: n) { box.body.append(contentsOf: UnsafeBufferPointer(start: $0, count: n)) }
        } else {
            box.tooLarge = true
            box.body = []
        }
        uploadSize.pointee = 0
        return mhdYes
    }
    if box.tooLarge {
        return send(connection, WebResponse(status: 413, headers: [("Content-Type", "text/plain; charset=utf-8")],
                                            body: Array("request body over \(HTTPRules.maxBody) bytes\n".utf8)))
    }
    var headers: [String: String] = [:]
    for name in ["host", "cookie", "accept-language", "origin", "content-type"] {
        if let v = header(connection, name) { headers[name] = v }
    }
    let query = MHD_lookup_connection_value(connection, argumentKind, "lang").map { "lang=" + String(cString: $0) } ?? ""
    var addr = [CChar](repeating: 0, count: 64)
    crier_mhd_client(connection, &addr, addr.count)
    let client = String(decoding: addr.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    let request = WebRequest(method: String(cString: method), path: String(cString: url), query: query,
                             headers: headers, body: box.body, client: client)
    return send(connection, server.run(request))
}

private let webCompleted: crier_mhd_completed_fn = { _, _, conCls, _ in
    guard let conCls, let p = conCls.pointee else { return }
    Unmanaged<WebRequestBox>.fromOpaque(p).release()
    conCls.pointee = nil
}
