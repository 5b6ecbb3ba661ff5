import CrierCore
import CrierPosix
import Glibc
import Synchronization

/// The reserve file on the data partition and the rule that holds alerts while the journals
/// cannot be written for lack of space (`JournalSpace`, docs/protocol.md section 6a). The ack
/// outbox and the MQTT inbox report each write here; on ENOSPC the reserve is deleted and they
/// write once more into the room it leaves. A thread of its own measures the free space every
/// few seconds while alerts are held, and makes the reserve again once there is room.
public final class DataReserve: Sendable {
    /// The reserve file (`crier.reserve` in the ack outbox's directory).
    public let path: String
    let dir: String
    let log: Logger
    private let rule: Mutex<JournalSpace>
    private let wake = WakePipe()
    private struct Thread {
        var thread: PosixThread?
        var closed = false
        var listeners: [@Sendable () -> Void] = []
    }
    private let thread = Mutex(Thread())
    /// Free bytes when the reserve was last released (the log says how full it was).
    private let freeBeforeRelease = Atomic<Int64>(0)

    public init(path: String, log: Logger, rule: JournalSpace = JournalSpace()) {
        self.path = path
        dir = FileIO.directory(of: path)
        self.log = log
        var r = rule
        var st = stat()
        let found = stat(path, &st) == 0 && Int64(st.st_blocks) * 512 >= r.reserveBytes
        let action = r.started(reserveFound: found, now: Monotonic.now())
        self.rule = Mutex(r)
        if action == .makeReserve { make(now: Monotonic.now(), atStart: true) }
        do {
            let t = try PosixThread(name: "crier-reserve") { [self] in run() }
            thread.withLock { $0.thread = t }
        } catch {
            log.error("cannot start the data reserve thread: \(error); held alerts resume only after a restart")
        }
    }

    /// No alert may begin: a journal could not record its outcome.
    public var holdsAlerts: Bool { rule.withLock { $0.holdsAlerts } }
    public var state: JournalSpace { rule.withLock { $0 } }

    /// Called on every change of `holdsAlerts` (any thread).
    public func onChange(_ f: @escaping @Sendable () -> Void) {
        thread.withLock { $0.listeners.append(f) }
    }

    /// Free bytes for crier (not root's share) on the data partition, or nil.
    static func freeBytes(_ dir: String) -> Int64? { FileIO.freeSpace(dir)?.bytes }

    static func isNoSpace(_ code: Int32) -> Bool { code == ENOSPC || code == EDQUOT }

    /// Runs a journal write; on ENOSPC the reserve is released and the write tried once more.
    /// Returns the last attempt's error (nil: written).
    public func write(_ journal: String, _ attempt: () -> SystemError?) -> SystemError? {
        var error = attempt()
        if let e = error, Self.isNoSpace(e.code) { freeBeforeRelease.store(Self.freeBytes(dir) ?? 0, ordering: .relaxed) }
        let (action, t) = report(journal, error)
        if action == .releaseAndRetry {
            release()
            error = attempt()
            announce(t)
            announce(report(journal, error).1)
        } else {
            announce(t)
        }
        return error
    }

    private func report(_ journal: String, _ error: SystemError?) -> (JournalSpace.Action, JournalSpace.Transition) {
        let detail = error.map { "cannot write \(journal): \($0)" }
        return rule.withLock { $0.wrote(journal, ok: error == nil, noSpace: error.map { Self.isNoSpace($0.code) } ?? false, detail: detail, now: Monotonic.now()) }
    }

    private func release() {
        if unlink(path) != 0 && errno != ENOENT {
            log.error("cannot delete the data reserve", ["file": path, "error": errnoText(errno)])
        }
    }

