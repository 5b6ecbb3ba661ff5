import CrierCore
import Glibc
@testable import CrierSystem

enum TestFS {
    /// A fresh directory under /tmp, short enough for unix socket paths.
    static func tempDir() -> String {
        var template = Array("/tmp/crier-XXXXXX".utf8CString)
        let p = template.withUnsafeMutableBufferPointer { mkdtemp($0.baseAddress!) }
        precondition(p != nil, "mkdtemp failed")
        return String(cString: p!)
    }

    static func remove(_ dir: String) {
        _ = system("rm -rf '\(dir)'")
    }
}

func monotonicNow() -> Double { Posix.monotonic() }

/// Polls `condition` every 5 ms until it holds or `timeout` seconds pass (real threads at work).
func eventually(timeout: Double = 5, _ condition: () -> Bool) -> Bool {
    let deadline = monotonicNow() + timeout
    while monotonicNow() < deadline {
        if condition() { return true }
        usleep(5000)
    }
    return condition()
}

/// A bound unix datagram socket standing in for systemd's notify socket.
final class DatagramReceiver {
    let fd: Int32
    let path: String

    init(path: String) {
        self.path = path
        fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue), 0)
        precondition(fd >= 0)
        let (addr, len) = Posix.unixAddress(path)!
        var a = addr
        let rc = withUnsafePointer(to: &a) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, len) } }
        precondition(rc == 0, "bind \(path): errno \(errno)")
    }

    deinit { close(fd) }

    /// The next datagram, or nil after `timeout` seconds.
    func receive(timeout: Double = 2) -> String? {
        var p = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        guard poll(&p, 1, Int32(timeout * 1000)) == 1 else { return nil }
        var buf = [UInt8](repeating: 0, count: 4096)
        let n = recv(fd, &buf, buf.count, 0)
        guard n >= 0 else { return nil }
        return String(decoding: buf[0..<n], as: UTF8.self)
    }

    /// Everything already waiting, without blocking.
    func drain() -> [String] {
        var out: [String] = []
        while let d = receive(timeout: 0) { out.append(d) }
        return out
    }
}

/// A pseudo-terminal: the sink writes to `slavePath`, the test reads (or does not) the master.
final class Pty {
    let master: Int32
    let slavePath: String
    private(set) var received: [UInt8] = []

    init() {
        // posix_openpt/grantpt/unlockpt/ptsname don't import; their Linux core is this.
        master = open("/dev/ptmx", O_RDWR | O_NOCTTY)
        precondition(master >= 0)
        var unlock: Int32 = 0
        precondition(ioctl(master, 0x4004_5431 /* TIOCSPTLCK */, &unlock) == 0)
        var n: UInt32 = 0
        precondition(ioctl(master, 0x8004_5430 /* TIOCGPTN */, &n) == 0)
        slavePath = "/dev/pts/\(n)"
        _ = fcntl(master, F_SETFL, fcntl(master, F_GETFL) | O_NONBLOCK)
    }

    private var closed = false
    func closeMaster() {
        if !closed { close(master) }
        closed = true
    }

    deinit { closeMaster() }

    /// Reads whatever is there, waiting up to `timeout` for the first byte.
    @discardableResult
    func read(timeout: Double) -> Int {
        var p = pollfd(fd: master, events: Int16(POLLIN), revents: 0)
        guard poll(&p, 1, Int32(timeout * 1000)) == 1 else { return 0 }
        var buf = [UInt8](repeating: 0, count: 65536)
        var total = 0
        while true {
            let n = Glibc.read(master, &buf, buf.count)
            if n <= 0 { break }
            received += buf[0..<n]
            total += n
        }
        return total
    }

    var text: String { String(decoding: received, as: UTF8.self) }

    /// Reads until the text contains `needle` or `timeout` seconds pass.
    func read(until needle: String, timeout: Double = 10) -> Bool {
        let deadline = monotonicNow() + timeout
        while monotonicNow() < deadline {
            if text.contains(needle) { return true }
            read(timeout: 0.05)
        }
        return text.contains(needle)
    }
}

func record(_ i: Int, _ message: String = "order spoken", level: LogLevel = .info) -> LogRecord {
    LogRecord(time: WallTime(unixMillis: 1_795_000_000_000 + Int64(i)), level: level, component: "audio",
              message: message, fields: [("n", String(i))])
}
