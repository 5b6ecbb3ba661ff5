import Testing
@testable import CrierCore

/// Issue 35: the ack outbox file is a log. Each change is appended as one checksummed record;
/// the file is written whole only at start, after a failed write, and when it holds more dead
/// records than live ones. Checked here: the bytes per order, that replaying the log gives what
/// a whole write of the same state gives, and what power cuts (mid-append, mid-compaction) and
/// a damaged byte leave.
@Suite("Ack outbox file: appended records, compaction, torn and damaged records")
struct AckOutboxFileTests {
    /// The file as the store keeps it: appends, or a whole write (rename) when asked for.
    struct File {
        var bytes: [UInt8] = []
        var appended = 0, whole = 0, wholeWrites = 0, writes = 0
        /// What the file held before the last write, and that write's bytes (for cuts).
        var before: [UInt8] = []
        var last = AckOutbox.FileContent(bytes: [], flaggedThrough: 0)

        mutating func write(_ o: inout AckOutbox) {
            guard o.dirty else { return }
            let c = o.takeFileWrite()
            before = bytes
            last = c
            writes += 1
            if c.whole {
                bytes = c.bytes
                whole += c.bytes.count
                wholeWrites += 1
            } else {
                bytes += c.bytes
                appended += c.bytes.count
            }
            o.fileWritten(through: c.flaggedThrough)
        }
    }

    /// What a whole write of this state would read back as.
    func snapshot(_ o: AckOutbox) -> AckOutbox.Loaded {
        var copy = o
        return AckOutbox.decodeFile(copy.fileContent().bytes, durableMax: o.durableMax, rememberMax: o.rememberMax)
    }

    @Test("a shop's pace with 1024 outcomes remembered: a few hundred bytes appended per order, not two whole files (84 KB each); written whole only when dead records outnumber live ones")
    func bytesPerOrder() {
        var o = AckOutbox(waitsForFile: true)
        var file = File()
        o.connectionStarted()
        var mark = (bytes: 0, writes: 0, wholeWrites: 0)
        let warm = 1100, orders = 3000
        var largest = 0
        for i in 0..<orders {
            if i == warm { mark = (file.appended + file.whole, file.writes, file.wholeWrites) }
            o.add(Ack(id: "order-\(i)", status: .spoken))
            o.flagUnwritten()  // OrderLink.send while connected: one write holds the ack and its mark
            file.write(&o)
            #expect(o.takeUnwritten().map(\.id) == ["order-\(i)"])
            o.pinged(now: Double(i))
            #expect(o.pong() == 1)
            file.write(&o)
            largest = max(largest, file.bytes.count)
            if i % 97 == 0 {
                #expect(AckOutbox.decodeFile(file.bytes) == snapshot(o), "order \(i): the log replays to the state")
            }
        }
        let perOrder = Double(file.appended + file.whole - mark.bytes) / Double(orders - warm)
        let wholeWrites = file.wholeWrites - mark.wholeWrites
        print("ack outbox file: \(Int(perOrder)) bytes written per order (\(file.writes - mark.writes) writes, \(wholeWrites) of them whole, largest file \(largest) bytes)")
        #expect(perOrder < 600, "\(perOrder) bytes per order")
        #expect(wholeWrites >= 1 && wholeWrites <= (orders - warm) / 300, "\(wholeWrites) compactions")
        #expect(largest <= AckOutbox.compactBytes)
        #expect(AckOutbox.decodeFile(file.bytes).delivered.count == 1024)
    }

    @Test("the compaction rule: more dead records than live ones (64 of slack), or more than 256 KiB")
    func compactionRule() {
        #expect(!AckOutbox.needsCompaction(records: 64, bytes: 5000, live: 0))
        #expect(AckOutbox.needsCompaction(records: 65, bytes: 5000, live: 0))
        #expect(!AckOutbox.needsCompaction(records: 2 * 1025 + 64, bytes: 200_000, live: 1025))
        #expect(AckOutbox.needsCompaction(records: 2 * 1025 + 65, bytes: 200_000, live: 1025))
        #expect(AckOutbox.needsCompaction(records: 10, bytes: 256 * 1024 + 1, live: 10))
    }

