import CrierCore
import CrierPosix
@testable import CrierWeb
import Glibc
import Synchronization
import Testing

/// The adapter against real sockets on loopback: limits hold before any rule runs.
@Suite struct WebServerTests {
    static func start(_ handler: @escaping WebServer.Handler = { _ in WebResponse(status: 200, headers: [("Content-Type", "text/plain")], body: Array("hi".utf8)) }) throws -> (WebServer, Int) {
        for port in (41000..<41100).shuffled() {
            if let s = try? WebServer(listen: WebConfig.Listen(host: "127.0.0.1", port: port), log: LogHub(clock: { WallTime(unixMillis: 0) }).logger("web"), handler: handler) {
                return (s, port)
            }
        }
        throw SystemError("no free port", code: EADDRINUSE)
    }

    /// Sends `request` bytes, reads the answer until the server closes or 3 s pass.
    static func exchange(_ port: Int, _ request: [UInt8], closeAfterSend: Bool = false) -> String {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var a = sockaddr_in()
        a.sin_family = sa_family_t(AF_INET)
        a.sin_port = UInt16(port).bigEndian
        a.sin_addr.s_addr = inet_addr("127.0.0.1")
        let rc = withUnsafePointer(to: &a) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
        guard rc == 0 else { return "" }
        var tv = timeval(tv_sec: 3, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
        _ = request.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        if closeAfterSend { shutdown(fd, Int32(SHUT_WR)) }
        var out: [UInt8] = []
        var buf = [UInt8](repeating: 0, count: 4096)
        while true {
            let n = recv(fd, &buf, buf.count, 0)
            if n <= 0 { break }
            out += buf[0..<n]
        }
        return String(decoding: out, as: UTF8.self)
    }

    @Test func servesAGet() throws {
        let (s, port) = try Self.start()
        defer { s.stop() }
        let r = Self.exchange(port, Array("GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n".utf8))
        #expect(r.hasPrefix("HTTP/1.1 200"))
        #expect(r.hasSuffix("hi"))
    }

    @Test func aOneMegabytePostIsRefusedFromItsLengthUnread() throws {
        let seen = Mutex(0)
        let (s, port) = try Self.start { _ in seen.withLock { $0 += 1 }; return WebResponse(status: 200) }
        defer { s.stop() }
        // Only the head is sent: a 413 arrives without the server waiting for the megabyte.
        let head = "POST /api/settings HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: 1048576\r\n\r\n"
        let t0 = Monotonic.now()
        let r = Self.exchange(port, Array(head.utf8))
        #expect(r.hasPrefix("HTTP/1.1 413"), "got \(r.prefix(80))")
        #expect(Monotonic.now() - t0 < 2.5)
        #expect(seen.withLock { $0 } == 0)
    }

    @Test func aChunkedBodyOverTheCapIsRefusedAndNotKept() throws {
        let seen = Mutex(0)
        let (s, port) = try Self.start { _ in seen.withLock { $0 += 1 }; return WebResponse(status: 200) }
        defer { s.stop() }
        var req = Array("POST /api/settings HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n".utf8)
        let chunk = [UInt8](repeating: UInt8(ascii: "a"), count: 8192)
        for _ in 0..<4 { req += Array("2000\r\n".utf8) + chunk + Array("\r\n".utf8) }
        req += Array("0\r\n\r\n".utf8)
        let r = Self.exchange(port, req)
        #expect(r.hasPrefix("HTTP/1.1 413"), "got \(r.prefix(80))")
        #expect(seen.withLock { $0 } == 0)
    }

    @Test func headersOverTheMemoryLimitAreRefusedAndTheServerGoesOn() throws {
        let seen = Mutex(0)
        let (s, port) = try Self.start { _ in seen.withLock { $0 += 1 }; return WebResponse(status: 200) }
        defer { s.stop() }
        let big = "GET / HTTP/1.1\r\nHost: x\r\nX-Big: " + String(repeating: "a", count: 64 * 1024) + "\r\nConnection: close\r\n\r\n"
        let r = Self.exchange(port, Array(big.utf8))
        #expect(r.isEmpty || r.hasPrefix("HTTP/1.1 431") || r.hasPrefix("HTTP/1.1 413"), "got \(r.prefix(80))")
        #expect(seen.withLock { $0 } == 0)
        #expect(Self.exchange(port, Array("GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n".utf8)).hasPrefix("HTTP/1.1 200"))
    }

    @Test func responseHeadersWithALineBreakAreNotSent() throws {
        let (s, port) = try Self.start { _ in WebResponse(status: 200, headers: [("X-A", "1\r\nSet-Cookie: evil=1"), ("X-B", "ok")], body: []) }
        defer { s.stop() }
        let r = Self.exchange(port, Array("GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n".utf8))
        #expect(r.hasPrefix("HTTP/1.1 200"))
        #expect(!r.contains("evil"))
        #expect(r.contains("X-B: ok"))
    }
}
