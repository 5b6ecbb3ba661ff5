import CrierCore
import CrierPosix
import Glibc
import Synchronization
import Testing
@testable import CrierLink
@testable import CrierSim

/// Issue 13, item 7: liveness is "I have heard from the peer", whatever this side sends, and
/// acks survive a connection that dies under them. Hand-driven servers misbehave on purpose.
@Suite("Link liveness and ack delivery under hostile traffic", .serialized)
struct LinkLivenessTests {
    static let ping = #"{"type":"ping"}"#
    static let pong = "{\"type\":\"pong\"}\n"

    /// What a raw server saw while it answered (or not) for `seconds`.
    struct Seen {
        var pings = 0
        var acks: [String] = []
        var closed = false
    }

    /// Reads lines for `seconds`; answers pings when `answer`; calls `each` every ~20 ms.
    static func serve(_ raw: RawServer, seconds: Double, answer: Bool, each: () -> Void = {}) -> Seen {
        var seen = Seen()
        let end = Monotonic.now() + seconds
        while Monotonic.now() < end {
            each()
            var p = [pollfd(fd: raw.fd, events: Int16(POLLIN), revents: 0)]
            if poll(&p, 1, 20) == 1 {
                if !raw.reader.fill(raw.fd) { seen.closed = true; break }
            }
            while !raw.reader.pending.isEmpty {
                let l = String(decoding: raw.reader.pending.removeFirst(), as: UTF8.self)
                if l == ping {
                    seen.pings += 1
                    if answer { raw.write(pong) }
                } else if l.hasPrefix(#"{"type":"ack""#), let id = ackID(l) {
                    seen.acks.append(id)
                }
            }
        }
        return seen
    }

    static func ackID(_ line: String) -> String? {
        guard case .success(.ack(let a)) = ProtocolCodec.decode(Array(line.utf8)) else { return nil }
        return a.id
    }

    @Test("acking a backlog to a server that only answers pings: the box pings and the link stays up (issue 13: 64 acks, 0 pings, closed at 2x)")
    func backlogToPingOnlyServer() {
        let t = WelcomedLink(config: { linkConfig(port: $0, heartbeat: 0.3) })
        #expect(t.events.connects == 1)
        var n = 0
        let seen = Self.serve(t.raw, seconds: 2.0, answer: true) {
            n += 1
            t.link.send(.spoken("B-\(n)"))
        }
        let closed = seen.closed, pings = seen.pings, acks = Set(seen.acks).count
        #expect(!closed)
        #expect(t.events.disconnects.isEmpty, "\(t.logs.lines.suffix(3))")
        #expect(pings >= 3, "pinged \(pings) times in 2 s with heartbeat 0.3 s")
        #expect(acks >= n - 2, "\(acks) acks of \(n)")
    }

