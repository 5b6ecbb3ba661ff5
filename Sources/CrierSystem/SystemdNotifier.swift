import CrierCore
import CrierPosix
import Glibc

/// systemd's notification protocol, spoken directly (no libsystemd): each message is one
/// datagram of `KEY=VALUE` lines sent to the unix socket named by `$NOTIFY_SOCKET` (a path,
/// or an abstract name when it starts with "@"). Without `$NOTIFY_SOCKET` (not started by
/// systemd with Type=notify) every call is a no-op.
///
/// Sends never block (MSG_DONTWAIT): a wedged service manager cannot stall the daemon.
public final class SystemdNotifier: Sendable {
    /// The socket messages go to; nil when disabled.
    public let socketPath: String?
    private let fd: Int32
    private let address: [UInt8]

    /// `notifySocket` is `$NOTIFY_SOCKET`; nil or empty disables the notifier.
    public init(notifySocket: String?) throws(SystemError) {
        guard let path = notifySocket, !path.isEmpty else {
            socketPath = nil
            fd = -1
            address = []
            return
        }
        guard path.hasPrefix("/") || path.hasPrefix("@") else {
            throw SystemError("NOTIFY_SOCKET=\(path): not a path or abstract name", code: EAFNOSUPPORT)
        }
        guard let (addr, len) = Posix.unixAddress(path) else {
            throw SystemError("NOTIFY_SOCKET", path: path, code: ENAMETOOLONG)
        }
        let s = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard s >= 0 else { throw SystemError("socket AF_UNIX SOCK_DGRAM") }
        socketPath = path
        fd = s
        address = withUnsafeBytes(of: addr) { Array($0.prefix(Int(len))) }
    }

    /// From the environment: `$NOTIFY_SOCKET`.
    public convenience init() throws(SystemError) {
        try self.init(notifySocket: FileIO.env("NOTIFY_SOCKET"))
    }

    deinit { if fd >= 0 { close(fd) } }

    public var isEnabled: Bool { fd >= 0 }

    /// Startup finished: config loaded, audio device open or being retried.
    public func ready(status: String? = nil) throws(SystemError) {
        try send(["READY=1"] + (status.map { ["STATUS=" + SystemdNotifier.oneLine($0)] } ?? []))
    }

    /// A human line for `systemctl status`: "link up; volume 6/10; 0 queued".
    public func status(_ line: String) throws(SystemError) {
        try send(["STATUS=" + SystemdNotifier.oneLine(line)])
    }

    /// Pets the watchdog.
    public func watchdog() throws(SystemError) {
        try send(["WATCHDOG=1"])
    }

    /// Shutdown began.
    public func stopping(status: String? = nil) throws(SystemError) {
        try send(["STOPPING=1"] + (status.map { ["STATUS=" + SystemdNotifier.oneLine($0)] } ?? []))
    }

    /// Sends one datagram of `KEY=VALUE` lines.
    public func send(_ assignments: [String]) throws(SystemError) {
        guard fd >= 0 else { return }
        let payload = Array(assignments.joined(separator: "\n").utf8)
        let n = address.withUnsafeBytes { a in
            payload.withUnsafeBytes { p in
                sendto(fd, p.baseAddress, p.count, Int32(MSG_NOSIGNAL | MSG_DONTWAIT),
                       a.baseAddress!.assumingMemoryBound(to: sockaddr.self), socklen_t(a.count))
            }
        }
        guard n == payload.count else { throw SystemError("sd_notify sendto", path: socketPath) }
    }

    /// A value must stay on its line: a newline would start a new assignment.
    static func oneLine(_ s: String) -> String {
        String(s.map { $0 == "\n" || $0 == "\r" ? " " : $0 })
    }
}

extension WatchdogPetter {
    /// From `$WATCHDOG_USEC` and `$WATCHDOG_PID`; nil when systemd's watchdog is off.
    public static func fromEnvironment() -> WatchdogPetter? {
        WatchdogPetter(watchdogUSec: FileIO.env("WATCHDOG_USEC"), watchdogPID: FileIO.env("WATCHDOG_PID"),
                       ownPID: Int(getpid()))
    }
}
