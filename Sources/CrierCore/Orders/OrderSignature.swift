/// HMAC-SHA256(key, message). Pure code cannot compute it (no hand-written hashes here); the
/// link adapter passes libcrypto's.
public typealias MACFunction = @Sendable (_ key: [UInt8], _ message: [UInt8]) -> [UInt8]

/// Signed orders (docs/protocol.md, "Signed orders"): with a shared key configured, every order
/// and cancel carries `ts` (unix seconds) and `sig` (lowercase hex HMAC-SHA256 of the canonical
/// form). This file holds the rules; the MAC itself comes from outside.
public enum OrderSigning {
    /// The fields covered, in this order. Fields not listed (and `sig`) are not signed; they are
    /// ones the device ignores anyway. Each order kind's field (`OrderKindSpec.fields`: number,
    /// amount, text) is covered, so a new kind's value cannot be altered in transit.
    public static let canonicalFields = ["type", "id", "kind"] + OrderKindSpec.fields.filter { $0 != "text" }
        + ["text", "lang", "priority", "ttl", "ts"]
    /// Seconds a `ts` may be away from the device's clock, either way.
    public static let window: Int64 = 300

    /// The bytes that are signed: a compact JSON object of the covered fields that are present
    /// and not null, in `canonicalFields` order, values written as `canonicalValue` does.
    public static func canonical(_ obj: JSONObject) -> [UInt8] {
        var out: [UInt8] = [UInt8(ascii: "{")]
        var first = true
        for name in canonicalFields {
            guard let v = obj[name], v != .null else { continue }
            if !first { out.append(UInt8(ascii: ",")) }
            first = false
            JSON.writeString(name, into: &out, style: .canonical)
            out.append(UInt8(ascii: ":"))
            JSON.write(v, into: &out, style: .canonical)
        }
        out.append(UInt8(ascii: "}"))
        return out
    }

    /// Adds `ts` and `sig` to a message object (the sender's side: `crier-sim order-sim --key`).
    /// Sign at send time, every time: a redelivery gets a fresh `ts`.
    public static func sign(_ obj: JSONObject, ts: Int64, key: [UInt8], mac: MACFunction) -> JSONObject {
        var o = obj
        o["sig"] = nil
        o["ts"] = .number(JSONNumber(literal: String(ts)))
        o["sig"] = .string(Hex.encode(mac(key, canonical(o))))
        return o
    }

    /// Equal without an early exit (no timing hint of how many leading bytes matched).
    public static func constantTimeEqual(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        guard a.count == b.count else { return false }
        var diff: UInt8 = 0
        for i in 0..<a.count { diff |= a[i] ^ b[i] }
        return diff == 0
    }
}

/// Why a signed message was refused. `reason` goes into the `rejected` ack.
public struct SignatureRejection: Error, Sendable, Equatable, CustomStringConvertible {
    public enum Reason: String, Sendable {
        /// No `sig` or no `ts`.
        case unsigned
        /// `sig` does not match (wrong key, altered order) or `ts`/`sig` are malformed.
        case badSignature = "bad_signature"
        /// `ts` more than the window away from the device clock.
        case stale
        /// This (id, ts) was accepted before.
        case replayed
    }
    public var reason: Reason
    public var message: String

    public init(_ reason: Reason, _ message: String) {
        self.reason = reason
        self.message = message
    }

    public var description: String { "\(reason.rawValue): \(message)" }
}

/// Checks signed messages and remembers which (id, ts) pairs it accepted, so a captured order
/// cannot be played again while its `ts` is inside the window. Not thread safe: one per link.
public struct SignatureVerifier: Sendable {
    public let window: Int64
    /// Most (id, ts) pairs remembered. Past it the oldest half is forgotten and every `ts` up to
    /// the newest forgotten one is refused (as replayed): memory stays bounded without ever
    /// accepting a replay.
    public let capacity: Int
    private let key: [UInt8]
    private let mac: MACFunction
    private var seen: Set<Seen> = []
    /// Messages with `ts <= floor` are refused: they may have been forgotten.
    private var floor = Int64.min
    /// While the wall clock is not synchronized (a Pi has no RTC: at boot it holds the last
    /// saved time, never later than the true time): the least the time can be, as unix
    /// seconds at a monotonic instant. Starts from the wall clock when the link started and is
    /// raised by each authentic `ts` ahead of it; carried forward on the monotonic clock, so a
    /// step of the wall clock (NTP, `date -s`) neither lowers nor raises it.
    private var floorEstimate: (unix: Int64, monotonic: Double)?

    private struct Seen: Hashable, Sendable {
        var id: String
        var ts: Int64
    }

    /// `startedAt`: the wall clock (unix s) and the monotonic clock (s) when the link started,
    /// the first estimate of the time while the clock is not synchronized; nil: taken at the
    /// first check.
    public init(key: [UInt8], mac: @escaping MACFunction, window: Int64 = OrderSigning.window, capacity: Int = 65536,
                startedAt: (unix: Int64, monotonic: Double)? = nil) {
        self.key = key
        self.mac = mac
        self.window = window
        self.capacity = max(2, capacity)
        floorEstimate = startedAt
    }

