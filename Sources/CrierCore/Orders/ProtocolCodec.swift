/// Every message of protocol v1 (docs/protocol.md). Both directions, so the same codec serves
/// the client and the reference server.
public enum ProtocolMessage: Sendable, Equatable {
    case hello(Hello)
    case welcome
    case error(code: String, message: String)
    case order(Order)
    case ack(Ack)
    case cancel(id: String)
    /// The server offers a bundle (docs/updates.md): installed when idle if update.allow_remote.
    case update(UpdateOffer)
    case ping
    case pong
    /// A `type` this version does not know: logged and ignored (forward compatibility).
    case unknown(type: String)

    public var typeName: String {
        switch self {
        case .hello: "hello"
        case .welcome: "welcome"
        case .error: "error"
        case .order: "order"
        case .ack: "ack"
        case .cancel: "cancel"
        case .update: "update"
        case .ping: "ping"
        case .pong: "pong"
        case .unknown(let t): t
        }
    }
}

/// Why a line was refused. `orderID` is set when the line was an order whose id could be read,
/// so the client can answer with a `rejected` ack as well as the `bad_message` error.
public struct ProtocolError: Error, Sendable, Equatable, CustomStringConvertible {
    public enum Kind: String, Sendable {
        case invalidUTF8 = "invalid_utf8"
        case invalidJSON = "invalid_json"
        case tooLarge = "too_large"
        case tooDeep = "too_deep"
        case notAnObject = "not_an_object"
        case missingField = "missing_field"
        case wrongType = "wrong_type"
        case invalidValue = "invalid_value"
    }

    public var kind: Kind
    /// One sentence naming what was wrong: `field "number" must be an integer, got a string`.
    public var message: String
    /// The message's `type`, when it could be read.
    public var type: String?
    /// The order's id, when the line was an order with a readable, valid id.
    public var orderID: String?

    public init(_ kind: Kind, _ message: String, type: String? = nil, orderID: String? = nil) {
        self.kind = kind
        self.message = message
        self.type = type
        self.orderID = orderID
    }

    public var description: String { message }

    /// The ack the client owes the server for this line, if any.
    public var rejectedAck: Ack? {
        orderID.map { Ack(id: $0, status: .rejected, reason: Ack.Reason.invalidOrder, message: message) }
    }
}

/// Lines ⇄ messages. A pure function of bytes: no I/O, no clock, no state.
public enum ProtocolCodec {
    public static let version = 1
    /// Bytes in one line, not counting its `\n` or `\r\n`.
    public static let maxLineBytes = 16384
    public static let limits = JSON.Limits(maxDepth: 16, maxBytes: maxLineBytes)

    /// Decodes one line (without its terminator; a trailing `\r` is tolerated).
    public static func decode(_ line: some Collection<UInt8>) -> Result<ProtocolMessage, ProtocolError> {
        decodeKeepingObject(line).message
    }

    /// Most bytes of a line Crier wrote itself for a message it accepted: the wire style
    /// escapes DEL and control characters as `\u00XX`, six bytes for each byte received.
    public static let maxRewrittenLineBytes = 6 * maxLineBytes + 1024

    /// `decode` for a line Crier wrote itself (a journal record): up to `maxRewrittenLineBytes`.
    public static func decodeRewritten(_ line: some Collection<UInt8>) -> Result<ProtocolMessage, ProtocolError> {
        decodeKeepingObject(line, limits: JSON.Limits(maxDepth: limits.maxDepth, maxBytes: maxRewrittenLineBytes)).message
    }

    /// `decode`, plus the JSON object the message was read from (when it was one): signature
    /// checks need the fields exactly as received.
    public static func decodeKeepingObject(_ line: some Collection<UInt8>, limits: JSON.Limits = limits) -> (message: Result<ProtocolMessage, ProtocolError>, object: JSONObject?) {
        var bytes = Array(line)
        if bytes.last == 0x0D { bytes.removeLast() }
        let value: JSONValue
        switch JSON.parse(bytes, limits: limits) {
        case .success(let v): value = v
        case .failure(let e):
            let kind: ProtocolError.Kind = switch e.kind {
            case .invalidUTF8: .invalidUTF8
            case .tooDeep: .tooDeep
            case .tooLarge: .tooLarge
            default: .invalidJSON
            }
            let what = e.kind == .invalidUTF8 ? "invalid UTF-8 at byte \(e.offset)" : "invalid JSON: \(e.description)"
            return (.failure(ProtocolError(kind, what)), nil)
        }
        guard case .object(let obj) = value else {
            return (.failure(ProtocolError(.notAnObject, "expected a JSON object, got \(value.typeName)")), nil)
        }
        do throws(ProtocolError) {
            return (.success(try message(obj)), obj)
        } catch {
            return (.failure(error), obj)
        }
    }

