// CrierGPIO: button inputs (libgpiod, FIFO, keyboard), the reader thread that turns their
// levels into gestures, and the state file. See docs/buttons.md.
import CrierCore
import Glibc

/// CLOCK_MONOTONIC in seconds: the time base of every button event and deadline (the same
/// clock as CrierAudio.Monotonic; its own name so a module importing both stays unambiguous).
public enum ButtonClock {
    public static func now() -> Double {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return seconds(ts)
    }

    static func seconds(_ ts: timespec) -> Double { Double(ts.tv_sec) + Double(ts.tv_nsec) / 1e9 }
}

/// A pipe whose read end is polled next to the inputs' fds, so `stop()` wakes a blocked wait
/// at once. Only immutable fds: safe to share.
final class Waker: Sendable {
    let readFD: Int32
    let writeFD: Int32

    init() {
        var fds: [Int32] = [-1, -1]
        if pipe(&fds) != 0 { fds = [-1, -1] }
        for fd in fds where fd >= 0 {
            _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
            _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
        }
        readFD = fds[0]
        writeFD = fds[1]
    }

    func wake() {
        var b: UInt8 = 1
        _ = write(writeFD, &b, 1)
    }

    func drain() {
        var buf = [UInt8](repeating: 0, count: 64)
        while read(readFD, &buf, buf.count) > 0 {}
    }

    deinit {
        close(readFD)
        close(writeFD)
    }
}

/// `poll` on some fds plus the wake fd, until `deadline` (monotonic seconds) or forever.
/// Returns the revents of `fds` (the wake fd's are left out); EINTR counts as a timeout.
func pollFDs(_ fds: [Int32], wake: Int32, until deadline: Double?) -> [Int16] {
    var pfds = fds.map { pollfd(fd: $0, events: Int16(POLLIN), revents: 0) }
    pfds.append(pollfd(fd: wake, events: Int16(POLLIN), revents: 0))
    var timeout: Int32 = -1
    if let d = deadline {
        let ms = (d - ButtonClock.now()) * 1000
        timeout = ms <= 0 ? 0 : Int32(min(ms.rounded(.up), 3_600_000))
    }
    let n = poll(&pfds, nfds_t(pfds.count), timeout)
    if n <= 0 { return fds.map { _ in 0 } }
    return pfds.dropLast().map(\.revents)
}

func errnoText(_ e: Int32) -> String { String(cString: strerror(e)) }

/// Sleeps on the wake fd until `deadline`: for inputs with nothing to watch right now.
func idle(wake: Int32, until deadline: Double?) {
    _ = pollFDs([], wake: wake, until: deadline)
}
