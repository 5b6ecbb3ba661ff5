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
