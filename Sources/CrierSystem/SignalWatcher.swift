import CrierPosix
import Glibc
import Synchronization

/// The write end of the self-pipe the signal handler writes to; -1 before `start`.
private let signalPipeWrite = Atomic<Int32>(-1)

/// Signals as an `AsyncStream`, so the runtime decides what each one means (stop, reload,
/// logged and ignored) instead of the kernel's default action killing the process silently.
///
/// A sigaction handler writes the signal number to a self-pipe (both async-signal-safe), and a
/// dedicated thread reads the pipe and yields. Unlike sigwait/signalfd this does not depend on
/// every thread having the signals blocked, which Swift's executor threads, created before or
/// outside our control, would not. The reading thread unblocks the signals for itself, so it
/// can always take them whatever mask it inherited.
///
/// Once started, these signals no longer end the process by themselves: the runtime must act
/// on them. SIGPIPE is ignored (a client that hangs up must not kill the daemon).
public final class SignalWatcher: Sendable {
    public struct Signal: Hashable, Sendable, CustomStringConvertible {
        public let rawValue: Int32
        public init(rawValue: Int32) { self.rawValue = rawValue }

        public static let hangup = Signal(rawValue: SIGHUP)
        public static let interrupt = Signal(rawValue: SIGINT)
        public static let quit = Signal(rawValue: SIGQUIT)
        public static let terminate = Signal(rawValue: SIGTERM)
        public static let user1 = Signal(rawValue: SIGUSR1)
        public static let user2 = Signal(rawValue: SIGUSR2)

        /// Every signal whose default action ends the process and that another process (or a
        /// resource limit, or a terminal) can send: a daemon must hear each of them. The faults
        /// (SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT, SIGTRAP, SIGSYS) are not here: they mean
        /// the process is broken, and the crash handler and systemd's restart deal with that.
        /// SIGKILL and SIGSTOP cannot be caught. SIGPIPE is ignored instead (`ignoreBrokenPipes`).
        public static var asynchronous: [Signal] {
            var all = [SIGHUP, SIGINT, SIGQUIT, SIGTERM, SIGUSR1, SIGUSR2, SIGALRM, SIGVTALRM, SIGPROF,
                       SIGIO, SIGPWR, SIGSTKFLT, SIGXCPU, SIGXFSZ].map(Signal.init(rawValue:))
            // Real-time signals (default: terminate). glibc keeps the lowest few for itself.
            let lo = __libc_current_sigrtmin(), hi = __libc_current_sigrtmax()
            if lo <= hi { all += (lo...hi).map(Signal.init(rawValue:)) }
            return all
        }

        public var description: String {
            switch rawValue {
            case SIGHUP: "SIGHUP"
            case SIGINT: "SIGINT"
            case SIGQUIT: "SIGQUIT"
            case SIGTERM: "SIGTERM"
            case SIGUSR1: "SIGUSR1"
            case SIGUSR2: "SIGUSR2"
            case SIGALRM: "SIGALRM"
            case SIGVTALRM: "SIGVTALRM"
            case SIGPROF: "SIGPROF"
            case SIGIO: "SIGIO"
            case SIGPWR: "SIGPWR"
            case SIGSTKFLT: "SIGSTKFLT"
            case SIGXCPU: "SIGXCPU"
            case SIGXFSZ: "SIGXFSZ"
            default:
                rawValue >= __libc_current_sigrtmin() && rawValue <= __libc_current_sigrtmax()
                    ? "SIGRTMIN+\(rawValue - __libc_current_sigrtmin())" : "signal \(rawValue)"
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
        ignoreBrokenPipes()
        for s in which {
            guard install(s) else { throw SystemError("sigaction \(s)") }
        }
        let set = signalSet(which)
        try PosixThread.detach(name: "crier-signals") {
            var s = set
            pthread_sigmask(SIG_UNBLOCK, &s, nil)
            var b: UInt8 = 0
            while true {
                let n = read(readFD, &b, 1)
                if n < 0 && errno == EINTR { continue }
                if n <= 0 { break }
                continuation.yield(Signal(rawValue: Int32(b)))
            }
            continuation.finish()
        }
        // The calling thread too, so nothing depends on which thread the kernel picks.
        var s = set
        pthread_sigmask(SIG_UNBLOCK, &s, nil)
        return SignalWatcher(signals: stream)
    }

    /// Puts the handler back on `which` (after a failed execve set them to ignored).
    public static func reinstall(_ which: [Signal]) {
        for s in which { _ = install(s) }
    }

    private static func install(_ s: Signal) -> Bool {
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
        return sigaction(s.rawValue, &sa, nil) == 0
    }

    static func signalSet(_ which: [Signal]) -> sigset_t {
        var set = sigset_t()
        sigemptyset(&set)
        for s in which { sigaddset(&set, s.rawValue) }
        return set
    }

    /// Writing to a socket whose peer left returns EPIPE instead of killing the process.
    public static func ignoreBrokenPipes() {
        signal(SIGPIPE, SIG_IGN)
    }
}