    /// Random changes of every kind (final and queue_full rejections, replaced statuses,
    /// redeliveries, reconnects, unflushed writes, restarts) with small bounds, so that the
    /// caps, capacity drops and compactions all happen.
    struct Run {
        var rng: SplitMix64
        var o = AckOutbox(capacity: 14, durableMax: 8, waitsForFile: true, rememberMax: 10)
        var file = File()
        var ids: [String] = []
        var seq: [AckOutbox.Entry] = []

        init(seed: UInt64) { rng = SplitMix64(seed: seed) }

        mutating func step() {
            switch Int.random(in: 0..<100, using: &rng) {
            case 0..<30:
                let id = ids.isEmpty || Int.random(in: 0..<4, using: &rng) == 0 ? "id\(ids.count)" : ids.randomElement(using: &rng)!
                if !ids.contains(id) { ids.append(id) }
                let ack: Ack = switch Int.random(in: 0..<10, using: &rng) {
                case 0: Ack(id: id, status: .rejected, reason: Ack.Reason.queueFull)
                case 1: Ack(id: id, status: .rejected, reason: Ack.Reason.invalidOrder, message: "order: \"number\" \u{1}")
                case 2: Ack(id: id, status: .expired)
                case 3: Ack(id: id, status: .cancelled)
                default: .spoken(id)
                }
                o.add(ack, reply: Int.random(in: 0..<5, using: &rng) == 0)
            case 30..<40: o.flagUnwritten()
            case 40..<52: if let e = o.takeNextEntry() { seq.append(e) }
            case 52..<58: o.pinged(now: Double(file.writes))
            case 58..<68: o.pong()
            case 68..<71: o.connectionStarted(); seq = []
            case 71..<73: if let e = seq.randomElement(using: &rng) { o.unflushed(after: e.seq - 1) }
            case 73..<76: if let id = ids.randomElement(using: &rng) { o.redelivered(id) }
            case 76..<78:
                // A restart: the next process reads the file (and writes it whole first).
                var r = AckOutbox(capacity: 14, durableMax: 8, waitsForFile: true, rememberMax: 10)
                r.restore(AckOutbox.decodeFile(file.bytes, durableMax: 8, rememberMax: 10))
                r.markDirty()
                o = r
                seq = []
            default: file.write(&o)
            }
        }
    }

    @Test("seeded (400 seeds): after any sequence of changes, the appended records replay to exactly what a whole write of the state reads back as",
          arguments: 0..<4)
    func replayEqualsWhole(batch: Int) {
        var compactions = 0, appends = 0
        for seed in UInt64(batch * 100)..<UInt64(batch * 100 + 100) {
            var run = Run(seed: seed)
            for step in 0..<200 {
                let writes = run.file.writes
                run.step()
                guard run.file.writes > writes else { continue }
                if run.file.last.whole { compactions += 1 } else { appends += 1 }
                let got = AckOutbox.decodeFile(run.file.bytes, durableMax: 8, rememberMax: 10)
                let want = snapshot(run.o)
                #expect(got == want, "seed \(seed) step \(step)")
                if got != want { return }
            }
        }
        #expect(appends > 2 * compactions, "appends \(appends), whole writes \(compactions)")
    }

