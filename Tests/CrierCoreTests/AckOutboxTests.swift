import Testing
@testable import CrierCore

@Suite("Ack outbox: delivered means a later ping was answered; the file survives anything")
struct AckOutboxTests {
    func ids(_ acks: [Ack]) -> [String] { acks.map(\.id) }

    @Test("written is not delivered: only the pong of a ping written after an ack removes it")
    func pongConfirms() {
        var o = AckOutbox()
        o.add(.spoken("a"))
        o.add(.spoken("b"))
        o.connectionStarted()
        #expect(ids(o.takeUnwritten()) == ["a", "b"])
        #expect(o.needsProbe)
        o.pinged(now: 1)
        #expect(!o.needsProbe, "one probe at a time")
        o.add(.spoken("c"))
        #expect(ids(o.takeUnwritten()) == ["c"])
        #expect(o.pong() == 2, "the pong answers the ping sent before c")
        #expect(ids(o.entries.map(\.ack)) == ["c"])
        #expect(o.needsProbe)
        o.pinged(now: 2)
        #expect(o.pong() == 1)
        #expect(o.isEmpty)
        #expect(o.pong() == 0, "an unsolicited pong confirms nothing")
    }

    @Test("a confirmed outcome stays in the file as delivered (the newest 1024): the dedupe learns it after a reload or restart (issue 31 item 4)")
    func confirmedOutcomesAreRemembered() {
        var o = AckOutbox(waitsForFile: true, rememberMax: 3)
        o.connectionStarted()
        for id in ["a", "b", "c", "d"] { o.add(.spoken(id)) }
        o.add(Ack(id: "x", status: .expired, message: "ttl 5 s passed"))
        o.add(Ack(id: "r", status: .rejected, reason: Ack.Reason.queueFull))
        o.flagUnwritten()
        o.fileWritten(through: o.fileContent().flaggedThrough)
        #expect(o.takeUnwritten().count == 6)
        o.pinged(now: 1)
        #expect(o.pong() == 5)
        #expect(o.isEmpty && o.dirty)
        #expect(ids(o.deliveredAcks) == ["c", "d", "x"], "the newest 3, rejections never")
        let file = o.fileContent().bytes
        #expect(AckOutbox.withoutChecksums(file).hasPrefix(#"{"type":"ack","id":"c","status":"spoken","written":true,"delivered":true}"# + "\n"))
        let loaded = AckOutbox.decodeFile(file, rememberMax: 3)
        #expect(loaded.problems.isEmpty && loaded.acks.isEmpty)
        #expect(loaded.delivered == [.spoken("c"), .spoken("d"), Ack(id: "x", status: .expired)])
        var r = AckOutbox(waitsForFile: true, rememberMax: 3)
        #expect(r.restore(loaded) == (sent: 0, unsent: 0), "nothing to send or answer: only remembered")
        #expect(r.isEmpty && ids(r.deliveredAcks) == ["c", "d", "x"])
        r.connectionStarted()
        #expect(r.takeUnwritten().isEmpty && !r.needsProbe)
        #expect(r.fileContent().bytes == file, "written again the same, not lost at the next write")
        // The queue's dedupe answers the redelivery: the re-ack is an entry again, and once
        // confirmed it keeps its place among the remembered.
        r.add(.spoken("c"), reply: true)
        r.flagUnwritten()
        r.fileWritten(through: r.fileContent().flaggedThrough)
        #expect(ids(r.takeUnwritten()) == ["c"])
        r.pinged(now: 2)
        #expect(r.pong() == 1)
        #expect(ids(r.deliveredAcks) == ["c", "d", "x"])
        // A previous release reads the delivered lines as written acks: it never sends them
        // unasked (they only answer a redelivery).
        #expect(AckOutbox.decodeFile(file, rememberMax: 3).delivered.count == 3)
        var q = AlertQueue()
        q.restore(loaded.delivered)
        #expect(q.add(Order(id: "d", kind: .newCustomer(number: 1)), now: 0).ack?.status == .spoken, "acked again, not queued")
    }