    /// The least the time can be at `monotonic` (unsynchronized clock), nil before any estimate.
    public func leastTime(monotonic: Double) -> Int64? {
        floorEstimate.map { $0.unix + Int64((max(0, monotonic - $0.monotonic)).rounded(.down)) }
    }

    public var remembered: Int { seen.count }

    /// nil: authentic, fresh and new (and now remembered). Checks in this order: present,
    /// signature, time window, replay; nothing is remembered unless the signature is good.
    ///
    /// `now` is the wall clock (unix s). `synchronized`: whether it is (NTP; systemd-timesyncd's
    /// flag). Synchronized, `ts` must be within ±window of `now`. Not synchronized (a Pi at boot,
    /// before NTP), the wall clock is only a lower bound of the time: `ts` must not be more than
    /// the window behind the least the time can be (`leastTime`, carried on `monotonic`), and
    /// may be any amount ahead; an authentic `ts` ahead raises that bound. docs/security.md.
    public mutating func check(_ obj: JSONObject, now: Int64, synchronized: Bool = true, monotonic: Double = 0) -> SignatureRejection? {
        let type: String
        if case .string(let t)? = obj["type"] { type = t } else { type = "message" }
        guard let sigValue = obj["sig"], sigValue != .null, let tsValue = obj["ts"], tsValue != .null else {
            let missing = [obj["sig"] ?? .null, obj["ts"] ?? .null].enumerated().filter { $0.element == .null }.map { $0.offset == 0 ? "sig" : "ts" }
            return SignatureRejection(.unsigned, "\(type) has no \(missing.joined(separator: " and ")) but server.key is set: every order must be signed")
        }
        guard case .string(let sigHex) = sigValue, sigHex.utf8.count == 64, let sig = Hex.decode(sigHex) else {
            return SignatureRejection(.badSignature, "field \"sig\" must be 64 hex digits (HMAC-SHA256)")
        }
        guard case .number(let n) = tsValue, let ts = n.int.map(Int64.init) else {
            return SignatureRejection(.badSignature, "field \"ts\" must be an integer (unix seconds)")
        }
        let expected = mac(key, OrderSigning.canonical(obj))
        guard OrderSigning.constantTimeEqual(expected, sig) else {
            return SignatureRejection(.badSignature, "signature does not match: the order was altered or signed with another key (check server.key on both ends)")
        }
        if floorEstimate == nil { floorEstimate = (now, monotonic) }
        var effectiveNow = now
        if !synchronized {
            let least = leastTime(monotonic: monotonic) ?? now
            effectiveNow = least
            let behind = least.subtractingReportingOverflow(ts)
            if behind.overflow || behind.partialValue > window {
                let d = behind.overflow ? UInt64(Int64.max) : behind.partialValue.magnitude
                return SignatureRejection(.stale, "ts \(ts) is \(d) s behind the least this device's time can be (its clock is not synchronized yet: "
                                          + "taken from the clock at start and the newest signed order; allowed \(window) s behind); check the server's clock")
            }
        }
        let skew = ts.subtractingReportingOverflow(now)
        // magnitude, not abs(): a skew of exactly Int64.min does not overflow the subtraction,
        // and abs() of it traps.
        if synchronized, skew.overflow || skew.partialValue.magnitude > window.magnitude {
            let d = skew.overflow ? UInt64(Int64.max) : skew.partialValue.magnitude
            let dir = skew.partialValue > 0 && !skew.overflow ? "ahead of" : "behind"
            return SignatureRejection(.stale, "ts \(ts) is \(d) s \(dir) this device's clock (allowed ±\(window) s); check both clocks (NTP: `timedatectl`)")
        }
        let id: String
        if case .string(let s)? = obj["id"] { id = s } else { id = "" }
        let entry = Seen(id: id, ts: ts)
        if ts <= floor || seen.contains(entry) {
            return SignatureRejection(.replayed, "\(type) id \(id) with ts \(ts) was already received; a resend must be signed again with a new ts")
        }
        if seen.count >= capacity { forget(now: effectiveNow) }
        seen.insert(entry)
        // Authentic and new: the time is at least this (what an unsynchronized clock goes by).
        if let least = leastTime(monotonic: monotonic), ts > least { floorEstimate = (ts, monotonic) }
        return nil
    }

    private mutating func forget(now: Int64) {
        // Pairs older than the window can never pass the time check again.
        seen = seen.filter { $0.ts >= now - window }
        guard seen.count >= capacity else { return }
        let sorted = seen.map(\.ts).sorted()
        let cut = sorted[sorted.count / 2]
        floor = max(floor, cut)
        seen = seen.filter { $0.ts > cut }
    }
}
