/// The MQTT link's journal of received orders (docs/protocol.md, "MQTT: an order survives a
/// crash"). libmosquitto acknowledges an incoming QoS 1 message (PUBACK) on its own, after
/// which the broker never delivers it again, while the daemon's queue is in memory: so every
/// order and cancel is journaled (and fsynced) before its PUBACK may leave, and stays pending
/// until the broker has taken the box's ack for it. At start the pending ones are handed to
/// the daemon again; the ids of the last `doneMax` delivered outcomes are kept too, so a late
/// duplicate of an order already said is acked again, not said again.
///
/// Pure: the caller appends the returned lines to the file (and fsyncs), and rewrites it with
/// `encodeForFile` when `needsCompaction`. File format: one protocol line per record,
/// `order`/`cancel` (received) and `ack` (its ack was delivered).
public struct OrderInbox: Sendable {
    public enum Entry: Sendable, Equatable {
        case order(Order)
        case cancel(id: String)

        public var id: String {
            switch self {
            case .order(let o): o.id
            case .cancel(let id): id
            }
        }
    }

    public let doneMax: Int
    /// Received and not yet answered, oldest first.
    public var pending: [Entry] { slots.compactMap { $0 } }
    public private(set) var pendingCount = 0
    /// `pending` with holes where answered entries were, and where each id's entries are: a
    /// journal of 100 000 waiting orders and their acks is read back in linear time at start
    /// (searching an array per record was quadratic: some 5·10⁹ comparisons, by estimate
    /// past systemd's start timeout on a Pi). Compacted when half of it is holes.
    private var slots: [Entry?] = []
    private var slotsOf: [String: [Int]] = [:]
    /// Outcomes whose ack the broker has, oldest first (at most `doneMax`).
    public private(set) var done: [Ack] = []
    private var doneIDs: [String: Int] = [:]
    /// Records in the file since it was last written whole.
    public private(set) var linesInFile = 0

    public init(doneMax: Int = 1024) {
        self.doneMax = max(1, doneMax)
    }

    /// An order (or cancel) arrived: the line to journal before its PUBACK, or nil when the
    /// same entry is already pending (a broker redelivery).
    public mutating func received(_ e: Entry) -> [UInt8]? {
        if let held = slotsOf[e.id], held.contains(where: { slots[$0] == e }) { return nil }
        slotsOf[e.id, default: []].append(slots.count)
        slots.append(e)
        pendingCount += 1
        linesInFile += 1
        switch e {
        case .order(let o): return ProtocolCodec.line(.order(o))
        case .cancel(let id): return ProtocolCodec.line(.cancel(id: id))
        }
    }

    /// The broker took the ack for `ack.id`: its entries leave, a final outcome is remembered.
    /// The line to journal, or nil when nothing changed.
    public mutating func delivered(_ ack: Ack) -> [UInt8]? {
        var changed = false
        if let held = slotsOf.removeValue(forKey: ack.id) {
            for i in held { slots[i] = nil }
            pendingCount -= held.count
            changed = true
            if slots.count > 64 && 2 * pendingCount < slots.count { compactSlots() }
        }
        if ack.status != .rejected, doneIDs[ack.id] == nil {
            remember(ack)
            changed = true
        }
        guard changed else { return nil }
        linesInFile += 1
        return ProtocolCodec.line(.ack(ack))
    }

    /// The answer for an order that could not be decoded, so its id never gets two different
    /// final statuses: nil while an order or cancel with that id is pending (that one will be
    /// answered), the outcome the broker already has for it, else the rejection itself.
    private mutating func compactSlots() {
        var fresh: [Entry?] = []
        fresh.reserveCapacity(pendingCount)
        slotsOf = [:]
        for case let e? in slots {
            slotsOf[e.id, default: []].append(fresh.count)
            fresh.append(e)
        }
        slots = fresh
    }

    public func answer(rejected ack: Ack) -> Ack? {
        if slotsOf[ack.id] != nil { return nil }
        if doneIDs[ack.id] != nil, let d = done.last(where: { $0.id == ack.id }) {
            return Ack(id: ack.id, status: d.status, message: "already \(d.status.rawValue)")
        }
        return ack
    }

    private mutating func remember(_ ack: Ack) {
        done.append(ack)
        doneIDs[ack.id] = 1
        if done.count > doneMax {
            let n = done.count - doneMax
            for a in done[..<n] { doneIDs[a.id] = nil }
            done.removeFirst(n)
        }
    }

    /// The file holds many more records than the state: rewrite it whole.
    public var needsCompaction: Bool { linesInFile > 2 * (pendingCount + done.count) + 64 }

    /// The whole file for the current state (done outcomes first, then what is pending).
    public mutating func encodeForFile() -> [UInt8] {
        var out: [UInt8] = []
        for a in done { out += ProtocolCodec.line(.ack(a)) }
        for case let e? in slots {
            switch e {
            case .order(let o): out += ProtocolCodec.line(.order(o))
            case .cancel(let id): out += ProtocolCodec.line(.cancel(id: id))
            }
        }
        linesInFile = done.count + pendingCount
        return out
    }

    public struct Loaded: Sendable {
        public var inbox: OrderInbox
        public var problems: [String] = []
    }

    /// Reads a journal: records in order, bad lines reported and skipped (a torn last append
    /// after a power cut is one of them, a line torn by a failed append another). Never fails.
    /// A record is re-encoded from what arrived, so it can be longer than the wire's limit
    /// (`ProtocolCodec.maxRewrittenLineBytes`); a longer line is skipped, not the rest of the file.
    public static func decodeFile(_ bytes: [UInt8], doneMax: Int = 1024) -> Loaded {
        var inbox = OrderInbox(doneMax: doneMax)
        var problems: [String] = []
        var lineNo = 0
        var start = 0
        while start < bytes.count {
            let end = bytes[start...].firstIndex(of: 0x0A) ?? bytes.count
            let line = bytes[start..<end]
            start = end + 1
            lineNo += 1
            if line.isEmpty || line == [0x0D] { continue }
            if line.count > ProtocolCodec.maxRewrittenLineBytes {
                problems.append("line \(lineNo): \(line.count) bytes, longer than any record; skipped")
            } else {
                switch ProtocolCodec.decodeRewritten(line) {
                case .success(.order(let o)): _ = inbox.received(.order(o))
                case .success(.cancel(let id)): _ = inbox.received(.cancel(id: id))
                case .success(.ack(let a)): _ = inbox.delivered(a)
                case .success(let m): problems.append("line \(lineNo): a \(m.typeName) message; skipped")
                case .failure(let e): problems.append("line \(lineNo): \(e.message); skipped")
                }
            }
            if problems.count > 20 {
                problems.append("more than 20 bad lines; the rest of the file is ignored")
                break
            }
        }
        return Loaded(inbox: inbox, problems: problems)
    }
}
