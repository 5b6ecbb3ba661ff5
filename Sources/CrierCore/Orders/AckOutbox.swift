/// Acks the server may not have yet (docs/protocol.md, "Ack outbox"). Protocol v1 has no
/// ack-of-ack, so "delivered" is defined here: an ack counts as delivered once the server
/// answered a ping that was written after it. TCP keeps order and a server reads its lines in
/// order, so its pong proves it read every line before that ping. For a server that does not
/// answer pings at all, the fallback is weaker: the connection stayed up, with the server
/// heard from, for 2 × heartbeat after the ping.
///
/// Until then an ack stays here: written again after every reconnect (a duplicate ack is
/// harmless, the server ignores acks for orders it no longer holds) and kept across restarts
/// by the link's file (the newest `durableMax` of them). Pure: the link reports what it wrote,
/// pinged and received, with the time.
public struct AckOutbox: Sendable {
    public struct Entry: Sendable, Equatable {
        public var ack: Ack
        public var seq: UInt64
    }

    /// Most acks kept in memory; beyond it the oldest is dropped (its order is redelivered by
    /// the server and answered again from the queue's memory).
    public let capacity: Int
    /// Most acks in the file (the newest ones).
    public let durableMax: Int
    /// Oldest first, so ordered by `seq`: what was written is a prefix, what is confirmed too.
    public private(set) var entries: [Entry] = []
    /// id → seq of its entry: O(1) dedupe in a burst of thousands.
    private var seqOf: [String: UInt64] = [:]
    private var nextSeq: UInt64 = 1
    /// Entries with `seq <= written` went to the current connection.
    private var written: UInt64 = 0
    /// Pings written on this connection and not answered yet, oldest first: the `written`
    /// mark at the time of each, and when it was sent.
    private var probes: [(through: UInt64, at: Double)] = []
    /// This connection's server never answered a ping in time: pongs no longer count (one
    /// arriving late would confirm the wrong acks); only the time fallback does.
    private var pongsUnreliable = false
    /// Acks this connection's server is known to have: the same answer again (a redelivery
    /// that crossed our ack on the wire) is not sent twice. Forgotten on reconnect: a server
    /// that redelivers on a new connection did not keep the ack and must get it again.
    private var deliveredHere: [String: Ack.Status] = [:]
    /// Acks dropped because `capacity` was reached (for the log).
    public private(set) var dropped = 0
    /// The file's content no longer matches `entries`.
    public private(set) var dirty = false

    public init(capacity: Int = 100_000, durableMax: Int = 1000) {
        self.capacity = max(1, capacity)
        self.durableMax = max(1, durableMax)
    }

    public var count: Int { entries.count }
    public var isEmpty: Bool { entries.isEmpty }

    /// Queues an ack. A second ack for the same id with another status replaces the first (the
    /// newest status is what the box means); with the same status it changes nothing. Returns the ack dropped to stay within `capacity`, if any.
    /// `reply`: the answer to a server's cancel (docs/protocol.md, section 5), sent even when this
    /// connection's server already has that ack: it asked, so it gets an answer.
    @discardableResult
    public mutating func add(_ ack: Ack, reply: Bool = false) -> Ack? {
        // A rejection answers one delivery (`queue_full` invites the server to send the order
        // again, and that delivery needs its own answer): never folded into an earlier one, or
        // a server that resends on each rejection waits for ever (found by the chaos run).
        // A written rejection leaves the outbox at once (takeNext, takeUnwritten): it is no
        // outcome to keep (a lost one is answered again at the next delivery), and a flood of
        // them must fill neither memory nor the file.
        let reply = reply || ack.status == .rejected
        if !reply, deliveredHere[ack.id] == ack.status { return nil }
        if let old = seqOf[ack.id] {
            let i = index(after: old - 1)
            // The same answer again (a redelivery of an order whose ack is still here): one
            // ack line per connection is enough.
            if entries[i].ack.status == ack.status && !reply { return nil }
            entries.remove(at: i)
        }
        entries.append(Entry(ack: ack, seq: nextSeq))
        seqOf[ack.id] = nextSeq
        nextSeq += 1
        dirty = true
        guard entries.count > capacity else { return nil }
        dropped += 1
        let first = entries.removeFirst().ack
        seqOf[first.id] = nil
        return first
    }

    /// The index of the first entry with `seq > after` (binary search; entries are sorted).
    private func index(after seq: UInt64) -> Int {
        var lo = 0, hi = entries.count
        while lo < hi {
            let mid = (lo + hi) / 2
            if entries[mid].seq <= seq { lo = mid + 1 } else { hi = mid }
        }
        return lo
    }

    /// A new connection was welcomed: every ack still here goes out again.
    public mutating func connectionStarted() {
        written = 0
        probes = []
        pongsUnreliable = false
        deliveredHere = [:]
    }

