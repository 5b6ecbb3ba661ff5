import CrierCore
import Glibc

/// A failed system call, worded for the log: `open /dev/serial0: No such file or directory (errno 2)`.
public struct SystemError: Error, Sendable, Equatable, CustomStringConvertible {
    public var operation: String
    public var path: String?
    public var code: Int32

    public init(_ operation: String, path: String? = nil, code: Int32 = errno) {
        self.operation = operation
        self.path = path
        self.code = code
    }

    public var description: String {
        let what = path.map { "\(operation) \($0)" } ?? operation
        return "\(what): \(String(cString: strerror(code))) (errno \(code))"
    }
}

enum Posix {
    /// CLOCK_MONOTONIC in seconds.
    static func monotonic() -> Double {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return Double(ts.tv_sec) + Double(ts.tv_nsec) / 1e9
    }

    /// The wall clock for log stamps.
    static func wallTime() -> WallTime {
        var ts = timespec()
        clock_gettime(CLOCK_REALTIME, &ts)
        return WallTime(unixMillis: Int64(ts.tv_sec) * 1000 + Int64(ts.tv_nsec) / 1_000_000)
    }

    static func env(_ name: String) -> String? {
        getenv(name).map { String(cString: $0) }
    }

    /// The whole buffer to a blocking fd, retrying short writes and EINTR.
    @discardableResult
    static func writeAll(_ fd: Int32, _ bytes: [UInt8]) -> Bool {
        bytes.withUnsafeBytes { buf in
            var off = 0
            while off < buf.count {
                let n = Glibc.write(fd, buf.baseAddress! + off, buf.count - off)
                if n > 0 { off += n } else if n < 0 && errno == EINTR { continue } else { return false }
            }
            return true
        }
    }

    /// Milliseconds for poll() until `deadline` (monotonic seconds), at least 0; -1 for none.
    static func pollTimeout(until deadline: Double?) -> Int32 {
        guard let deadline else { return -1 }
        let ms = (deadline - monotonic()) * 1000
        return ms <= 0 ? 0 : Int32(min(ms.rounded(.up), 3_600_000))
    }

    /// A unix socket address for `path`; a leading "@" names an abstract socket.
    static func unixAddress(_ path: String) -> (sockaddr_un, socklen_t)? {
        var addr = sockaddr_un()
        addr.sun_family = sa_family_t(AF_UNIX)
        var bytes = Array(path.utf8)
        let abstract = bytes.first == UInt8(ascii: "@")
        if abstract { bytes[0] = 0 }
        let capacity = MemoryLayout.size(ofValue: addr.sun_path)
        guard !bytes.isEmpty, bytes.count < capacity else { return nil }
        withUnsafeMutableBytes(of: &addr.sun_path) { p in
            p.copyBytes(from: bytes)
            if !abstract { p[bytes.count] = 0 }
        }
        let base = MemoryLayout<sockaddr_un>.offset(of: \.sun_path)!
        // Abstract names are exactly their bytes long; paths include the terminating NUL.
        let len = base + bytes.count + (abstract ? 0 : 1)
        return (addr, socklen_t(len))
    }
}

/// A detached POSIX thread for blocking work, outside Swift's cooperative pool.
enum SystemThread {
    private final class Box {
        let body: @Sendable () -> Void
        init(_ body: @escaping @Sendable () -> Void) { self.body = body }
    }

    static func start(name: String, _ body: @escaping @Sendable () -> Void) throws(SystemError) {
        let box = Unmanaged.passRetained(Box(body)).toOpaque()
        var attr = pthread_attr_t()
        pthread_attr_init(&attr)
        defer { pthread_attr_destroy(&attr) }
        pthread_attr_setdetachstate(&attr, Int32(PTHREAD_CREATE_DETACHED))
        var tid = pthread_t()
        let rc = pthread_create(&tid, &attr, { arg in
            let box = Unmanaged<Box>.fromOpaque(arg!).takeRetainedValue()
            box.body()
            return nil
        }, box)
        guard rc == 0 else {
            Unmanaged<Box>.fromOpaque(box).release()
            throw SystemError("pthread_create \(name)", code: rc)
        }
    }
}

/// A wake-up another thread can wait for in poll(): a non-blocking self-pipe.
final class Latch: Sendable {
    private let readFD: Int32
    private let writeFD: Int32

    init() throws(SystemError) {
        var fds: [Int32] = [-1, -1]
        guard pipe(&fds) == 0 else { throw SystemError("pipe") }
        for fd in fds {
            _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
            _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
        }
        readFD = fds[0]
        writeFD = fds[1]
    }

    deinit {
        close(readFD)
        close(writeFD)
    }

    /// The end to poll for POLLIN.
    var descriptor: Int32 { readFD }

    /// Never blocks: a full pipe already means "wake up".
    func signal() {
        var one: UInt8 = 1
        _ = Glibc.write(writeFD, &one, 1)
    }

    /// Clears the pending signals.
    func drain() {
        var buf = [UInt8](repeating: 0, count: 64)
        while Glibc.read(readFD, &buf, buf.count) > 0 {}
    }

    /// True once signalled (consuming it), false when `timeout` seconds passed first.
    func wait(timeout: Double?) -> Bool {
        let deadline = timeout.map { Posix.monotonic() + $0 }
        while true {
            var p = pollfd(fd: readFD, events: Int16(POLLIN), revents: 0)
            let r = poll(&p, 1, Posix.pollTimeout(until: deadline))
            if r > 0 {
                drain()
                return true
            }
            if r == 0 { return false }
            if errno != EINTR { return false }
        }
    }
}

/// The wall clock for log stamps (CLOCK_REALTIME, ms).
public enum SystemWallClock {
    public static func now() -> WallTime { Posix.wallTime() }
}