    @Test("the answer to a server's cancel goes out again, whether the ack is still here or already delivered")
    func cancelIsAlwaysAnswered() {
        var o = AckOutbox()
        o.connectionStarted()
        o.add(.spoken("a"))
        #expect(ids(o.takeUnwritten()) == ["a"])
        o.add(.spoken("a"))
        #expect(ids(o.takeUnwritten()) == [], "a plain re-add of the same answer is not resent")
        o.add(.spoken("a"), reply: true)
        #expect(ids(o.takeUnwritten()) == ["a"], "a cancel's answer is, while unconfirmed")
        o.pinged(now: 1)
        #expect(o.pong() == 1)
        o.add(.spoken("a"))
        #expect(ids(o.takeUnwritten()) == [], "delivered here: a redelivery that crossed it is not answered twice")
        o.add(.spoken("a"), reply: true)
        #expect(ids(o.takeUnwritten()) == ["a"], "a cancel's answer is, even once delivered")
    }

    @Test("every rejection is sent: a server resending a queue_full order gets an answer each time")
    func everyRejectionIsAnswered() {
        var o = AckOutbox()
        o.connectionStarted()
        let full = Ack(id: "a", status: .rejected, reason: Ack.Reason.queueFull, message: "6 alerts already waiting")
        o.add(full)
        #expect(ids(o.takeUnwritten()) == ["a"])
        #expect(o.isEmpty, "a written rejection is not kept: no outcome to remember, and floods stay small")
        #expect(!o.needsProbe)
        o.add(full)
        #expect(o.takeNext()?.id == "a", "the second delivery's rejection")
        #expect(o.isEmpty)
        o.add(.spoken("b"))
        o.add(full)
        #expect(ids(o.takeUnwritten()) == ["b", "a"], "in order with the others")
        #expect(ids(o.entries.map(\.ack)) == ["b"], "only the outcome stays until its pong")
    }

    @Test("a connection that ends before the pong: the ack is not written again; the next connection's first pong drops it")
    func notResentAfterReconnect() {
        var o = AckOutbox()
        o.add(.spoken("a"))
        o.connectionStarted()
        #expect(ids(o.takeUnwritten()) == ["a"])
        o.pinged(now: 1)
        o.connectionStarted()
        #expect(o.pong() == 0, "a pong cannot answer a ping of the previous connection")
        #expect(ids(o.takeUnwritten()) == [], "written once (the chaos run's double ack, seeds 66466 and 67856)")
        #expect(o.staleCount == 1)
        o.add(.spoken("b"))
        #expect(ids(o.takeUnwritten()) == ["b"], "never written: goes out")
        #expect(o.needsProbe, "a ping right after the welcome settles what earlier connections left")
        o.pinged(now: 2)
        #expect(o.pong() == 2, "no redelivery before the first pong: the server has a")
        #expect(o.isEmpty)
        o.add(.spoken("a"))
        #expect(ids(o.takeUnwritten()) == ["a"], "a later redelivery (answered by the queue's dedupe) still gets its ack: a was only inferred delivered")
    }

    @Test("a redelivery of an order whose ack went to an earlier connection: exactly one re-ack, before the pong can drop it")
    func redeliveryIsAnsweredOnce() {
        var o = AckOutbox()
        o.add(.spoken("a"))
        o.add(Ack(id: "b", status: .expired))
        o.connectionStarted()
        #expect(ids(o.takeUnwritten()) == ["a", "b"])
        o.connectionStarted()  // dropped before any pong
        #expect(o.needsProbe)
        o.pinged(now: 1)  // right after the welcome, before the server's redeliveries are read
        #expect(o.redelivered("a") == true, "the server did not get it")
        #expect(o.redelivered("a") == false, "once: the second is answered like any redelivery on one connection")
        #expect(o.redelivered("zzz") == false)
        o.add(.spoken("a"))  // the queue's dedupe answers the same redelivery
        #expect(ids(o.takeUnwritten()) == ["a"], "one ack line for it")
        #expect(o.pong() == 1, "the pong drops b (not redelivered), not the re-ack written after the ping")
        #expect(ids(o.entries.map(\.ack)) == ["a"])
        o.pinged(now: 2)
        #expect(o.pong() == 1)
        o.add(.spoken("a"))
        #expect(ids(o.takeUnwritten()) == [], "confirmed here: a late answer of the dedupe is not a second ack")
    }