    static func message(_ obj: JSONObject) throws(ProtocolError) -> ProtocolMessage {
        var r = FieldReader(obj: obj, type: nil)
        let type = try r.string("type")
        r.type = type
        switch type {
        case "hello":
            let v = try r.int("protocol")
            let device = try r.string("device")
            let token = try r.optionalString("token")
            var h = Hello(protocolVersion: v, device: device, token: token)
            h.software = try r.optionalString("software")
            h.slot = try r.optionalString("slot")
            h.lastUpdate = try r.optionalString("last_update")
            h.health.power = try r.optionalString("power")
            h.health.tempC = r.present("temp_c") ? try r.int("temp_c") : nil
            h.health.lastStart = try r.optionalString("last_start")
            return .hello(h)
        case "welcome":
            return .welcome
        case "error":
            let code = try r.string("code")
            let message = try r.optionalString("message") ?? ""
            return .error(code: code, message: message)
        case "order":
            return .order(try order(&r))
        case "ack":
            let id = try r.id()
            let s = try r.string("status")
            guard let status = Ack.Status(rawValue: s) else {
                throw r.invalid("status", "must be one of spoken, expired, cancelled, rejected, got \"\(s)\"")
            }
            return .ack(Ack(id: id, status: status, reason: try r.optionalString("reason"), message: try r.optionalString("message")))
        case "cancel":
            return .cancel(id: try r.id())
        case "update":
            let url = try r.string("url")
            let version = try r.string("version")
            guard !version.isEmpty, version.count <= 64, !version.contains(where: { $0.isNewline || $0 == " " }) else {
                throw r.invalid("version", "must be 1 to 64 characters without spaces")
            }
            let source: UpdateSource
            do throws(UpdateSource.Invalid) {
                source = try UpdateSource(parsing: url, relativeTo: "/")
            } catch {
                throw r.invalid("url", error.message)
            }
            guard case .url = source else {
                throw r.invalid("url", "must be an http:// or https:// URL (the box streams the bundle)")
            }
            return .update(UpdateOffer(url: url, version: version))
        case "ping":
            return .ping
        case "pong":
            return .pong
        default:
            return .unknown(type: type)
        }
    }

    static func order(_ r: inout FieldReader) throws(ProtocolError) -> Order {
        let id = try r.id()
        r.orderID = id
        let kindName = try r.string("kind")
        let overrideText = try r.optionalString("text")
        guard let spec = OrderKindSpec.named(kindName) else {
            throw r.invalid("kind", "must be \(OrderKindSpec.namesInProse), got \"\(kindName)\"")
        }
        let kind = Order.Kind(spec, try spec.read(r))
        var lang: Lang?
        if let l = try r.optionalString("lang") {
            guard let v = Lang(rawValue: l) else {
                throw r.invalid("lang", "must be one of \(Lang.allCases.map(\.rawValue).joined(separator: ", ")), got \"\(l)\"")
            }
            lang = v
        }
        var priority = 0
        if r.present("priority") {
            priority = try r.int("priority")
            guard Order.priorityRange.contains(priority) else {
                throw r.invalid("priority", "must be -1000000...1000000, got \(priority)")
            }
        }
        var ttl: Double?
        if r.present("ttl"), let v = r.obj["ttl"] {
            guard case .number(let n) = v else { throw r.wrongType("ttl", "must be a number of seconds, got \(v.typeName)") }
            guard let d = n.double, d > 0, d <= Order.maxTTL else {
                throw r.invalid("ttl", "must be a number of seconds > 0 and ≤ \(Int(Order.maxTTL)), got \(n.literal)")
            }
            ttl = d
        }
        if spec.value == .text {
            return Order(id: id, kind: kind, lang: lang, text: nil, priority: priority, ttl: ttl)
        }
        if let t = overrideText, !t.contains(where: { !$0.isWhitespace }) {
            throw r.invalid("text", "is empty")
        }
        return Order(id: id, kind: kind, lang: lang, text: overrideText, priority: priority, ttl: ttl)
    }

    // MARK: encoding

    /// The message as one JSON object, WITHOUT the trailing `\n` (the link adds it; see `line`).
    /// Optional fields that are nil are left out.
    public static func encode(_ m: ProtocolMessage) -> [UInt8] {
        JSON.write(.object(object(m)))
    }

