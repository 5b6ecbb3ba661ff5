import Glibc

/// CLOCK_MONOTONIC in seconds: the clock every timing rule uses on the device.
public enum Monotonic {
    public static func now() -> Double {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return Double(ts.tv_sec) + Double(ts.tv_nsec) / 1e9
    }
}

/// A self-pipe other threads poke to wake a blocking thread out of poll() at once.
public final class WakeSignal: Sendable {
    let readFD: Int32
    let writeFD: Int32

    public init() {
        var fds: [Int32] = [-1, -1]
        precondition(pipe(&fds) == 0, "pipe failed: errno \(errno)")
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

    public func wake() {
        var one: UInt8 = 1
        _ = Glibc.write(writeFD, &one, 1)
    }

    func clear() {
        var sink = [UInt8](repeating: 0, count: 64)
        while Glibc.read(readFD, &sink, 64) > 0 {}
    }

    /// Waits until woken or `timeout` seconds pass (nil: no timeout), also returning when one of
    /// `extra` is ready. Returns true when woken.
    @discardableResult
    public func wait(timeout: Double?, extra: [pollfd] = []) -> Bool {
        var fds = extra
        fds.append(pollfd(fd: readFD, events: Int16(POLLIN), revents: 0))
        // Rounded up: waking a little late is corrected by the absolute schedule; early would spin.
        let ms: Int32 = timeout.map { Int32(min(3_600_000, max(0, ($0 * 1000).rounded(.up)))) } ?? -1
        let r = poll(&fds, nfds_t(fds.count), ms)
        let woken = r > 0 && fds.last!.revents & Int16(POLLIN) != 0
        if woken { clear() }
        return woken
    }
}