    @Test("acks still in the link's own buffer when the connection died were never written: sent on the next connection")
    func unflushedAreUnwritten() {
        var o = AckOutbox()
        for id in ["a", "b", "c"] { o.add(.spoken(id)) }
        o.connectionStarted()
        let a = o.takeNextEntry()!
        _ = o.takeNextEntry()
        _ = o.takeNextEntry()
        o.unflushed(after: a.seq)  // only a reached the socket
        o.connectionStarted()
        #expect(ids(o.takeUnwritten()) == ["b", "c"])
        #expect(o.staleCount == 1)
        o.unflushed(after: 0)  // nothing of this connection reached the socket
        o.connectionStarted()
        #expect(ids(o.takeUnwritten()) == ["b", "c"], "again, and a stays stale")
        #expect(o.staleCount == 1)
    }

    @Test("a server that redelivers only after many reconnects without a pong: the ack is written twice in all, once per delivery")
    func redeliveryAfterManyReconnects() {
        var o = AckOutbox()
        o.add(.spoken("a"))
        o.connectionStarted()
        var wire = o.takeUnwritten()
        for i in 0..<20 {
            o.connectionStarted()
            if o.needsProbe { o.pinged(now: Double(i)) }  // never answered: each connection dies first
            wire += o.takeUnwritten()
        }
        #expect(ids(wire) == ["a"])
        #expect(o.staleCount == 1, "kept for a redelivery")
        o.connectionStarted()
        #expect(o.redelivered("a") == true)
        wire += o.takeUnwritten()
        #expect(ids(wire) == ["a", "a"])
        #expect(o.staleCount == 0)
    }

    @Test("a server that never answers pings: stale acks go at the time fallback, never written again meanwhile")
    func staleWithoutPongs() {
        var o = AckOutbox()
        o.add(.spoken("a"))
        o.connectionStarted()
        _ = o.takeUnwritten()
        o.connectionStarted()
        o.pinged(now: 10)
        #expect(o.tick(now: 39, lastReceived: 38, heartbeat: 15) == 0)
        #expect(o.takeUnwritten().isEmpty)
        #expect(o.tick(now: 40, lastReceived: 9, heartbeat: 15) == 0, "not heard from since the ping")
        #expect(o.tick(now: 40, lastReceived: 39, heartbeat: 15) == 1)
        #expect(o.isEmpty)
    }

    @Test("write-ahead: with a file, an ack goes out only once a file write marked it written")
    func writeAhead() {
        var o = AckOutbox(waitsForFile: true)
        o.connectionStarted()
        o.add(.spoken("a"))
        #expect(o.hasUnwritten)
        #expect(o.takeNext() == nil, "not before the file says so")
        #expect(!o.hasSendable)
        let c = o.fileContent()
        #expect(AckOutbox.withoutChecksums(c.bytes) == #"{"type":"ack","id":"a","status":"spoken","written":true}"# + "\n")
        o.add(.spoken("b"))  // after the snapshot: not covered by it
        o.fileWritten(through: c.flaggedThrough)
        #expect(o.hasSendable)
        #expect(o.takeNext()?.id == "a")
        #expect(o.takeNext() == nil, "b waits for the next write")
        o.add(Ack(id: "r", status: .rejected, reason: Ack.Reason.queueFull))
        #expect(o.takeNext() == nil, "in order: behind b")
        let c2 = o.fileContent()
        #expect(!String(decoding: c2.bytes, as: UTF8.self).contains("\"r\""), "rejections are never in the file")
        o.fileWritten(through: c2.flaggedThrough)
        #expect(ids(o.takeUnwritten()) == ["b", "r"])
        o.add(Ack(id: "r2", status: .rejected, reason: Ack.Reason.queueFull))
        #expect(o.takeNext()?.id == "r2", "a rejection alone does not wait for the file")
    }

