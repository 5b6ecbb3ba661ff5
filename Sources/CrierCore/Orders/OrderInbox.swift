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
    public private(set) var pending: [Entry] = []
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
        if pending.contains(e) { return nil }
        pending.append(e)
        linesInFile += 1
        switch e {
        case .order(let o): return ProtocolCodec.line(.order(o))
        case .cancel(let id): return ProtocolCodec.line(.cancel(id: id))
        }
    }

    /// The broker took the ack for `ack.id`: its entries leave, a final outcome is remembered.
    /// The line to journal, or nil when nothing changed.
    public mutating func delivered(_ ack: Ack) -> [UInt8]? {
        let before = pending.count
        pending.removeAll { $0.id == ack.id }
        var changed = pending.count != before
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
    public func answer(rejected ack: Ack) -> Ack? {
        if pending.contains(where: { $0.id == ack.id }) { return nil }
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
    public var needsCompaction: Bool { linesInFile > 2 * (pending.count + done.count) + 64 }

    /// The whole file for the current state (done outcomes first, then what is pending).
    public mutating func encodeForFile() -> [UInt8] {
        var out: [UInt8] = []
        for a in done { out += ProtocolCodec.line(.ack(a)) }
        for e in pending {
            switch e {
            case .order(let o): out += ProtocolCodec.line(.order(o))
            case .cancel(let id): out += ProtocolCodec.line(.cancel(id: id))
            }
        }
        linesInFile = done.count + pending.count
        return out
    }

    public struct Loaded: Sendable {
        public var inbox: OrderInbox
        public var problems: [String] = []
    }

    /// Reads a journal: records in order, bad lines reported and skipped (a torn last append
    /// after a power cut is one of them). Never fails.
    public static func decodeFile(_ bytes: [UInt8], doneMax: Int = 1024) -> Loaded {
        var inbox = OrderInbox(doneMax: doneMax)
        var problems: [String] = []
        var framer = LineFramer()
        var bytes = bytes
        if !bytes.isEmpty, bytes.last != 0x0A { bytes.append(0x0A) }
        var lineNo = 0
        for item in framer.push(bytes) {
            lineNo += 1
            switch item {
            case .tooLong(let n):
                problems.append("line \(lineNo): \(n) bytes without a newline; the rest of the file is ignored")
            case .line(let l):
                switch ProtocolCodec.decode(l) {
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
