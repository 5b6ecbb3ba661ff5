import CrierCore
import CrierPosix
import Glibc
import Synchronization
@testable import CrierLink
@testable import CrierSim

/// Polls `condition` until it holds or `timeout` passes. Real sockets and threads are under
/// test here, so waiting on the wall clock is the point; the deadline keeps failures quick.
func eventually(_ timeout: Double = 5, _ condition: () -> Bool) -> Bool {
    let end = Monotonic.now() + timeout
    while Monotonic.now() < end {
        if condition() { return true }
        usleep(2000)
    }
    return condition()
}

/// Collects what the link reports.
final class EventSink: Sendable {
    private let events = Mutex<[LinkEvent]>([])
    var all: [LinkEvent] { events.withLock { $0 } }
    func add(_ e: LinkEvent) { events.withLock { $0.append(e) } }
    var orders: [Order] { all.compactMap { if case .order(let o) = $0 { o } else { nil } } }
    var connects: Int { all.filter { if case .connected = $0 { true } else { false } }.count }
    var disconnects: [String] { all.compactMap { if case .disconnected(let r) = $0 { r } else { nil } } }
}

/// Lines printed by an OrderServer.
final class Lines: Sendable {
    private let lines = Mutex<[String]>([])
    var all: [String] { lines.withLock { $0 } }
    func add(_ s: String) { lines.withLock { $0.append(s) } }
    func has(_ prefix: String) -> Bool { all.contains { $0.hasPrefix(prefix) } }
    func count(_ prefix: String) -> Int { all.filter { $0.hasPrefix(prefix) }.count }
}

func makeLog() -> (Logger, MemoryLogSink) {
    let hub = LogHub(clock: { WallTime(unixMillis: 0) })
    hub.setMinimum(.debug)
    let sink = MemoryLogSink()
    hub.add(sink)
    return (hub.logger("link"), sink)
}

func linkConfig(port: Int, token: String? = nil, heartbeat: Double = 15) -> LinkConfig {
    var c = CrierConfig().link
    c.server = ServerAddress(host: "127.0.0.1", port: port)
    c.token = token
    c.heartbeat = heartbeat
    return c
}

func fastOptions() -> OrderLink.Options {
    var o = OrderLink.Options()
    o.backoff = ReconnectBackoff(base: 0.02, cap: 0.1, healthyAfter: 10)
    o.connectTimeout = 2
    // The host's clock is taken as synchronized (the ±window rule); tests of the
    // unsynchronized rule say otherwise.
    o.clockSynchronized = { true }
    return o
}

/// The order server settings tests start from: loopback, a free port, no random orders.
func simConfig(token: String? = nil, key: [UInt8]? = nil, idPrefix: String = "T-") -> OrderServerConfig {
    var c = OrderServerConfig()
    c.host = "127.0.0.1"
    c.port = 0
    c.randomOrders = false
    c.token = token
    c.key = key
    c.idPrefix = idPrefix
    return c
}

/// An OrderLink connected to a RawServer that has read its hello and (unless told not to)
/// welcomed it. Stops the link and closes the server when released.
final class WelcomedLink {
    let raw = RawServer()
    let link: OrderLink
    let events = EventSink()
    let logs: MemoryLogSink
    /// The hello line the link sent.
    var hello: String?

    init(config: (Int) -> LinkConfig = { linkConfig(port: $0) }, deviceID: String = "d",
         welcome: String? = "{\"type\":\"welcome\"}\n", options: OrderLink.Options = fastOptions()) {
        let (log, logs) = makeLog()
        self.logs = logs
        link = OrderLink(config: config(raw.port), deviceID: deviceID, log: log, options: options, onEvent: events.add)
        link.start()
        guard raw.accept() else { return }
        hello = raw.readLine()
        if let welcome {
            raw.write(welcome)
            _ = eventually { events.connects == 1 }
        }
    }

    deinit {
        link.stop()
        raw.close()
    }
}

/// Lines from a socket, framed as the link frames them.
struct LineReader {
    var framer = LineFramer(maxLine: 1 << 20)
    var pending: [[UInt8]] = []

