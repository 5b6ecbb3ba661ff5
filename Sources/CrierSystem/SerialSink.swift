import CrierCore
import CrierPosix
import Glibc
import Synchronization

/// Log lines on a UART (`log.serial = /dev/serial0`), 8N1 at `log.serial_baud`, for whoever
/// plugs a USB-serial cable into the box.
///
/// Never blocks its callers: `write` only appends to a bounded queue (under a short lock) and
/// wakes the writer thread, which alone touches the port, opened O_NONBLOCK|O_NOCTTY and fed
/// as fast as it drains. When the queue is full (port slow, unplugged cable with flow control
/// off still drains, but a stuck or missing port does not), new lines are dropped and counted;
/// as soon as there is room again, or when the queue empties, a line
/// `WARN serial: dropped N lines` marks the gap. A port that vanishes (USB adapter unplugged,
/// EIO/ENODEV) is closed and reopened every `reopenInterval` seconds; the line being written
/// is kept for the new port.
public final class SerialSink: LogSink {
    public struct Options: Sendable {
        public var baud: Int
        /// Lines held while the port is slow or gone.
        public var capacity: Int
        public var reopenInterval: Double

        public init(baud: Int = 115200, capacity: Int = 1000, reopenInterval: Double = 2) {
            self.baud = baud
            self.capacity = capacity
            self.reopenInterval = reopenInterval
        }
    }

    /// What the sink has done so far, for status and tests.
    public struct Counters: Sendable, Equatable {
        /// Lines dropped because the queue was full, since start.
        public var dropped: Int
        /// Lines fully written to the port, since start.
        public var written: Int
        /// Lines waiting.
        public var queued: Int
        /// The port is open now.
        public var open: Bool
        /// Why the port is not open, if it is not.
        public var lastError: String?
        /// Times an open port was lost (write error or hang-up) and had to be reopened.
        public var portLost: Int
    }

    private struct State {
        var queue: [[UInt8]] = []
        var head = 0
        var pendingDrops = 0
        var counters = Counters(dropped: 0, written: 0, queued: 0, open: false, lastError: nil, portLost: 0)
        var stopping = false
        var flushDeadline: Double?

        var count: Int { queue.count - head }

        mutating func pop() -> [UInt8]? {
            guard head < queue.count else { return nil }
            let line = queue[head]
            head += 1
            if head > 256 && head * 2 > queue.count {
                queue.removeFirst(head)
                head = 0
            }
            return line
        }
    }

    public let path: String
    public let options: Options
    private let state = Mutex(State())
    private let wake: WakePipe
    private let done: WakePipe
    private let clock: @Sendable () -> WallTime
    private let lineEnd: [UInt8] = [13, 10]

    /// Starts the writer thread; the port is opened there (and retried), so a missing port is
    /// not an error here.
    public init(path: String, options: Options = Options(),
                clock: @escaping @Sendable () -> WallTime = WallClock.now) throws(SystemError) {
        self.path = path
        self.options = options
        self.clock = clock
        wake = WakePipe()
        done = WakePipe()
        // Without its pipes the writer could neither be woken nor stopped.
        if let e = wake.failure ?? done.failure { throw e }
        let speed = try SerialSink.speed(options.baud)
        try PosixThread.detach(name: "crier-serial") { [self] in
            self.writerLoop(speed: speed)
            self.done.wake()
        }
    }

    public var counters: Counters {
        state.withLock { s in
            var c = s.counters
            c.queued = s.count
            return c
        }
    }

    public func write(_ record: LogRecord) {
        let line = Array(record.formatted().utf8) + lineEnd
        let accepted: Bool = state.withLock { s in
            guard !s.stopping else { return false }
            if s.count >= options.capacity {
                s.pendingDrops += 1
                s.counters.dropped += 1
                return false
            }
            if s.pendingDrops > 0 {
                s.queue.append(dropLine(s.pendingDrops))
                s.pendingDrops = 0
            }
            s.queue.append(line)
            return true
        }
        if accepted { wake.wake() }
    }

    /// Writes what is queued for up to `flushTimeout` seconds, then stops the thread and
    /// closes the port. Later writes are ignored.
    public func close(flushTimeout: Double = 0.5) {
        let first: Bool = state.withLock { s in
            guard !s.stopping else { return false }
            s.stopping = true
            s.flushDeadline = Monotonic.now() + flushTimeout
            return true
        }
        guard first else { return }
        wake.wake()
        _ = done.wait(timeout: flushTimeout + 1)
    }

    private func dropLine(_ n: Int) -> [UInt8] {
        let r = LogRecord(time: clock(), level: .warning, component: "serial",
                          message: "dropped \(n) line\(n == 1 ? "" : "s")",
                          fields: [("reason", "port too slow or not open")])
        return Array(r.formatted().utf8) + lineEnd
    }

    // MARK: - The writer thread

