// libFuzzer target: one protocol line from the network (docs/protocol.md), through everything
// the link does with it. Built by scripts/fuzz.sh together with CrierCore's sources.
// Invariants (a violation crashes, so libFuzzer keeps the input):
// - decode never traps, whatever the bytes;
// - an accepted order/ack/cancel encodes back to a line that decodes to the same message;
// - any accepted JSON value survives write → parse unchanged;
// - the canonical form of a signed order is itself valid JSON, and the verifier never traps;
// - the line framer never returns a line longer than its limit.

let fuzzKey: [UInt8] = Array(0..<32)
/// Not a MAC: only needs to be deterministic here (the verifier's rules are what is fuzzed).
let fuzzMAC: MACFunction = { key, message in
    var h = [UInt8](repeating: 0, count: 32)
    for (i, b) in (key + message).enumerated() { h[i & 31] = h[i & 31] &* 31 &+ b }
    return h
}

func fuzzProtocol(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))

    let decoded = ProtocolCodec.decodeKeepingObject(bytes)
    if case .success(let m) = decoded.message {
        let again = ProtocolCodec.decode(ProtocolCodec.encode(m))
        switch m {
        case .order, .ack, .cancel, .update, .hello, .error, .ping, .pong, .welcome:
            precondition(again == .success(m), "round trip changed \(m) into \(again)")
        case .unknown:
            break
        }
    }
    if let obj = decoded.object {
        let canonical = OrderSigning.canonical(obj)
        if case .failure(let e) = JSON.parse(canonical, limits: .init(maxDepth: 64, maxBytes: 1 << 20)) {
            preconditionFailure("canonical form is not JSON: \(e)")
        }
        var verifier = SignatureVerifier(key: fuzzKey, mac: fuzzMAC, capacity: 4)
        let signed = OrderSigning.sign(obj, ts: 1_000_000, key: fuzzKey, mac: fuzzMAC)
        precondition(verifier.check(signed, now: 1_000_000) == nil, "own signature refused")
        precondition(verifier.check(signed, now: 1_000_000)?.reason == .replayed, "replay accepted")
        _ = verifier.check(obj, now: 1_000_000)
    }
    if case .success(let v) = JSON.parse(bytes, limits: ProtocolCodec.limits) {
        precondition(JSON.parse(JSON.write(v), limits: .init(maxDepth: 16, maxBytes: 1 << 20)) == .success(v), "JSON round trip")
    }

    var framer = LineFramer(maxLine: 64)
    for item in framer.push(bytes) {
        if case .line(let l) = item { precondition(l.count <= 64) }
    }
    return 0
}
