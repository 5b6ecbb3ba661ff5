import CrierCore
import CrierPosix
import Glibc
import Synchronization
import Testing
@testable import CrierLink
@testable import CrierSim

@Suite("OrderLink against OrderServer", .serialized)
struct OrderServerTests {
    @Test("happy path: order out, ack back, printed greppably")
    func happy() throws {
        let lines = Lines()
        let server = OrderServer(config: simConfig(token: "tok"), output: lines.add)
        let port = try server.start()
        defer { server.stop() }
        let (log, _) = makeLog()
        let events = EventSink()
        let link = OrderLink(config: linkConfig(port: port, token: "tok"), deviceID: "kiosk-1", log: log,
                             options: fastOptions(), onEvent: events.add)
        link.start()
        defer { link.stop() }
        #expect(eventually { lines.has("device connected device=kiosk-1 addr=127.0.0.1:") })
        let o = try #require(server.submit("42"))
        #expect(o == Order(id: "T-1", kind: .newCustomer(number: 42)))
        server.submit("请到前台取餐")
        #expect(eventually { events.orders.count == 2 })
        #expect(events.orders[1].kind == .text("请到前台取餐"))
        link.send(.spoken("T-1"))
        link.send(Ack(id: "T-2", status: .expired))
        #expect(eventually { lines.has("ack id=T-2") })
        #expect(lines.all.contains("order id=T-1 kind=new_customer number=42"))
        #expect(lines.all.contains("order id=T-2 kind=text text=请到前台取餐"))
        #expect(lines.all.contains("ack id=T-1 status=spoken device=kiosk-1"))
        #expect(lines.all.contains("ack id=T-2 status=expired device=kiosk-1"))
    }

    @Test("a wrong or missing token is refused and the device is never connected")
    func wrongToken() throws {
        let lines = Lines()
        let server = OrderServer(config: simConfig(token: "right"), output: lines.add)
        let port = try server.start()
        defer { server.stop() }
        let (log, logs) = makeLog()
        let events = EventSink()
        let link = OrderLink(config: linkConfig(port: port, token: "bad-TOKEN-9"), deviceID: "d", log: log,
                             options: fastOptions(), onEvent: events.add)
        link.start()
        #expect(eventually { lines.count("device rejected") >= 2 })
        link.stop()
        #expect(events.connects == 0)
        #expect(lines.all.contains { $0.hasPrefix("device rejected device=d addr=127.0.0.1:") && $0.hasSuffix("reason=unauthorized") })
        #expect(logs.lines.filter { $0.contains("refused this box") }.count == 1)
        #expect(!logs.lines.joined().contains("bad-TOKEN-9"))
    }

    @Test("unacked orders are redelivered on reconnect; an acked one is not")
    func redelivery() throws {
        let lines = Lines()
        let server = OrderServer(config: simConfig(), output: lines.add)
        let port = try server.start()
        defer { server.stop() }
        let (log, _) = makeLog()
        let first = EventSink()
        let link1 = OrderLink(config: linkConfig(port: port), deviceID: "kiosk", log: log, options: fastOptions(), onEvent: first.add)
        link1.start()
        #expect(eventually { lines.has("device connected") })
        server.submit("1")
        server.submit("2")
        #expect(eventually { first.orders.count == 2 })
        link1.send(.spoken("T-1"))
        #expect(eventually { lines.has("ack id=T-1") })
        link1.stop()  // crash before acking T-2
        #expect(eventually { lines.has("device disconnected device=kiosk") })

        let second = EventSink()
        let link2 = OrderLink(config: linkConfig(port: port), deviceID: "kiosk", log: log, options: fastOptions(), onEvent: second.add)
        link2.start()
        defer { link2.stop() }
        #expect(eventually { second.orders.count == 1 })
        #expect(second.orders.first?.id == "T-2")
        #expect(lines.all.contains("redeliver id=T-2 device=kiosk"))
        #expect(!lines.all.contains("redeliver id=T-1 device=kiosk"))
    }

