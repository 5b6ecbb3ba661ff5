import CrierCore
import CrierPosix
import Glibc

/// Unix milliseconds, for ids that must differ across restarts.
package func wallMillis() -> Int64 { WallClock.now().unixMillis }

/// `connection refused` (strerror, first letter lowered so it reads inside a sentence; it
/// shadows CrierPosix's plain strerror text in this module, on purpose).
func errnoText(_ e: Int32) -> String {
    guard let p = strerror(e) else { return "error \(e)" }
    var s = String(cString: p)
    if let f = s.first, f.isUppercase, s.dropFirst().first?.isLowercase ?? false {
        s = f.lowercased() + s.dropFirst()
    }
    return s
}

/// A socket failure worded for the log: what was attempted and why it failed.
package struct SocketError: Error, Sendable, CustomStringConvertible {
    package var message: String
    init(_ message: String) { self.message = message }
    package var description: String { message }
}

/// One resolved address (used only on the thread that resolved it).
package struct SocketAddress: CustomStringConvertible {
    package var storage = sockaddr_storage()
    package var length: socklen_t = 0

    package var family: Int32 { Int32(storage.ss_family) }

    package var description: String {
        var host = [CChar](repeating: 0, count: Int(NI_MAXHOST))
        var serv = [CChar](repeating: 0, count: Int(NI_MAXSERV))
        var s = storage
        let rc = withUnsafePointer(to: &s) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                getnameinfo($0, length, &host, socklen_t(host.count), &serv, socklen_t(serv.count), NI_NUMERICHOST | NI_NUMERICSERV)
            }
        }
        guard rc == 0 else { return "?" }
        let h = String(decoding: host.prefix(while: { $0 != 0 }).map { UInt8(bitPattern: $0) }, as: UTF8.self)
        let p = String(decoding: serv.prefix(while: { $0 != 0 }).map { UInt8(bitPattern: $0) }, as: UTF8.self)
        return h.contains(":") ? "[\(h)]:\(p)" : "\(h):\(p)"
    }

    package init() {}

    init(raw: UnsafePointer<sockaddr>, length: socklen_t) {
        self.length = length
        withUnsafeMutableBytes(of: &storage) { dst in
            dst.copyMemory(from: UnsafeRawBufferPointer(start: raw, count: Int(length)))
        }
    }

    /// getaddrinfo, every time (DHCP and DNS change under a shop's box).
    package static func resolve(host: String, port: Int, passive: Bool = false) -> Result<[SocketAddress], SocketError> {
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        hints.ai_flags = AI_NUMERICSERV | (passive ? AI_PASSIVE : 0)
        var res: UnsafeMutablePointer<addrinfo>?
        let rc = getaddrinfo(host, String(port), &hints, &res)
        guard rc == 0 else {
            let why = rc == EAI_SYSTEM ? errnoText(errno) : String(cString: gai_strerror(rc))
            return .failure(SocketError("cannot resolve \(host): \(why.lowercasedFirst)"))
        }
        defer { freeaddrinfo(res) }
        var out: [SocketAddress] = []
        var p = res
        while let ai = p {
            if let a = ai.pointee.ai_addr { out.append(SocketAddress(raw: a, length: ai.pointee.ai_addrlen)) }
            p = ai.pointee.ai_next
        }
        return out.isEmpty ? .failure(SocketError("cannot resolve \(host): no addresses")) : .success(out)
    }
}

extension String {
    var lowercasedFirst: String {
        guard let f = first, f.isUppercase, dropFirst().first?.isLowercase ?? true else { return self }
        return f.lowercased() + dropFirst()
    }
}

package enum Sock {
    package static func setNonBlocking(_ fd: Int32) {
        let flags = fcntl(fd, F_GETFL)
        _ = fcntl(fd, F_SETFL, flags | O_NONBLOCK)
    }

    package static func setOption(_ fd: Int32, _ level: Int32, _ name: Int32, _ value: Int32) {
        var v = value
        _ = setsockopt(fd, level, name, &v, socklen_t(MemoryLayout<Int32>.size))
    }

    /// Non-blocking connect, waiting at most `timeout` s; gives up early when `wake` fires and
    /// `stopping()` says so (other wake-ups, such as an ack being queued, are ignored).
    static func connect(_ addr: SocketAddress, timeout: Double, wake: WakePipe, stopping: () -> Bool) -> Result<Int32, SocketError> {
        let wakeFD = wake.readFD
        let fd = socket(addr.family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
        guard fd >= 0 else { return .failure(SocketError(errnoText(errno))) }
        var a = addr
        let rc = withUnsafePointer(to: &a.storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(fd, $0, addr.length) }
        }
        if rc != 0 && errno != EINPROGRESS {
            let e = errno
            close(fd)
            return .failure(SocketError(errnoText(e)))
        }
        if rc != 0 {
            var fds = [pollfd(fd: fd, events: Int16(POLLOUT), revents: 0), pollfd(fd: wakeFD, events: Int16(POLLIN), revents: 0)]
            let deadline = Monotonic.now() + timeout
            while true {
                let left = deadline - Monotonic.now()
                if left <= 0 {
                    close(fd)
                    return .failure(SocketError("no answer within \(ConfigValue.fmt(timeout)) s (connect timed out)"))
                }
                let n = poll(&fds, 2, Int32(min(left * 1000 + 1, 60_000)))
                if n < 0 && errno == EINTR { continue }
                if fds[1].revents != 0 {
                    wake.drain()
                    if stopping() {
                        close(fd)
                        return .failure(SocketError("stopped"))
                    }
                }
                if n > 0 && fds[0].revents != 0 { break }
            }
            var err: Int32 = 0
            var len = socklen_t(MemoryLayout<Int32>.size)
            getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len)
            if err != 0 {
                close(fd)
                return .failure(SocketError(errnoText(err)))
            }
        }
        setOption(fd, Int32(IPPROTO_TCP), TCP_NODELAY, 1)
        setOption(fd, SOL_SOCKET, SO_KEEPALIVE, 1)
        return .success(fd)
    }

    package enum ReadResult {
        case data(Int)
        case wouldBlock
        case eof
        case failed(String)
    }

    static func read(_ fd: Int32, into buf: inout [UInt8]) -> ReadResult {
        let n = buf.withUnsafeMutableBytes { Glibc.recv(fd, $0.baseAddress, $0.count, 0) }
        if n > 0 { return .data(n) }
        if n == 0 { return .eof }
        let e = errno
        if e == EAGAIN || e == EWOULDBLOCK || e == EINTR { return .wouldBlock }
        return .failed(errnoText(e))
    }

    /// Writes as much of `out` as the socket takes now and removes it. nil on success.
    static func flush(_ fd: Int32, _ out: inout [UInt8]) -> String? {
        while !out.isEmpty {
            let n = out.withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if n > 0 {
                out.removeFirst(n)
                continue
            }
            let e = errno
            if e == EAGAIN || e == EWOULDBLOCK { return nil }
            if e == EINTR { continue }
            return errnoText(e)
        }
        return nil
    }
}

