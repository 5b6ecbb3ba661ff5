import CrierPosix
import Glibc
import Synchronization

/// The write end of the self-pipe the signal handler writes to; -1 before `start`.
private let signalPipeWrite = Atomic<Int32>(-1)

/// SIGTERM, SIGINT and SIGHUP as an `AsyncStream`, for a graceful stop (finish the current
/// alert, ack it, close the PCM, exit 0) and a reload.
///
/// A sigaction handler writes the signal number to a self-pipe (both async-signal-safe), and a
/// dedicated thread reads the pipe and yields. Unlike sigwait/signalfd this does not depend on
/// every thread having the signals blocked, which Swift's executor threads, created before or
/// outside our control, would not.
///
/// Once started, these signals no longer end the process by themselves: the runtime must act
/// on them (a second SIGTERM/SIGINT during shutdown is the usual "exit now").
/// SIGPIPE is ignored (a client that hangs up must not kill the daemon).
public final class SignalWatcher: Sendable {
    public enum Signal: Int32, Sendable, CustomStringConvertible {
        case terminate = 15  // SIGTERM
        case interrupt = 2   // SIGINT
        case hangup = 1      // SIGHUP

        public var description: String {
            switch self {
            case .terminate: "SIGTERM"
            case .interrupt: "SIGINT"
            case .hangup: "SIGHUP"
            }
        }
    }

    /// Signals in the order they arrived. One reader.
    public let signals: AsyncStream<Signal>
    private static let started = Mutex(false)

    private init(signals: AsyncStream<Signal>) { self.signals = signals }

    /// Installs the handlers (once per process) and starts the reading thread.
    public static func start(_ which: [Signal] = [.terminate, .interrupt, .hangup]) throws(SystemError) -> SignalWatcher {
        let first = started.withLock { s in
            defer { s = true }
            return !s
        }
        guard first else { throw SystemError("SignalWatcher.start (already started)", code: EBUSY) }
        var fds: [Int32] = [-1, -1]
        guard pipe(&fds) == 0 else { throw SystemError("pipe") }
        for fd in fds { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }
        // The handler must never block: a full pipe just loses a duplicate signal.
        _ = fcntl(fds[1], F_SETFL, fcntl(fds[1], F_GETFL) | O_NONBLOCK)
        signalPipeWrite.store(fds[1], ordering: .sequentiallyConsistent)

        let (stream, continuation) = AsyncStream.makeStream(of: Signal.self)
        let readFD = fds[0]
        try PosixThread.detach(name: "crier-signals") {
            var b: UInt8 = 0
            while true {
                let n = read(readFD, &b, 1)
                if n < 0 && errno == EINTR { continue }
                if n <= 0 { break }
                if let s = Signal(rawValue: Int32(b)) { continuation.yield(s) }
            }
            continuation.finish()
        }

        ignoreBrokenPipes()
        for s in which {
            var sa = sigaction()
            sa.__sigaction_handler.sa_handler = { signo in
                let saved = errno
                let fd = signalPipeWrite.load(ordering: .relaxed)
                if fd >= 0 {
                    var b = UInt8(truncatingIfNeeded: signo)
                    _ = write(fd, &b, 1)
                }
                errno = saved
            }
            sigemptyset(&sa.sa_mask)
            sa.sa_flags = SA_RESTART
            guard sigaction(s.rawValue, &sa, nil) == 0 else { throw SystemError("sigaction \(s)") }
        }
        return SignalWatcher(signals: stream)
    }

    /// Writing to a socket whose peer left returns EPIPE instead of killing the process.
    public static func ignoreBrokenPipes() {
        signal(SIGPIPE, SIG_IGN)
    }
}
