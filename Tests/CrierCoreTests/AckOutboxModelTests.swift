import Testing
@testable import CrierCore

/// A seeded model of the whole exchange around the ack outbox: a server that keeps every order
/// until it reads a final ack and redelivers the unacked ones right after each welcome (and
/// answers pings in order), lines in flight lost when a connection drops, the daemon's dedupe,
/// the outbox file written at random moments (records appended, or the file written whole when
/// it needs compaction: issue 35), and power cuts at any step (the box restarts from the last
/// file written, from one with a torn last append, one whose compaction never reached the
/// rename, or one with a damaged byte). Checked for every seed:
/// - every ack the server reads answers a delivery the box read: never more acks for an order
///   than deliveries of it (the chaos run's `acked_exactly_once`: an ack written on a connection
///   that ended before its pong was written again after the next welcome);
/// - every order ends with a final ack at the server;
/// - no order is said twice, except after a power cut that came before its ack reached the file
///   (the one window docs/protocol.md names).
struct OutboxModel {
    enum Line: Equatable { case ack(Ack), ping, pong, order(String), welcome }

    var rng: SplitMix64
    let pongs: Bool
    // The server.
    var created: [String] = []
    var final: Set<String> = []
    var deliveries: [String: Int] = [:]
    var acksRead: [String: Int] = [:]
    /// Deliveries the box read minus acks the server read, per order: below zero is an ack
    /// that answers no delivery (each delivery is answered once, docs/protocol.md section 4).
    var owed: [String: Int] = [:]
    var unasked: [String] = []
    // The connection: what each side wrote and the other has not read yet.
    var up = false
    var toServer: [Line] = []
    var toDevice: [Line] = []
    // The box.
    var outbox = AckOutbox(waitsForFile: true)
    var welcomed = false
    var file: [UInt8] = []
    var dedupe: [String: Ack.Status] = [:]
    var pending: [String] = []
    var spoken: [String: Int] = [:]
    /// Said, then a power cut before its ack was in the file: may be said again.
    var mayRepeat: Set<String> = []
    var now = 0.0
    var crashes = 0, drops = 0, reAcks = 0

    init(seed: UInt64) {
        rng = SplitMix64(seed: seed)
        pongs = seed % 5 != 0  // one seed in five: a server that answers no ping (time fallback)
    }

    mutating func chance(_ p: Double) -> Bool { Double.random(in: 0..<1, using: &rng) < p }

    mutating func serverSend(_ l: Line) {
        guard up else { return }
        if case .order(let id) = l { deliveries[id, default: 0] += 1 }
        toDevice.append(l)
    }

    mutating func connect() {
        guard !up else { return }
        up = true
        toDevice = []
        toServer = []
        serverSend(.welcome)
        for id in created where !final.contains(id) { serverSend(.order(id)) }
    }

    mutating func drop() {
        up = false
        welcomed = false
        toDevice = []
        toServer = []
        drops += 1
    }

    mutating func serverReads() {
        guard up, !toServer.isEmpty else { return }
        switch toServer.removeFirst() {
        case .ack(let a):
            acksRead[a.id, default: 0] += 1
            owed[a.id, default: 0] -= 1
            if owed[a.id, default: 0] < 0 { unasked.append(a.id) }
            if a.status != .rejected { final.insert(a.id) }
        case .ping where pongs: serverSend(.pong)
        default: break
        }
    }

    mutating func deviceReads() {
        guard up, !toDevice.isEmpty else { return }
        now += 1
        lastReceived = now
        switch toDevice.removeFirst() {
        case .welcome:
            welcomed = true
            outbox.connectionStarted()
        case .order(let id):
            owed[id, default: 0] += 1
            if outbox.redelivered(id) { reAcks += 1 }
            if let st = dedupe[id] {
                outbox.add(Ack(id: id, status: st))  // the queue's dedupe: "acked again"
            } else if !pending.contains(id) {
                pending.append(id)
            }
        case .pong: outbox.pong()
        default: break
        }
    }
    var lastReceived = 0.0

    mutating func say() {
        guard !pending.isEmpty else { return }
        let id = pending.removeFirst()
        spoken[id, default: 0] += 1
        dedupe[id] = .spoken
        outbox.add(.spoken(id))
        if welcomed { outbox.flagUnwritten() }  // OrderLink.send while connected
    }