    @Test("seeded (300 seeds): a power cut at any byte of an append (every record boundary, a random byte inside each record) keeps every ack the file held before it, never unmarks one as sent, and drops only the torn record; one mid-compaction leaves the old file")
    func powerCutMidAppend() {
        var cuts = 0
        for seed in UInt64(1000)..<UInt64(1300) {
            var run = Run(seed: seed)
            for _ in 0..<120 {
                let writes = run.file.writes
                run.step()
                guard run.file.writes > writes else { continue }
                let before = AckOutbox.decodeFile(run.file.before, durableMax: 8, rememberMax: 10)
                // A cut mid-compaction: PATH.tmp is half written, PATH is the old file.
                guard !run.file.last.whole else { continue }
                let added = run.file.last.bytes
                // Ids the append itself confirmed or removed (a complete record of it may be read).
                let touched = Set(added.split(separator: 0x0A).compactMap { line -> String? in
                    guard case .success(let body)? = AckOutbox.checkedBody(line) else { return nil }
                    if case .success(.ack(let a)) = ProtocolCodec.decode(body) { return a.id }
                    return nil
                })
                // Every cut inside one record reads as the cut at its start plus a torn tail: each
                // record boundary is decoded, and one random byte inside each record.
                var ks: [Int] = []
                var start = 0
                for (i, byte) in added.enumerated() where byte == 0x0A {
                    ks.append(start)
                    if i > start { ks.append(Int.random(in: (start + 1)...i, using: &run.rng)) }
                    start = i + 1
                }
                for k in ks {
                    cuts += 1
                    let cut = AckOutbox.decodeFile(run.file.before + added[..<k], durableMax: 8, rememberMax: 10)
                    let tornExpected = k > 0 && added[k - 1] != 0x0A
                    #expect((cut.torn != nil) == tornExpected, "seed \(seed) cut \(k)")
                    #expect(cut.problems.isEmpty && !cut.damaged, "seed \(seed) cut \(k): \(cut.problems)")
                    let ids = Set(cut.acks.map(\.id)), delivered = Set(cut.delivered.map(\.id))
                    // The file keeps the newest 8: an ack the append's new ones pushed out is in
                    // memory only, as with a whole write.
                    for a in before.acks where !touched.contains(a.id) && (ids.contains(a.id) || cut.acks.count < 8) {
                        #expect(ids.contains(a.id), "seed \(seed) cut \(k): \(a.id) lost")
                        if before.written.contains(a.id) {
                            #expect(cut.written.contains(a.id), "seed \(seed) cut \(k): \(a.id) no longer marked sent (it would go out twice)")
                        }
                    }
                    for d in before.delivered where !touched.contains(d.id) {
                        // The newest 10 are remembered: the append's own may push the oldest out.
                        #expect(delivered.contains(d.id) || cut.delivered.count == 10, "seed \(seed) cut \(k): outcome \(d.id) forgotten")
                    }
                }
            }
        }
        #expect(cuts > 2_000, "\(cuts) cuts")
    }

    @Test("seeded (300 seeds): one damaged byte anywhere never crashes, is reported, and makes every ack count as sent (none goes out twice); ids are never invented")
    func damagedByte() {
        var damaged = 0
        for seed in UInt64(2000)..<UInt64(2300) {
            var run = Run(seed: seed)
            for _ in 0..<150 { run.step() }
            run.file.write(&run.o)
            guard !run.file.bytes.isEmpty else { continue }
            var bytes = run.file.bytes
            let i = Int.random(in: 0..<bytes.count, using: &run.rng)
            let was = bytes[i]
            bytes[i] = was ^ UInt8.random(in: 1...255, using: &run.rng)
            let got = AckOutbox.decodeFile(bytes, durableMax: 8, rememberMax: 10)
            let clean = AckOutbox.decodeFile(run.file.bytes, durableMax: 8, rememberMax: 10)
            let known = Set(run.ids)
            #expect(got.acks.allSatisfy { known.contains($0.id) } && got.delivered.allSatisfy { known.contains($0.id) }, "seed \(seed) byte \(i)")
            if got.damaged {
                damaged += 1
                #expect(!got.problems.isEmpty)
                #expect(got.written == Set(got.acks.map(\.id)), "seed \(seed) byte \(i): a damaged file's acks all count as sent")
            } else if got.torn == nil {
                // Undetected only where the byte changed nothing a record means (the
                // checksum field of a file of one line, read as a line without one).
                #expect(got.acks == clean.acks && got.delivered == clean.delivered, "seed \(seed) byte \(i): \(was) changed the state unnoticed")
            }
        }
        #expect(damaged > 250, "\(damaged) of 300 damaged")
    }