    /// Reads what is there into `pending`; false on EOF or error.
    mutating func fill(_ fd: Int32) -> Bool {
        var buf = [UInt8](repeating: 0, count: 65536)
        let n = recv(fd, &buf, buf.count, 0)
        if n <= 0 { return false }
        for item in framer.push(buf[0..<n]) { if case .line(let l) = item { pending.append(l) } }
        return true
    }

    /// The next line, nil on timeout or EOF.
    mutating func readLine(_ fd: Int32, timeout: Double) -> String? {
        let end = Monotonic.now() + timeout
        while pending.isEmpty {
            let left = end - Monotonic.now()
            if left <= 0 { return nil }
            var p = [pollfd(fd: fd, events: Int16(POLLIN), revents: 0)]
            guard poll(&p, 1, Int32(left * 1000) + 1) == 1, fill(fd) else { return nil }
        }
        return String(decoding: pending.removeFirst(), as: UTF8.self)
    }
}

/// A port nothing listens on (bound, read, closed).
func freePort() -> Int {
    let s = RawServer()
    let p = s.port
    s.close()
    return p
}

/// A hand-driven TCP server for misbehaving on purpose: accept, read lines, write raw bytes.
final class RawServer {
    let listenFD: Int32
    let port: Int
    var fd: Int32 = -1
    var reader = LineReader()

    init() {
        let listenFD = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        self.listenFD = listenFD
        var one: Int32 = 1
        setsockopt(listenFD, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        var a = sockaddr_in()
        a.sin_family = sa_family_t(AF_INET)
        a.sin_addr.s_addr = inet_addr("127.0.0.1")
        a.sin_port = 0
        _ = withUnsafePointer(to: &a) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(listenFD, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
        listen(listenFD, 8)
        var len = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &a) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(listenFD, $0, &len) } }
        port = Int(UInt16(bigEndian: a.sin_port))
    }

    /// Waits for the next connection (closing the current one first if still open).
    func accept(timeout: Double = 5) -> Bool {
        if fd >= 0 { Glibc.close(fd); fd = -1 }
        reader = LineReader()
        var p = [pollfd(fd: listenFD, events: Int16(POLLIN), revents: 0)]
        guard poll(&p, 1, Int32(timeout * 1000)) == 1 else { return false }
        fd = Glibc.accept(listenFD, nil, nil)
        return fd >= 0
    }

    /// The next line from the client, nil on timeout or EOF.
    func readLine(timeout: Double = 5) -> String? { reader.readLine(fd, timeout: timeout) }

    /// Lines until one starts with `prefix` (the others are returned too, for assertions).
    func readUntil(_ prefix: String, timeout: Double = 5) -> [String] {
        var got: [String] = []
        let end = Monotonic.now() + timeout
        while let l = readLine(timeout: max(0.01, end - Monotonic.now())) {
            got.append(l)
            if l.hasPrefix(prefix) { break }
        }
        return got
    }

    /// True when the client closed the connection within `timeout`.
    func closedByPeer(timeout: Double) -> Bool {
        let end = Monotonic.now() + timeout
        while Monotonic.now() < end {
            var p = [pollfd(fd: fd, events: Int16(POLLIN), revents: 0)]
            guard poll(&p, 1, Int32((end - Monotonic.now()) * 1000) + 1) == 1 else { return false }
            if !reader.fill(fd) { return true }
        }
        return false
    }

    func write(_ bytes: [UInt8]) {
        var off = 0
        while off < bytes.count {
            let n = bytes[off...].withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if n <= 0 { return }
            off += n
        }
    }

    func write(_ s: String) { write(Array(s.utf8)) }

    func close() {
        if fd >= 0 { Glibc.close(fd); fd = -1 }
        Glibc.close(listenFD)
    }
}

/// A hand-driven TCP client (for testing the server).
final class RawClient {
    let fd: Int32
    var reader = LineReader()

    init(port: Int) {
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var a = sockaddr_in()
        a.sin_family = sa_family_t(AF_INET)
        a.sin_addr.s_addr = inet_addr("127.0.0.1")
        a.sin_port = UInt16(port).bigEndian
        _ = withUnsafePointer(to: &a) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
    }

    func write(_ s: String) {
        let b = Array(s.utf8)
        _ = b.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
    }

    func readLine(timeout: Double = 5) -> String? { reader.readLine(fd, timeout: timeout) }

    func close() { Glibc.close(fd) }
}
