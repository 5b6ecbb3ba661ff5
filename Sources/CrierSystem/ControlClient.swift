import CrierCore
import CrierPosix
import Glibc

/// The `crier status` / `crier say` side of the control socket.
public enum ControlClient {
    /// `crier status` (text) or `crier status --json` (one JSON line), as printed.
    /// An answer starting with `error ` (the daemon busy, a bad request) is thrown, never
    /// returned as if it were the status; with `json` the answer must be one JSON object.
    public static func status(json: Bool, path: String = ControlServer.defaultPath,
                              timeout: Double = 10) throws(ControlError) -> String {
        let answer = try request(json ? .status : .statusText, path: path, timeout: timeout)
        try checkError(answer)
        if json && !answer.hasPrefix("{") {
            throw .refused("the daemon answered with something other than JSON: \(ControlRequest.oneLine(String(answer.prefix(80))))")
        }
        if answer.isEmpty { throw .refused("the daemon closed the connection without an answer") }
        return answer
    }

    static func checkError(_ answer: String) throws(ControlError) {
        guard answer.hasPrefix("error ") else { return }
        var line = Substring(answer.dropFirst(6))
        if line.hasSuffix("\n") { line = line.dropLast() }
        if line.hasPrefix("busy") { throw .busy(String(line)) }
        throw .refused(String(line))
    }

    /// Speaks through the running daemon; returns its confirmation. `.notRunning` means no
    /// daemon is up: the caller may open the device itself.
    public static func say(_ lang: Lang, _ text: String, path: String = ControlServer.defaultPath,
                           timeout: Double = 30) throws(ControlError) -> String {
        let answer = try request(.say(lang, text), path: path, timeout: timeout)
        var line = Substring(answer)
        if line.hasSuffix("\n") { line = line.dropLast() }
        if line.hasPrefix("ok") { return String(line.dropFirst(2).drop(while: { $0 == " " })) }
        try checkError(answer)
        throw .refused("unexpected answer: \(line)")
    }

    /// Sends one request, returns the whole answer.
    public static func request(_ request: ControlRequest, path requestedPath: String = ControlServer.defaultPath,
                               timeout: Double = 10) throws(ControlError) -> String {
        let fd: Int32
        let path: String
        switch connectAny(configured: requestedPath) {
        case .success(let f): (fd, path) = f
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
            // A peer that closed with our request unread resets the connection: keep what it said.
            if errno == ECONNRESET && !out.isEmpty { break }
            if errno == ECONNRESET { throw .refused("the daemon at \(path) closed the connection without an answer") }
            throw .system(SystemError("recv", path: path))
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// The first of `ControlPath.candidates` that answers (or refuses for a reason other than
    /// "nobody there"); `.notRunning` naming every path tried when none does.
    static func connectAny(configured: String) -> Result<(Int32, String), ControlError> {
        let all = ControlPath.candidates(configured: configured)
        var denied: ControlError?
        for p in all {
            switch connect(path: p) {
            case .success(let fd): return .success((fd, p))
            case .failure(.notRunning): continue
            // The system daemon's socket may be closed to this user while their own daemon
            // (started by hand) answers at the next path.
            case .failure(let e) where e == .permissionDenied(path: p): denied = denied ?? e
            case .failure(let e): return .failure(e)
            }
        }
        return .failure(denied ?? .notRunning(path: all.joined(separator: " or ")))
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