    /// `encode` plus the `\n` terminator: ready for the socket.
    public static func line(_ m: ProtocolMessage) -> [UInt8] {
        var b = encode(m)
        b.append(0x0A)
        return b
    }

    public static func object(_ m: ProtocolMessage) -> JSONObject {
        var o = JSONObject()
        o["type"] = .string(m.typeName)
        switch m {
        case .hello(let h):
            o["protocol"] = .number(JSONNumber(h.protocolVersion))
            o["device"] = .string(h.device)
            if let t = h.token { o["token"] = .string(t) }
            if let v = h.software { o["software"] = .string(v) }
            if let v = h.slot { o["slot"] = .string(v) }
            if let v = h.lastUpdate { o["last_update"] = .string(v) }
            h.health.add(to: &o)
        case .welcome, .ping, .pong, .unknown:
            break
        case .update(let u):
            o["url"] = .string(u.url)
            o["version"] = .string(u.version)
        case .error(let code, let message):
            o["code"] = .string(code)
            o["message"] = .string(message)
        case .order(let order):
            o["id"] = .string(order.id)
            o["kind"] = .string(order.kind.name)
            o[order.kind.spec.field] = order.kind.value.json
            if let lang = order.lang { o["lang"] = .string(lang.rawValue) }
            if let t = order.text, o["text"] == nil { o["text"] = .string(t) }
            if order.priority != 0 { o["priority"] = .number(JSONNumber(order.priority)) }
            if let ttl = order.ttl { o["ttl"] = .number(JSONNumber(literal: formatSeconds(ttl))) }
        case .ack(let a):
            o["id"] = .string(a.id)
            o["status"] = .string(a.status.rawValue)
            if let r = a.reason { o["reason"] = .string(r) }
            if let m = a.message { o["message"] = .string(m) }
        case .cancel(let id):
            o["id"] = .string(id)
        }
        return o
    }

    /// Integral values without a fraction, others as Swift prints them (valid JSON for finite values).
    static func formatSeconds(_ d: Double) -> String {
        guard d.isFinite else { return "0" }
        if d == d.rounded(), abs(d) < 1e15 { return String(Int(d)) }
        return String(d)
    }
}

/// Reads typed fields from an object and words every failure the same way.
struct FieldReader {
    let obj: JSONObject
    var type: String?
    var orderID: String?

    func error(_ kind: ProtocolError.Kind, _ message: String) -> ProtocolError {
        ProtocolError(kind, (type.map { "\($0): " } ?? "") + message, type: type, orderID: type == "order" ? orderID : nil)
    }

    func missing(_ field: String, because: String? = nil) -> ProtocolError {
        error(.missingField, "missing field \"\(field)\"" + (because.map { " (required for \($0))" } ?? ""))
    }

    func wrongType(_ field: String, _ detail: String) -> ProtocolError {
        error(.wrongType, "field \"\(field)\" \(detail)")
    }

    func invalid(_ field: String, _ detail: String) -> ProtocolError {
        error(.invalidValue, "field \"\(field)\" \(detail)")
    }

    /// Present and not null: optional fields may be sent as null to mean "not set".
    func present(_ field: String) -> Bool {
        guard let v = obj[field] else { return false }
        return v != .null
    }

    func string(_ field: String) throws(ProtocolError) -> String {
        guard let v = obj[field] else { throw missing(field) }
        guard case .string(let s) = v else { throw wrongType(field, "must be a string, got \(v.typeName)") }
        return s
    }

    func optionalString(_ field: String) throws(ProtocolError) -> String? {
        guard let v = obj[field], v != .null else { return nil }
        guard case .string(let s) = v else { throw wrongType(field, "must be a string, got \(v.typeName)") }
        return s
    }

    func int(_ field: String) throws(ProtocolError) -> Int {
        guard let v = obj[field] else { throw missing(field) }
        guard case .number(let n) = v else { throw wrongType(field, "must be an integer, got \(v.typeName)") }
        guard n.isInteger else { throw wrongType(field, "must be an integer, got \(n.literal)") }
        guard let i = n.int else { throw invalid(field, "is out of range: \(n.literal.count > 24 ? String(n.literal.prefix(24)) + "…" : n.literal)") }
        return i
    }

    /// `id`, validated. Sets nothing: the caller records it for error reporting.
    func id() throws(ProtocolError) -> String {
        let id = try string("id")
        if let problem = Order.idProblem(id) { throw invalid("id", problem.replacingPrefix("id ", with: "")) }
        return id
    }
}

extension String {
    func replacingPrefix(_ prefix: String, with r: String) -> String {
        hasPrefix(prefix) ? r + dropFirst(prefix.count) : self
    }
}