    @Test("protocol rule 2: the redeliveries come right after the welcome, before the pong of a ping sent with the hello")
    func redeliveryBeforePong() throws {
        let lines = Lines()
        let server = OrderServer(config: simConfig(), output: lines.add)
        let port = try server.start()
        defer { server.stop() }
        let c1 = RawClient(port: port)
        c1.write(#"{"type":"hello","protocol":1,"device":"k"}"# + "\n")
        #expect(c1.readLine() == #"{"type":"welcome"}"#)
        server.submit("1")
        server.submit("2")
        #expect(c1.readLine()?.contains(#""id":"T-1""#) == true)
        #expect(c1.readLine()?.contains(#""id":"T-2""#) == true)
        c1.write(#"{"type":"ack","id":"T-1","status":"spoken"}"# + "\n")
        #expect(eventually { lines.has("ack id=T-1") })
        c1.close()
        #expect(eventually { lines.has("device disconnected device=k") })
        // The worst case for the device's rule: the ping arrives in the same read as the hello.
        let c2 = RawClient(port: port)
        defer { c2.close() }
        c2.write(#"{"type":"hello","protocol":1,"device":"k"}"# + "\n" + #"{"type":"ping"}"# + "\n")
        #expect(c2.readLine() == #"{"type":"welcome"}"#)
        #expect(c2.readLine()?.contains(#""id":"T-2""#) == true, "redelivered before the pong")
        #expect(c2.readLine() == #"{"type":"pong"}"#)
    }

    @Test("several devices at once each get every order; orders made before any device wait for the first")
    func severalDevices() throws {
        let lines = Lines()
        let server = OrderServer(config: simConfig(), output: lines.add)
        let port = try server.start()
        defer { server.stop() }
        server.submit("7")
        let (log, _) = makeLog()
        let a = EventSink(), b = EventSink()
        let la = OrderLink(config: linkConfig(port: port), deviceID: "a", log: log, options: fastOptions(), onEvent: a.add)
        la.start()
        defer { la.stop() }
        #expect(eventually { a.orders.count == 1 })
        let lb = OrderLink(config: linkConfig(port: port), deviceID: "b", log: log, options: fastOptions(), onEvent: b.add)
        lb.start()
        defer { lb.stop() }
        #expect(eventually { lines.count("device connected") == 2 })
        server.submit("8")
        #expect(eventually { a.orders.count == 2 && b.orders.count == 1 })
        #expect(b.orders.first?.kind == .newCustomer(number: 8))
    }

    @Test("--count with --rate: N orders, returns when all are acked")
    func countMode() throws {
        var cfg = simConfig()
        cfg.randomOrders = true
        cfg.rate = 1000
        cfg.count = 50
        cfg.seed = 42
        cfg.drainTimeout = 10
        let lines = Lines()
        let server = OrderServer(config: cfg, output: lines.add)
        let port = try server.start()
        let (log, _) = makeLog()
        let box = EventSink()
        let link = OrderLink(config: linkConfig(port: port), deviceID: "load", log: log, options: fastOptions(), onEvent: { e in
            box.add(e)
        })
        link.start()
        defer { link.stop() }
        #expect(eventually { box.orders.count == 50 })
        for o in box.orders { link.send(.spoken(o.id)) }
        let summary = server.wait()
        #expect(summary.orders == 50)
        #expect(summary.acks[.spoken] == 50)
        #expect(summary.unacked == 0)
        #expect(!summary.timedOut)
        #expect(lines.all.last == "done orders=50 spoken=50 expired=0 cancelled=0 rejected=0 unacked=0")
        #expect(box.orders.allSatisfy { if $0.kind.spec == .newCustomer, case .integer(let n) = $0.kind.value { (0...99).contains(n) } else { false } })
        #expect(Set(box.orders.map(\.id)).count == 50)
    }

    @Test("--count gives up after the drain timeout and says how many are unacked")
    func drainTimeout() throws {
        var cfg = simConfig()
        cfg.randomOrders = true
        cfg.rate = 1000
        cfg.count = 3
        cfg.drainTimeout = 0.3
        let lines = Lines()
        let server = OrderServer(config: cfg, output: lines.add)
        let port = try server.start()
        let (log, _) = makeLog()
        let link = OrderLink(config: linkConfig(port: port), deviceID: "mute", log: log, options: fastOptions(), onEvent: { _ in })
        link.start()
        defer { link.stop() }
        let summary = server.wait()
        #expect(summary.timedOut)
        #expect(summary.unacked == 3)
        #expect(lines.all.last?.hasSuffix("unacked=3 timed_out=yes") == true)
    }

    @Test("ids differ across server restarts")
    func uniqueIDs() {
        var cfg = OrderServerConfig()
        cfg.port = 0
        let a = OrderServer(config: cfg, output: { _ in })
        #expect(a.nextID().hasPrefix("O"))
        #expect(a.nextID().hasSuffix("-2"))
        #expect(OrderServer.quote("a b") == "\"a b\"")
        #expect(OrderServer.quote("a\nb") == "\"a b\"")
        #expect(OrderServer.quote("x") == "x")
    }

    @Test("the server answers pings and rejects a line before hello")
    func serverProtocol() throws {
        let lines = Lines()
        let server = OrderServer(config: simConfig(), output: lines.add)
        let port = try server.start()
        defer { server.stop() }
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var a = sockaddr_in()
        a.sin_family = sa_family_t(AF_INET)
        a.sin_addr.s_addr = inet_addr("127.0.0.1")
        a.sin_port = UInt16(port).bigEndian
        let rc = withUnsafePointer(to: &a) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
        #expect(rc == 0)
        let msg = Array("{\"type\":\"ping\"}\n".utf8)
        _ = send(fd, msg, msg.count, 0)
        var buf = [UInt8](repeating: 0, count: 4096)
        var got: [UInt8] = []
        while true {
            let n = recv(fd, &buf, buf.count, 0)
            if n <= 0 { break }
            got += buf[0..<n]
        }
        #expect(String(decoding: got, as: UTF8.self) == #"{"type":"error","code":"bad_message","message":"expected hello first, got ping"}"# + "\n")
        #expect(eventually { lines.has("device rejected") })
    }
}

/// Lets the link's event handler reach the link it belongs to.
private final class LinkSlot: Sendable {
    let link = Mutex<OrderLink?>(nil)
    func send(_ a: Ack) { link.withLock { $0 }?.send(a) }
}

@Suite("Burst through link and queue", .serialized)
struct OrderBurstTests {
    @Test("10 000 orders at once: every id acked exactly once (spoken, coalesced or rejected with a reason)")
    func burst() throws {
        var cfg = simConfig()
        cfg.randomOrders = true
        cfg.rate = 1_000_000
        cfg.count = 10_000
        cfg.drainTimeout = 30
        let lines = Lines()
        let server = OrderServer(config: cfg, output: lines.add)
        let port = try server.start()
        let queue = Mutex(AlertQueue())
        let slot = LinkSlot()
        let (log, _) = makeLog()
        let link = OrderLink(config: linkConfig(port: port), deviceID: "burst", log: log, options: fastOptions()) { e in
            guard case .order(let o) = e else { return }
            if let ack = queue.withLock({ $0.add(o, now: Monotonic.now()) }).ack { slot.send(ack) }
        }
        slot.link.withLock { $0 = link }
        let done = Atomic<Bool>(false)
        // The "speaker": says whatever is next at once and acks it.
        let speaker = try PosixThread(name: "speaker") {
            while !done.load(ordering: .relaxed) {
                let acks = queue.withLock { q -> [Ack] in
                    guard let a = q.next(now: Monotonic.now()).alert else { return [] }
                    return q.finished(a, now: Monotonic.now())
                }
                if acks.isEmpty { usleep(500) }
                for a in acks { slot.send(a) }
            }
        }
        link.start()
        let summary = server.wait()
        done.store(true, ordering: .relaxed)
        speaker.join()
        link.stop()
        #expect(summary.orders == 10_000)
        #expect(summary.unacked == 0)
        let spoken = summary.acks[.spoken] ?? 0, rejected = summary.acks[.rejected] ?? 0
        #expect(spoken + rejected == 10_000)
        #expect(spoken >= 256)
        #expect(lines.count("ack ") == 10_000, "no id acked twice")
        #expect(lines.all.filter { $0.hasPrefix("ack ") && $0.contains("status=rejected") }.allSatisfy { $0.contains("reason=queue_full") })
    }

    @Test("--every parsing")
    func parseRange() {
        #expect(OrderServerConfig.parseRange("60-240") == 60...240)
        #expect(OrderServerConfig.parseRange("2.5") == 2.5...2.5)
        #expect(OrderServerConfig.parseRange("5-1") == nil)
        #expect(OrderServerConfig.parseRange("x") == nil)
        #expect(OrderServerConfig.parseRange("0-3") == nil)
    }
}

@Suite("OrderServer heartbeat", .serialized)
struct OrderServerHeartbeatTests {
    @Test("the server pings an idle device and drops a silent one")
    func serverPings() throws {
        var cfg = simConfig()
        cfg.heartbeat = 0.2
        cfg.silenceTimeout = 0.6
        let lines = Lines()
        let server = OrderServer(config: cfg, output: lines.add)
        let port = try server.start()
        defer { server.stop() }
        let raw = RawClient(port: port)
        defer { raw.close() }
        raw.write(#"{"type":"hello","protocol":1,"device":"quiet"}"# + "\n")
        #expect(raw.readLine() == #"{"type":"welcome"}"#)
        #expect(raw.readLine(timeout: 2) == #"{"type":"ping"}"#)
        #expect(eventually(3) { lines.has("device disconnected device=quiet reason=\"no data for") })
    }
}

@Suite("Server restart with a state file", .serialized)
struct OrderServerRestartTests {
    @Test("kill the server between speaking and acking, restart it: redelivered, spoken once, acked")
    func restart() throws {
        let path = "/tmp/crier-ordersim-test-\(getpid()).state"
        unlink(path)
        defer { unlink(path) }
        var cfg = simConfig()
        cfg.stateFile = path
        let lines1 = Lines()
        let server1 = OrderServer(config: cfg, output: lines1.add)
        let port = try server1.start()

        let queue = Mutex(AlertQueue())
        let slot = LinkSlot()
        let (log, _) = makeLog()
        let link = OrderLink(config: linkConfig(port: port), deviceID: "shop", log: log, options: fastOptions()) { e in
            guard case .order(let o) = e else { return }
            if let ack = queue.withLock({ $0.add(o, now: Monotonic.now()) }).ack { slot.send(ack) }
        }
        slot.link.withLock { $0 = link }
        link.start()
        defer { link.stop() }
        #expect(eventually { lines1.has("device connected device=shop") })
        server1.submit("42")
        server1.submit("43")
        #expect(eventually { queue.withLock { $0.waitingCount } == 2 })

        // Both are said; the server dies before it hears the acks.
        server1.stop()
        let acks = queue.withLock { q -> [Ack] in
            let a = q.next(now: Monotonic.now()).alert!
            return q.finished(a, now: Monotonic.now())
        }
        #expect(acks.map(\.id) == ["T-1", "T-2"])
        link.send(acks[0])  // one ack was produced while the link was down, the other got lost entirely

        cfg.port = port
        let lines2 = Lines()
        let server2 = OrderServer(config: cfg, output: lines2.add)
        try server2.start()
        defer { server2.stop() }
        #expect(lines2.all.contains { $0.hasPrefix("state loaded") && $0.hasSuffix("devices=1 unacked=2") })
        #expect(eventually { lines2.has("ack id=T-1 status=spoken") && lines2.has("ack id=T-2 status=spoken") })
        #expect(lines2.all.contains("redeliver id=T-1 device=shop"))
        #expect(lines2.all.contains("redeliver id=T-2 device=shop"))
        #expect(queue.withLock { $0.history.count } == 1, "said once")
        #expect(queue.withLock { $0.next(now: Monotonic.now()).alert } == nil)
        server2.stop()

        // A third start finds nothing left to redeliver.
        let lines3 = Lines()
        let server3 = OrderServer(config: cfg, output: lines3.add)
        try server3.start()
        server3.stop()
        #expect(lines3.all.contains { $0.hasPrefix("state loaded") && $0.hasSuffix("unacked=0") })
    }
}