    @Test("a server flooding orders that never answers pings is alive: it is heard from")
    func floodNoPongs() {
        let t = WelcomedLink(config: { linkConfig(port: $0, heartbeat: 0.3) })
        var n = 0
        let seen = Self.serve(t.raw, seconds: 1.5, answer: false) {
            n += 1
            t.raw.write(#"{"type":"order","id":"F-\#(n)","kind":"new_customer","number":1}"# + "\n")
        }
        let closed = seen.closed, orders = t.events.orders.count
        #expect(!closed)
        #expect(t.events.disconnects.isEmpty)
        #expect(orders >= n - 2, "\(orders) orders of \(n)")
    }

    @Test("slowloris: a server trickling bytes slower than whole lines can come is declared dead at 2x heartbeat")
    func slowloris() {
        let t = WelcomedLink(config: { linkConfig(port: $0, heartbeat: 0.3) })
        let trickle = Array(Self.pong.utf8)
        let t0 = Monotonic.now()
        var i = 0
        var closedAt: Double?
        while Monotonic.now() - t0 < 3 {
            t.raw.write([trickle[i % trickle.count]])
            i += 1
            if t.raw.closedByPeer(timeout: 0.1) { closedAt = Monotonic.now() - t0; break }
        }
        #expect(closedAt != nil, "a byte every 0.1 s kept the link up for 3 s")
        if let at = closedAt { #expect(at >= 0.5 && at < 1.5, "closed after \(at) s") }
        #expect(eventually { t.events.disconnects.first?.hasPrefix("no data from server for") == true }, "\(t.events.disconnects)")
    }

    @Test("acks leave the outbox only when the pong of a later ping arrives")
    func ackConfirmedByPong() {
        let t = WelcomedLink(config: { linkConfig(port: $0, heartbeat: 5) })
        for i in 1...3 { t.link.send(.spoken("C-\(i)")) }
        // However the link batched them, a ping follows the acks; nobody answers it yet.
        var acks: [String] = []
        var pings = 0
        while acks.count < 3, let l = t.raw.readLine(timeout: 2) {
            if l == Self.ping { pings += 1 } else if let id = Self.ackID(l) { acks.append(id) }
        }
        if pings == 0, t.raw.readLine(timeout: 2) == Self.ping { pings = 1 }
        #expect(acks == ["C-1", "C-2", "C-3"])
        #expect(pings >= 1)
        usleep(200_000)
        #expect(t.link.pendingAcks == 3, "written is not delivered")
        for _ in 0..<pings { t.raw.write(Self.pong) }
        let more = Self.serve(t.raw, seconds: 0.5, answer: true).pings
        #expect(eventually(2) { t.link.pendingAcks == 0 }, "pings answered: \(pings) + \(more)")
    }

    @Test("acks written to a connection that dies before the pong are not written again; the one the server redelivers is answered")
    func unconfirmedAcksNotResent() {
        let t = WelcomedLink(config: { linkConfig(port: $0, heartbeat: 5) })
        t.link.send(.spoken("R-1"))
        t.link.send(Ack(id: "R-2", status: .expired))
        var first: [String] = []
        while first.count < 2, let l = t.raw.readLine(timeout: 2) { if let id = Self.ackID(l) { first.append(id) } }
        #expect(first == ["R-1", "R-2"])
        #expect(t.raw.accept(), "the server closed without answering: the box reconnects")
        #expect(t.raw.readLine()?.hasPrefix(#"{"type":"hello""#) == true)
        t.raw.write("{\"type\":\"welcome\"}\n" + #"{"type":"order","id":"R-2","kind":"new_customer","number":2}"# + "\n")
        var acks: [String] = []
        while let l = t.raw.readLine(timeout: 1) {
            if let id = Self.ackID(l) { acks.append(id) }
            if l == Self.ping { t.raw.write(Self.pong) }
        }
        #expect(acks == ["R-2"], "R-1 not resent (not redelivered: the server has it), R-2 answered once")
        #expect(eventually(2) { t.link.pendingAcks == 0 })
    }

    @Test("a server that reads nothing: the send buffer fills, the link thread never blocks, no ack is lost")
    func serverReadsNothing() {
        let raw = RawServer()
        defer { raw.close() }
        var small: Int32 = 4096
        setsockopt(raw.listenFD, SOL_SOCKET, SO_RCVBUF, &small, socklen_t(MemoryLayout<Int32>.size))
        let (log, logs) = makeLog()
        let events = EventSink()
        var options = fastOptions()
        options.maxOutput = 64 << 10
        let link = OrderLink(config: linkConfig(port: raw.port, heartbeat: 0.5), deviceID: "d", log: log, options: options, onEvent: events.add)
        link.start()
        defer { link.stop() }
        #expect(raw.accept())
        #expect(raw.readLine()?.hasPrefix(#"{"type":"hello""#) == true)
        raw.write("{\"type\":\"welcome\"}\n")
        #expect(eventually { events.connects == 1 })
        let filler = String(repeating: "x", count: 400)
        let ids = (1...2000).map { "N-\($0)" }
        // Outcomes (a rejection is not kept once written: the server's next delivery is answered).
        for id in ids { link.send(Ack(id: id, status: .expired, message: filler)) }
        // Not reading: the link thread keeps going round its loop (no blocking write) and the
        // connection is given up (buffer over maxOutput, or nothing heard for 2x heartbeat).
        #expect(eventually(3) { events.disconnects.count == 1 }, "\(logs.lines.suffix(3))")
        #expect(Monotonic.now() - link.lastProgress < 1)
        // The next connection reads everything and, like any server that got no ack, redelivers
        // every order: every one is answered once. The acks that never left the box's own
        // buffer go out after the welcome; those lost in the dead socket answer the redelivery.
        #expect(raw.accept())
        #expect(raw.readLine()?.hasPrefix(#"{"type":"hello""#) == true)
        var redelivery = "{\"type\":\"welcome\"}\n"
        for id in ids { redelivery += #"{"type":"order","id":""# + id + #"","kind":"new_customer","number":1}"# + "\n" }
        raw.write(redelivery)
        var got: [String: Int] = [:]
        let end = Monotonic.now() + 10
        while got.count < ids.count, Monotonic.now() < end, let l = raw.readLine(timeout: 2) {
            if let id = Self.ackID(l) { got[id, default: 0] += 1 }
        }
        while let l = raw.readLine(timeout: 0.3) { if let id = Self.ackID(l) { got[id, default: 0] += 1 } }
        let missing = Set(ids).subtracting(got.keys).count
        #expect(missing == 0, "\(missing) acks of \(ids.count) missing")
        #expect(got.values.allSatisfy { $0 == 1 }, "answered twice: \(got.filter { $0.value > 1 }.keys.sorted().prefix(5))")
        let t0 = Monotonic.now()
        link.stop()
        #expect(Monotonic.now() - t0 < 1)
    }
}

@Suite("The reference server's heartbeat", .serialized)
struct OrderServerLivenessTests {
    @Test("order-sim flooding a device that only answers pings pings it and keeps it (it used to ping only when it sent nothing)")
    func serverPingsWhileFlooding() throws {
        var c = simConfig()
        c.randomOrders = true
        c.rate = 40
        c.heartbeat = 0.3
        c.silenceTimeout = 0.9
        let lines = Lines()
        let server = OrderServer(config: c, output: lines.add)
        let port = try server.start()
        defer { server.stop() }
        let client = RawClient(port: port)
        defer { client.close() }
        client.write(#"{"type":"hello","protocol":1,"device":"slow"}"# + "\n")
        var pings = 0
        var orders = 0
        let end = Monotonic.now() + 2.5
        while Monotonic.now() < end {
            guard let l = client.readLine(timeout: 0.2) else { continue }
            if l == #"{"type":"ping"}"# {
                pings += 1
                client.write("{\"type\":\"pong\"}\n")
            } else if l.hasPrefix(#"{"type":"order""#) {
                orders += 1
            }
        }
        #expect(!lines.has("device disconnected"), "\(lines.all.filter { $0.hasPrefix("device") })")
        #expect(pings >= 3, "server pinged \(pings) times")
        #expect(orders >= 50)
    }
}