    mutating func linkTurn() {
        guard up, welcomed else { return }
        now += 1
        // The time fallback only where pongs never come: in this model's clock (one tick per
        // step) a slow but answering server would otherwise look like one that never pongs.
        if !pongs { outbox.tick(now: now, lastReceived: lastReceived, heartbeat: 3) }
        while let a = outbox.takeNext() { toServer.append(.ack(a)) }
        if outbox.needsProbe {
            outbox.pinged(now: now)
            toServer.append(.ping)
        }
    }

    mutating func persist() {
        guard outbox.dirty else { return }
        let c = outbox.takeFileWrite()
        if c.whole { file = c.bytes } else { file += c.bytes }
        outbox.fileWritten(through: c.flaggedThrough)
    }

    /// A power cut: the process and the connection are gone; the box starts from the file.
    /// Sometimes the cut came during a write: part of an append reached the card (any prefix
    /// of it), or a compaction's PATH.tmp never got renamed (the old file stays). Sometimes a
    /// byte of the card is damaged.
    mutating func crash() {
        crashes += 1
        var bytes = file
        if chance(0.15) && outbox.dirty {
            let c = outbox.takeFileWrite()
            if !c.whole { bytes += c.bytes.prefix(Int.random(in: 0..<max(1, c.bytes.count), using: &rng)) }
        }
        if chance(0.05) && !bytes.isEmpty {
            bytes[Int.random(in: 0..<bytes.count, using: &rng)] ^= UInt8.random(in: 1...255, using: &rng)
        }
        let loaded = AckOutbox.decodeFile(bytes)
        let onDisk = Set(loaded.acks.map(\.id))
        for (id, _) in spoken where !onDisk.contains(id) && !final.contains(id) { mayRepeat.insert(id) }
        if up { drop() }
        outbox = AckOutbox(waitsForFile: true)
        outbox.restore(loaded)
        outbox.markDirty()  // AckStore writes an existing file whole at start
        file = bytes
        dedupe = [:]
        for a in loaded.acks where a.status != .rejected { dedupe[a.id] = a.status }
        pending = []
    }

    mutating func step() {
        switch Int.random(in: 0..<100, using: &rng) {
        case 0..<8:
            let id = "o\(created.count)"
            created.append(id)
            serverSend(.order(id))
        case 8..<30: serverReads()
        case 30..<52: deviceReads()
        case 52..<62: say()
        case 62..<80: linkTurn()
        case 80..<90: persist()
        case 90..<94: if up { drop() }
        case 94..<98: connect()
        default: if chance(0.5) { crash() }
        }
    }

    /// Quiet period: connected, nothing lost, until everything is said and acked.
    mutating func settle() {
        connect()
        for _ in 0..<2000 {
            deviceReads(); say(); persist(); linkTurn(); persist(); serverReads()
            if toDevice.isEmpty && toServer.isEmpty && pending.isEmpty && created.allSatisfy({ final.contains($0) }) { break }
        }
    }
}

@Suite("Ack outbox model: written once, answered on redelivery, across drops and power cuts")
struct AckOutboxModelTests {
    @Test("seeded: no order is acked more often than delivered, each ends acked, none said twice outside the power-cut window",
          arguments: 0..<40)
    func model(batch: Int) {
        var totals = (crashes: 0, drops: 0, reAcks: 0, orders: 0)
        for seed in UInt64(batch * 25)..<UInt64(batch * 25 + 25) {
            var m = OutboxModel(seed: seed)
            for _ in 0..<400 { m.step() }
            m.settle()
            totals.crashes += m.crashes
            totals.drops += m.drops
            totals.reAcks += m.reAcks
            totals.orders += m.created.count
            for id in m.created {
                let read = m.acksRead[id, default: 0], sent = m.deliveries[id, default: 0]
                #expect(read <= sent, "seed \(seed) \(id): \(read) acks read for \(sent) deliveries")
                #expect(m.final.contains(id), "seed \(seed) \(id): never acked")
                if !m.mayRepeat.contains(id) {
                    #expect(m.spoken[id, default: 0] <= 1, "seed \(seed) \(id): said \(m.spoken[id, default: 0]) times")
                }
            }
            #expect(m.unasked.isEmpty, "seed \(seed): acks that answer no delivery: \(m.unasked)")
            #expect(m.outbox.isEmpty || !m.pongs, "seed \(seed): \(m.outbox.count) acks left after the quiet period")
        }
        if batch == 0 {
            print("ack outbox model, seeds 0-24: \(totals.orders) orders, \(totals.drops) drops, \(totals.crashes) power cuts, \(totals.reAcks) re-acks on redelivery")
        }
    }
}
