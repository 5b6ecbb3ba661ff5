import Glibc

/// A POSIX thread for blocking C calls, outside Swift's cooperative pool. Named (visible in
/// `top -H` and `ps -L` on the box, which is how one finds the busy thread on a Pi).
public final class PosixThread: Sendable {
    private final class Box {
        let body: @Sendable () -> Void
        let name: String
        init(_ name: String, _ body: @escaping @Sendable () -> Void) {
            self.name = name
            self.body = body
        }
    }

    private let tid: pthread_t

    /// Starts `body` on a joinable thread; `join()` waits for it.
    public init(name: String, _ body: @escaping @Sendable () -> Void) throws(SystemError) {
        tid = try Self.create(name: name, detached: false, body)
    }

    public func join() {
        pthread_join(tid, nil)
    }

    /// Starts `body` on a thread nobody waits for.
    public static func detach(name: String, _ body: @escaping @Sendable () -> Void) throws(SystemError) {
        _ = try create(name: name, detached: true, body)
    }

    private static func create(name: String, detached: Bool, _ body: @escaping @Sendable () -> Void) throws(SystemError) -> pthread_t {
        let box = Unmanaged.passRetained(Box(name, body)).toOpaque()
        var attr = pthread_attr_t()
        pthread_attr_init(&attr)
        defer { pthread_attr_destroy(&attr) }
        if detached { pthread_attr_setdetachstate(&attr, Int32(PTHREAD_CREATE_DETACHED)) }
        var tid = pthread_t()
        let rc = pthread_create(&tid, &attr, { arg in
            let box = Unmanaged<Box>.fromOpaque(arg!).takeRetainedValue()
            nameThisThread(box.name)
            box.body()
            return nil
        }, box)
        guard rc == 0 else {
            Unmanaged<Box>.fromOpaque(box).release()
            throw SystemError("pthread_create \(name)", code: rc)
        }
        return tid
    }
}

/// pthread_setname_np is not visible through Glibc's module (a _GNU_SOURCE function); the
/// kernel's own file does the same. It keeps 15 bytes.
private func nameThisThread(_ name: String) {
    let fd = open("/proc/thread-self/comm", O_WRONLY | O_CLOEXEC)
    guard fd >= 0 else { return }
    FileIO.writeAll(fd, name.utf8.prefix(15))
    close(fd)
}

/// The calling thread's scheduling policy (docs/audio.md, "Real-time priority").
public enum ThreadScheduling {
    /// Linux's SCHED_RESET_ON_FORK (not exported by Glibc's module): threads and processes this
    /// thread creates start as SCHED_OTHER, so a worker thread the Swift runtime happens to start
    /// from here, or a child process, never inherits the real-time policy.
    static let resetOnFork: Int32 = 0x4000_0000

    /// Puts the calling thread, and only it, at SCHED_FIFO `priority` (1...99). Throws the
    /// kernel's refusal (EPERM: no privilege, RLIMIT_RTPRIO, seccomp or the RT group budget).
    public static func setRealtime(priority: Int) throws(SystemError) {
        var param = sched_param()
        param.sched_priority = Int32(priority)
        let rc = pthread_setschedparam(pthread_self(), Int32(SCHED_FIFO) | resetOnFork, &param)
        guard rc == 0 else { throw SystemError("pthread_setschedparam SCHED_FIFO \(priority)", code: rc) }
    }

    /// `setRealtime` as the kernel's answer, for a caller that words it (`ThreadPolicy.asked`):
    /// 0 when granted or when `priority` is 0 or less (not asked), else the errno.
    public static func requestRealtime(priority: Int) -> Int32 {
        guard priority > 0 else { return 0 }
        do throws(SystemError) { try setRealtime(priority: priority) } catch { return error.code }
        return 0
    }

    /// Puts the calling thread back to SCHED_OTHER (its nice value kept). Always allowed: an
    /// unprivileged thread may lower its own policy.
    public static func setOrdinary() {
        var param = sched_param()
        param.sched_priority = 0
        _ = pthread_setschedparam(pthread_self(), Int32(SCHED_OTHER) | resetOnFork, &param)
    }

    /// (policy without flags, priority) of the calling thread, as the kernel holds them.
    public static func current() -> (policy: Int32, priority: Int32) {
        var policy: Int32 = 0
        var param = sched_param()
        guard pthread_getschedparam(pthread_self(), &policy, &param) == 0 else { return (-1, -1) }
        return (policy & ~resetOnFork, param.sched_priority)
    }
}

/// `EPERM`, `EINVAL`, … for the log; the number for the rest.
public func errnoName(_ e: Int32) -> String {
    switch e {
    case EPERM: "EPERM"
    case EINVAL: "EINVAL"
    case EAGAIN: "EAGAIN"
    case ENOSYS: "ENOSYS"
    case ESRCH: "ESRCH"
    default: "errno \(e)"
    }
}