    /// The lines below are what the release before appends wrote (its whole-file
    /// `fileContent`, asserted byte for byte by its own tests: confirmed outcomes first, then
    /// the acks, `"written":true` where they may have been sent, a final rejection kept).
    static let previousRelease = #"{"type":"ack","id":"c","status":"spoken","written":true,"delivered":true}"# + "\n"
        + #"{"type":"ack","id":"x","status":"expired","written":true,"delivered":true}"# + "\n"
        + #"{"type":"ack","id":"w","status":"spoken","written":true}"# + "\n"
        + #"{"type":"ack","id":"bad","status":"rejected","reason":"invalid_order","message":"order: field \"number\" must be 0...999999, got 1000000","written":true}"# + "\n"
        + #"{"type":"ack","id":"单号\"7\"","status":"cancelled","message":"20 waiting\n(queue.max = 20)"}"# + "\n"
        + #"{"type":"ack","id":"u","status":"expired"}"# + "\n"

    @Test("upgrade: a whole file of the previous release (no checksums) is read as before, and the first write makes it checksummed with the same meaning")
    func previousReleaseFile() {
        let loaded = AckOutbox.decodeFile(Array(Self.previousRelease.utf8))
        #expect(loaded.problems.isEmpty && loaded.torn == nil && !loaded.damaged)
        #expect(loaded.delivered == [.spoken("c"), Ack(id: "x", status: .expired)])
        #expect(loaded.acks.map(\.id) == ["w", "bad", "单号\"7\"", "u"])
        #expect(loaded.written == ["w", "bad"])
        var o = AckOutbox(waitsForFile: true)
        #expect(o.restore(loaded) == (sent: 1, unsent: 3), "the final rejection goes out again, as before")
        o.markDirty()  // AckStore: an existing file is written whole at start
        let c = o.takeFileWrite()
        #expect(c.whole)
        let again = AckOutbox.decodeFile(c.bytes)
        #expect(again.delivered == loaded.delivered && Set(again.acks.map(\.id)) == Set(loaded.acks.map(\.id)))
        #expect(String(decoding: c.bytes, as: UTF8.self).split(separator: "\n").allSatisfy { $0.contains(#","crc":""#) })
        #expect(AckOutbox.withoutChecksums(c.bytes).contains(#"{"type":"ack","id":"c","status":"spoken","written":true,"delivered":true}"#),
                "the previous release reads a checksummed line as the same ack (a rollback keeps the outbox)")
        // A line without a checksum among checksummed ones is damage, not trusted.
        let mixed = AckOutbox.decodeFile(c.bytes + Array(#"{"type":"ack","id":"forged","status":"spoken"}"#.utf8) + [0x0A])
        #expect(mixed.damaged && !mixed.acks.contains { $0.id == "forged" })
    }

    @Test("a torn last record is dropped and named; records after a damaged one still count")
    func tornAndDamagedRecords() {
        var o = AckOutbox(waitsForFile: true)
        var file = File()
        o.add(.spoken("a"))
        file.write(&o)  // whole (first write)
        o.add(.spoken("b"))
        file.write(&o)
        o.add(.spoken("c"))
        file.write(&o)
        #expect(file.writes == 3 && file.wholeWrites == 1)
        let lines = file.bytes.split(separator: 0x0A, omittingEmptySubsequences: false)
        #expect(lines.count == 4)
        let torn = AckOutbox.decodeFile(Array(file.bytes.dropLast(5)))
        #expect(torn.acks.map(\.id) == ["a", "b"] && torn.problems.isEmpty && !torn.damaged)
        #expect(torn.written == ["a", "b"], "a torn file may be a damaged one: its acks count as sent")
        #expect(torn.torn == "\(lines[2].count - 4) bytes after the last complete record")
        var bad = file.bytes
        bad[lines[0].count + 10] ^= 0x20  // inside b's record
        let d = AckOutbox.decodeFile(bad)
        #expect(d.acks.map(\.id) == ["a", "c"] && d.damaged && d.written == ["a", "c"])
        #expect(d.problems == ["line 2: checksum does not match (\(lines[1].count) bytes); skipped"])
    }
}
