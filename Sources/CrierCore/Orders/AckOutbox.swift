/// Acks the server may not have yet (docs/protocol.md, section 6a). Protocol v1 has no
/// ack-of-ack, so "delivered" is defined here: an ack counts as delivered once the server
/// answered a ping that was written after it. TCP keeps order and a server reads its lines in
/// order, so its pong proves it read every line before that ping. For a server that does not
/// answer pings at all, the fallback is weaker: the connection stayed up, with the server
/// heard from, for 2 × heartbeat after the ping.
///
/// Each entry is in one of three states, by its `seq` (entries are sorted by it, so each state
/// is a contiguous run, oldest first):
///
///     seq ≤ staleThrough            written on an EARLIER connection (or before a restart) and
///                                   never confirmed: not written again. It answers the server
///                                   if the server redelivers that order (a redelivery says "I
///                                   did not get it"); the first confirmation on the new
///                                   connection (pong, or the time fallback) drops the rest.
///     staleThrough < seq ≤ written  written on THIS connection, waiting for its pong.
///     seq > written                 never written to any connection: goes out next.
///
/// Write-ahead: before an entry goes to a connection, the file must say it may have been
/// written (`flagged`, then `onDisk` once the file holds it). So the file always
/// over-approximates what went out: after a power cut an entry the file calls unsent really
/// was never sent (sending it is no duplicate), and one it calls written is only an answer to a
/// redelivery (the server keeps what it did not get and redelivers it, so nothing is lost).
///
/// Pure: the link reports what it wrote, pinged and received, with the time; the store reports
/// what reached the file.
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
    /// There is a file: an entry goes out only once the file marks it written. False (memory
    /// only): at once.
    public let waitsForFile: Bool
    /// Oldest first, so ordered by `seq`: stale, then written here, then unwritten.
    public private(set) var entries: [Entry] = []
    /// id → seq of its entry: O(1) dedupe in a burst of thousands.
    private var seqOf: [String: UInt64] = [:]
    private var nextSeq: UInt64 = 1
    /// Entries with `seq <= written` went to a connection (this one or an earlier one).
    private var written: UInt64 = 0
    /// Entries with `seq <= staleThrough` went to an earlier connection (or to one before a
    /// restart) and are not written again.
    private var staleThrough: UInt64 = 0
    /// Entries with `seq <= flagged` are marked written in the file's next content.
    private var flagged: UInt64 = 0
    /// The `flagged` mark the file on disk holds: entries up to it may be written.
    private var onDisk: UInt64 = 0
    /// Pings written on this connection and not answered yet, oldest first: the `written`
    /// mark at the time of each, and when it was sent.
    private var probes: [(through: UInt64, at: Double)] = []
    /// This connection's server never answered a ping in time: pongs no longer count (one
    /// arriving late would confirm the wrong acks); only the time fallback does.
    private var pongsUnreliable = false
    /// Acks this connection's server is known to have read (a pong confirmed them): the same
    /// answer again (a redelivery that crossed our ack on the wire) is not sent twice.
    /// Forgotten on reconnect: a server that redelivers on a new connection did not keep the
    /// ack and must get it again. Stale entries dropped by the first confirmation are not
    /// here: that the server has them is only inferred, so a later redelivery is answered.
    /// Only the newest `deliveredMemory` are kept: a redelivery crosses an ack within a round
    /// trip, not thousands of acks later, and a map that grew to 10 000 ids before being reset
    /// was most of the anonymous memory a long run added (issue 16). At worst, an ack older
    /// than that is sent twice, which the protocol allows.
    private var deliveredHere = RecentOutcomes<Ack.Status>(capacity: AckOutbox.deliveredMemory)
    /// Ids delivered again (`deliveredAgain`) whose next ack is a reply.
    private var askedAgain: Set<String> = []
    /// How many confirmed acks `deliveredHere` remembers.
    static let deliveredMemory = 1024
    /// Confirmed acks remembered against crossed redeliveries (for tests: stays ≤ its bound).
    var deliveredRemembered: Int { deliveredHere.count }
    /// Final outcomes the server confirmed (they left `entries`), the newest `rememberMax`:
    /// written to the file as `"delivered":true` lines, so the queue's dedupe still knows them
    /// after a reload, a restart or a power cut (issue 31 item 4: a server that redelivers an
    /// order whose ack it already read, after the box reloaded, had it said again).
    private var delivered: RecentOutcomes<Ack.Status>
    /// How many confirmed outcomes the file remembers (the queue's dedupe remembers 1024).
    public let rememberMax: Int
    /// The confirmed outcomes remembered, oldest first (`rememberMax` at most).
    public var deliveredAcks: [Ack] { delivered.inOrder.map { Ack(id: $0.id, status: $0.value) } }
    /// Acks dropped because `capacity` was reached (for the log).
    public private(set) var dropped = 0
    /// The file's content no longer matches `entries`.
    public private(set) var dirty = false
    /// Changes not yet in the file, oldest first: the next write appends them
    /// (`takeFileWrite`). Each is one ack line of the file (see `FileRecord`).
    private var pending: [FileRecord] = []
    /// The next write writes the file whole: at start (the file read then is compacted), and
    /// after a failed write (an append may be missing, or cut short and truncated).
    private var rewrite = true
    /// Records and bytes in the file (the last whole write and the appends since).
    private var recordsInFile = 0
    private var bytesInFile = 0

    public init(capacity: Int = 100_000, durableMax: Int = 1000, waitsForFile: Bool = false, rememberMax: Int = 1024) {
        self.capacity = max(1, capacity)
        self.durableMax = max(1, durableMax)
        self.waitsForFile = waitsForFile
        self.rememberMax = max(1, rememberMax)
        delivered = RecentOutcomes(capacity: self.rememberMax)
    }

    public var count: Int { entries.count }

    /// Whether the file keeps this ack. A final rejection (malformed order, bad signature)
    /// is kept until it is written: over MQTT its order is in no journal (the broker has its
    /// PUBACK and never delivers it again), so a stop before it was published lost the only
    /// answer that order would ever get (soak-mqtt-devloss: 7 orders redelivered by their
    /// server three times, never answered). `queue_full` is not: it invites a redelivery and
    /// its order stays in the MQTT inbox.
    public static func isKeptInFile(_ ack: Ack) -> Bool {
        ack.status != .rejected || ack.reason != Ack.Reason.queueFull
    }
    public var isEmpty: Bool { entries.isEmpty }
    /// Entries written on an earlier connection (or before a restart), not yet confirmed.
    public var staleCount: Int { index(after: staleThrough) }

    /// What `offer` did with an ack.
    public enum Outcome: Sendable, Equatable {
        /// It goes out (at once, or after the next connect).
        case queued
        /// Not sent: this connection's server confirmed the same answer (a redelivery that
        /// crossed the ack on the wire, v1 section 6a).
        case confirmedHere
        /// Not sent again: the same answer is already waiting to go out, or went out on this
        /// connection and waits for its confirmation; that one line answers this too.
        case sendingHere
    }

    /// Queues an ack. A second ack for the same id with another status replaces the first (the
    /// newest status is what the box means); with the same status it changes nothing, unless
    /// the one here went to an earlier connection (then it goes out again: someone asked).
    /// Returns the ack dropped to stay within `capacity`, if any.
    /// `reply`: the answer to a server's cancel or redelivery (docs/protocol.md, sections 5
    /// and 6), sent even when this connection's server already has that ack: it asked, so it
    /// gets an answer.
    @discardableResult
    public mutating func add(_ ack: Ack, reply: Bool = false) -> Ack? {
        offer(ack, reply: reply).dropped
    }

    /// `add`, saying what became of the ack (for a log line that tells the truth).
    public mutating func offer(_ ack: Ack, reply: Bool = false) -> (outcome: Outcome, dropped: Ack?) {
        // A rejection answers one delivery (`queue_full` invites the server to send the order
        // again, and that delivery needs its own answer): never folded into an earlier one, or
        // a server that resends on each rejection waits for ever (found by the chaos run).
        // A written rejection leaves the outbox at once (takeNext, takeUnwritten): it is no
        // outcome to keep (a lost one is answered again at the next delivery), and a flood of
        // them must fill neither memory nor the file (rejections are never in the file).
        let reply = reply || ack.status == .rejected || askedAgain.remove(ack.id) != nil
        if !reply, deliveredHere[ack.id] == ack.status { return (.confirmedHere, nil) }
        if let old = seqOf[ack.id] {
            let i = index(after: old - 1)
            // The same answer again (a redelivery of an order whose ack is still here): one
            // ack line per connection is enough.
            if entries[i].ack.status == ack.status && !reply && old > staleThrough { return (.sendingHere, nil) }
            if Self.isKeptInFile(entries[i].ack) && !Self.isKeptInFile(ack) {
                record(.forget(ack.id))
                // The file keeps the newest `durableMax`: one fewer lets an older entry in that
                // no record holds (it was left out when the file was last written whole).
                // Rare (more than `durableMax` acks waiting): written whole.
                if entries.count > durableMax { rewrite = true }
            }
            entries.remove(at: i)
        }
        entries.append(Entry(ack: ack, seq: nextSeq))
        seqOf[ack.id] = nextSeq
        nextSeq += 1
        if Self.isKeptInFile(ack) { record(FileRecord(ack: ack, written: false, delivered: false)) }
        guard entries.count > capacity else { return (.queued, nil) }
        dropped += 1
        let first = entries.removeFirst().ack
        seqOf[first.id] = nil
        if Self.isKeptInFile(first) { record(.forget(first.id)) }
        return (.queued, first)
    }

    /// The server delivered order `id` again on a transport where every delivery asks for an
    /// answer (MQTT, protocol §15: a server republishes an order whose ack it does not have;
    /// the broker's PUBACK of our ack says nothing about the order server). The next ack for
    /// `id` is then a reply: sent even though this connection already confirmed, or is
    /// sending, the same answer. Remembered only for an id the outbox would otherwise swallow
    /// (confirmed here, or still here), so the set stays within those bounds; forgotten on
    /// reconnect, where nothing is swallowed.
    public mutating func deliveredAgain(_ id: String) {
        guard deliveredHere[id] != nil || seqOf[id] != nil else { return }
        askedAgain.insert(id)
    }

    /// The server sent order `id` on this connection. If its ack went to an earlier connection
    /// and was never confirmed, the server says it did not get it: that ack goes out again, once,
    /// as a reply. True when it did (the caller still hands the order on: the queue's dedupe
    /// answers it with the same status, which is then folded into this one).
    @discardableResult
    public mutating func redelivered(_ id: String) -> Bool {
        guard let s = seqOf[id], s <= staleThrough else { return false }
        let i = index(after: s - 1)
        let ack = entries[i].ack
        guard ack.status != .rejected else { return false }
        add(ack, reply: true)
        return true
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

    /// A new connection was welcomed: what went to earlier connections is not written again
    /// (it answers redeliveries, and the first confirmation here drops it); what never went
    /// out goes now.
    public mutating func connectionStarted() {
        staleThrough = written
        probes = []
        pongsUnreliable = false
        deliveredHere = RecentOutcomes(capacity: Self.deliveredMemory)
        askedAgain = []
    }

    /// Marks every entry not yet written as "may have been written" for the file: the first
    /// step of sending (the link does it as soon as an ack arrives while connected, so that
    /// one file write covers the ack and its flag).
    public mutating func flagUnwritten() {
        guard let last = entries.last, last.seq > flagged else { return }
        for e in entries[index(after: flagged)...] where Self.isKeptInFile(e.ack) {
            record(FileRecord(ack: e.ack, written: true, delivered: false))
        }
        flagged = last.seq
        if !waitsForFile { onDisk = flagged }
    }

    /// What a file write holds: its bytes and the `flagged` mark they carry.
    public struct FileContent: Sendable, Equatable {
        public var bytes: [UInt8]
        public var flaggedThrough: UInt64
        /// The whole file (written to PATH.tmp, fsynced, renamed over PATH, directory fsynced);
        /// false: records to append (one write, then fsync).
        public var whole = true
    }

    /// One line of the file: a protocol ack line with `"written":true` when it may have been
    /// sent, `"delivered":true` when it was confirmed (id and status only; a `rejected` one
    /// only removes the id: nothing to remember), and a checksum (docs/protocol.md section 6a,
    /// "Ack outbox file"). Replayed in order, the last record of an id wins.
    struct FileRecord: Sendable, Equatable {
        var ack: Ack
        var written: Bool
        var delivered: Bool

        /// The id leaves the file without an outcome to remember.
        static func forget(_ id: String) -> FileRecord {
            FileRecord(ack: Ack(id: id, status: .rejected), written: true, delivered: true)
        }

        /// The line, ending in `,"crc":"xxxxxxxx"}` and a newline: the CRC-32 (IEEE, as zlib)
        /// of the line's JSON object without that field. A previous release reads the line as
        /// a plain ack line (unknown fields are ignored): a rollback keeps the outbox.
        func encode(into out: inout [UInt8]) {
            var o = ProtocolCodec.object(.ack(delivered ? Ack(id: ack.id, status: ack.status) : ack))
            if written { o["written"] = .bool(true) }
            if delivered { o["delivered"] = .bool(true) }
            var body: [UInt8] = []
            JSON.write(.object(o), into: &body)
            let crc = ControlStateCodec.hex(ControlStateCodec.crc32(body))
            out.append(contentsOf: body.dropLast())
            out.append(contentsOf: Array(#","crc":""#.utf8))
            out.append(contentsOf: Array(crc.utf8))
            out.append(contentsOf: Array(#""}"#.utf8))
            out.append(0x0A)
        }
    }

    /// A change for the file: appended by the next write.
    private mutating func record(_ r: FileRecord) {
        pending.append(r)
        dirty = true
    }

    /// Bytes beyond which the file is written whole at the next change.
    public static let compactBytes = 256 << 10

    /// Compaction: the file is written whole once it holds more dead records than live ones
    /// (with 64 of slack, so a nearly empty outbox is not rewritten every few changes), or
    /// more than `compactBytes`. `live`: the records a whole write would have.
    public static func needsCompaction(records: Int, bytes: Int, live: Int) -> Bool {
        bytes > compactBytes || records > 2 * live + 64
    }

    /// The next write of the file: the records of the changes since the last write, to append,
    /// or the whole file (`fileContent`) when it needs compaction or the last write failed.
    /// Marks the outbox clean. Empty bytes (not whole): nothing to write, the mark holds.
    public mutating func takeFileWrite() -> FileContent {
        let records = Self.superseded(pending)
        var bytes: [UInt8] = []
        for r in records { r.encode(into: &bytes) }
        let live = delivered.count + min(entries.count, durableMax)
        if rewrite || Self.needsCompaction(records: recordsInFile + records.count, bytes: bytesInFile + bytes.count, live: live) {
            return fileContent()
        }
        pending = []
        dirty = false
        recordsInFile += records.count
        bytesInFile += bytes.count
        return FileContent(bytes: bytes, flaggedThrough: flagged, whole: false)
    }

    /// `records` without those a later one of the same batch makes moot: an ack line followed
    /// by another line for its id (the later one replaces it, or removes it). Confirmations
    /// are all kept (each places its id among the remembered outcomes).
    static func superseded(_ records: [FileRecord]) -> [FileRecord] {
        var later: Set<String> = []
        var out: [FileRecord] = []
        for r in records.reversed() {
            if r.delivered || !later.contains(r.ack.id) { out.append(r) }
            later.insert(r.ack.id)
        }
        return out.reversed()
    }

    /// The whole file: first the confirmed outcomes remembered (`"delivered":true`, id and
    /// status only), then one ack record per entry (rejections but final ones left out), the
    /// newest `durableMax`, entries that may have been written with `"written":true`; then
    /// marks the outbox clean (the pending records are in it).
    public mutating func fileContent() -> FileContent {
        dirty = false
        rewrite = false
        pending = []
        var kept: [Entry] = []
        for e in entries.reversed() where Self.isKeptInFile(e.ack) {
            kept.append(e)
            if kept.count == durableMax { break }
        }
        var out: [UInt8] = []
        for (id, status) in delivered.inOrder {
            FileRecord(ack: Ack(id: id, status: status), written: true, delivered: true).encode(into: &out)
        }
        for e in kept.reversed() {
            FileRecord(ack: e.ack, written: e.seq <= flagged, delivered: false).encode(into: &out)
        }
        recordsInFile = delivered.count + kept.count
        bytesInFile = out.count
        return FileContent(bytes: out, flaggedThrough: flagged)
    }

    /// `fileContent().bytes`.
    public mutating func encodeForFile() -> [UInt8] { fileContent().bytes }

    /// A write of `fileContent` with this mark ended: entries up to it may go out. Also after a
    /// failed write: an unwritable file must not hold the acks back for ever (the failure is
    /// logged; the outbox is then memory only, as with `link.outbox = off`).
    public mutating func fileWritten(through mark: UInt64) {
        onDisk = max(onDisk, min(mark, flagged))
    }

    /// The file write failed (or the file read at start is to be compacted): the next attempt
    /// writes the file whole. An append may be missing from the file, or cut short (the
    /// store truncates it back, but a power cut could come first).
    public mutating func markDirty() {
        dirty = true
        rewrite = true
    }

    /// How many acks `encodeForFile` leaves out.
    public var notDurable: Int { max(0, entries.count - durableMax) }

    /// The acks not yet written, that may be written now, oldest first; they count as written.
    public mutating func takeUnwritten() -> [Ack] {
        var out: [Ack] = []
        while let a = takeNext() { out.append(a) }
        return out
    }

    /// Some ack was never written on any connection.
    public var hasUnwritten: Bool { entries.last.map { $0.seq > written } ?? false }

    /// `takeNext` has something now (not waiting for the file).
    public var hasSendable: Bool {
        let i = index(after: written)
        guard i < entries.count else { return false }
        return !waitsForFile || entries[i].ack.status == .rejected || entries[i].seq <= onDisk
    }

    /// The oldest ack never written, if the file already says it may be (it counts as written),
    /// or nil. For a caller that takes only what its output buffer holds: a backlog of
    /// thousands never piles up in front of a slow reader.
    public mutating func takeNext() -> Ack? { takeNextEntry()?.ack }

    /// `takeNext` with the entry's `seq` (for `unflushed(after:)`).
    public mutating func takeNextEntry() -> Entry? {
        let i = index(after: written)
        guard i < entries.count else { return nil }
        flagUnwritten()
        let e = entries[i]
        guard e.ack.status == .rejected || e.seq <= onDisk else { return nil }
        written = e.seq
        // `queue_full` leaves at once (its order is redelivered); a final rejection waits for
        // its confirmation like any other ack (`isKeptInFile`).
        if e.ack.status == .rejected && !Self.isKeptInFile(e.ack) {
            seqOf[e.ack.id] = nil
            entries.remove(at: i)
        }
        return e
    }

    /// The connection ended with the entries after `seq` still in the link's own output buffer:
    /// they never reached the socket, so they were never written (sent on the next connection).
    /// Only entries taken on this connection are affected.
    public mutating func unflushed(after seq: UInt64) {
        written = max(staleThrough, min(written, seq))
    }

    /// Something was written and no ping covers it yet: send one to learn it arrived (right
    /// after a welcome too, when acks of earlier connections are still unconfirmed).
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

    /// A pong arrived: the acks written before the ping it answers were read by the server,
    /// and any redelivery the server had for this connection came before it (section 6: the
    /// server redelivers right after the welcome), so the stale entries it did not ask for are
    /// taken as delivered too. Returns how many left the outbox.
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
        for e in entries[..<n] {
            seqOf[e.ack.id] = nil
            if e.seq > staleThrough { deliveredHere[e.ack.id] = e.ack.status }
            if e.ack.status != .rejected { delivered[e.ack.id] = e.ack.status }
            if Self.isKeptInFile(e.ack) {
                record(e.ack.status == .rejected ? .forget(e.ack.id) : FileRecord(ack: Ack(id: e.ack.id, status: e.ack.status), written: true, delivered: true))
            }
        }
        entries.removeFirst(n)
        dirty = true
        return n
    }

    public struct Loaded: Sendable, Equatable {
        public var acks: [Ack] = []
        /// Ids of the acks the file marks `"written":true` (sent, or about to be, and not
        /// confirmed). A file of the release before marks existed has none: all its acks count
        /// as unsent. A damaged file (`damaged`): all of them.
        public var written: Set<String> = []
        /// Confirmed outcomes (`"delivered":true` lines), oldest first: for the dedupe only.
        public var delivered: [Ack] = []
        /// One per bad line (a damaged card; a torn append is `torn`).
        public var problems: [String] = []
        /// What was dropped after the last newline: an append cut short (power cut, full disk).
        /// Nothing in it was sent (an ack goes out only once its append is fsynced), but a file
        /// cut by damage looks the same: every ack restored counts as sent, as with `damaged`.
        public var torn: String?
        /// A complete record was unreadable (a damaged card): it may have been the mark that
        /// some ack was sent, so every ack restored counts as sent (each answers the server's
        /// redelivery of its order; none goes out unasked, so none is sent twice).
        public var damaged = false

        public init(acks: [Ack] = [], written: Set<String> = [], problems: [String] = [], torn: String? = nil, damaged: Bool = false) {
            (self.acks, self.written, self.problems, self.torn, self.damaged) = (acks, written, problems, torn, damaged)
        }
    }

    /// The state read, as the whole file of the release before checksums (and appends) wrote
    /// it: confirmed outcomes first, then the acks, `"written":true` where marked. For tests
    /// that compare what a file means, whatever records it took to get there.
    public static func plainText(_ l: Loaded) -> String {
        var out: [UInt8] = []
        for a in l.delivered {
            var o = ProtocolCodec.object(.ack(a))
            o["written"] = .bool(true)
            o["delivered"] = .bool(true)
            JSON.write(.object(o), into: &out)
            out.append(0x0A)
        }
        for a in l.acks {
            var o = ProtocolCodec.object(.ack(a))
            if l.written.contains(a.id) { o["written"] = .bool(true) }
            JSON.write(.object(o), into: &out)
            out.append(0x0A)
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// The lines of `bytes` with their checksum fields removed (tests).
    static func withoutChecksums(_ bytes: [UInt8]) -> String {
        bytes.split(separator: 0x0A, omittingEmptySubsequences: false).map { line -> String in
            if case .success(let body)? = checkedBody(line) { return String(decoding: body, as: UTF8.self) }
            return String(decoding: line, as: UTF8.self)
        }.joined(separator: "\n")
    }

    /// `,"crc":"` + 8 hex digits + `"}`: the checksum field that ends a record.
    static let crcSuffixCount = 18

    /// The record's JSON without its checksum field, or nil when the line has none (a line of
    /// a file from before checksums), or `.failure` when the checksum does not match.
    static func checkedBody(_ line: ArraySlice<UInt8>) -> Result<[UInt8], CRCMismatch>? {
        let n = line.count
        guard n > crcSuffixCount else { return nil }
        let tail = Array(line.suffix(crcSuffixCount))
        guard tail.prefix(8).elementsEqual(#","crc":""#.utf8), tail.suffix(2).elementsEqual(#""}"#.utf8) else { return nil }
        let digits = tail[8..<16]
        guard digits.allSatisfy({ (0x30...0x39).contains($0) || (0x61...0x66).contains($0) }) else { return nil }
        var body = Array(line.prefix(n - crcSuffixCount))
        body.append(0x7D)
        guard ControlStateCodec.hex(ControlStateCodec.crc32(body)).utf8.elementsEqual(digits) else { return .failure(CRCMismatch()) }
        return .success(body)
    }
    struct CRCMismatch: Error {}

    /// Replays a file written by `fileContent` and `takeFileWrite` (or a whole file of the
    /// previous release: plain ack lines, no checksum). Records in order, the last one of an
    /// id wins; a confirmation removes the id and remembers its outcome (the newest
    /// `rememberMax`); at most `durableMax` acks (the last ones) are kept. Bytes after the last
    /// newline are a torn append (`torn`, dropped); a bad complete line is reported and
    /// skipped (`damaged`). Never fails.
    public static func decodeFile(_ bytes: [UInt8], durableMax: Int = 1000, rememberMax: Int = 1024) -> Loaded {
        var out = Loaded()
        let end = bytes.lastIndex(of: 0x0A).map { $0 + 1 } ?? 0
        if end < bytes.count {
            out.torn = "\(bytes.count - end) bytes after the last complete record"
        }
        let lines = bytes[..<end].split(separator: 0x0A, omittingEmptySubsequences: false).dropLast()
        // A file is checksummed or not as a whole: a line without one among checksummed lines
        // is damage (a checksum field mangled into something else), not a line to trust.
        let checksummed = lines.contains { checkedBody($0) != nil }
        // The acks in file order, with holes where a later record removed one (linear time
        // for a file of thousands of records).
        var kept: [(ack: Ack, written: Bool)?] = []
        var at: [String: Int] = [:]
        var delivered = RecentOutcomes<Ack.Status>(capacity: max(1, rememberMax))
        func remove(_ id: String) {
            if let i = at.removeValue(forKey: id) { kept[i] = nil }
        }
        var lineNo = 0
        for line in lines {
            lineNo += 1
            if out.problems.count >= 20 {
                out.problems.append("more than 20 bad lines; the rest of the file is ignored")
                out.damaged = true
                break
            }
            let body: [UInt8]
            switch checkedBody(line) {
            case .success(let b)?: body = b
            case .failure?:
                out.problems.append("line \(lineNo): checksum does not match (\(line.count) bytes); skipped")
                out.damaged = true
                continue
            case nil where checksummed:
                out.problems.append("line \(lineNo): no checksum in a checksummed file (\(line.count) bytes); skipped")
                out.damaged = true
                continue
            case nil: body = Array(line)
            }
            let d = ProtocolCodec.decodeKeepingObject(body)
            switch d.message {
            case .success(.ack(let a)) where d.object?["delivered"] == .bool(true):
                remove(a.id)
                if a.status != .rejected { delivered[a.id] = a.status }
            case .success(.ack(let a)):
                var written = false
                switch d.object?["written"] {
                case nil, .bool(false)?: break
                case .bool(true)?: written = true
                case let v?:
                    // Unreadable mark: the safe reading is "may have been sent" (it then
                    // only answers a redelivery; never a second ack the server did not ask for).
                    written = true
                    out.problems.append("line \(lineNo): \"written\" must be true or false, got \(v.typeName); taken as true")
                }
                remove(a.id)
                at[a.id] = kept.count
                kept.append((a, written))
            case .success(let m):
                out.problems.append("line \(lineNo): a \(m.typeName) message, not an ack; skipped")
                out.damaged = true
            case .failure(let e):
                out.problems.append("line \(lineNo): \(e.message); skipped")
                out.damaged = true
            }
        }
        let acks = kept.compactMap { $0 }.suffix(max(1, durableMax))
        out.acks = acks.map(\.ack)
        // A torn or damaged file may lack the record that marked an ack sent: all count as sent
        // (each answers the server's redelivery of its order; none goes out unasked).
        let unsure = out.damaged || out.torn != nil
        out.written = Set(acks.filter { $0.written || unsure }.map(\.ack.id))
        out.delivered = delivered.inOrder.map { Ack(id: $0.id, status: $0.value) }
        return out
    }

    /// Fills the outbox (replacing its content) from a file read at start. Acks the file marks
    /// written become stale entries (not sent again; they answer a redelivery, and the first
    /// confirmation on the first connection drops the others); the rest are sent after the
    /// first welcome.
    /// Rejections are left out (each answers one delivery, and the server redelivers an order
    /// it has no final ack for). The last line of an id wins. Returns how many of each were kept.
    @discardableResult
    public mutating func restore(_ loaded: Loaded) -> (sent: Int, unsent: Int) {
        self = AckOutbox(capacity: capacity, durableMax: durableMax, waitsForFile: waitsForFile, rememberMax: rememberMax)  // replaces whatever was here
        for a in loaded.delivered where a.status != .rejected { delivered[a.id] = a.status }
        var last: [String: Int] = [:]
        for (i, a) in loaded.acks.enumerated() { last[a.id] = i }
        let acks = loaded.acks.enumerated().filter { last[$0.element.id] == $0.offset && Self.isKeptInFile($0.element) }.map(\.element)
        // A rejection leaves the outbox when it is written, so one still in the file may never
        // have reached the server: it goes out again (twice at worst, the same final status).
        let sent = acks.filter { loaded.written.contains($0.id) && $0.status != .rejected }
        let unsent = acks.filter { !loaded.written.contains($0.id) || $0.status == .rejected }
        for a in sent + unsent {
            entries.append(Entry(ack: a, seq: nextSeq))
            seqOf[a.id] = nextSeq
            nextSeq += 1
        }
        let mark = UInt64(sent.count)
        (written, staleThrough, flagged, onDisk) = (mark, mark, mark, mark)
        while entries.count > capacity {
            dropped += 1
            seqOf[entries.removeFirst().ack.id] = nil
        }
        dirty = false
        return (sent.count, unsent.count)
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
