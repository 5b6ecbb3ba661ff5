import Testing
@testable import CrierCore

/// A stand-in MAC for the rules (CrierLinkTests check the real HMAC-SHA256 against the
/// documented worked examples). Not a MAC: just key-dependent and message-dependent.
let fakeMAC: MACFunction = { key, message in
    var h: [UInt8] = Array(repeating: 0, count: 32)
    for (i, b) in (key + [0xFF] + message).enumerated() { h[i % 32] = h[i % 32] &* 31 &+ b &+ UInt8(truncatingIfNeeded: i) }
    return h
}

private func object(_ line: String) -> JSONObject {
    guard case .success(.object(let o)) = JSON.parse(Array(line.utf8)) else { fatalError("bad test JSON \(line)") }
    return o
}

@Suite("Signed orders: canonical form and verification rules")
struct OrderSigningTests {
    let key: [UInt8] = Array(0..<32)

    @Test("canonical form: fixed field order, no sig, unknown fields left out, numbers as written")
    func canonical() {
        let o = object(#"{"sig":"x","ts":1764489242,"number":42,"extra":[1],"kind":"new_customer","id":"A-1042","type":"order","lang":null}"#)
        #expect(String(decoding: OrderSigning.canonical(o), as: UTF8.self)
            == #"{"type":"order","id":"A-1042","kind":"new_customer","number":42,"ts":1764489242}"#)
        let t = object(#"{"type":"order","id":"A-1044","kind":"text","text":"请到前台取餐\n\"VIP\"\u0001\u007f\/\b\f\t\r","priority":5,"ts":1764489300,"lang":"zh","ttl":60.0}"#)
        // JSON.stringify / json.dumps(ensure_ascii=False) escaping: short forms, \u00xx, / and DEL raw.
        #expect(String(decoding: OrderSigning.canonical(t), as: UTF8.self)
            == "{\"type\":\"order\",\"id\":\"A-1044\",\"kind\":\"text\",\"text\":\"请到前台取餐\\n\\\"VIP\\\"\\u0001\u{7F}/\\b\\f\\t\\r\",\"lang\":\"zh\",\"priority\":5,\"ttl\":60.0,\"ts\":1764489300}")
    }

    @Test("sign then check: accepted once; the same (id, ts) again is replayed; a new ts is fine")
    func roundTrip() {
        var v = SignatureVerifier(key: key, mac: fakeMAC)
        let base = object(#"{"type":"order","id":"A-1","kind":"new_customer","number":7}"#)
        let s1 = OrderSigning.sign(base, ts: 1000, key: key, mac: fakeMAC)
        #expect(v.check(s1, now: 1000) == nil)
        #expect(v.check(s1, now: 1001)?.reason == .replayed)
        let s2 = OrderSigning.sign(base, ts: 1002, key: key, mac: fakeMAC)
        #expect(v.check(s2, now: 1002) == nil)
        #expect(v.remembered == 2)
    }

    @Test("unsigned, malformed, forged, other key, altered field, stale both ways")
    func rejections() {
        var v = SignatureVerifier(key: key, mac: fakeMAC)
        let base = object(#"{"type":"order","id":"A-2","kind":"new_customer","number":7}"#)
        #expect(v.check(base, now: 1000)?.reason == .unsigned)
        #expect(v.check(base, now: 1000)?.message.contains("no sig and ts") == true)
        var noTS = OrderSigning.sign(base, ts: 1000, key: key, mac: fakeMAC)
        noTS["ts"] = nil
        #expect(v.check(noTS, now: 1000)?.reason == .unsigned)

        var bad = OrderSigning.sign(base, ts: 1000, key: key, mac: fakeMAC)
        bad["sig"] = .string("zz")
        #expect(v.check(bad, now: 1000)?.reason == .badSignature)
        bad = OrderSigning.sign(base, ts: 1000, key: key, mac: fakeMAC)
        bad["ts"] = .number(JSONNumber(literal: "1000.5"))
        #expect(v.check(bad, now: 1000)?.reason == .badSignature)

        let otherKey = OrderSigning.sign(base, ts: 1000, key: Array(repeating: 9, count: 32), mac: fakeMAC)
        #expect(v.check(otherKey, now: 1000)?.reason == .badSignature)
        var altered = OrderSigning.sign(base, ts: 1000, key: key, mac: fakeMAC)
        altered["number"] = .number(JSONNumber(8))
        #expect(v.check(altered, now: 1000)?.reason == .badSignature)
        var moved = OrderSigning.sign(base, ts: 1000, key: key, mac: fakeMAC)
        moved["ts"] = .number(JSONNumber(1001))  // a fresh ts without re-signing
        #expect(v.check(moved, now: 1000)?.reason == .badSignature)

        let old = OrderSigning.sign(base, ts: 1000, key: key, mac: fakeMAC)
        #expect(v.check(old, now: 1301)?.reason == .stale)
        #expect(v.check(old, now: 1301)?.message.contains("301 s behind") == true)
        #expect(v.check(old, now: 699)?.message.contains("301 s ahead of") == true)
        // The edges of the window are inside it.
        #expect(v.check(old, now: 1300) == nil)
        #expect(v.check(OrderSigning.sign(base, ts: 1400, key: key, mac: fakeMAC), now: 1100) == nil)
        // Nothing unauthenticated was remembered.
        #expect(v.remembered == 2)
        let huge = OrderSigning.sign(base, ts: Int64.min, key: key, mac: fakeMAC)
        #expect(v.check(huge, now: Int64.max)?.reason == .stale)
        // ts - now is exactly Int64.min: no overflow in the subtraction, and abs() of it traps.
        #expect(v.check(huge, now: 0)?.reason == .stale)
        #expect(v.check(OrderSigning.sign(base, ts: Int64.max, key: key, mac: fakeMAC), now: -1)?.reason == .stale)
    }

    @Test("cancels are covered the same way")
    func cancel() {
        var v = SignatureVerifier(key: key, mac: fakeMAC)
        let c = OrderSigning.sign(object(#"{"type":"cancel","id":"A-3"}"#), ts: 50, key: key, mac: fakeMAC)
        #expect(String(decoding: OrderSigning.canonical(c), as: UTF8.self).hasPrefix(#"{"type":"cancel","id":"A-3","ts":50}"#))
        #expect(v.check(c, now: 60) == nil)
        var asOrder = c
        asOrder["type"] = .string("order")
        #expect(v.check(asOrder, now: 60)?.reason == .badSignature)
    }

    @Test("replay memory is bounded and never lets a replay through")
    func boundedMemory() {
        var v = SignatureVerifier(key: key, mac: fakeMAC, capacity: 8)
        var signed: [JSONObject] = []
        for i in 0..<20 {
            let o = OrderSigning.sign(object(#"{"type":"order","id":"B-\#(i)","kind":"new_customer","number":1}"#), ts: 1000 + Int64(i), key: key, mac: fakeMAC)
            signed.append(o)
            #expect(v.check(o, now: 1000 + Int64(i)) == nil)
            #expect(v.remembered <= 8)
        }
        for o in signed { #expect(v.check(o, now: 1020)?.reason == .replayed) }
        // Entries older than the window are dropped first.
        let late = OrderSigning.sign(object(#"{"type":"order","id":"C","kind":"new_customer","number":1}"#), ts: 5000, key: key, mac: fakeMAC)
        #expect(v.check(late, now: 5000) == nil)
        #expect(v.remembered <= 8)
    }

    @Test("hex and base64 round trips and refusals")
    func encodings() {
        for n in 0..<40 {
            let b = (0..<n).map { UInt8(truncatingIfNeeded: $0 * 37 + 11) }
            #expect(Hex.decode(Hex.encode(b)) == b)
            #expect(Base64.decode(Base64.encode(b)) == b)
            #expect(Base64.decode(String(Base64.encode(b).filter { $0 != "=" })) == b)
        }
        #expect(Base64.encode(Array("foobar".utf8)) == "Zm9vYmFy")
        #expect(Base64.encode(Array("fo".utf8)) == "Zm8=")
        #expect(Base64.decode("Zm9v YmFy") == nil)
        #expect(Base64.decode("Zm9=") == nil)  // leftover bits
        #expect(Base64.decode("Z") == nil)
        #expect(Base64.decode("-_8=") == [0xFB, 0xFF])
        #expect(Hex.decode("abc") == nil)
        #expect(Hex.decode("zz") == nil)
    }

    @Test("server.key and server.pin values; the secret never appears in an error")
    func configValues() throws {
        #expect(try SecretValue.key("000102030405060708090a0b0c0d0e0f") == Array(0..<16))
        #expect(try SecretValue.key("hex:000102030405060708090A0B0C0D0E0F") == Array(0..<16))
        #expect(try SecretValue.key("base64:AAECAwQFBgcICQoLDA0ODw==") == Array(0..<16))
        #expect(try SecretValue.key("AAECAwQFBgcICQoLDA0ODw") == Array(0..<16))
        for bad in ["", "00010203", "not a key at all!", "hex:xyz"] {
            do {
                _ = try SecretValue.key(bad)
                Issue.record("accepted \(bad)")
            } catch {
                #expect(bad.isEmpty || !error.message.contains(bad))
            }
        }
        let pin = "sha256/" + Base64.encode(Array(repeating: 7, count: 32))
        #expect(try SecretValue.pins(pin + ", " + pin).count == 2)
        #expect(throws: ConfigValueError.self) { try SecretValue.pins("sha1/AAAA") }
        #expect(throws: ConfigValueError.self) { try SecretValue.pins("sha256/AAAA") }

        let r = ConfigParser().parse("server = tls://orders.example:7443\nserver.ca = /etc/crier/ca.pem\nserver.pin = \(pin)\nserver.key = 000102030405060708090a0b0c0d0e0f\n", file: "c.conf")
        #expect(r.diagnostics.isEmpty)
        #expect(r.config.link.server == ServerAddress(.tls, host: "orders.example", port: 7443))
        #expect(r.config.link.server?.transport == .tls)
        #expect(r.config.link.ca == "/etc/crier/ca.pem")
        #expect(r.config.link.pins == [Array(repeating: 7, count: 32)])
        #expect(r.config.link.key == Array(0..<16))
        let shown = r.config.rendered()
        #expect(shown.contains("server.key = (set)"))
        #expect(!shown.contains("000102030405060708090a0b0c0d0e0f"))
        #expect(shown.contains("server.pin = \(pin)"))
        let noEquals = ConfigParser().parse("server.key 000102030405060708090a0b0c0d0e0f\n", file: "c.conf")
        #expect(noEquals.errors.first?.description == "c.conf:1: expected \"key = value\", got \"server.key 0…\"")
        let bad = ConfigParser().parse("server.key = 0011\n", file: "c.conf")
        #expect(bad.errors.first?.description.contains("at least 16") == true)
        #expect(bad.config.link.key == nil)
    }
}
