import CrierCore
import CrierPosix
import Glibc
import Synchronization

/// The link's ack outbox (`AckOutbox`) and its file on the data partition, so that acks the
/// server may not have yet survive a restart or a power cut (docs/protocol.md, "Ack outbox").
/// Each change is appended to the file as a small record (one write, then fdatasync) by a
/// thread of its own, several changes coalesced into one append: neither the daemon's actor
/// nor the link thread ever waits for the card, and a name lookup stuck on the link thread
/// cannot delay it. The file is written whole (`FileIO.writeDurably`: PATH.tmp, fsync, rename,
/// directory fsync) at start, after a failed write, and when it holds more dead records than
/// live ones (`AckOutbox.needsCompaction`; docs/protocol.md section 6a, "Ack outbox file").
/// An ack goes to the server only once a write marked it written (write-ahead, `AckOutbox`):
/// the link is woken by `onFileWritten` to send it. A failed write releases the acks anyway
/// (an unwritable card must not silence the box; it is logged). Shared by the link that
/// replaces a stalled one.
public final class AckStore: Sendable {
    /// nil: memory only (`link.outbox = off`).
    public let path: String?
    let log: Logger
    private let state: Mutex<AckOutbox>
    /// The acks found in the file at start, confirmed ones (`"delivered":true`) included: the
    /// daemon's dedupe learns them (a redelivered order whose ack is here is acked again, not
    /// said again, even one whose ack the server had already confirmed).
    public let restored: [Ack]
    private let wake = WakePipe()

    private struct Writer {
        var thread: PosixThread?
        var closed = false
        var lastError: String?
        var writes = 0
        var writeSeconds = 0.0
        var lastNotDurable = 0
        var listener: (@Sendable () -> Void)?
    }
    private let writer = Mutex(Writer())
    /// Serializes file writes (the thread's and `close`'s last one).
    private let fileLock = Mutex(())

    /// The data partition's reserve: a write that fails for lack of space is tried again in
    /// the room it leaves, and alerts are held meanwhile (`JournalSpace`).
    let reserve: DataReserve?

    public init(path: String?, log: Logger, capacity: Int = 100_000, durableMax: Int = 1000, reserve: DataReserve? = nil) {
        self.path = path
        self.log = log
        self.reserve = reserve
        var box = AckOutbox(capacity: capacity, durableMax: durableMax, waitsForFile: path != nil)
        var restored: [Ack] = []
        var compact = false
        if let path {
            let loaded = Self.load(path, durableMax: durableMax, log: log)
            let kept = box.restore(loaded)
            // Written whole now: a torn append is cut off before anything is appended after it,
            // dead records go, a file of the previous release gets its checksums.
            compact = FileIO.exists(path)
            if compact { box.markDirty() }
            if kept.sent + kept.unsent > 0 {
                log.info("acks from before the restart: the unsent go out after the next welcome, the sent ones answer the server if it redelivers their orders",
                         ["file": path, "acks": kept.sent + kept.unsent, "unsent": kept.unsent, "sent_unconfirmed": kept.sent])
            }
            // The confirmed outcomes first: an ack still waiting for the same id is newer.
            restored = loaded.delivered + loaded.acks
        }
        state = Mutex(box)
        self.restored = restored
        guard path != nil else { return }
        do {
            let t = try PosixThread(name: "crier-acks") { [self] in run() }
            writer.withLock { $0.thread = t }
        } catch {
            log.error("cannot start the ack outbox thread: \(error); acks are written on the link thread instead")
        }
        // The reserve is back: a write that failed for lack of space is tried again now.
        reserve?.onChange { [wake] in wake.wake() }
        if compact {
            if writer.withLock({ $0.thread == nil }) { persist() } else { wake.wake() }
        }
    }

    private static func load(_ path: String, durableMax: Int, log: Logger) -> AckOutbox.Loaded {
        let bytes: [UInt8]
        do throws(SystemError) {
            bytes = try FileIO.read(path, limit: 4 << 20)
        } catch {
            if error.code != ENOENT {
                log.error("cannot read the ack outbox; acks from before this start are lost (their orders may be said again)",
                          ["file": path, "error": error.description])
            }
            return AckOutbox.Loaded()
        }
        let loaded = AckOutbox.decodeFile(bytes, durableMax: durableMax)
        if let torn = loaded.torn {
            log.warning("ack outbox file ends in an unfinished record (a power cut or a full disk cut an append short); it is dropped: no ack in it had gone out yet; the acks before it count as sent (each answers the server's redelivery of its order)",
                        ["file": path, "dropped": torn, "acks": loaded.acks.count])
        }
        for p in loaded.problems {
            log.warning("ack outbox file damaged; the line is ignored", ["file": path, "problem": p])
        }
        if loaded.damaged && loaded.torn == nil && !loaded.acks.isEmpty {
            log.warning("ack outbox file damaged: every ack in it counts as sent (each answers the server's redelivery of its order, none goes out unasked)",
                        ["file": path, "acks": loaded.acks.count])
        }
        return loaded
    }

    /// Called after each write of the file (the link waits for it before sending what the
    /// write marked as written). One listener: the link that is running.
    public func onFileWritten(_ f: @escaping @Sendable () -> Void) {
        writer.withLock { $0.listener = f }
    }

