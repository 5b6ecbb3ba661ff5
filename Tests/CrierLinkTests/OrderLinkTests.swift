import CrierCore
import CrierPosix
import Glibc
import Testing
@testable import CrierLink
@testable import CrierSim

@Suite("OrderLink against a raw socket server", .serialized)
struct OrderLinkRawTests {
    @Test("hello is exact; the token is sent but never logged; acks queued while down follow the welcome")
    func hello() throws {
        let raw = RawServer()
        defer { raw.close() }
        let (log, logs) = makeLog()
        let events = EventSink()
        let link = OrderLink(config: linkConfig(port: raw.port, token: "s3cret-TOKEN"), deviceID: "box-1", log: log,
                             options: fastOptions(), onEvent: events.add)
        link.send(.spoken("early-1"))
        link.start()
        defer { link.stop() }
        #expect(raw.accept())
        #expect(raw.readLine() == #"{"type":"hello","protocol":1,"device":"box-1","token":"s3cret-TOKEN"}"#)
        // Nothing but the hello before the welcome.
        #expect(raw.readLine(timeout: 0.2) == nil)
        raw.write("{\"type\":\"welcome\"}\n")
        #expect(raw.readLine() == #"{"type":"ack","id":"early-1","status":"spoken"}"#)
        #expect(eventually { events.connects == 1 })
        #expect(link.isConnected)
        // A ping follows the acks: its pong tells the box they were read.
        #expect(raw.readLine() == #"{"type":"ping"}"#)
        link.send(Ack(id: "B", status: .rejected, reason: "queue_full"))
        #expect(raw.readLine() == #"{"type":"ack","id":"B","status":"rejected","reason":"queue_full"}"#)
        link.stop()
        #expect(events.disconnects == ["stopped"])
        #expect(!logs.lines.joined().contains("s3cret"))
        #expect(logs.lines.contains { $0.contains("INFO link: connected server=tcp://127.0.0.1:\(raw.port) after=") })
    }

    @Test("an ack sent right before stop() still reaches the server (the alert that finished during shutdown)")
    func ackBeforeStopIsFlushed() {
        let t = WelcomedLink()
        #expect(t.events.connects == 1)
        // The link thread is asleep in poll(): both wake it, and it sees "stopping" first.
        t.link.send(.spoken("last"))
        t.link.stop()
        #expect(t.raw.readLine(timeout: 2) == #"{"type":"ack","id":"last","status":"spoken"}"#)
    }

    @Test("no token configured: the field is left out")
    func noToken() {
        let raw = RawServer()
        defer { raw.close() }
        let (log, _) = makeLog()
        let link = OrderLink(config: linkConfig(port: raw.port), deviceID: "d", log: log, options: fastOptions(), onEvent: { _ in })
        link.start()
        defer { link.stop() }
        #expect(raw.accept())
        #expect(raw.readLine() == #"{"type":"hello","protocol":1,"device":"d"}"#)
    }

