import CrierCore
import CrierPosix
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

    /// Removes the directory and what the tests put in it (files, sockets, symlinks). No
    /// system("rm"): a fork would inherit the tests' descriptors (keeping a pty master open)
    /// and system() ignores SIGINT while it runs.
    static func remove(_ dir: String) {
        if let d = opendir(dir) {
            while let e = readdir(d) {
                let name = withUnsafeBytes(of: e.pointee.d_name) { String(decoding: $0.prefix(while: { $0 != 0 }), as: UTF8.self) }
                if name != "." && name != ".." { unlink(dir + "/" + name) }
            }
            closedir(d)
        }
        rmdir(dir)
    }
}

func monotonicNow() -> Double { Monotonic.now() }

/// Checks `condition` every 5 ms until it holds or `timeout` seconds pass (real threads at
/// work). Suspends instead of blocking, so Swift's small pool stays free for the code under test.
func eventually(timeout: Double = 5, _ condition: () -> Bool) async -> Bool {
    let deadline = monotonicNow() + timeout
    while monotonicNow() < deadline {
        if condition() { return true }
        try? await Task.sleep(for: .milliseconds(5))
    }
    return condition()
}

/// Runs a blocking call (a control client, as in the CLI process) on its own thread.
func offPool<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { (c: CheckedContinuation<T, any Error>) in
        do {
            try PosixThread.detach(name: "test-blocking") { c.resume(with: Result { try body() }) }
        } catch {
            c.resume(throwing: error)
        }
    }
}

/// A bound unix datagram socket standing in for systemd's notify socket.
final class DatagramReceiver {
    let fd: Int32
    let path: String

    init(path: String) {
        self.path = path
        fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
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
        master = open("/dev/ptmx", O_RDWR | O_NOCTTY | O_CLOEXEC)
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

    /// Reads whatever is there now.
    @discardableResult
    func readAvailable() -> Int {
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
    func read(until needle: String, timeout: Double = 10) async -> Bool {
        await read(timeout: timeout) { $0.contains(needle) }
    }

    /// Reads until `done(text)` or `timeout` seconds pass.
    func read(timeout: Double = 10, until done: (String) -> Bool) async -> Bool {
        let deadline = monotonicNow() + timeout
        while monotonicNow() < deadline {
            readAvailable()
            if done(text) { return true }
            try? await Task.sleep(for: .milliseconds(5))
        }
        return done(text)
    }
}

func record(_ i: Int, _ message: String = "order spoken", level: LogLevel = .info) -> LogRecord {
    LogRecord(time: WallTime(unixMillis: 1_795_000_000_000 + Int64(i)), level: level, component: "audio",
              message: message, fields: [("n", String(i))])
}
