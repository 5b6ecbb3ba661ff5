import CrierCore
import CrierPosix
import Glibc

/// The `crier status` / `crier say` side of the control socket.
public enum ControlClient {
    /// `crier status` (text) or `crier status --json` (one JSON line), as printed.
    public static func status(json: Bool, path: String = ControlServer.defaultPath,
                              timeout: Double = 10) throws(ControlError) -> String {
        try request(json ? .status : .statusText, path: path, timeout: timeout)
    }

    /// Speaks through the running daemon; returns its confirmation. `.notRunning` means no
    /// daemon is up: the caller may open the device itself.
    public static func say(_ lang: Lang, _ text: String, path: String = ControlServer.defaultPath,
                           timeout: Double = 30) throws(ControlError) -> String {
        let answer = try request(.say(lang, text), path: path, timeout: timeout)
        var line = Substring(answer)
        if line.hasSuffix("\n") { line = line.dropLast() }
        if line.hasPrefix("ok") { return String(line.dropFirst(2).drop(while: { $0 == " " })) }
        if line.hasPrefix("error ") { throw .refused(String(line.dropFirst(6))) }
        throw .refused("unexpected answer: \(line)")
    }

    /// Sends one request, returns the whole answer.
    public static func request(_ request: ControlRequest, path: String = ControlServer.defaultPath,
                               timeout: Double = 10) throws(ControlError) -> String {
        let fd: Int32
        switch connect(path: path) {
        case .success(let f): fd = f
        case .failure(let e): throw e
        }
        defer { close(fd) }
        var tv = timeval(tv_sec: Int(timeout), tv_usec: Int((timeout - Double(Int(timeout))) * 1e6))
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
        ControlServer.reply(fd, request.line + "\n")
        shutdown(fd, Int32(SHUT_WR))
        var out: [UInt8] = []
        var buf = [UInt8](repeating: 0, count: 16384)
        while true {
            let n = recv(fd, &buf, buf.count, 0)
            if n > 0 { out += buf[0..<n]; continue }
            if n == 0 { break }
            if errno == EINTR { continue }
            if errno == EAGAIN || errno == EWOULDBLOCK { throw .timedOut(path: path) }
            throw .system(SystemError("recv", path: path))
        }
        return String(decoding: out, as: UTF8.self)
    }

    static func connect(path: String) -> Result<Int32, ControlError> {
        guard let (addr, len) = Posix.unixAddress(path) else {
            return .failure(.system(SystemError("control socket", path: path, code: ENAMETOOLONG)))
        }
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { return .failure(.system(SystemError("socket"))) }
        var a = addr
        let rc = withUnsafePointer(to: &a) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(fd, $0, len) } }
        if rc == 0 { return .success(fd) }
        let e = errno
        close(fd)
        switch e {
        case ENOENT, ECONNREFUSED, ENOTDIR: return .failure(.notRunning(path: path))
        case EACCES, EPERM: return .failure(.permissionDenied(path: path))
        default: return .failure(.system(SystemError("connect", path: path, code: e)))
        }
    }
}