    @Test("garbage, bad orders, invalid UTF-8 and bytes one at a time: precise errors, link stays up")
    func garbage() {
        let t = WelcomedLink(welcome: "{\"type\":\"welcome\"}\r\n")
        #expect(t.hello != nil)
        #expect(t.events.connects == 1)

        t.raw.write("hello there\n")
        let e1 = t.raw.readLine() ?? ""
        #expect(e1.hasPrefix(#"{"type":"error","code":"bad_message","message":"invalid JSON: unexpected 'h', expected a value at byte 0"#), "\(e1)")

        t.raw.write(#"{"type":"order","id":"X-1","kind":"new_customer","number":"42"}"# + "\n")
        #expect(t.raw.readLine() == #"{"type":"error","code":"bad_message","message":"order: field \"number\" must be an integer, got a string"}"#)
        // The rejection is the owner's to send (it may know the id already): reported, not acked here.
        #expect(eventually { t.events.all.contains(.rejected(Ack(id: "X-1", status: .rejected, reason: Ack.Reason.invalidOrder,
                                                                 message: "order: field \"number\" must be an integer, got a string"), answered: false)) })

        t.raw.write(Array(#"{"type":"order","id":"X-2","kind":"text","text":""#.utf8) + [0xFF, 0xFE] + Array("\"}\n".utf8))
        let e3 = t.raw.readLine() ?? ""
        #expect(e3.contains("invalid UTF-8 at byte"), "\(e3)")

        t.raw.write(#"{"type":"mystery","v":2}"# + "\n")
        for b in Array((#"{"type":"order","id":"ok-1","kind":"new_customer","number":42}"# + "\r\n").utf8) {
            t.raw.write([b])
        }
        #expect(eventually { t.events.orders == [Order(id: "ok-1", kind: .newCustomer(number: 42))] })
        t.raw.write("{\"type\":\"cancel\",\"id\":\"ok-1\"}\n{\"type\":\"ping\"}\n")
        #expect(t.raw.readLine() == #"{"type":"pong"}"#)
        #expect(eventually { t.events.all.last == .cancel(id: "ok-1") })
        #expect(t.events.connects == 1, "the connection stayed up")
        #expect(t.events.disconnects.isEmpty)
        let warnings = t.logs.lines.filter { $0.contains("WARN link: bad message from server") }
        #expect(warnings.count == 3)
        #expect(warnings.contains { $0.contains("id=X-1") && $0.contains("must be an integer, got a string") })
        #expect(t.logs.lines.contains { $0.contains("unknown type") && $0.contains("type=mystery") })
    }

    @Test("an over-long line: error, close, reconnect")
    func overLong() {
        let t = WelcomedLink()
        #expect(t.hello != nil)
        #expect(t.events.connects == 1)
        t.raw.write(#"{"type":"text","pad":""# + String(repeating: "x", count: 20000))
        let err = t.raw.readLine() ?? ""
        #expect(err.hasPrefix(#"{"type":"error","code":"line_too_long","message":"line longer than 16384 bytes"#), "\(err)")
        #expect(t.raw.closedByPeer(timeout: 2))
        #expect(eventually { t.events.disconnects.count == 1 })
        #expect(t.events.disconnects.first?.contains("line longer than 16384 bytes") == true)
        #expect(t.raw.accept(), "it reconnects")
        #expect(t.raw.readLine()?.hasPrefix(#"{"type":"hello""#) == true)
        #expect(t.logs.lines.contains { $0.contains("ERROR link: bad message from server; closing the connection") })
    }

    @Test("a line of exactly 16384 bytes is accepted")
    func maxLine() {
        let t = WelcomedLink()
        #expect(t.hello != nil)
        let head = #"{"type":"order","id":"big","kind":"text","text":""#
        let line = head + String(repeating: "a", count: 16384 - head.utf8.count - 2) + "\"}"
        #expect(line.utf8.count == 16384)
        t.raw.write(line + "\r\n")
        #expect(eventually { t.events.orders.count == 1 })
    }

    @Test("silence (half-open): pings after the heartbeat, declares the link dead after 2×, reconnects")
    func silence() {
        let t = WelcomedLink(config: { linkConfig(port: $0, heartbeat: 0.2) })
        #expect(t.hello != nil)
        let t0 = Monotonic.now()
        #expect(t.raw.readLine(timeout: 2) == #"{"type":"ping"}"#)
        let pingAfter = Monotonic.now() - t0
        #expect(pingAfter >= 0.15 && pingAfter < 1.0, "ping after ~heartbeat, was \(pingAfter)")
        #expect(t.raw.closedByPeer(timeout: 2))
        let deadAfter = Monotonic.now() - t0
        #expect(deadAfter >= 0.35 && deadAfter < 1.5, "dead after ~2×heartbeat, was \(deadAfter)")
        #expect(eventually { t.events.disconnects.count == 1 })
        #expect(t.events.disconnects.first?.hasPrefix("no data from server for 0.") == true, "\(t.events.disconnects)")
        // The link reports the event before it logs the line: wait for the line too.
        #expect(eventually { t.logs.lines.contains { $0.contains("WARN link: connection lost") && $0.contains("heartbeat 0.2 s") } })
        #expect(t.raw.accept(), "it reconnects")
        #expect(t.raw.readLine()?.hasPrefix(#"{"type":"hello""#) == true)
    }

    @Test("answering pings keeps a quiet link alive")
    func pongsKeepAlive() {
        let t = WelcomedLink(config: { linkConfig(port: $0, heartbeat: 0.5) })
        #expect(t.hello != nil)
        for _ in 0..<3 {
            #expect(t.raw.readLine(timeout: 1) == #"{"type":"ping"}"#)
            t.raw.write("{\"type\":\"pong\"}\n")
        }
        #expect(t.events.disconnects.isEmpty, "\(t.logs.lines)")
    }

    @Test("an error instead of welcome is logged as a refusal and retried")
    func refused() {
        let raw = RawServer()
        defer { raw.close() }
        let (log, logs) = makeLog()
        let events = EventSink()
        let link = OrderLink(config: linkConfig(port: raw.port, token: "wrong"), deviceID: "d", log: log,
                             options: fastOptions(), onEvent: events.add)
        link.start()
        defer { link.stop() }
        for _ in 0..<3 {
            #expect(raw.accept())
            _ = raw.readLine()
            raw.write("{\"type\":\"error\",\"code\":\"unauthorized\",\"message\":\"wrong token\"}\n")
        }
        #expect(raw.accept())
        #expect(events.connects == 0)
        let refusals = logs.lines.filter { $0.contains("ERROR link: order server refused this box") }
        #expect(refusals.count == 1, "logged once, not on every retry: \(logs.lines)")
        #expect(refusals.first?.contains(#"error="unauthorized: wrong token""#) == true)
        #expect(refusals.first?.contains("server.token") == true)
    }
}

@Suite("OrderLink lifecycle", .serialized)
struct OrderLinkLifecycleTests {
    @Test("nothing listening: one warning with the reason and the retry delay, then connected when the server appears")
    func refusedThenUp() throws {
        let port = freePort()
        let (log, logs) = makeLog()
        let events = EventSink()
        let link = OrderLink(config: linkConfig(port: port), deviceID: "d", log: log, options: fastOptions(), onEvent: events.add)
        link.start()
        defer { link.stop() }
        #expect(eventually { logs.lines.filter { $0.contains("still cannot reach") }.count >= 3 })
        let warns = logs.lines.filter { $0.contains("WARN link: cannot reach order server") }
        #expect(warns.count == 1)
        #expect(warns.first?.contains("server=tcp://127.0.0.1:\(port) error=\"connection refused\" retry_in=0.") == true, "\(warns)")

        var cfg = simConfig()
        cfg.port = port
        let lines = Lines()
        let server = OrderServer(config: cfg, output: lines.add)
        try server.start()
        defer { server.stop() }
        #expect(eventually { events.connects == 1 })
        #expect(logs.lines.contains { $0.contains("INFO link: connected server=tcp://127.0.0.1:\(port) after=") })
        #expect(logs.lines.filter { $0.contains("WARN") }.count == 1)
    }

    @Test("an unresolvable host is reported as such")
    func unresolvable() {
        let (log, logs) = makeLog()
        var cfg = CrierConfig().link
        cfg.server = ServerAddress(host: "no-such-host.invalid", port: 7700)
        let link = OrderLink(config: cfg, deviceID: "d", log: log, options: fastOptions(), onEvent: { _ in })
        link.start()
        defer { link.stop() }
        #expect(eventually { logs.lines.contains { $0.contains("cannot reach order server") } })
        #expect(logs.lines.contains { $0.contains("error=\"cannot resolve no-such-host.invalid:") })
    }

    @Test("stop is prompt even in a long backoff, and idempotent")
    func promptStop() {
        let (log, _) = makeLog()
        var o = OrderLink.Options()
        o.backoff = ReconnectBackoff(base: 30, cap: 30)
        let link = OrderLink(config: linkConfig(port: freePort()), deviceID: "d", log: log, options: o, onEvent: { _ in })
        link.start()
        usleep(100_000)
        let t0 = Monotonic.now()
        link.stop()
        #expect(Monotonic.now() - t0 < 0.5)
        link.stop()
    }

    @Test("no server configured: start does nothing and says so")
    func noServer() {
        let (log, logs) = makeLog()
        let link = OrderLink(config: CrierConfig().link, deviceID: "d", log: log, onEvent: { _ in })
        link.start()
        link.stop()
        #expect(logs.lines.contains { $0.contains("no order server configured") })
    }
}
