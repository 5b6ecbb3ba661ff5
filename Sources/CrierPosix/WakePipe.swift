import Glibc

/// A self-pipe other threads poke to wake a thread blocked in poll() at once. Non-blocking on
/// both ends: a full pipe already means "wake up". Only immutable fds: safe to share.
///
/// Never fails: without a pipe (out of file descriptors) both fds are -1, which poll() skips,
/// so waits still end at their timeout and only the prompt wake-up is lost. `failure` says so
/// for the owner to log.
public final class WakePipe: Sendable {
    /// The end to poll for POLLIN (-1 when `failure` is set).
    public let readFD: Int32
    private let writeFD: Int32
    public let failure: SystemError?

    public init() {
        var fds: [Int32] = [-1, -1]
        if pipe(&fds) == 0 {
            failure = nil
            for fd in fds {
                _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
                _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
            }
        } else {
            failure = SystemError("pipe")
            fds = [-1, -1]
        }
        readFD = fds[0]
        writeFD = fds[1]
    }

    deinit {
        if readFD >= 0 { close(readFD) }
        if writeFD >= 0 { close(writeFD) }
    }

    public func wake() {
        var one: UInt8 = 1
        _ = Glibc.write(writeFD, &one, 1)
    }

    /// Clears pending wake-ups.
    public func drain() {
        guard readFD >= 0 else { return }
        var sink = [UInt8](repeating: 0, count: 64)
        while Glibc.read(readFD, &sink, sink.count) > 0 {}
    }

    /// Waits until woken (consuming it: true) or until `timeout` seconds pass (nil: no
    /// timeout), also returning when one of `extra` is ready. EINTR restarts the wait.
    @discardableResult
    public func wait(timeout: Double?, extra: [pollfd] = []) -> Bool {
        let deadline = timeout.map { Monotonic.now() + $0 }
        var fds = extra
        fds.append(pollfd(fd: readFD, events: Int16(POLLIN), revents: 0))
        while true {
            let r = poll(&fds, nfds_t(fds.count), Monotonic.pollTimeout(until: deadline))
            if r < 0 && errno == EINTR { continue }
            let woken = r > 0 && fds.last!.revents & Int16(POLLIN) != 0
            if woken { drain() }
            return woken
        }
    }
}