    private func writerLoop(speed: speed_t) {
        var fd: Int32 = -1
        var pending: [UInt8] = []
        var offset = 0
        var nextOpen = 0.0
        defer { if fd >= 0 { Glibc.close(fd) } }

        // The port went away (EIO, ENODEV, a hang-up): close it, count it, try again later. The
        // line in flight stays in `pending` for the next port.
        func lose(_ why: String) {
            Glibc.close(fd)
            fd = -1
            nextOpen = Monotonic.now() + options.reopenInterval
            state.withLock { s in
                s.counters.open = false
                s.counters.portLost += 1
                s.counters.lastError = why
            }
        }

        while true {
            let (stopping, deadline) = state.withLock { ($0.stopping, $0.flushDeadline) }
            if stopping, let deadline, Monotonic.now() >= deadline { return }

            if fd < 0, Monotonic.now() >= nextOpen {
                switch SerialSink.open(path, speed: speed) {
                case .success(let f):
                    fd = f
                    state.withLock { s in
                        s.counters.open = true
                        s.counters.lastError = nil
                    }
                case .failure(let e):
                    nextOpen = Monotonic.now() + options.reopenInterval
                    state.withLock { s in
                        s.counters.open = false
                        s.counters.lastError = e.description
                    }
                }
            }

            if offset >= pending.count {
                let next: [UInt8]? = state.withLock { s in
                    if let line = s.pop() { return line }
                    if s.pendingDrops > 0 {
                        let n = s.pendingDrops
                        s.pendingDrops = 0
                        return dropLine(n)
                    }
                    return nil
                }
                if let next {
                    pending = next
                    offset = 0
                } else {
                    pending = []
                    offset = 0
                    if stopping { return }
                }
            }

            var waitForPort = false
            if fd >= 0, offset < pending.count {
                let n = pending.withUnsafeBytes { Glibc.write(fd, $0.baseAddress! + offset, pending.count - offset) }
                if n > 0 {
                    offset += n
                    if offset >= pending.count { state.withLock { $0.counters.written += 1 } }
                    continue
                }
                let err = errno
                if n < 0 && err == EINTR { continue }
                if n < 0 && (err == EAGAIN || err == EWOULDBLOCK) {
                    waitForPort = true
                } else {
                    // EIO, ENODEV, ENXIO...
                    lose(SystemError("write", path: path, code: err).description)
                    continue
                }
            }

            // Sleep until: new lines (or stop), the port can take more, or it is time to reopen.
            var fds = [pollfd(fd: wake.readFD, events: Int16(POLLIN), revents: 0)]
            if waitForPort { fds.append(pollfd(fd: fd, events: Int16(POLLOUT), revents: 0)) }
            var until: Double? = deadline
            if fd < 0 { until = min(until ?? nextOpen, nextOpen) }
            let hasWork = offset < pending.count
            if !hasWork && !waitForPort && fd >= 0 {
                // Idle: nothing to write until woken.
            } else if !hasWork && fd < 0 && !stopping {
                // Nothing queued and no port: try the port again only when there is something to say.
                until = deadline
            }
            let r = poll(&fds, nfds_t(fds.count), Monotonic.pollTimeout(until: until))
            if r > 0 && fds[0].revents != 0 { wake.drain() }
            if waitForPort, fds.count > 1, fds[1].revents & Int16(POLLHUP | POLLERR | POLLNVAL) != 0 {
                lose("\(path): hung up")
            }
        }
    }

    static func open(_ path: String, speed: speed_t) -> Result<Int32, SystemError> {
        let fd = Glibc.open(path, O_WRONLY | O_NOCTTY | O_NONBLOCK | O_CLOEXEC)
        guard fd >= 0 else { return .failure(SystemError("open", path: path)) }
        var t = termios()
        if tcgetattr(fd, &t) == 0 {
            cfmakeraw(&t)
            t.c_cflag &= ~(tcflag_t(PARENB | CSTOPB | CSIZE) | tcflag_t(CRTSCTS))
            t.c_cflag |= tcflag_t(CS8 | CLOCAL | CREAD)
            t.c_iflag &= ~tcflag_t(IXON | IXOFF | IXANY)
            cfsetospeed(&t, speed)
            cfsetispeed(&t, speed)
            if tcsetattr(fd, TCSANOW, &t) != 0 {
                let e = SystemError("tcsetattr", path: path)
                Glibc.close(fd)
                return .failure(e)
            }
        }
        // Not a tty (a file or FIFO in a test): written as is.
        return .success(fd)
    }

    static func speed(_ baud: Int) throws(SystemError) -> speed_t {
        let table: [Int: Int32] = [
            9600: B9600, 19200: B19200, 38400: B38400, 57600: B57600, 115200: B115200,
            230400: B230400, 460800: B460800, 921600: B921600,
        ]
        guard let s = table[baud] else { throw SystemError("baud \(baud)", code: EINVAL) }
        return speed_t(s)
    }
}
