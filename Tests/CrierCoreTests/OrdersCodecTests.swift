import Testing
@testable import CrierCore

private func decode(_ s: String) -> Result<ProtocolMessage, ProtocolError> {
    ProtocolCodec.decode(Array(s.utf8))
}

private func err(_ s: String) -> ProtocolError? {
    if case .failure(let e) = decode(s) { return e }
    return nil
}

private func str(_ b: [UInt8]) -> String { String(decoding: b, as: UTF8.self) }

@Suite("JSON reader/writer")
struct OrdersJSONTests {
    @Test("reads the JSON grammar")
    func grammar() throws {
        let v = try JSON.parse(Array(#" {"a":[1,-2.5e3,true,false,null,"x\n\u00e9\ud83d\ude00"],"b":{}} "#.utf8)).get()
        guard case .object(let o) = v, case .array(let a)? = o["a"] else { Issue.record("not an object"); return }
        #expect(o.keys == ["a", "b"])
        #expect(a.count == 6)
        #expect(a[1] == .number(JSONNumber(literal: "-2.5e3")))
        #expect(a[5] == .string("x\né😀"))
    }

    @Test("rejects malformed text", arguments: [
        ("", JSONError.Kind.syntax), ("{", .syntax), ("{\"a\":}", .syntax), ("[1,]", .syntax),
        ("{\"a\":1,}", .syntax), ("01", .syntax), ("1.", .syntax), ("-", .syntax), ("tru", .syntax),
        ("{\"a\":1} x", .syntax), ("'a'", .syntax), ("{a:1}", .syntax), ("\"\\x\"", .invalidEscape),
        ("\"\\u12\"", .invalidEscape), ("\"\\ud800\"", .invalidEscape), ("\"\\udc00\"", .invalidEscape),
        ("\"\\ud800\\u0041\"", .invalidEscape), ("\"a\tb\"", .controlCharacter),
        ("{\"a\":1,\"a\":2}", .duplicateKey), ("NaN", .syntax), ("Infinity", .syntax),
    ])
    func malformed(text: String, kind: JSONError.Kind) {
        guard case .failure(let e) = JSON.parse(Array(text.utf8)) else {
            Issue.record("accepted \(text)")
            return
        }
        #expect(e.kind == kind, "\(text): \(e)")
    }

    @Test("rejects invalid UTF-8 and says where", arguments: [
        [0x22, 0xFF, 0x22], [0x22, 0xC0, 0xAF, 0x22],  // invalid byte, overlong '/'
        [0x22, 0xED, 0xA0, 0x80, 0x22],  // UTF-8 encoded surrogate
        [0x22, 0xF4, 0x90, 0x80, 0x80, 0x22],  // above U+10FFFF
        [0x22, 0xE4, 0xB8, 0x22],  // truncated sequence
    ] as [[UInt8]])
    func invalidUTF8(bytes: [UInt8]) {
        guard case .failure(let e) = JSON.parse(bytes) else { Issue.record("accepted"); return }
        #expect(e.kind == .invalidUTF8)
        #expect(e.offset == 1)
    }

    @Test("depth and size limits")
    func limits() {
        let deep = String(repeating: "[", count: 17) + String(repeating: "]", count: 17)
        guard case .failure(let e) = JSON.parse(Array(deep.utf8)) else { Issue.record("accepted"); return }
        #expect(e.kind == .tooDeep)
        let ok = String(repeating: "[", count: 16) + String(repeating: "]", count: 16)
        #expect((try? JSON.parse(Array(ok.utf8)).get()) != nil)
        // A nesting bomb far beyond the limit fails fast, without recursion to its depth.
        let bomb = String(repeating: "{\"a\":", count: 5000)
        guard case .failure(let b) = JSON.parse(Array(bomb.utf8), limits: .init(maxDepth: 16, maxBytes: 1 << 20)) else {
            Issue.record("accepted"); return
        }
        #expect(b.kind == .tooDeep)
        let big = "\"" + String(repeating: "a", count: 16384) + "\""
        guard case .failure(let s) = JSON.parse(Array(big.utf8)) else { Issue.record("accepted"); return }
        #expect(s.kind == .tooLarge)
    }

    @Test("writes compact JSON that reads back the same")
    func roundTrip() throws {
        let o = JSONObject([("s", .string("a\"b\\c\n\u{1}é中")), ("n", .number(JSONNumber(-12))), ("t", .bool(true)),
                            ("z", .null), ("a", .array([.number(JSONNumber(literal: "1.5"))]))])
        let bytes = JSON.write(.object(o))
        #expect(str(bytes) == #"{"s":"a\"b\\c\n\u0001é中","n":-12,"t":true,"z":null,"a":[1.5]}"#)
        #expect(try JSON.parse(bytes).get() == .object(o))
    }
}

@Suite("Protocol codec")
struct OrdersCodecTests {
    @Test("decodes every message type")
    func goodLines() {
        let table: [(String, ProtocolMessage)] = [
            (#"{"type":"welcome"}"#, .welcome),
            (#"{"type":"ping"}"#, .ping),
            (#"{"type":"pong","extra":[1,{"x":null}]}"#, .pong),
            (#"{"type":"error","code":"unauthorized","message":"bad token"}"#, .error(code: "unauthorized", message: "bad token")),
            (#"{"type":"error","code":"x"}"#, .error(code: "x", message: "")),
            (#"{"type":"cancel","id":"A-1"}"#, .cancel(id: "A-1")),
            (#"{"type":"hello","protocol":1,"device":"box","token":"s3"}"#, .hello(Hello(device: "box", token: "s3"))),
            (#"{"type":"hello","protocol":1,"device":"box"}"#, .hello(Hello(device: "box", token: nil))),
            (#"{"type":"ack","id":"A-1","status":"rejected","reason":"queue_full"}"#,
             .ack(Ack(id: "A-1", status: .rejected, reason: "queue_full"))),
            (#"{"type":"order","id":"A-1042","kind":"new_customer","number":42}"#,
             .order(Order(id: "A-1042", kind: .newCustomer(number: 42)))),
            (#"{"type":"order","id":"p","kind":"payment","amount":"100.50","lang":"en","priority":5,"ttl":30}"#,
             .order(Order(id: "p", kind: .payment(amount: "100.50"), lang: .en, priority: 5, ttl: 30))),
            (#"{"type":"order","id":"t","kind":"text","text":"请到前台"}"#, .order(Order(id: "t", kind: .text("请到前台")))),
            (#"{"type":"order","id":"o","kind":"new_customer","number":0,"text":"VIP到店","ttl":0.5,"lang":null}"#,
             .order(Order(id: "o", kind: .newCustomer(number: 0), text: "VIP到店", ttl: 0.5))),
            (#"{"type":"order","id":"o","kind":"new_customer","number":999999,"future":{"a":1}}"#,
             .order(Order(id: "o", kind: .newCustomer(number: 999_999)))),
            (#"{"type":"surprise","id":5}"#, .unknown(type: "surprise")),
            ("{\"type\":\"ping\"}\r", .ping),
            (" {\"type\" : \"ping\"} ", .ping),
        ]
        for (line, want) in table {
            #expect((try? decode(line).get()) == want, "\(line)")
        }
    }

    @Test("refuses bad lines with a precise message", arguments: [
        ("not json", ProtocolError.Kind.invalidJSON, "invalid JSON"),
        ("[1,2]", .notAnObject, "expected a JSON object, got an array"),
        ("\"hi\"", .notAnObject, "got a string"),
        (#"{"kind":"text"}"#, .missingField, #"missing field "type""#),
        (#"{"type":7}"#, .wrongType, #"field "type" must be a string, got a number"#),
        (#"{"type":"order","kind":"text","text":"x"}"#, .missingField, #"order: missing field "id""#),
        (#"{"type":"order","id":"","kind":"text","text":"x"}"#, .invalidValue, #"field "id" is empty"#),
        (#"{"type":"order","id":42,"kind":"text","text":"x"}"#, .wrongType, #"field "id" must be a string"#),
        (#"{"type":"cancel"}"#, .missingField, #"cancel: missing field "id""#),
        (#"{"type":"error"}"#, .missingField, #"missing field "code""#),
        (#"{"type":"ack","id":"a","status":"heard"}"#, .invalidValue, "must be one of spoken"),
        (#"{"type":"hello","protocol":"1","device":"d"}"#, .wrongType, #"field "protocol" must be an integer, got a string"#),
        (#"{"type":"ping","type":"pong"}"#, .invalidJSON, #"duplicate key "type""#),
    ])
    func badLines(line: String, kind: ProtocolError.Kind, fragment: String) {
        guard let e = err(line) else { Issue.record("accepted \(line)"); return }
        #expect(e.kind == kind, "\(line): \(e)")
        #expect(e.message.contains(fragment), "\(line): \(e.message)")
        #expect(e.orderID == nil)
    }

    @Test("a bad order names its id so it can be rejected", arguments: [
        (#"{"type":"order","id":"A-1","kind":"new_customer"}"#, #"missing field "number" (required for kind new_customer)"#),
        (#"{"type":"order","id":"A-1","kind":"new_customer","number":"42"}"#, #"field "number" must be an integer, got a string"#),
        (#"{"type":"order","id":"A-1","kind":"new_customer","number":42.0}"#, "must be an integer, got 42.0"),
        (#"{"type":"order","id":"A-1","kind":"new_customer","number":4.2e1}"#, "must be an integer"),
        (#"{"type":"order","id":"A-1","kind":"new_customer","number":-1}"#, "must be 0...999999, got -1"),
        (#"{"type":"order","id":"A-1","kind":"new_customer","number":1000000}"#, "must be 0...999999"),
        (#"{"type":"order","id":"A-1","kind":"new_customer","number":123456789012345678901234567890}"#, "out of range"),
        (#"{"type":"order","id":"A-1","kind":"new_customer","number":1e999}"#, "must be an integer"),
        (#"{"type":"order","id":"A-1","kind":"payment","amount":100.5}"#, "must be a decimal string"),
        (#"{"type":"order","id":"A-1","kind":"payment","amount":"100.505"}"#, "at most 2 decimals"),
        (#"{"type":"order","id":"A-1","kind":"payment","amount":"-1"}"#, "no sign"),
        (#"{"type":"order","id":"A-1","kind":"payment","amount":"1e3"}"#, "decimal string"),
        (#"{"type":"order","id":"A-1","kind":"payment","amount":"007"}"#, "decimal string"),
        (#"{"type":"order","id":"A-1","kind":"payment"}"#, #"missing field "amount""#),
        (#"{"type":"order","id":"A-1","kind":"text"}"#, #"missing field "text""#),
        (#"{"type":"order","id":"A-1","kind":"text","text":"  "}"#, "is empty"),
        (#"{"type":"order","id":"A-1","kind":"text","text":5}"#, "must be a string"),
        (#"{"type":"order","id":"A-1","kind":"song"}"#, "must be new_customer, payment or text"),
        (#"{"type":"order","id":"A-1"}"#, #"missing field "kind""#),
        (#"{"type":"order","id":"A-1","kind":"new_customer","number":1,"lang":"fr"}"#, "must be one of zh, en"),
        (#"{"type":"order","id":"A-1","kind":"new_customer","number":1,"priority":1.5}"#, "must be an integer"),
        (#"{"type":"order","id":"A-1","kind":"new_customer","number":1,"ttl":0}"#, "> 0"),
        (#"{"type":"order","id":"A-1","kind":"new_customer","number":1,"ttl":-3}"#, "> 0"),
        (#"{"type":"order","id":"A-1","kind":"new_customer","number":1,"ttl":"30"}"#, "must be a number of seconds"),
        (#"{"type":"order","id":"A-1","kind":"new_customer","number":1,"ttl":1e400}"#, "> 0"),
    ])
    func badOrders(line: String, fragment: String) {
        guard let e = err(line) else { Issue.record("accepted \(line)"); return }
        #expect(e.orderID == "A-1", "\(line)")
        #expect(e.message.contains(fragment), "\(line): \(e.message)")
        #expect(e.rejectedAck == Ack(id: "A-1", status: .rejected, reason: "invalid_order", message: e.message))
    }

    @Test("ids are 1-64 characters without control characters")
    func ids() {
        let max = String(repeating: "号", count: 64)
        #expect((try? decode(#"{"type":"cancel","id":"\#(max)"}"#).get()) == .cancel(id: max))
        #expect(err(#"{"type":"cancel","id":"\#(max)x"}"#)?.message.contains("65 characters") == true)
        #expect(err(#"{"type":"order","id":"a\u0007","kind":"text","text":"x"}"#)?.orderID == nil)
    }

    @Test("invalid UTF-8, lone surrogates, nesting bombs, over-long lines")
    func hostileBytes() {
        var bad = Array(#"{"type":"order","id":"A-1","kind":"text","text":"x"#.utf8)
        bad += [0xC3, 0x28]
        bad += Array("\"}".utf8)
        guard case .failure(let e) = ProtocolCodec.decode(bad) else { Issue.record("accepted"); return }
        #expect(e.kind == .invalidUTF8)
        #expect(e.message == "invalid UTF-8 at byte 50")
        #expect(e.orderID == nil)

        #expect(err(#"{"type":"order","id":"A-1","kind":"text","text":"\ud800"}"#)?.kind == .invalidJSON)
        #expect(err(#"{"type":"ping","x":"# + String(repeating: "[", count: 10000))?.kind == .tooDeep)
        let long = #"{"type":"ping","pad":""# + String(repeating: "x", count: 16384) + "\"}"
        #expect(err(long)?.kind == .tooLarge)
    }

    @Test("encodes every message; decode(encode(m)) == m")
    func encodeRoundTrip() throws {
        let msgs: [ProtocolMessage] = [
            .hello(Hello(device: "kiosk-1", token: "t")), .hello(Hello(device: "d", token: nil)), .welcome, .ping, .pong,
            .error(code: "bad_message", message: "missing field \"id\""), .cancel(id: "c"),
            .ack(.spoken("A-1")), .ack(Ack(id: "A-2", status: .rejected, reason: "queue_full", message: "full")),
            .order(Order(id: "1", kind: .newCustomer(number: 42))),
            .order(Order(id: "2", kind: .payment(amount: "9.90"), lang: .en, text: "paid", priority: -2, ttl: 1.5)),
            .order(Order(id: "3", kind: .text("line1\nline2 \"q\""), ttl: 60)),
        ]
        for m in msgs {
            let b = ProtocolCodec.encode(m)
            #expect(!b.contains(0x0A), "no raw newline inside a line")
            #expect(try ProtocolCodec.decode(b).get() == m)
            #expect(ProtocolCodec.line(m) == b + [0x0A])
        }
        #expect(str(ProtocolCodec.encode(.ack(.spoken("A-1042")))) == #"{"type":"ack","id":"A-1042","status":"spoken"}"#)
        #expect(str(ProtocolCodec.encode(.hello(Hello(device: "box", token: nil)))) == #"{"type":"hello","protocol":1,"device":"box"}"#)
        #expect(str(ProtocolCodec.encode(.order(Order(id: "A-1042", kind: .newCustomer(number: 42)))))
            == #"{"type":"order","id":"A-1042","kind":"new_customer","number":42}"#)
    }

    @Test("the token never shows in descriptions")
    func tokenHidden() {
        let m = ProtocolMessage.hello(Hello(device: "d", token: "SECRET-123"))
        #expect(!String(describing: m).contains("SECRET"))
        #expect(!String(reflecting: m).contains("SECRET"))
    }
}

@Suite("Protocol codec under random mutation")
struct OrdersCodecMutationTests {
    /// A poor man's fuzzer (the real one is issue 10's libFuzzer target): random byte edits of
    /// valid lines never crash the decoder, and whatever it accepts re-encodes to an equal message.
    @Test("mutated lines: no crash, accepted messages round-trip")
    func mutations() throws {
        let seeds: [String] = [
            #"{"type":"order","id":"A-1042","kind":"new_customer","number":42,"lang":"zh","priority":1,"ttl":30}"#,
            #"{"type":"order","id":"p","kind":"payment","amount":"100.50","text":"\u6536\u6b3e"}"#,
            #"{"type":"order","id":"t","kind":"text","text":"请到前台\n取餐 \"A\""}"#,
            #"{"type":"hello","protocol":1,"device":"box","token":"x"}"#,
            #"{"type":"ack","id":"A","status":"rejected","reason":"queue_full","message":"m"}"#,
            #"{"type":"cancel","id":"c"}"#, #"{"type":"error","code":"bad_message","message":"x"}"#,
        ]
        let alphabet = Array(#"{}[]":,\-.0123456789eEtrufalsn u"#.utf8) + [0x00, 0x0A, 0x80, 0xC3, 0xED, 0xF4, 0xFF]
        var rng = SplitMix64(seed: 2026)
        var accepted = 0
        for i in 0..<20_000 {
            var b = Array(seeds[i % seeds.count].utf8)
            for _ in 0..<Int.random(in: 1...4, using: &rng) {
                let pos = Int.random(in: 0..<b.count, using: &rng)
                switch Int.random(in: 0..<3, using: &rng) {
                case 0: b[pos] = alphabet.randomElement(using: &rng)!
                case 1: b.insert(alphabet.randomElement(using: &rng)!, at: pos)
                default: if b.count > 1 { b.remove(at: pos) }
                }
            }
            if case .success(let m) = ProtocolCodec.decode(b) {
                accepted += 1
                #expect(try ProtocolCodec.decode(ProtocolCodec.encode(m)).get() == m)
            }
        }
        #expect(accepted > 100, "the mutations keep some lines valid")
    }
}
