import CrierCore
import Glibc
import Synchronization
import Testing
@testable import CrierLink
@testable import CrierSim

private let key: [UInt8] = Array(0..<32)

/// The order as the server would send it, signed with `k` at `ts`.
private func signedLine(_ o: Order, ts: Int64, key k: [UInt8] = key) -> String {
    let obj = OrderSigning.sign(ProtocolCodec.object(.order(o)), ts: ts, key: k, mac: Crypto.hmacSHA256)
    return String(decoding: JSON.write(.object(obj)), as: UTF8.self) + "\n"
}

/// A started link to the order server on `port`, as device "box" with the test key.
private func keyedLink(port: Int) -> (OrderLink, EventSink, MemoryLogSink) {
    let (log, logs) = makeLog()
    let events = EventSink()
    let link = OrderLink(config: keyedConfig(port: port), deviceID: "box", log: log, options: fastOptions(), onEvent: events.add)
    link.start()
    return (link, events, logs)
}

private func keyedConfig(port: Int) -> LinkConfig {
    var c = linkConfig(port: port)
    c.key = key
    return c
}

@Suite("HMAC-SHA256 from libcrypto")
struct HMACTests {
    @Test("RFC 4231 test case 2 and the worked examples of docs/protocol.md")
    func vectors() {
        #expect(Hex.encode(Crypto.hmacSHA256(Array("Jefe".utf8), Array("what do ya want for nothing?".utf8)))
            == "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843")
        // The same values were computed independently with Python's json + hmac (docs/protocol.md).
        let ex1 = Array(#"{"type":"order","id":"A-1042","kind":"new_customer","number":42,"ts":1764489242}"#.utf8)
        #expect(Hex.encode(Crypto.hmacSHA256(key, ex1)) == "d86d5712f9909b620bb05133d14195abe66e6d2013e795e829b7b9f58f400dee")
        guard case .success(.object(let o)) = JSON.parse(Array(#"{"type":"order","id":"A-1044","kind":"text","text":"请到前台取餐\n\"VIP\"\u0001","priority":5,"ts":1764489300,"lang":"zh"}"#.utf8)) else {
            Issue.record("example 2 does not parse")
            return
        }
        let c2 = OrderSigning.canonical(o)
        #expect(Hex.encode(c2) == "7b2274797065223a226f72646572222c226964223a22412d31303434222c226b696e64223a2274657874222c2274657874223a22e8afb7e588b0e5898de58fb0e58f96e9a4905c6e5c225649505c225c7530303031222c226c616e67223a227a68222c227072696f72697479223a352c227473223a313736343438393330307d")
        #expect(Hex.encode(Crypto.hmacSHA256(key, c2)) == "faf554b2ef962b23961c1fb4902dc65af33b22338324e4f37a290acb408fdc3d")
        let ex3 = Array(#"{"type":"cancel","id":"A-1044","ts":1764489310}"#.utf8)
        #expect(Hex.encode(Crypto.hmacSHA256(key, ex3)) == "e682bcf46c360600dd41d221e8bbe13a55548b156e4ee5bbd79d804f69ceb260")
        #expect(Hex.encode(Crypto.sha256(Array("abc".utf8))) == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
    }
}

@Suite("Signed orders over a real socket", .serialized)
struct SignedOrderLinkTests {
    @Test("correct → delivered; forged, unsigned, stale, replayed → acked rejected with the reason, logged, never delivered")
    func rejections() {
        let t = WelcomedLink(config: { keyedConfig(port: $0) })
        #expect(t.hello != nil)
        #expect(t.events.connects == 1)
        let now = Crypto.unixNow()

        let good = signedLine(Order(id: "S-1", kind: .newCustomer(number: 42)), ts: now)
        t.raw.write(good)
        #expect(eventually { t.events.orders.map(\.id) == ["S-1"] })

        t.raw.write(signedLine(Order(id: "S-2", kind: .newCustomer(number: 1)), ts: now, key: Array(repeating: 1, count: 32)))
        let forged = t.raw.readLine() ?? ""
        #expect(forged.hasPrefix(#"{"type":"ack","id":"S-2","status":"rejected","reason":"bad_signature","message":"signature does not match"#), "\(forged)")

        // Signed, then altered on the way: the number changed.
        t.raw.write(signedLine(Order(id: "S-3", kind: .newCustomer(number: 5)), ts: now).replacing("\"number\":5", with: "\"number\":6"))
        #expect((t.raw.readLine() ?? "").contains(#""id":"S-3","status":"rejected","reason":"bad_signature""#))

        t.raw.write(#"{"type":"order","id":"S-4","kind":"text","text":"free coffee for everyone"}"# + "\n")
        let unsigned = t.raw.readLine() ?? ""
        #expect(unsigned.hasPrefix(#"{"type":"ack","id":"S-4","status":"rejected","reason":"unsigned","message":"order has no sig and ts"#), "\(unsigned)")

        t.raw.write(signedLine(Order(id: "S-5", kind: .newCustomer(number: 5)), ts: now - 301))
        let stale = t.raw.readLine() ?? ""
        #expect(stale.contains(#""id":"S-5","status":"rejected","reason":"stale","message":"ts \#(now - 301) is 30"#), "\(stale)")
        t.raw.write(signedLine(Order(id: "S-6", kind: .newCustomer(number: 5)), ts: now + 900))
        #expect((t.raw.readLine() ?? "").contains(#""reason":"stale","message":"ts \#(now + 900) is 900 s ahead of this device's clock"#))

        t.raw.write(good)
        let replay = t.raw.readLine() ?? ""
        #expect(replay.hasPrefix(#"{"type":"ack","id":"S-1","status":"rejected","reason":"replayed""#), "\(replay)")

        // A cancel must be signed too.
        t.raw.write(#"{"type":"cancel","id":"S-1"}"# + "\n")
        #expect((t.raw.readLine() ?? "").hasPrefix(#"{"type":"error","code":"unsigned","message":"cancel S-1 ignored"#))

        // Still connected; only the good order got through.
        t.raw.write("{\"type\":\"ping\"}\n")
        #expect(t.raw.readLine() == #"{"type":"pong"}"#)
        #expect(t.events.orders.map(\.id) == ["S-1"])
        #expect(!t.events.all.contains(.cancel(id: "S-1")))
        let warnings = t.logs.lines.filter { $0.contains("WARN link: order rejected") }
        #expect(warnings.count == 6, "\(t.logs.lines)")
        #expect(t.logs.lines.contains { $0.contains("WARN link: order rejected: replayed") && $0.contains("id=S-1") && $0.contains("reason=replayed") })
        #expect(!t.logs.lines.joined().contains(Hex.encode(key)))
    }

    @Test("order-sim --key end to end: signed orders are delivered, and a quick redelivery after a reconnect is not a replay")
    func endToEnd() throws {
        let lines = Lines()
        let sc = simConfig(key: key, idPrefix: "K-")
        let server = OrderServer(config: sc, output: lines.add)
        let port = try server.start()
        defer { server.stop() }
        #expect(lines.all.first?.hasSuffix("signed=yes") == true)
        let (link, events, logs) = keyedLink(port: port)
        defer { link.stop() }
        #expect(eventually { events.connects == 1 })
        server.submit("42")
        #expect(eventually { events.orders.map(\.id) == ["K-1"] })
        // Someone else says hello as "box": the server drops the link, which reconnects at once
        // and gets K-1 again (unacked), signed again with a later ts.
        let intruder = RawClient(port: port)
        intruder.write(#"{"type":"hello","protocol":1,"device":"box"}"# + "\n")
        #expect(intruder.readLine() == #"{"type":"welcome"}"#)
        #expect(eventually { events.connects == 2 })
        intruder.close()
        #expect(eventually { events.orders.map(\.id) == ["K-1", "K-1"] })
        #expect(lines.has("redeliver id=K-1"))
        link.send(.spoken("K-1"))
        #expect(eventually { lines.has("ack id=K-1 status=spoken device=box") })
        #expect(!lines.has("ack id=K-1 status=rejected"))
        #expect(!logs.lines.contains { $0.contains("order rejected") })
    }

    @Test("a device with a different key: orders rejected as bad_signature, and the server keeps them for redelivery")
    func wrongKey() throws {
        let lines = Lines()
        let sc = simConfig(key: Array(repeating: 0x55, count: 32), idPrefix: "W-")
        let server = OrderServer(config: sc, output: lines.add)
        let port = try server.start()
        defer { server.stop() }
        let (link, events, logs) = keyedLink(port: port)
        defer { link.stop() }
        #expect(eventually { events.connects == 1 })
        server.submit("7")
        #expect(eventually { lines.has("ack id=W-1 status=rejected device=box reason=bad_signature") })
        #expect(events.orders.isEmpty)
        #expect(logs.lines.contains { $0.contains("WARN link: order rejected: bad signature") && $0.contains("check server.key on both ends") })
    }
}

/// A wall clock for the link that the test steps (issue 35: a Pi's clock steps when NTP syncs).
private final class SteppedClock: Sendable {
    let offset = Mutex<Int64>(0)
    func now() -> Int64 { Crypto.unixNow() + offset.withLock { $0 } }
}

@Suite("Signed orders through clock steps over a real socket (issue 35)", .serialized)
struct SignedOrderClockStepTests {
    @Test("clock not synchronized, the box's wall clock 90 days behind, then +1 year, then 3 hours behind: every order delivered once, every replay refused")
    func stepsWhileOrdersFlow() {
        let clock = SteppedClock()
        clock.offset.withLock { $0 = -90 * 86400 }  // fake-hwclock's last save
        var options = fastOptions()
        options.unixNow = { clock.now() }
        options.clockSynchronized = { false }
        let t = WelcomedLink(config: { keyedConfig(port: $0) }, options: options)
        #expect(t.hello != nil)
        var lines: [String] = []
        for i in 0..<30 {
            if i == 10 { clock.offset.withLock { $0 = 365 * 86400 } }
            if i == 20 { clock.offset.withLock { $0 = -3 * 3600 } }
            let line = signedLine(Order(id: "C-\(i)", kind: .newCustomer(number: i + 1)), ts: Crypto.unixNow())
            lines.append(line)
            t.raw.write(line)
            #expect(eventually { t.events.orders.count == i + 1 }, "order \(i) not delivered")
            // The previous order again: refused, never delivered twice.
            if i > 0 {
                t.raw.write(lines[i - 1])
                let r = t.raw.readLine() ?? ""
                #expect(r.contains(#""id":"C-\#(i - 1)","status":"rejected","reason":"replayed""#), "\(r)")
            }
        }
        #expect(t.events.orders.map(\.id) == (0..<30).map { "C-\($0)" })
        #expect(!t.logs.lines.contains { $0.contains("reason=stale") })
    }
}