    private func announce(_ t: JournalSpace.Transition) {
        let s = rule.withLock { $0 }
        switch t {
        case .unchanged: return
        case .holding:
            let free = freeBeforeRelease.load(ordering: .relaxed)
            let (message, hint) = JournalSpace.holdingMessage(dir: dir, freeBytes: free, reserveBytes: s.reserveBytes, resumeMargin: s.resumeMargin)
            log.error(message, ["error": s.lastProblem ?? "-", "free_bytes": free, "free_after_release": Self.freeBytes(dir) ?? 0, "reserve": path, "hint": hint])
            wake.wake()
        case .resumed(let heldFor):
            log.notice("the data partition has room again: the reserve is back and held alerts are said now",
                       ["dir": dir, "free_bytes": Self.freeBytes(dir) ?? 0, "held_for": "\(Int(heldFor.rounded()))s"])
        }
        for f in thread.withLock({ $0.listeners }) { f() }
    }

    /// Makes the reserve file: `reserveBytes` of allocated blocks (fallocate, zeros written
    /// where it is not supported), fsynced.
    private func make(now: Double, atStart: Bool = false) {
        let size = rule.withLock { $0.reserveBytes }
        let tmp = path + ".tmp"
        var result = JournalSpace.Made.ok
        var fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        if fd < 0 && errno == ENOENT {
            _ = mkdir(dir, 0o755)
            fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        }
        if fd < 0 {
            result = Self.isNoSpace(errno) ? .noSpace : .failed(SystemError("open", path: tmp).description)
        } else {
            var rc = posix_fallocate(fd, 0, off_t(size))
            if rc == EOPNOTSUPP || rc == EINVAL {
                // A file system without fallocate: real zeros take the blocks.
                let block = [UInt8](repeating: 0, count: 1 << 16)
                var left = size
                rc = 0
                while left > 0 {
                    let n = Int(min(left, Int64(block.count)))
                    if !FileIO.writeAll(fd, block.prefix(n)) { rc = errno; break }
                    left -= Int64(n)
                }
            }
            if rc == 0 && fsync(fd) != 0 { rc = errno }
            Glibc.close(fd)
            if rc == 0 && rename(tmp, path) != 0 { rc = errno }
            if rc != 0 {
                unlink(tmp)
                result = Self.isNoSpace(rc) ? .noSpace : .failed("make \(path): \(errnoText(rc)) (errno \(rc))")
            }
        }
        let t = rule.withLock { $0.reserveMade(result, now: now) }
        if case .failed(let why) = result {
            log.warning("cannot make the data reserve; a full data partition can then say an order twice after a restart",
                        ["error": why, "hint": "check that the data partition (\(dir)) is mounted and writable"])
        } else if atStart, result == .noSpace {
            // Logged as the hold it is.
            let s = rule.withLock { $0 }
            let free = Self.freeBytes(dir) ?? 0
            let (message, hint) = JournalSpace.holdingMessage(dir: dir, freeBytes: free, reserveBytes: s.reserveBytes, resumeMargin: s.resumeMargin, atStart: true)
            log.error(message, ["free_bytes": free, "reserve": path, "hint": hint])
            return
        }
        if !atStart { announce(t) } else if t != .unchanged { for f in thread.withLock({ $0.listeners }) { f() } }
    }

    private func run() {
        while true {
            let (every, needs) = rule.withLock { ($0.checkEvery, $0.needsCheck) }
            _ = wake.wait(timeout: needs ? every : nil)
            if thread.withLock({ $0.closed }) { return }
            let free = Self.freeBytes(dir) ?? 0
            if rule.withLock({ $0.check(freeBytes: free) }) == .makeReserve { make(now: Monotonic.now()) }
            // A journal still failing is retried by its own writer; tell the listeners to try now.
            if rule.withLock({ $0.reserve == .held && !$0.failing.isEmpty }) {
                for f in thread.withLock({ $0.listeners }) { f() }
            }
        }
    }

    public func close() {
        let t = thread.withLock { s -> PosixThread? in
            s.closed = true
            defer { s.thread = nil }
            return s.thread
        }
        wake.wake()
        t?.join()
    }
}
