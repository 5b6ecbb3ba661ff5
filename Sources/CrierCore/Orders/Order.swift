/// One order from the server, validated (docs/protocol.md, "order").
public struct Order: Sendable, Equatable {
    // `Kind` (what it is about and its value) is in OrderKinds.swift, with the table of kinds.

    public var id: String
    public var kind: Kind
    /// nil: the configured language.
    public var lang: Lang?
    /// Replaces the template (for `text` orders the text is the content itself, see `Kind.text`).
    public var text: String?
    /// Higher first.
    public var priority: Int
    /// Seconds after receipt during which it is worth speaking; nil: forever.
    public var ttl: Double?

    public init(id: String, kind: Kind, lang: Lang? = nil, text: String? = nil, priority: Int = 0, ttl: Double? = nil) {
        self.id = id
        self.kind = kind
        self.lang = lang
        self.text = text
        self.priority = priority
        self.ttl = ttl
    }

    public static let numberRange = 0...999_999
    public static let priorityRange = -1_000_000...1_000_000
    /// A week; longer is surely a unit mistake (milliseconds).
    public static let maxTTL = 604_800.0
    public static let maxIDLength = 64

    /// Why an id is unacceptable, or nil. 1-64 Unicode scalars, no control characters.
    public static func idProblem(_ id: String) -> String? {
        let n = id.unicodeScalars.count
        if n == 0 { return "id is empty" }
        if n > maxIDLength { return "id is \(n) characters, more than \(maxIDLength)" }
        if id.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7F }) { return "id contains a control character" }
        return nil
    }

    /// `0`, `12`, `100.5`, `100.50`: no sign, no leading zeros, at most 12 integer digits and 2
    /// fraction digits.
    public static func isValidAmount(_ s: String) -> Bool {
        let u = Array(s.utf8)
        var i = 0
        func digit(_ c: UInt8) -> Bool { c >= 0x30 && c <= 0x39 }
        while i < u.count, digit(u[i]) { i += 1 }
        let intDigits = i
        guard intDigits >= 1, intDigits <= 12 else { return false }
        if intDigits > 1, u[0] == UInt8(ascii: "0") { return false }
        if i == u.count { return true }
        guard u[i] == UInt8(ascii: ".") else { return false }
        i += 1
        let frac = u.count - i
        guard frac == 1 || frac == 2 else { return false }
        return u[i...].allSatisfy(digit)
    }
}

/// What the box tells the server about one order.
public struct Ack: Sendable, Equatable, CustomStringConvertible {
    public enum Status: String, Sendable, CaseIterable {
        /// Finished playing (or was spoken before: a redelivery).
        case spoken
        /// Its ttl passed before it could be said.
        case expired
        /// The server cancelled it.
        case cancelled
        /// Not accepted; `reason` says why.
        case rejected
    }

    /// Machine-readable reasons for `rejected` (docs/protocol.md lists them).
    public enum Reason {
        public static let queueFull = "queue_full"
        public static let invalidOrder = "invalid_order"
        /// The text (or template) has nothing a voice can say: only emoji, symbols, invisible
        /// or control characters.
        public static let nothingToSay = "nothing_to_say"
    }

    public var id: String
    public var status: Status
    /// A short code such as `queue_full` or `invalid_order` (rejected only).
    public var reason: String?
    /// Human-readable detail, e.g. `number must be an integer 0...999999, got 1000000`.
    public var message: String?

    public init(id: String, status: Status, reason: String? = nil, message: String? = nil) {
        self.id = id
        self.status = status
        self.reason = reason
        self.message = message
    }

    public static func spoken(_ id: String) -> Ack { Ack(id: id, status: .spoken) }

    public var description: String {
        var s = "ack id=\(id) status=\(status.rawValue)"
        if let reason { s += " reason=\(reason)" }
        return s
    }
}

/// The client's greeting. `token` never appears in descriptions (it is a credential).
public struct Hello: Sendable, Equatable, CustomStringConvertible, CustomDebugStringConvertible {
    public var protocolVersion: Int
    public var device: String
    public var token: String?
    /// Optional, informational (unknown fields are ignored by older servers): crier's version,
    /// the booted root slot, "updated VERSION" / "rolled-back VERSION".
    public var software: String?
    public var slot: String?
    public var lastUpdate: String?
    /// Power, temperature and how the last run ended (issue 35; docs/protocol.md, section 3).
    public var health = DeviceHealth()

    public init(protocolVersion: Int = ProtocolCodec.version, device: String, token: String?) {
        self.protocolVersion = protocolVersion
        self.device = device
        self.token = token
    }

    public var description: String {
        "hello protocol=\(protocolVersion) device=\(device) token=\(token == nil ? "(none)" : "(set)")"
    }
    public var debugDescription: String { description }
}
