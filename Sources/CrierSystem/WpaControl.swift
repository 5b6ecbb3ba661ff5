import CrierCore
import CrierPosix
import Glibc
import Synchronization

/// A client of wpa_supplicant's control interface (hostap's ctrl_iface: one unix datagram
/// socket per interface, DIR/IFNAME, a text protocol). Two sockets, as wpa_cli uses: one
/// ATTACHed for events (CTRL-EVENT-CONNECTED, -SSID-TEMP-DISABLED reason=WRONG_KEY,
/// -NETWORK-NOT-FOUND, -DISCONNECTED…), one for requests (STATUS, SIGNAL_POLL). Each is bound
/// to an abstract name, so crier needs no writable directory for the replies. What the words
/// mean is CrierCore's (`WpaEvent`, `WpaStatus`, `WifiMonitor`); this only moves datagrams,
/// on its own thread. A socket that is missing or stops answering is retried every
/// `retryEvery` seconds, and said once (`unreachable`).
public final class WpaControl: Sendable {
    public enum Observation: Sendable, Equatable {
        case event(WpaEvent, line: String)
        case status(WpaStatus, signal: Int?)
        /// Why the supplicant cannot be reached (said once per outage).
        case unreachable(String)
    }

    public let path: String
    let pollEvery: Double
    let retryEvery: Double
    let onObservation: @Sendable (Observation) -> Void
    let wake = WakePipe()
    let stopped = Atomic<Bool>(false)
    let thread = Mutex<PosixThread?>(nil)
    static let counter = Atomic<Int>(0)

    public init(path: String, pollEvery: Double = 5, retryEvery: Double = 2, onObservation: @escaping @Sendable (Observation) -> Void) {
        self.path = path
        self.pollEvery = pollEvery
        self.retryEvery = retryEvery
        self.onObservation = onObservation
    }

    public func start() throws(SystemError) {
        let t = try PosixThread(name: "crier-wifi") { [self] in run() }
        thread.withLock { $0 = t }
    }

    /// Asks the thread to end (within one request timeout, 2 s); does not wait for it, so an
    /// actor can call it.
    public func stop() {
        stopped.store(true, ordering: .relaxed)
        wake.wake()
    }

    /// Stops and waits for the thread (tests).
    public func stopAndJoin() {
        stop()
        let t = thread.withLock { t -> PosixThread? in defer { t = nil }; return t }
        t?.join()
    }

    /// A STATUS now (after an event) instead of at the next poll.
    public func refresh() { wake.wake() }

    // MARK: the thread

    final class Link {
        let events: Int32
        let requests: Int32
        init(events: Int32, requests: Int32) { self.events = events; self.requests = requests }
        deinit {
            Glibc.close(events)
            Glibc.close(requests)
        }
    }

    func run() {
        var link: Link?
        // One `unreachable` per outage, whatever its reasons turn out to be along the way.
        var inOutage = false
        var nextPoll = 0.0
        while !stopped.load(ordering: .relaxed) {
            if link == nil {
                switch open() {
                case .success(let l):
                    link = l
                    inOutage = false
                    nextPoll = 0
                case .failure(let failure):
                    if !inOutage {
                        inOutage = true
                        onObservation(.unreachable(failure.text))
                    }
                    wake.wait(timeout: retryEvery)
                    continue
                }
            }
            guard let l = link else { continue }
            if Monotonic.now() >= nextPoll {
                if let s = request(l, "STATUS") {
                    let status = WpaStatus.parse(s)
                    let rssi = status.completed ? request(l, "SIGNAL_POLL").flatMap(WpaStatus.rssi(fromSignalPoll:)) : nil
                    onObservation(.status(status, signal: rssi))
                    nextPoll = Monotonic.now() + pollEvery
                } else {
                    link = nil
                    inOutage = true
                    onObservation(.unreachable("\(path) stopped answering (STATUS)"))
                    continue
                }
            }
            let woken = wake.wait(timeout: max(0, nextPoll - Monotonic.now()), extra: [pollfd(fd: l.events, events: Int16(POLLIN), revents: 0)])
            if woken { nextPoll = 0 }
            var terminating = false
            while let line = receive(l.events, timeout: 0) {
                if let e = WpaEvent.parse(line) {
                    onObservation(.event(e, line: line))
                    if e == .terminating { terminating = true }
                    // The picture after an event: address, SSID, signal.
                    nextPoll = min(nextPoll, Monotonic.now() + 0.2)
                }
            }
            if terminating {
                // the supplicant said so (the monitor knows); the retries that follow are quiet
                link = nil
                inOutage = true
            }
        }
        if let l = link { _ = send(l.events, "DETACH") }
    }

    func open() -> Result<Link, OpenFailureText> {
        var st = stat()
        if stat(path, &st) != 0 {
            return .failure(OpenFailureText("no control socket at \(path) (\(errnoText(errno)))"))
        }
        guard let ev = socket(bound: "ev"), let rq = socket(bound: "rq") else {
            return .failure(OpenFailureText("cannot create a unix datagram socket: \(errnoText(errno))"))
        }
        let l = Link(events: ev, requests: rq)
        guard let (addr, len) = Posix.unixAddress(path) else { return .failure(OpenFailureText("\(path): path too long")) }
        for fd in [ev, rq] {
            var a = addr
            let r = withUnsafePointer(to: &a) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, len) } }
            if r != 0 { return .failure(OpenFailureText("cannot connect to \(path): \(errnoText(errno))")) }
        }
        guard send(ev, "ATTACH"), let reply = receive(ev, timeout: 2), reply.hasPrefix("OK") else {
            return .failure(OpenFailureText("\(path) did not accept ATTACH (\(errnoText(errno)))"))
        }
        return .success(l)
    }

    struct OpenFailureText: Error, Equatable {
        let text: String
        init(_ t: String) { text = t }
    }

    func socket(bound tag: String) -> Int32? {
        let fd = Glibc.socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { return nil }
        let n = Self.counter.wrappingAdd(1, ordering: .relaxed).newValue
        guard let (a, len) = Posix.unixAddress("@crier-wpa-\(getpid())-\(n)-\(tag)") else { Glibc.close(fd); return nil }
        var addr = a
        let r = withUnsafePointer(to: &addr) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, len) } }
        if r != 0 { Glibc.close(fd); return nil }
        return fd
    }

    func send(_ fd: Int32, _ text: String) -> Bool {
        let b = Array(text.utf8)
        return b.withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) } == b.count
    }

    /// One datagram within `timeout` seconds (0: only one already there).
    func receive(_ fd: Int32, timeout: Double) -> String? {
        let deadline = Monotonic.now() + timeout
        var p = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        while true {
            let r = poll(&p, 1, timeout == 0 ? 0 : Monotonic.pollTimeout(until: deadline))
            if r < 0 && errno == EINTR { continue }
            guard r > 0 else { return nil }
            var buf = [UInt8](repeating: 0, count: 8192)
            let n = recv(fd, &buf, buf.count, Int32(MSG_DONTWAIT))
            guard n > 0 else { return nil }
            return String(decoding: buf.prefix(n), as: UTF8.self)
        }
    }

    /// A request and its reply; replies to an earlier, timed-out request are skipped.
    func request(_ l: Link, _ command: String) -> String? {
        while receive(l.requests, timeout: 0) != nil {}
        guard send(l.requests, command) else { return nil }
        guard let reply = receive(l.requests, timeout: 2) else { return nil }
        return reply
    }
}
