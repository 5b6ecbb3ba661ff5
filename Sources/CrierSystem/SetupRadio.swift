import CrierCore
import CrierPosix
import Glibc
import Synchronization

/// The setup hotspot's radio work, seen from crier (which has no privileges): the mode is
/// asked of the root unit crier-setup-ap.service through one file, and scans and tries go to
/// the supplicant that unit runs in station mode, over its control socket (group crier).
///
/// The request file (`/run/crier/setup-ap`, crier's own runtime directory) holds one word:
/// `ap` (hostapd + dnsmasq, the station off) or `station` (a bare wpa_supplicant on the radio
/// for scans and tries); no file: the unit stops and the box's own supplicant runs again.
/// crier-setup-ap.path starts the unit when the file appears.
public struct SetupRadio: Sendable {
    public enum Mode: String, Sendable { case ap, station }

    public let requestPath: String
    /// DIR/IFACE of the supplicant's control socket.
    public let controlPath: String

    public init(requestPath: String, controlPath: String) {
        self.requestPath = requestPath
        self.controlPath = controlPath
    }

    /// Asks for a mode (nil: give the radio back). Never blocks on the unit.
    public func request(_ mode: Mode?) throws(SystemError) {
        guard let m = mode else {
            if unlink(requestPath) != 0 && errno != ENOENT { throw SystemError("unlink", path: requestPath) }
            return
        }
        try FileIO.write(requestPath, Array((m.rawValue + "\n").utf8))
    }

    /// Scans and returns what the radio sees (blocking, up to `timeout` s: run it on a thread
    /// of its own). Waits for the unit's supplicant to appear first. nil: it never answered.
    public func scan(timeout: Double = 20) -> [ScannedNetwork]? {
        let deadline = Monotonic.now() + timeout
        guard let s = WpaSession.open(controlPath, until: deadline) else { return nil }
        _ = s.command("SCAN")
        // CTRL-EVENT-SCAN-RESULTS, or whatever the supplicant had when the time runs out
        while Monotonic.now() < deadline {
            guard let line = s.event(until: min(deadline, Monotonic.now() + 1)) else { continue }
            if line.contains("CTRL-EVENT-SCAN-RESULTS") { break }
        }
        return s.command("SCAN_RESULTS").map { ScannedNetwork.list(fromScanResults: $0) }
    }

    /// Adds the network to the unit's supplicant (hex values only: `supplicantCommands`),
    /// selects it and waits for the outcome (`SetupTry`). A failed try removes the network
    /// again. `events` sees each event line (the log).
    public func tryNetwork(_ n: SetupNetwork, timeout: Double, events: (String) -> Void = { _ in }) -> SetupTryOutcome {
        let deadline = Monotonic.now() + 15
        guard let s = WpaSession.open(controlPath, until: deadline) else { return .failed }
        guard let reply = s.command("ADD_NETWORK"), let id = Int(reply.trimmingSpace) else { return .failed }
        for c in n.supplicantCommands(id: id) {
            guard let r = s.command(c), r.hasPrefix("OK") else {
                _ = s.command("REMOVE_NETWORK \(id)")
                return .failed
            }
        }
        var t = SetupTry(now: Monotonic.now(), timeout: timeout)
        var outcome: SetupTryOutcome?
        while outcome == nil {
            if let line = s.event(until: min(t.deadline, Monotonic.now() + 1)) {
                events(line)
                if let e = WpaEvent.parse(line) { outcome = t.observe(e) }
            }
            if outcome == nil { outcome = t.tick(now: Monotonic.now()) }
        }
        if outcome != .connected { _ = s.command("REMOVE_NETWORK \(id)") }
        return outcome ?? .failed
    }
}

/// One short conversation with a supplicant's control socket: a request socket and an
/// ATTACHed event socket, both bound to abstract names (as `WpaControl`).
final class WpaSession {
    let requests: Int32
    let events: Int32
    static let counter = AtomicCounter()

    private init(requests: Int32, events: Int32) {
        self.requests = requests
        self.events = events
    }

    deinit {
        _ = send(events, "DETACH")
        Glibc.close(requests)
        Glibc.close(events)
    }

    /// Retries every 0.3 s until `deadline` (the unit may still be starting its supplicant).
    static func open(_ path: String, until deadline: Double) -> WpaSession? {
        while true {
            if let s = tryOpen(path) { return s }
            if Monotonic.now() >= deadline { return nil }
            usleep(300_000)
        }
    }

    static func tryOpen(_ path: String) -> WpaSession? {
        guard let (addr, len) = Posix.unixAddress(path) else { return nil }
        var fds: [Int32] = []
        for tag in ["rq", "ev"] {
            let fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
            guard fd >= 0 else { fds.forEach { _ = Glibc.close($0) }; return nil }
            fds.append(fd)
            guard let (b, blen) = Posix.unixAddress("@crier-setup-\(getpid())-\(counter.next())-\(tag)") else { fds.forEach { _ = Glibc.close($0) }; return nil }
            var ba = b
            var a = addr
            let ok = withUnsafePointer(to: &ba) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, blen) } } == 0
                && withUnsafePointer(to: &a) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, len) } } == 0
            guard ok else { fds.forEach { _ = Glibc.close($0) }; return nil }
        }
        let s = WpaSession(requests: fds[0], events: fds[1])
        guard send(s.events, "ATTACH"), receive(s.events, until: Monotonic.now() + 2)?.hasPrefix("OK") == true else { return nil }
        return s
    }

    /// A request and its reply (2 s).
    func command(_ text: String) -> String? {
        while Self.receive(requests, until: 0) != nil {}
        guard Self.send(requests, text) else { return nil }
        return Self.receive(requests, until: Monotonic.now() + 2)
    }

    /// The next event line, or nil at `deadline`.
    func event(until deadline: Double) -> String? { Self.receive(events, until: deadline) }

    static func send(_ fd: Int32, _ text: String) -> Bool {
        let b = Array(text.utf8)
        return b.withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) } == b.count
    }

    func send(_ fd: Int32, _ text: String) -> Bool { Self.send(fd, text) }

    static func receive(_ fd: Int32, until deadline: Double) -> String? {
        var p = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        while true {
            let r = poll(&p, 1, deadline == 0 ? 0 : Monotonic.pollTimeout(until: deadline))
            if r < 0 && errno == EINTR { continue }
            guard r > 0 else { return nil }
            var buf = [UInt8](repeating: 0, count: 16384)
            let n = recv(fd, &buf, buf.count, Int32(MSG_DONTWAIT))
            guard n > 0 else { return nil }
            return String(decoding: buf.prefix(n), as: UTF8.self)
        }
    }
}

/// A process-wide counter for unique abstract socket names.
final class AtomicCounter: Sendable {
    let value = Mutex<Int>(0)
    func next() -> Int { value.withLock { $0 += 1; return $0 } }
}

extension String {
    var trimmingSpace: String {
        var s = Substring(self)
        while let c = s.first, c == " " || c == "\n" || c == "\r" || c == "\t" { s = s.dropFirst() }
        while let c = s.last, c == " " || c == "\n" || c == "\r" || c == "\t" { s = s.dropLast() }
        return String(s)
    }
}
