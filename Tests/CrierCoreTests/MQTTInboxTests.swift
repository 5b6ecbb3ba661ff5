import Testing
@testable import CrierCore

@Suite("MQTT: order inbox journal, topics, server addresses and mqtt.* keys")
struct MQTTInboxTests {
    func order(_ id: String, _ n: Int = 1) -> Order {
        Order(id: id, kind: .newCustomer(number: n))
    }

    /// Replays a journal the way the store writes it: appends, with a compaction now and then.
    struct Journal {
        var inbox = OrderInbox(doneMax: 50)
        var file: [UInt8] = []
        mutating func apply(_ lines: [[UInt8]]) {
            if inbox.needsCompaction { file = inbox.encodeForFile() } else { for l in lines { file += l } }
        }
    }

    @Test("seeded: after any sequence of receipts, deliveries, compactions and a torn last append, the file reads back to the same pending orders and outcomes")
    func seededRoundTrip() {
        var rng = SplitMix64(seed: 18)
        for _ in 0..<200 {
            var j = Journal()
            var model: [String] = []  // pending ids in order
            for _ in 0..<Int.random(in: 1...120, using: &rng) {
                let id = "O-\(Int.random(in: 0..<40, using: &rng))"
                if Bool.random(using: &rng) {
                    let line = j.inbox.received(.order(order(id)))
                    if line != nil { model.append(id) }
                    j.apply(line.map { [$0] } ?? [])
                } else {
                    let status: Ack.Status = [.spoken, .expired, .cancelled, .rejected].randomElement(using: &rng)!
                    j.apply(j.inbox.delivered(Ack(id: id, status: status)).map { [$0] } ?? [])
                    model.removeAll { $0 == id }
                }
            }
            #expect(j.inbox.pending.map(\.id) == model)
            let back = OrderInbox.decodeFile(j.file, doneMax: 50)
            #expect(back.problems.isEmpty)
            #expect(back.inbox.pending == j.inbox.pending)
            #expect(back.inbox.done.map(\.id) == j.inbox.done.map(\.id))
            // A power cut in the middle of an append: the torn record is reported, the rest kept.
            let torn = j.file + Array(#"{"type":"order","id":"T-1","ki"#.utf8)
            let t = OrderInbox.decodeFile(torn, doneMax: 50)
            #expect(t.inbox.pending == j.inbox.pending)
            #expect(t.problems.count == 1)
            #expect(j.file.count < 200_000, "compaction bounds the file")
        }
    }

    @Test("seeded: a journal of 30 000 waiting orders and their acks reads back to the same state (linear, not quadratic)")
    func largeBacklog() {
        var rng = SplitMix64(seed: 16)
        var i = OrderInbox()
        var file: [UInt8] = []
        var model: [String] = []
        for n in 0..<30_000 {
            file += i.received(.order(order("B-\(n)")))!
            model.append("B-\(n)")
            if n % 3 == 0 {
                let k = Int.random(in: 0..<model.count, using: &rng)
                file += i.delivered(Ack(id: model.remove(at: k), status: .spoken))!
            }
        }
        #expect(i.pendingCount == model.count)
        #expect(i.pending.map(\.id) == model)
        let back = OrderInbox.decodeFile(file)
        #expect(back.problems.isEmpty)
        #expect(back.inbox.pending.map(\.id) == model)
        #expect(back.inbox.pendingCount == model.count)
        // An answer for every one of them: nothing left, and the file compacts.
        var j = back.inbox
        for id in model { _ = j.delivered(Ack(id: id, status: .spoken)) }
        #expect(j.pendingCount == 0 && j.pending.isEmpty)
        #expect(j.needsCompaction)
    }

    /// Soak finding (docs/benchmarks.md "Soak", `soak-mqtt`): after 8 000 orders a SIGTERM
    /// landed while a coalesced alert of 8 orders was said; their acks were in the outbox file
    /// (`written`, never PUBACKed) and their orders pending in the inbox. The daemon restores
    /// the outbox's outcomes (1 024 confirmed + the 8), then the inbox's 1 024 done ones, into
    /// one memory of 1 024: the inbox's, nearly the same ids, pushed one another out in a chain
    /// that ended on the 8, and the replayed orders were said a second time.
    @Test("restart with full journals: the replayed orders whose acks are in the outbox file are acked again, never said again")
    func replayAfterFullJournalsIsNotSaidAgain() {
        let old = (0..<1500).map { "S-\($0)" }
        let coalesced = (1500..<1508).map { "S-\($0)" }
        // The first process: every old order said, its ack PUBACKed (the inbox marks it done,
        // the outbox confirms it); the coalesced alert's acks flagged written, not PUBACKed.
        var outbox = AckOutbox(waitsForFile: true)
        var inbox = OrderInbox()
        outbox.connectionStarted()
        for chunk in stride(from: 0, to: old.count, by: 64) {
            let ids = old[chunk..<min(chunk + 64, old.count)]
            for id in ids { _ = inbox.received(.order(order(id))) }
            for id in ids { outbox.add(.spoken(id)) }
            outbox.flagUnwritten()
            outbox.fileWritten(through: outbox.fileContent().flaggedThrough)
            let sent = outbox.takeUnwritten()
            outbox.pinged(now: Double(chunk))
            #expect(outbox.pong() == sent.count)
            for a in sent { _ = inbox.delivered(a) }
        }
        for id in coalesced { _ = inbox.received(.order(order(id))) }
        for id in coalesced { outbox.add(.spoken(id)) }
        outbox.flagUnwritten()  // the drain took them, the file write came after the link stopped
        let outboxFile = outbox.fileContent().bytes
        let inboxFile = inbox.encodeForFile()

        // The second process reads both files as AckStore and InboxStore do.
        let loaded = AckOutbox.decodeFile(outboxFile)
        var restoredBox = AckOutbox(waitsForFile: true)
        #expect(restoredBox.restore(loaded) == (sent: 8, unsent: 0), "the soak's log: acks=8 unsent=0 sent_unconfirmed=8")
        let storeRestored = loaded.delivered + loaded.acks  // AckStore.restored
        let back = OrderInbox.decodeFile(inboxFile)
        #expect(back.inbox.pending.map(\.id) == coalesced, "the soak's log: orders=8 handled again")
        #expect(back.inbox.done.count == 1024 && loaded.delivered.count == 1024, "both journals full")

        var q = AlertQueue()
        q.restore(storeRestored)  // Daemon.start's order: the outbox's, then the inbox's
        q.restore(back.inbox.done)
        for e in back.inbox.pending {
            guard case .order(let o) = e else { continue }
            let got = q.add(o, now: 0)
            #expect(got.ack?.status == .spoken, "\(o.id): \(got), not acked again")
        }
        #expect(q.waitingCount == 0, "nothing said twice")
        // The newest confirmed outcomes are still known (a late redelivery of one), and what
        // the inbox alone remembers fills the room left.
        #expect(q.add(order(old.last!), now: 0).ack?.status == .spoken)
        #expect(q.add(order("fresh"), now: 0) == .queued)
    }

    @Test("a line longer than any record is skipped and the records after it are kept")
    func overlongLineSkipped() {
        var i = OrderInbox()
        var file: [UInt8] = []
        file += i.received(.order(order("A")))!
        file += Array(repeating: UInt8(ascii: "x"), count: ProtocolCodec.maxRewrittenLineBytes + 1) + [0x0A]
        file += i.received(.order(order("B")))!
        file += i.delivered(Ack(id: "A", status: .spoken))!
        let back = OrderInbox.decodeFile(file)
        #expect(back.problems.count == 1)
        #expect(back.problems.first?.contains("longer than any record") == true)
        #expect(back.inbox.pending.map(\.id) == ["B"])
        #expect(back.inbox.done.map(\.id) == ["A"])
    }

    @Test("a redelivery of a pending order is not journaled twice; done outcomes are bounded and remembered")
    func dedupeAndBound() {
        var i = OrderInbox(doneMax: 3)
        #expect(i.received(.order(order("a"))) != nil)
        #expect(i.received(.order(order("a"))) == nil)
        #expect(i.delivered(Ack(id: "a", status: .spoken)) != nil)
        #expect(i.pending.isEmpty)
        #expect(i.delivered(Ack(id: "a", status: .spoken)) == nil, "already remembered: nothing to write")
        for n in 0..<10 { _ = i.delivered(Ack(id: "x\(n)", status: .spoken)) }
        #expect(i.done.map(\.id) == ["x7", "x8", "x9"])
        // A rejection frees the order (the server may resend it) but is no outcome to remember.
        _ = i.received(.order(order("r")))
        _ = i.delivered(Ack(id: "r", status: .rejected, reason: "queue_full"))
        #expect(i.pending.isEmpty && !i.done.contains { $0.id == "r" })
        _ = i.received(.cancel(id: "c"))
        #expect(i.pending == [.cancel(id: "c")])
    }

    @Test("topics and the presence payload")
    func topics() {
        let t = MQTTTopics(prefix: "shop/crier", device: "kiosk-1")
        #expect(t.orders == "shop/crier/kiosk-1/orders" && t.acks == "shop/crier/kiosk-1/acks" && t.status == "shop/crier/kiosk-1/status")
        let on = String(decoding: MQTTTopics.statusPayload(online: true, device: "k", version: "1.2", volume: 7, protocolVersion: "5"), as: UTF8.self)
        #expect(on == #"{"type":"status","state":"online","device":"k","version":"1.2","volume":7,"mqtt":"5"}"#)
        let off = String(decoding: MQTTTopics.statusPayload(online: false, device: "k", version: "1.2", volume: 7, protocolVersion: "5"), as: UTF8.self)
        #expect(off == #"{"type":"status","state":"offline","device":"k"}"#)
        // The v1 hello's slot and last update, for fleets; never in the offline will.
        let updated = String(decoding: MQTTTopics.statusPayload(online: true, device: "k", version: "1.2", volume: nil, protocolVersion: "5",
                                                                slot: "B", lastUpdate: "updated 1.2+7"), as: UTF8.self)
        #expect(updated == #"{"type":"status","state":"online","device":"k","version":"1.2","mqtt":"5","slot":"B","last_update":"updated 1.2+7"}"#)
        let offUpdated = String(decoding: MQTTTopics.statusPayload(online: false, device: "k", version: "1.2", volume: nil, protocolVersion: nil,
                                                                   slot: "B", lastUpdate: "updated 1.2+7"), as: UTF8.self)
        #expect(offUpdated == #"{"type":"status","state":"offline","device":"k"}"#)
    }

    @Test("mqtt:// and mqtts:// addresses with their default ports; bad prefixes refused with a reason")
    func addressesAndKeys() throws {
        #expect(try ServerAddress(parsing: "mqtt://broker.lan").port == 1883)
        #expect(try ServerAddress(parsing: "mqtts://broker.lan").port == 8883)
        #expect(try ServerAddress(parsing: "MQTTS://[fd00::5]:9000").description == "mqtts://[fd00::5]:9000")
        #expect(try ServerAddress(parsing: "tcp://h").port == 7700)
        #expect(try ServerAddress(parsing: "mqtts://h").isEncrypted && !(try ServerAddress(parsing: "mqtt://h").isEncrypted))
        #expect(throws: ConfigValueError.self) { try ServerAddress(parsing: "ws://h") }
        for bad in ["mqtt.prefix = a/+/b", "mqtt.prefix = /x", "mqtt.prefix = a#", "mqtt.protocol = 4", "mqtt.session_expiry = 5", "mqtt.inbox = rel/path"] {
            let e = ConfigParser().parse(bad + "\n", file: "t").diagnostics.filter { $0.severity == .error }
            #expect(e.count == 1, "\(bad)")
        }
        let r = ConfigParser().parse("mqtt.prefix = shop/crier\nmqtt.password = hunter2\nmqtt.session_expiry = 86400\nmqtt.protocol = 3.1.1\n", file: "t")
        #expect(r.diagnostics.isEmpty)
        #expect(r.config.link.mqtt.prefix == "shop/crier" && r.config.link.mqtt.protocolChoice == .v311)
        #expect(r.config.link.mqtt.password == "hunter2" && r.config.link.mqtt.sessionExpiry == 86400)
        #expect(!r.config.rendered().contains("hunter2"), "the password is never printed")
    }
}