    @Test("the file marks what may have been written; restore makes those stale and sends only the rest; an old-format file loads as unsent")
    func restoreAndMigrate() {
        var o = AckOutbox(waitsForFile: true)
        o.add(.spoken("w"))
        o.connectionStarted()
        o.fileWritten(through: o.fileContent().flaggedThrough)  // nothing flagged yet
        o.flagUnwritten()
        o.fileWritten(through: o.fileContent().flaggedThrough)
        #expect(o.takeNext()?.id == "w")
        o.connectionStarted()  // lost before its pong
        o.add(Ack(id: "u", status: .expired))  // never written (not connected)
        let file = o.encodeForFile()
        #expect(AckOutbox.withoutChecksums(file) == #"{"type":"ack","id":"w","status":"spoken","written":true}"# + "\n" + #"{"type":"ack","id":"u","status":"expired"}"# + "\n")
        let loaded = AckOutbox.decodeFile(file)
        #expect(loaded == AckOutbox.Loaded(acks: [.spoken("w"), Ack(id: "u", status: .expired)], written: ["w"]))
        var r = AckOutbox(waitsForFile: true)
        #expect(r.restore(loaded) == (sent: 1, unsent: 1))
        #expect(!r.dirty)
        r.connectionStarted()
        #expect(r.takeNext() == nil, "u is not marked written yet")
        r.fileWritten(through: r.fileContent().flaggedThrough)
        #expect(ids(r.takeUnwritten()) == ["u"], "only the unsent one")
        #expect(r.staleCount == 1)
        #expect(r.redelivered("w") == true)

        // The previous release's file: plain ack lines (and rejections, which it kept too).
        let old = #"{"type":"ack","id":"o1","status":"spoken"}"# + "\n" + #"{"type":"ack","id":"o2","status":"rejected","reason":"queue_full"}"# + "\n"
            + #"{"type":"ack","id":"o3","status":"cancelled"}"# + "\n"
        let l = AckOutbox.decodeFile(Array(old.utf8))
        #expect(l.problems.isEmpty && l.written.isEmpty && l.acks.count == 3)
        var m = AckOutbox()
        #expect(m.restore(l) == (sent: 0, unsent: 2), "unsent (what the old release would have done: send once more); the rejection dropped")
        m.connectionStarted()
        #expect(ids(m.takeUnwritten()) == ["o1", "o3"])

        // A hand-edited mark that is not a boolean: taken as written (never an unasked second ack).
        let odd = AckOutbox.decodeFile(Array((#"{"type":"ack","id":"x","status":"spoken","written":"yes"}"# + "\n").utf8))
        #expect(odd.written == ["x"] && odd.problems.count == 1)
        // The same id twice: the last line wins.
        let twice = AckOutbox.decodeFile(Array((#"{"type":"ack","id":"x","status":"spoken","written":true}"# + "\n" + #"{"type":"ack","id":"x","status":"cancelled"}"# + "\n").utf8))
        var t = AckOutbox()
        #expect(t.restore(twice) == (sent: 0, unsent: 1))
        #expect(t.entries.map(\.ack) == [Ack(id: "x", status: .cancelled)])
    }

    @Test("a server that never answers pings: the time fallback confirms once it was heard from 2x heartbeat after the ping")
    func timeFallback() {
        var o = AckOutbox()
        o.add(.spoken("a"))
        o.connectionStarted()
        _ = o.takeUnwritten()
        o.pinged(now: 10)
        #expect(o.tick(now: 39, lastReceived: 38, heartbeat: 15) == 0)
        #expect(o.tick(now: 40, lastReceived: 9, heartbeat: 15) == 0, "not heard from since the ping: not delivered")
        #expect(o.tick(now: 40, lastReceived: 39, heartbeat: 15) == 1)
        // From now on a late pong must not confirm acks written after it.
        o.add(.spoken("b"))
        _ = o.takeUnwritten()
        o.pinged(now: 41)
        #expect(o.pong() == 0)
        #expect(o.count == 1)
    }

    @Test("the same answer twice is one entry (and not resent); a new status replaces the old one")
    func dedupe() {
        var o = AckOutbox()
        o.connectionStarted()
        o.add(.spoken("a"))
        _ = o.takeUnwritten()
        o.add(.spoken("a"))
        #expect(o.takeUnwritten().isEmpty)
        o.add(Ack(id: "a", status: .cancelled))
        #expect(o.takeUnwritten() == [Ack(id: "a", status: .cancelled)])
        #expect(o.count == 1)
    }

    @Test("a redelivery that crossed the ack on the wire is not acked twice on that connection, but is on the next")
    func crossedRedelivery() {
        var o = AckOutbox()
        o.add(.spoken("x"))
        o.connectionStarted()
        _ = o.takeUnwritten()
        o.pinged(now: 1)
        o.pong()
        #expect(o.isEmpty)
        o.add(Ack(id: "x", status: .spoken, message: "already spoken; not said again"))
        #expect(o.isEmpty, "the server has it: no second ack line")
        o.add(Ack(id: "x", status: .cancelled))
        #expect(o.count == 1, "a different answer still goes out")
        o.connectionStarted()
        o.add(.spoken("y"))
        _ = o.takeUnwritten()
        o.pinged(now: 2)
        o.pong()
        o.connectionStarted()
        o.add(.spoken("y"))
        #expect(o.count == 1, "redelivered on a new connection: the server lost it, ack again")
    }

    @Test("MQTT: an order delivered again is answered again, even when this connection confirmed or is sending the same ack (issue 31)")
    func deliveredAgainIsAnswered() {
        var o = AckOutbox()
        o.connectionStarted()
        o.add(.spoken("m"))
        #expect(ids(o.takeUnwritten()) == ["m"])
        o.deliveredAgain("m")  // republished while the ack waits for its PUBACK
        #expect(o.offer(.spoken("m")).outcome == .queued, "the republish gets its own ack")
        #expect(ids(o.takeUnwritten()) == ["m"])
        o.pinged(now: 1)
        #expect(o.pong() == 1)
        #expect(o.offer(.spoken("m")).outcome == .confirmedHere, "a plain re-add (v1's crossed redelivery) is still swallowed")
        for _ in 0..<3 {  // republished after the PUBACK, again and again: each answered once
            o.deliveredAgain("m")
            #expect(o.offer(.spoken("m")).outcome == .queued)
            #expect(ids(o.takeUnwritten()) == ["m"])
            o.pinged(now: 2)
            #expect(o.pong() == 1)
        }
        #expect(o.offer(.spoken("m")).outcome == .confirmedHere, "one reply per delivery, not a licence for ever")
        o.deliveredAgain("never-acked")  // unknown to the outbox: nothing remembered
        o.add(.spoken("never-acked"))
        _ = o.takeUnwritten()
        o.pinged(now: 3)
        o.pong()
        #expect(o.offer(.spoken("never-acked")).outcome == .confirmedHere)
        o.add(.spoken("w"))
        #expect(o.offer(.spoken("w")).outcome == .sendingHere)
    }

    @Test("takeNext hands out a backlog one by one, in order, each once per connection")
    func takeNext() {
        var o = AckOutbox()
        for i in 0..<5 { o.add(.spoken("n\(i)")) }
        o.connectionStarted()
        var got: [String] = []
        while let a = o.takeNext() { got.append(a.id) }
        #expect(got == ["n0", "n1", "n2", "n3", "n4"])
        #expect(!o.hasUnwritten)
        o.add(.spoken("n5"))
        #expect(o.hasUnwritten)
        #expect(o.takeNext()?.id == "n5")
    }

    @Test("bounded: memory keeps `capacity` (oldest dropped), the file the newest `durableMax`")
    func bounded() {
        var o = AckOutbox(capacity: 2000, durableMax: 1000)
        var dropped: [String] = []
        for i in 0..<2500 { if let d = o.add(.spoken("b\(i)")) { dropped.append(d.id) } }
        #expect(o.count == 2000)
        #expect(dropped == (0..<500).map { "b\($0)" })
        #expect(o.notDurable == 1000)
        let file = AckOutbox.decodeFile(o.encodeForFile())
        #expect(file.problems.isEmpty)
        #expect(ids(file.acks) == (1500..<2500).map { "b\($0)" })
    }

    @Test("file round trip keeps every field, including awkward text (rejections are not kept)")
    func roundTrip() {
        var o = AckOutbox()
        let acks = [Ack.spoken("x-1"), Ack(id: "单号\"7\"\\n", status: .cancelled, reason: "r\u{1}", message: "20 waiting\n(queue.max = 20)"),
                    Ack(id: "e", status: .expired), Ack(id: "c", status: .cancelled)]
        for a in acks { o.add(a) }
        o.add(Ack(id: "rej", status: .rejected, reason: "queue_full"))
        #expect(o.dirty)
        let bytes = o.encodeForFile()
        #expect(!o.dirty)
        #expect(AckOutbox.decodeFile(bytes) == AckOutbox.Loaded(acks: acks, problems: []))
        #expect(AckOutbox.decodeFile([]) == AckOutbox.Loaded())
    }

    /// rename makes a torn file impossible on a sane filesystem; a damaged card can still
    /// produce any prefix, or any bytes: never a crash, never an ack that was not written.
    @Test("every prefix of a file, and seeded garbage, decode without a crash to acks that were written")
    func tornAndGarbage() {
        var o = AckOutbox()
        let written = (0..<20).map { Ack(id: "t\($0)", status: $0 % 3 == 0 ? .expired : .spoken) }
        for a in written.prefix(10) { o.add(a) }
        o.flagUnwritten()  // the first ten may have been sent: marked in the file
        for a in written.dropFirst(10) { o.add(a) }
        let bytes = o.encodeForFile()
        let flagged = Set(written.prefix(10).map(\.id))
        for cut in 0...bytes.count {
            let got = AckOutbox.decodeFile(Array(bytes[..<cut]))
            #expect(Array(written.prefix(got.acks.count)) == got.acks, "cut at \(cut)")
            let ids = Set(got.acks.map(\.id))
            #expect(got.written == (got.torn == nil ? flagged.intersection(ids) : ids), "cut at \(cut): a mark is never lost by a cut; a torn file's acks all count as sent")
            #expect(got.problems.count <= 1, "cut at \(cut): \(got.problems)")
        }
        var rng = SplitMix64(seed: 13)
        for _ in 0..<300 {
            var g = bytes
            for _ in 0..<Int.random(in: 1...40, using: &rng) {
                let i = Int.random(in: 0..<g.count, using: &rng)
                g[i] = UInt8.random(in: 0...255, using: &rng)
            }
            let got = AckOutbox.decodeFile(g)
            #expect(got.acks.count <= written.count)
            #expect(got.acks.allSatisfy { a in a.id.hasPrefix("t") || !a.id.isEmpty })
        }
        let junk = (0..<100_000).map { _ in UInt8.random(in: 0...255, using: &rng) }
        let got = AckOutbox.decodeFile(junk)
        #expect(got.problems.count <= 22)
    }

    /// soak-mqtt-devloss: over MQTT a malformed order is PUBACKed and in no journal; its
    /// rejection, published behind thousands of queue_full ones, left the outbox when taken and
    /// was never in the file: a SIGTERM before the broker had it lost the order's only answer
    /// (7 orders, each delivered three times, never answered).
    @Test("a final rejection stays until confirmed and survives a restart in the file; queue_full leaves when written")
    func finalRejectionSurvivesAStop() {
        var o = AckOutbox(waitsForFile: true)
        o.connectionStarted()
        let invalid = Ack(id: "bad", status: .rejected, reason: Ack.Reason.invalidOrder, message: "order: field \"number\" must be 0...999999, got 1000000")
        o.add(Ack(id: "full", status: .rejected, reason: Ack.Reason.queueFull))
        o.add(invalid)
        #expect(ids(o.takeUnwritten()) == ["full", "bad"], "rejections never wait for the file")
        o.pinged(now: 1)
        // Stopped before the PUBACK: the file written at close.
        let loaded = AckOutbox.decodeFile(o.fileContent().bytes)
        #expect(loaded.acks == [invalid], "queue_full is not kept (its order is redelivered)")
        var r = AckOutbox(waitsForFile: true)
        #expect(r.restore(loaded) == (sent: 0, unsent: 1))
        r.connectionStarted()
        r.flagUnwritten()
        r.fileWritten(through: r.fileContent().flaggedThrough)
        #expect(r.takeUnwritten() == [invalid], "sent again after the restart")
        r.pinged(now: 2)
        #expect(r.pong() == 1 && r.isEmpty)
        #expect(AckOutbox.decodeFile(r.fileContent().bytes).acks.isEmpty, "gone once confirmed")
    }

    @Test("the queue learns restored acks: a redelivery is acked again with the same status, never queued")
    func queueRestore() {
        var q = AlertQueue()
        q.restore([.spoken("said-before"), Ack(id: "gone", status: .expired),
                   Ack(id: "full", status: .rejected, reason: Ack.Reason.queueFull)])
        #expect(q.add(Order(id: "full", kind: .newCustomer(number: 6)), now: 0) == .queued, "queue_full may be retried")
        #expect(q.add(Order(id: "said-before", kind: .newCustomer(number: 7)), now: 0).ack?.status == .spoken)
        #expect(q.add(Order(id: "gone", kind: .newCustomer(number: 8)), now: 0).ack?.status == .expired)
        #expect(q.waitingCount == 1)
        #expect(q.add(Order(id: "new", kind: .newCustomer(number: 9)), now: 0) == .queued)
    }

    @Test("a cancel of an order rejected for good is answered with that rejection, not cancelled (chaos seed 75107); queue_full is not remembered")
    func cancelOfRejected() {
        var q = AlertQueue()
        let invalid = Ack(id: "bad", status: .rejected, reason: Ack.Reason.invalidOrder, message: "order: field \"number\" must be 0...999999, got 1000000")
        q.rememberRejection(invalid)
        #expect(q.cancel(id: "bad", now: 0).ack == invalid)
        let mute = Ack(id: "mute", status: .rejected, reason: Ack.Reason.nothingToSay)
        q.rememberRejection(mute)
        #expect(q.cancel(id: "mute", now: 0).ack == mute)
        q.rememberRejection(Ack(id: "full", status: .rejected, reason: Ack.Reason.queueFull))
        #expect(q.cancel(id: "full", now: 0).ack.status == .cancelled, "queue_full invites a resend: the cancel wins")
        #expect(q.cancel(id: "never", now: 0).ack.status == .cancelled)
    }

    @Test("an order refused after its id was made final keeps that outcome (chaos seed 34641); one refused for good is remembered")
    func refuseAgainstOutcomes() {
        var q = AlertQueue()
        let invalid = Ack(id: "X", status: .rejected, reason: Ack.Reason.invalidOrder, message: "order: field \"number\" must be 0...999999, got 1000000")
        // The server's cancel came before its malformed order: cancelled it stays.
        #expect(q.cancel(id: "X", now: 0).ack.status == .cancelled)
        #expect(q.refuse(invalid).ack == Ack(id: "X", status: .cancelled, message: "already cancelled"))
        #expect(q.cancel(id: "X", now: 0).ack.status == .cancelled)
        // A valid copy waits (or is being said): the malformed one gets no answer of its own.
        #expect(q.add(Order(id: "Q", kind: .newCustomer(number: 1)), now: 0) == .queued)
        #expect(q.refuse(Ack(id: "Q", status: .rejected, reason: Ack.Reason.invalidOrder)) == .alreadyQueued)
        let a = q.next(now: 0).alert
        #expect(a?.orderIDs == ["Q"])
        #expect(q.refuse(Ack(id: "Q", status: .rejected, reason: Ack.Reason.nothingToSay)) == .alreadyQueued)
        // Nothing known: the rejection, and a later cancel gets it again.
        let mute = Ack(id: "M", status: .rejected, reason: Ack.Reason.nothingToSay)
        #expect(q.refuse(mute) == .rejected(mute))
        #expect(q.cancel(id: "M", now: 0).ack == mute)
        #expect(q.refuse(mute) == .rejected(mute), "a redelivery is refused the same way")
    }

    @Test("seeded: whatever order cancels, redeliveries and sayings come in, an id (valid, malformed or mute, as a server sends it) never gets two final statuses")
    func oneFinalStatusPerID() {
        let valid = ["a", "b"], malformed = ["c", "d"], mute = ["e"]
        let ids = valid + malformed + mute
        for seed in UInt64(1)...300 {
            var rng = SplitMix64(seed: seed)
            var q = AlertQueue(config: AlertConfig(coalesceMax: 1))
            var finals: [String: Set<Ack.Status>] = [:]
            func note(_ ack: Ack?) {
                guard let ack else { return }
                finals[ack.id, default: []].insert(ack.status)
            }
            for step in 0..<40 {
                let now = Double(step)
                let id = ids[Int(rng.next() % UInt64(ids.count))]
                switch rng.next() % 3 {
                case 0: note(q.cancel(id: id, now: now).ack)
                case 1:
                    if valid.contains(id) {
                        note(q.add(Order(id: id, kind: .newCustomer(number: 1)), now: now).ack)
                    } else {
                        let reason = malformed.contains(id) ? Ack.Reason.invalidOrder : Ack.Reason.nothingToSay
                        note(q.refuse(Ack(id: id, status: .rejected, reason: reason)).ack)
                    }
                default:
                    if let alert = q.next(now: now).alert {
                        for ack in q.finished(alert, now: now) { note(ack) }
                    }
                }
            }
            for (id, statuses) in finals {
                #expect(statuses.count == 1, "seed \(seed): \(id) got \(statuses)")
            }
        }
    }

    @Test("outbox path: next to state.path unless link.outbox says otherwise; off is memory only")
    func path() throws {
        var c = CrierConfig()
        #expect(c.ackOutboxPath == "/var/lib/crier/state.acks")
        c.buttons.statePath = "/data/crier/state"
        #expect(c.ackOutboxPath == "/data/crier/state.acks")
        c.link.outbox = "/data/acks"
        #expect(c.ackOutboxPath == "/data/acks")
        c.link.outbox = ""
        #expect(c.ackOutboxPath == nil)
        let p = ConfigParser()
        #expect(p.parse("link.outbox = off\n", file: "c").config.ackOutboxPath == nil)
        #expect(p.parse("link.outbox = /data/x\n", file: "c").config.ackOutboxPath == "/data/x")
        let bad = p.parse("link.outbox = acks\n", file: "c")
        #expect(bad.diagnostics.contains { "\($0)".contains("absolute path") }, "\(bad.diagnostics)")
    }
}
