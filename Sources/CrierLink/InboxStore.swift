import CrierCore
import CrierPosix
import Glibc
import Synchronization

/// The MQTT link's order inbox (`OrderInbox`) and its journal file on the data partition
/// (`mqtt.inbox`, default `state.path` + `.inbox`). Records are appended and fdatasynced by the
/// link thread before the broker may be told an order arrived (docs/protocol.md, "MQTT: an
/// order survives a crash"); the file is rewritten whole (`FileIO.writeDurably`) when it has
/// grown well past the state. Shared by a link that replaces a stalled one.
public final class InboxStore: Sendable {
    /// nil: memory only (`mqtt.inbox = off`).
    public let path: String?
    let log: Logger
    private struct State {
        var inbox: OrderInbox
        var fd: Int32 = -1
        var lastError: String?
        var replayed = false
        /// The file ends in a torn or damaged record: the next change rewrites it whole, so an
        /// append never glues onto half a line.
        var rewrite = false
        var syncs = 0
        var syncSeconds = 0.0
    }
    private let state: Mutex<State>
    /// Outcomes whose acks the broker had before this start: the daemon's dedupe learns them.
    public let restoredDone: [Ack]

    /// The data partition's reserve (see `AckStore.reserve`).
    let reserve: DataReserve?

    public init(path: String?, log: Logger, doneMax: Int = 1024, reserve: DataReserve? = nil) {
        self.path = path
        self.log = log
        self.reserve = reserve
        var inbox = OrderInbox(doneMax: doneMax)
        var rewrite = false
        if let path {
            do throws(SystemError) {
                let bytes = try FileIO.read(path, limit: 16 << 20)
                let loaded = OrderInbox.decodeFile(bytes, doneMax: doneMax)
                for p in loaded.problems {
                    log.warning("order inbox file damaged; the line is ignored", ["file": path, "problem": p])
                }
                inbox = loaded.inbox
                rewrite = !loaded.problems.isEmpty || (!bytes.isEmpty && bytes.last != 0x0A)
                if inbox.pendingCount > 0 {
                    log.info("orders received before the restart and not yet answered will be handled again", ["file": path, "orders": inbox.pendingCount])
                }
            } catch {
                if error.code != ENOENT {
                    log.error("cannot read the order inbox; orders received before this start but not yet said may be lost",
                              ["file": path, "error": error.description])
                }
            }
        }
        restoredDone = inbox.done
        state = Mutex(State(inbox: inbox, rewrite: rewrite))
    }

    /// What was pending at start, once (a replacement link does not hand it out again).
    public func takeReplay() -> [OrderInbox.Entry] {
        state.withLock { s in
            guard !s.replayed else { return [] }
            s.replayed = true
            return s.inbox.pending
        }
    }

    public var pendingCount: Int { state.withLock { $0.inbox.pendingCount } }
    /// fdatasyncs so far and the seconds they took (benchmarks).
    public var syncStats: (syncs: Int, seconds: Double) { state.withLock { ($0.syncs, $0.syncSeconds) } }

    /// Journals received orders and cancels: returns once they are on the card. False when the
    /// write failed for lack of space even after the reserve made room: the link then must not
    /// PUBACK them (the broker keeps them). Another failure (read-only card) is logged and
    /// returns true: availability first, the box carries on from memory.
    @discardableResult
    public func received(_ entries: [OrderInbox.Entry]) -> Bool {
        record { inbox in entries.compactMap { inbox.received($0) } }
    }

    /// See `OrderInbox.answer(rejected:)`.
    public func answer(rejected ack: Ack) -> Ack? {
        state.withLock { $0.inbox.answer(rejected: ack) }
    }

    /// The broker took these acks: their orders leave the inbox.
    public func delivered(_ acks: [Ack]) {
        record { inbox in acks.compactMap { inbox.delivered($0) } }
    }

    /// False: not written for lack of space (see `received`).
    @discardableResult
    private func record(_ change: (inout OrderInbox) -> [[UInt8]]) -> Bool {
        state.withLock { s -> Bool in
            let lines = change(&s.inbox)
            // A failed write is made good by the next one (written whole), even when that is a
            // broker's redelivery of the same records (nothing new to append).
            guard let path, !lines.isEmpty || s.rewrite else { return true }
            let t0 = Monotonic.now()
            var code: Int32 = 0
            func attempt() -> SystemError? {
                let f = Self.write(&s, path: path, lines: lines)
                code = f?.code ?? 0
                return f
            }
            let failure = (reserve.map { $0.write(path, attempt) } ?? attempt())?.description
            s.syncs += 1
            s.syncSeconds += Monotonic.now() - t0
            if let failure, failure != s.lastError {
                log.error("cannot write the order inbox; an order the broker already handed over would be lost if the box stopped before saying it",
                          ["file": path, "error": failure, "hint": "check that the data partition is mounted and writable, or set mqtt.inbox in crier.conf"])
            } else if failure == nil, s.lastError != nil {
                log.info("order inbox written again", ["file": path])
            }
            s.lastError = failure
            return failure == nil || !DataReserve.isNoSpace(code)
        }
    }

    /// One attempt: the records appended (fdatasynced), or the file written whole when it
    /// needs compaction or an earlier append failed.
    private static func write(_ s: inout State, path: String, lines: [[UInt8]]) -> SystemError? {
        var failure: SystemError?
        do {
            if s.inbox.needsCompaction || s.rewrite {
                if s.fd >= 0 { Glibc.close(s.fd); s.fd = -1 }
                do throws(SystemError) {
                    try FileIO.writeDurably(path, s.inbox.encodeForFile())
                    s.rewrite = false
                } catch {
                    failure = error
                    s.rewrite = true
                }
            } else {
                if s.fd < 0 {
                    s.fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0o600)
                    if s.fd < 0 && errno == ENOENT {
                        _ = mkdir(FileIO.directory(of: path), 0o755)
                        s.fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0o600)
                    }
                }
                if s.fd < 0 {
                    failure = SystemError("open", path: path)
                } else {
                    let end = lseek(s.fd, 0, SEEK_END)
                    if !FileIO.writeAll(s.fd, lines.joined()) || fdatasync(s.fd) != 0 {
                        failure = SystemError("write", path: path)
                        // Half a record would read back as a damaged line: cut it off (the
                        // file is written whole at the next change anyway).
                        if end >= 0 { _ = ftruncate(s.fd, end) }
                        Glibc.close(s.fd)
                        s.fd = -1
                    }
                }
                // The file lacks these records, or ends in half of them: the next change
                // writes it whole. An append would leave them out, or glue onto the half line
                // and make both unreadable.
                if failure != nil { s.rewrite = true }
            }
        }
        return failure
    }

    public func close() {
        state.withLock { s in
            if s.fd >= 0 { Glibc.close(s.fd); s.fd = -1 }
        }
    }
}
