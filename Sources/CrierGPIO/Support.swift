// CrierGPIO: button inputs (libgpiod, FIFO, keyboard), the reader thread that turns their
// levels into gestures, and the state file. See docs/buttons.md.
import CrierCore
import CrierPosix
import Glibc

/// `poll` on some fds plus the wake fd, until `deadline` (monotonic seconds) or forever.
/// Returns the revents of `fds` (the wake fd's are left out); EINTR counts as a timeout.
func pollFDs(_ fds: [Int32], wake: Int32, until deadline: Double?) -> [Int16] {
    var pfds = fds.map { pollfd(fd: $0, events: Int16(POLLIN), revents: 0) }
    pfds.append(pollfd(fd: wake, events: Int16(POLLIN), revents: 0))
    var timeout = Monotonic.pollTimeout(until: deadline)
    // No wake pipe (out of descriptors): look at the stop flag at least every 200 ms instead.
    if wake < 0 { timeout = timeout < 0 ? 200 : min(timeout, 200) }
    let n = poll(&pfds, nfds_t(pfds.count), timeout)
    if n <= 0 { return fds.map { _ in 0 } }
    return pfds.dropLast().map(\.revents)
}

/// Sleeps on the wake fd until `deadline`: for inputs with nothing to watch right now.
func idle(wake: Int32, until deadline: Double?) {
    _ = pollFDs([], wake: wake, until: deadline)
}