    /// Runs `body` on the outbox; a change to it is written out soon after.
    @discardableResult
    func with<R: Sendable>(_ body: (inout AckOutbox) -> R) -> R {
        let (r, dirty) = state.withLock { s -> (R, Bool) in
            let r = body(&s)
            return (r, s.dirty)
        }
        if dirty {
            if writer.withLock({ $0.thread == nil }) { persist() } else { wake.wake() }
        }
        return r
    }

    /// Looks without changing anything (no write is started).
    func peek<R: Sendable>(_ body: (AckOutbox) -> R) -> R { state.withLock { body($0) } }

    public var count: Int { state.withLock { $0.count } }

    /// Writes and fsyncs of the file so far, and the seconds they took.
    public var writeStats: (writes: Int, seconds: Double) { writer.withLock { ($0.writes, $0.writeSeconds) } }

    private func run() {
        var retryIn: Double? = nil
        while true {
            wake.wait(timeout: retryIn)
            if writer.withLock({ $0.closed }) { return }
            retryIn = persist() ? nil : 5
        }
    }

    /// Writes the file if the outbox changed: appends the changes, or writes it whole. False
    /// when the write failed (retried later, whole).
    @discardableResult
    func persist() -> Bool {
        guard let path else { return true }
        return fileLock.withLock { _ -> Bool in
            let (first, notDurable) = state.withLock { s -> (AckOutbox.FileContent?, Int) in
                guard s.dirty else { return (nil, s.notDurable) }
                return (s.takeFileWrite(), s.notDurable)
            }
            guard var content = first else { return true }
            let t0 = Monotonic.now()
            var appendFailed = false
            let attempt = { () -> SystemError? in
                if !content.whole && !appendFailed {
                    guard !content.bytes.isEmpty else { return nil }
                    guard let e = Self.append(path, content.bytes) else { return nil }
                    // The file lacks these records: the next attempt (the retry in the room
                    // the reserve leaves, or the next change) writes it whole.
                    appendFailed = true
                    if e.code != ENOENT { return e }
                }
                if appendFailed { content = self.state.withLock { $0.fileContent() } }
                let bytes = content.bytes
                do throws(SystemError) {
                    try FileIO.writeDurably(path, bytes)
                } catch {
                    guard error.code == ENOENT else { return error }
                    // The data partition's directory is missing (first boot, hand-made setup).
                    _ = mkdir(FileIO.directory(of: path), 0o755)
                    do throws(SystemError) { try FileIO.writeDurably(path, bytes) } catch { return error }
                }
                return nil
            }
            // On ENOSPC the reserve makes room and the write is tried once more.
            let failure = (reserve.map { $0.write(path, attempt) } ?? attempt())?.description
            let took = Monotonic.now() - t0
            // Failed or not: an unwritable file must not hold the acks back (logged below).
            state.withLock { $0.fileWritten(through: content.flaggedThrough) }
            let (report, recovered, dropNote, listener) = writer.withLock { w -> (String?, Bool, Int?, (@Sendable () -> Void)?) in
                w.writes += 1
                w.writeSeconds += took
                let report = failure != nil && failure != w.lastError ? failure : nil
                let recovered = failure == nil && w.lastError != nil
                w.lastError = failure
                let note = notDurable > 0 && w.lastNotDurable == 0 ? notDurable : nil
                w.lastNotDurable = notDurable
                return (report, recovered, note, w.listener)
            }
            if let report {
                log.error("cannot write the ack outbox; acks not yet delivered would not survive a restart (retrying every 5 s)",
                          ["file": path, "error": report, "hint": "check that the data partition is mounted and writable, or set link.outbox in crier.conf"])
            } else if recovered {
                log.info("ack outbox written again", ["file": path])
            }
            if let dropNote {
                log.warning("more acks undelivered than the outbox file keeps; the oldest are kept in memory only",
                            ["file": path, "not_on_disk": dropNote])
            }
            if failure != nil {
                // Written again on the next attempt.
                state.withLock { $0.markDirty() }
            }
            listener?()
            return failure == nil
        }
    }

    /// Appends `bytes` to the file with one write, then fdatasync (the size is data for it):
    /// nil once they are on the card. A failed write is truncated back to where it began, so
    /// no half record stays behind if the box runs on (a power cut first leaves a torn last
    /// record, which `decodeFile` drops).
    static func append(_ path: String, _ bytes: [UInt8]) -> SystemError? {
        // No O_CREAT: a file that vanished is written whole, not restarted from these records.
        let fd = open(path, O_WRONLY | O_APPEND | O_CLOEXEC)
        guard fd >= 0 else { return SystemError("open", path: path) }
        defer { Glibc.close(fd) }
        let end = lseek(fd, 0, SEEK_END)
        guard FileIO.writeAll(fd, bytes) else {
            let e = SystemError("write", path: path)
            if end >= 0 { _ = ftruncate(fd, end) }
            return e
        }
        guard fdatasync(fd) == 0 else {
            let e = SystemError("fdatasync", path: path)
            if end >= 0 { _ = ftruncate(fd, end) }
            return e
        }
        return nil
    }

    /// Stops the writer and writes what changed since its last write. Idempotent.
    public func close() {
        let t = writer.withLock { w -> PosixThread? in
            w.closed = true
            defer { w.thread = nil }
            return w.thread
        }
        wake.wake()
        t?.join()
        persist()
    }
}