    /// The acks not yet written on this connection, oldest first; they count as written.
    public mutating func takeUnwritten() -> [Ack] {
        let start = index(after: written)
        let out = entries[start...].map(\.ack)
        if let last = entries.last { written = max(written, last.seq) }
        if out.contains(where: { $0.status == .rejected }) {
            for e in entries[start...] where e.ack.status == .rejected { seqOf[e.ack.id] = nil }
            entries.replaceSubrange(start..., with: entries[start...].filter { $0.ack.status != .rejected })
            dirty = true
        }
        return out
    }

    /// Some ack still waits to be written on this connection.
    public var hasUnwritten: Bool { entries.last.map { $0.seq > written } ?? false }

    /// The oldest ack not yet written on this connection (it counts as written), or nil. For
    /// a caller that takes only what its output buffer holds: a backlog of thousands never
    /// piles up in front of a slow reader.
    public mutating func takeNext() -> Ack? {
        let i = index(after: written)
        guard i < entries.count else { return nil }
        written = entries[i].seq
        let ack = entries[i].ack
        if ack.status == .rejected {
            seqOf[ack.id] = nil
            entries.remove(at: i)
            dirty = true
        }
        return ack
    }

    /// Something was written and no ping covers it yet: send one to learn it arrived.
    public var needsProbe: Bool {
        probes.isEmpty && (entries.first.map { $0.seq <= written } ?? false)
    }

    /// A ping was written after everything `takeUnwritten` returned so far.
    public mutating func pinged(now: Double) {
        // Bounded: the link pings for the heartbeat at most once per interval and for acks only
        // when none is outstanding; a cap guards against a caller that does otherwise.
        if probes.count >= 64 { probes.removeFirst() }
        probes.append((written, now))
    }

    /// A pong arrived: the acks written before the ping it answers were read by the server.
    /// Returns how many left the outbox.
    @discardableResult
    public mutating func pong() -> Int {
        guard !pongsUnreliable, !probes.isEmpty else { return 0 }
        return confirm(through: probes.removeFirst().through)
    }

    /// The time fallback for servers that do not answer pings: a ping unanswered for 2 ×
    /// `heartbeat` while the server was still heard from after it confirms what preceded it.
    @discardableResult
    public mutating func tick(now: Double, lastReceived: Double, heartbeat: Double) -> Int {
        guard let first = probes.first, now - first.at >= 2 * heartbeat, lastReceived > first.at else { return 0 }
        pongsUnreliable = true
        probes.removeFirst()
        return confirm(through: first.through)
    }

    private mutating func confirm(through seq: UInt64) -> Int {
        let n = index(after: seq)
        guard n > 0 else { return 0 }
        if deliveredHere.count + n > 10_000 { deliveredHere = [:] }  // bounded; at worst an ack is sent twice
        for e in entries[..<n] {
            seqOf[e.ack.id] = nil
            deliveredHere[e.ack.id] = e.ack.status
        }
        entries.removeFirst(n)
        dirty = true
        return n
    }

    /// The file's bytes: one protocol ack line per entry, the newest `durableMax`, then marks
    /// the outbox clean.
    public mutating func encodeForFile() -> [UInt8] {
        dirty = false
        var out: [UInt8] = []
        for e in entries.suffix(durableMax) { out += ProtocolCodec.line(.ack(e.ack)) }
        return out
    }

    /// The file write failed: the next attempt writes again.
    public mutating func markDirty() { dirty = true }

    /// How many acks `encodeForFile` leaves out.
    public var notDurable: Int { max(0, entries.count - durableMax) }

    public struct Loaded: Sendable, Equatable {
        public var acks: [Ack] = []
        /// One per bad line (a torn write cannot happen with rename, a damaged card can).
        public var problems: [String] = []
    }

    /// Reads a file written by `encodeForFile`: bad lines are reported and skipped, at most
    /// `durableMax` acks (the last ones) are kept. Never fails.
    public static func decodeFile(_ bytes: [UInt8], durableMax: Int = 1000) -> Loaded {
        var out = Loaded()
        var framer = LineFramer()
        var lineNo = 0
        var bytes = bytes
        if bytes.last != 0x0A { bytes.append(0x0A) }  // a last line without newline is still judged
        for item in framer.push(bytes) {
            lineNo += 1
            switch item {
            case .tooLong(let n):
                out.problems.append("line \(lineNo): \(n) bytes without a newline; the rest of the file is ignored")
            case .line(let l):
                switch ProtocolCodec.decode(l) {
                case .success(.ack(let a)): out.acks.append(a)
                case .success(let m): out.problems.append("line \(lineNo): a \(m.typeName) message, not an ack; skipped")
                case .failure(let e): out.problems.append("line \(lineNo): \(e.message); skipped")
                }
            }
            if out.problems.count > 20 {
                out.problems.append("more than 20 bad lines; the rest of the file is ignored")
                break
            }
        }
        if out.acks.count > durableMax { out.acks.removeFirst(out.acks.count - durableMax) }
        return out
    }
}

extension CrierConfig {
    /// Where the link keeps its ack outbox: `link.outbox`, or next to `state.path` (both on
    /// the data partition) when that is not set; nil when `link.outbox = off`.
    public var ackOutboxPath: String? {
        guard let p = link.outbox else { return buttons.statePath + ".acks" }
        return p.isEmpty ? nil : p
    }
}
