import CrierCore
import CrierPosix
import Glibc

/// `input = fifo:/path`: a named pipe taking lines `<line-name> <0|1>`, the electrical level
/// of a button's line, e.g. `GPIO17 0` (pressed, active low) then `GPIO17 1`. The line name is
/// the one in `button.*` (`GPIO17`, `gpiochip0:17`); the action name (`volume_up`) works too.
/// Levels are stamped when read, so a writer's real timing drives the real recognizer.
/// The FIFO is created if missing. The reader also holds a write end of its own, so writers
/// can come and go without an end-of-file in between (a reader that closes and reopens on
/// EOF loses what a quick next writer sends in that gap); should EOF still come, or the path
/// be replaced by a new FIFO, it is reopened.
public final class FifoInput: ButtonInput {
    let path: String
    let log: Logger
    let names: [String: ButtonAction]
    let clock: @Sendable () -> Double
    let retryEvery: Double
    var fd: Int32 = -1
    var keepAlive: Int32 = -1
    var checkAt = 0.0
    var buffer: [UInt8] = []
    var retryAt = 0.0
    var lastError: String?

    public init(path: String, config: ButtonsConfig, log: Logger, retryEvery: Double = 5,
                clock: @escaping @Sendable () -> Double = Monotonic.now) {
        self.path = path
        self.log = log
        self.clock = clock
        self.retryEvery = retryEvery
        var names: [String: ButtonAction] = [:]
        for (a, spec) in config.fitted {
            names[spec.line!.description] = a
            names[a.rawValue] = a
        }
        self.names = names
    }

    func openFifo(now: Double) {
        guard fd < 0, now >= retryAt else { return }
        var st = stat()
        if stat(path, &st) != 0 {
            if mkfifo(path, 0o660) != 0 && errno != EEXIST {
                return fail("cannot create FIFO \(path): \(errnoText(errno))", now)
            }
        } else if (st.st_mode & S_IFMT) != S_IFIFO {
            return fail("\(path) exists and is not a FIFO; remove it or change input in crier.conf", now)
        }
        // Non-blocking, so opening does not wait for a writer.
        let f = Glibc.open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC)
        guard f >= 0 else { return fail("cannot open FIFO \(path): \(errnoText(errno))", now) }
        fd = f
        keepAlive = Glibc.open(path, O_WRONLY | O_NONBLOCK | O_CLOEXEC)
        checkAt = now + retryEvery
        if lastError != nil { log.notice("FIFO \(path) open again") }
        lastError = nil
    }

    func fail(_ m: String, _ now: Double) {
        if m != lastError { log.error("\(m); retrying every \(ConfigValue.fmt(retryEvery)) s") }
        lastError = m
        retryAt = now + retryEvery
    }

    public func wait(until deadline: Double?, wakeFD: Int32) -> [ButtonEvent] {
        openFifo(now: clock())
        guard fd >= 0 else {
            idle(wake: wakeFD, until: [deadline, retryAt].compactMap { $0 }.min())
            return []
        }
        let rev = pollFDs([fd], wake: wakeFD, until: [deadline, checkAt].compactMap { $0 }.min())[0]
        guard rev != 0 else {
            if clock() >= checkAt { checkReplaced() }
            return []
        }
        var chunk = [UInt8](repeating: 0, count: 512)
        let n = read(fd, &chunk, chunk.count)
        let now = clock()
        if n < 0 {
            if errno == EAGAIN || errno == EINTR { return [] }
            log.error("reading FIFO \(path) failed: \(errnoText(errno)); reopening")
            reopen()
            return []
        }
        if n == 0 {  // every writer closed it: reopen so the next writer is heard
            reopen()
            return []
        }
        buffer += chunk[..<n]
        var out: [ButtonEvent] = []
        while let nl = buffer.firstIndex(of: UInt8(ascii: "\n")) {
            let line = String(decoding: buffer[..<nl], as: UTF8.self)
            buffer.removeSubrange(...nl)
            if let e = parse(line, at: now) { out.append(e) }
        }
        if buffer.count > 4096 { buffer = [] }  // no newline in 4 KiB: not our format
        return out
    }

    func parse(_ raw: String, at: Double) -> ButtonEvent? {
        let parts = raw.split(whereSeparator: { $0 == " " || $0 == "\t" || $0 == "\r" })
        if parts.isEmpty || parts[0].hasPrefix("#") { return nil }
        guard parts.count == 2, parts[1] == "0" || parts[1] == "1" else {
            log.warning("FIFO line ignored, expected \"<line-name> <0|1>\"", ["line": raw])
            return nil
        }
        guard let a = names[String(parts[0])] else {
            log.warning("FIFO names no configured button", ["line": String(parts[0]),
                        "known": names.keys.sorted().joined(separator: ",")])
            return nil
        }
        return ButtonEvent(a, level: parts[1] == "1", at: at)
    }

    /// Reopens if the path now names another file (the FIFO was deleted and made again).
    func checkReplaced() {
        checkAt = clock() + retryEvery
        var a = stat(), b = stat()
        if stat(path, &a) != 0 || fstat(fd, &b) != 0 || a.st_ino != b.st_ino || a.st_dev != b.st_dev {
            log.notice("FIFO \(path) was replaced; reopening")
            reopen()
        }
    }

    func reopen() {
        close()
        buffer = []
        openFifo(now: clock())
    }

    public func close() {
        if fd >= 0 { Glibc.close(fd) }
        if keepAlive >= 0 { Glibc.close(keepAlive) }
        fd = -1
        keepAlive = -1
    }

    deinit { close() }
}
