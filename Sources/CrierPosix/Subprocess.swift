import Glibc

/// Runs a program (posix_spawnp, no shell: arguments are never parsed by anything), blocking
/// the calling thread; call it from a dedicated thread, never from the audio or an actor's
/// executor. Output is captured up to a limit; a program that outlives `timeout` is killed.
public enum Subprocess {
    public struct Result: Sendable, Equatable {
        /// The exit status, or nil when it was killed by a signal (`signal` says which).
        public var status: Int32?
        public var signal: Int32?
        public var stdout: [UInt8]
        public var stderr: [UInt8]
        public var timedOut: Bool

        public var succeeded: Bool { status == 0 }
        public var stdoutText: String { String(decoding: stdout, as: UTF8.self) }
        public var stderrText: String { String(decoding: stderr, as: UTF8.self) }
    }

    /// - `onLine`: called for each complete stdout or stderr line as it comes (progress).
    /// - `capture`: bytes kept of each stream (the rest is read and dropped, so the program
    ///   never blocks on a full pipe).
    public static func run(_ program: String, _ arguments: [String], timeout: Double,
                           capture: Int = 1 << 20, onLine: ((String) -> Void)? = nil) throws(SystemError) -> Result {
        var out: [Int32] = [-1, -1], err: [Int32] = [-1, -1]
        guard pipe(&out) == 0 else { throw SystemError("pipe") }
        guard pipe(&err) == 0 else {
            let e = SystemError("pipe")
            close(out[0]); close(out[1])
            throw e
        }
        // Close-on-exec: another thread's spawn must not inherit these (pipe2 is not in Glibc's
        // Swift module); the child gets its copies through the dup2 actions below.
        for fd in out + err { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_adddup2(&actions, out[1], 1)
        posix_spawn_file_actions_adddup2(&actions, err[1], 2)
        // The child must not inherit crier's blocked signal mask (the signal thread blocks
        // SIGTERM/SIGINT/SIGHUP): a timeout's SIGTERM would otherwise be ignored.
        var attr = posix_spawnattr_t()
        posix_spawnattr_init(&attr)
        defer { posix_spawnattr_destroy(&attr) }
        var empty = sigset_t()
        sigemptyset(&empty)
        posix_spawnattr_setsigmask(&attr, &empty)
        var dflt = sigset_t()
        sigemptyset(&dflt)
        for s in [SIGPIPE, SIGTERM, SIGINT, SIGHUP] { sigaddset(&dflt, s) }
        posix_spawnattr_setsigdefault(&attr, &dflt)
        posix_spawnattr_setflags(&attr, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))

        let argv: [UnsafeMutablePointer<CChar>?] = ([program] + arguments).map { strdup($0) } + [nil]
        defer { for p in argv { free(p) } }
        var pid: pid_t = 0
        let rc = posix_spawnp(&pid, program, &actions, &attr, argv, environ)
        close(out[1]); close(err[1])
        guard rc == 0 else {
            close(out[0]); close(err[0])
            throw SystemError("run", path: program, code: rc)
        }

        var result = Result(status: nil, signal: nil, stdout: [], stderr: [], timedOut: false)
        var pending: [[UInt8]] = [[], []]
        var open = [out[0], err[0]]
        let deadline = Monotonic.now() + timeout
        var killedAt: Double?
        var buf = [UInt8](repeating: 0, count: 16384)
        while open.contains(where: { $0 >= 0 }) {
            let now = Monotonic.now()
            if now >= deadline && killedAt == nil {
                result.timedOut = true
                kill(pid, SIGTERM)
                killedAt = now
            } else if let k = killedAt, now >= k + 3 {
                kill(pid, SIGKILL)
                // a grandchild holding the pipes open must not hold us too
                for fd in open where fd >= 0 { close(fd) }
                break
            }
            var fds = open.map { pollfd(fd: $0, events: Int16(POLLIN), revents: 0) }
            let wait = killedAt.map { $0 + 3 - now } ?? (deadline - now)
            let n = poll(&fds, nfds_t(fds.count), Int32(max(1, min(1000, wait * 1000))))
            if n < 0 && errno != EINTR { break }
            for i in 0..<2 where open[i] >= 0 && fds[i].revents != 0 {
                let got = buf.withUnsafeMutableBytes { read(open[i], $0.baseAddress, $0.count) }
                if got < 0 && errno == EINTR { continue }
                if got <= 0 {
                    close(open[i])
                    open[i] = -1
                    if let onLine, !pending[i].isEmpty { onLine(String(decoding: pending[i], as: UTF8.self)) }
                    continue
                }
                let chunk = buf[0..<got]
                if i == 0 {
                    if result.stdout.count < capture { result.stdout += chunk.prefix(capture - result.stdout.count) }
                } else if result.stderr.count < capture {
                    result.stderr += chunk.prefix(capture - result.stderr.count)
                }
                if let onLine {
                    for b in chunk {
                        if b == 0x0A || b == 0x0D {
                            if !pending[i].isEmpty { onLine(String(decoding: pending[i], as: UTF8.self)) }
                            pending[i].removeAll(keepingCapacity: true)
                        } else if pending[i].count < 4096 {
                            pending[i].append(b)
                        }
                    }
                }
            }
        }
        var st: Int32 = 0
        while waitpid(pid, &st, 0) < 0 && errno == EINTR {}
        // WIFEXITED / WEXITSTATUS / WTERMSIG are macros Swift does not import.
        if st & 0x7f == 0 {
            result.status = (st >> 8) & 0xff
        } else {
            result.signal = st & 0x7f
        }
        return result
    }
}
