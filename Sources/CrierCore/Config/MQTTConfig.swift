/// Settings of the MQTT link (`server = mqtt://…` or `mqtts://…`; docs/protocol.md, "MQTT").
/// The v1 keys still apply where they mean the same: `device.id` is the client id and names
/// the topics, `server.ca`/`server.pin` check an mqtts:// broker, `server.key` signs orders,
/// `link.heartbeat` is the MQTT keepalive, `link.outbox` keeps the acks.
public struct MQTTConfig: Sendable, Equatable {
    public enum ProtocolChoice: String, Sendable, Equatable, CaseIterable {
        /// MQTT 5, and 3.1.1 when the broker refuses 5.
        case auto
        case v5 = "5"
        case v311 = "3.1.1"
    }

    /// First level of every topic: `<prefix>/<device.id>/orders` and so on.
    public var prefix = "crier"
    /// Broker user name; nil: none (anonymous).
    public var username: String?
    /// Broker password; never logged.
    public var password: String?
    /// mqtts:// only: this box's client certificate chain and its private key (PEM files).
    public var clientCert: String?
    public var clientKey: String?
    /// MQTT 5 session expiry in seconds: how long the broker keeps this box's subscription and
    /// its undelivered orders while the box is away.
    public var sessionExpiry = 604_800
    public var protocolChoice: ProtocolChoice = .auto
    /// The order inbox journal; nil: `<state.path>.inbox`; "": memory only (`off`).
    public var inbox: String?

    public init() {}

    /// Why `prefix` or `device` cannot be a topic level (wildcards, separators), or nil.
    public static func topicProblem(_ s: String, what: String) -> String? {
        if s.isEmpty { return "\(what) is empty" }
        if s.utf8.count > 200 { return "\(what) is longer than 200 bytes" }
        for c in s.unicodeScalars {
            if c == "+" || c == "#" { return "\(what) \(ConfigValue.shown(s)) contains \"\(c)\", an MQTT wildcard" }
            if c.value < 0x20 || c.value == 0x7F { return "\(what) \(ConfigValue.shown(s)) contains a control character" }
        }
        return nil
    }

    /// Why `device.id` cannot name this box's MQTT topics (and be its client id), or nil: the
    /// one rule `crier check-config` (`ConfigParser.crossCheck`) and the MQTT link both apply.
    /// A device id is one topic level: no `/`, no wildcard, no control character, 1-200 bytes.
    public static func deviceIDProblem(_ id: String) -> String? {
        if let p = topicProblem(id, what: "device.id") { return p }
        if id.contains("/") { return "device.id \(ConfigValue.shown(id)) contains \"/\", which separates MQTT topic levels" }
        return nil
    }

    static let keys: [ConfigKey] = [
        ConfigKey("mqtt.prefix", section: "mqtt", default: "crier",
                  doc: "mqtt:// only: first level of the box's topics: PREFIX/DEVICE/orders (subscribed, QoS 1), PREFIX/DEVICE/acks (published, QoS 1), PREFIX/DEVICE/status (retained presence). May contain / (site/crier), not + or #.",
                  apply: { c, v throws(ConfigValueError) in
                      if let p = topicProblem(v, what: "the prefix") { throw ConfigValueError(p) }
                      guard !v.hasPrefix("/"), !v.hasSuffix("/"), !v.contains("//") else {
                          throw ConfigValueError("expected topic levels without an empty one (no leading, trailing or double /), got \(ConfigValue.shown(v))")
                      }
                      c.link.mqtt.prefix = v
                  }, render: { $0.link.mqtt.prefix }),
        ConfigKey("mqtt.username", section: "mqtt", default: "",
                  doc: "mqtt:// only: user name for the broker (with a per-box ACL, usually the same as device.id). Empty: connect without one.",
                  apply: { c, v in c.link.mqtt.username = v.isEmpty ? nil : v },
                  render: { $0.link.mqtt.username ?? "" }),
        ConfigKey("mqtt.password", section: "mqtt", default: "",
                  doc: "mqtt:// only: password for mqtt.username. Never logged.",
                  apply: { c, v in c.link.mqtt.password = v.isEmpty ? nil : v },
                  render: { $0.link.mqtt.password == nil ? "" : "(set)" }),
        ConfigKey("mqtt.cert", section: "mqtt", default: "",
                  doc: "mqtts:// only: PEM file with this box's client certificate (chain), for brokers that identify boxes by certificate. Needs mqtt.cert_key.",
                  apply: { c, v throws(ConfigValueError) in c.link.mqtt.clientCert = v.isEmpty ? nil : try ConfigValue.absolutePath(v) },
                  render: { $0.link.mqtt.clientCert ?? "" }),
        ConfigKey("mqtt.cert_key", section: "mqtt", default: "",
                  doc: "mqtts:// only: PEM file with the private key of mqtt.cert.",
                  apply: { c, v throws(ConfigValueError) in c.link.mqtt.clientKey = v.isEmpty ? nil : try ConfigValue.absolutePath(v) },
                  render: { $0.link.mqtt.clientKey ?? "" }),
        ConfigKey("mqtt.session_expiry", section: "mqtt", default: "604800",
                  doc: "mqtt:// only: seconds the broker keeps this box's session (its subscription and the orders published while it is away) after it disconnects; MQTT 5 (3.1.1 sessions last until the broker drops them).",
                  apply: { c, v throws(ConfigValueError) in c.link.mqtt.sessionExpiry = try ConfigValue.int(v, 60...4_294_967_294) },
                  render: { String($0.link.mqtt.sessionExpiry) }),
        ConfigKey("mqtt.protocol", section: "mqtt", default: "auto",
                  doc: "mqtt:// only: MQTT version: auto (5, and 3.1.1 if the broker refuses 5), 5 or 3.1.1.",
                  apply: { c, v throws(ConfigValueError) in
                      c.link.mqtt.protocolChoice = ProtocolChoice(rawValue: try ConfigValue.choice(v, ProtocolChoice.allCases.map(\.rawValue)))!
                  }, render: { $0.link.mqtt.protocolChoice.rawValue }),
        ConfigKey("mqtt.inbox", section: "mqtt", default: "",
                  doc: "mqtt:// only: journal (on the data partition) where each order is written and fsynced before the broker is told it arrived, so a box killed before saying it says it after the restart; empty: state.path + \".inbox\"; off: memory only.",
                  apply: { c, v throws(ConfigValueError) in
                      guard v.isEmpty || v == "off" || v.hasPrefix("/") else { throw ConfigValueError("expected an absolute path or off, got \"\(v)\"") }
                      c.link.mqtt.inbox = v.isEmpty ? nil : (v == "off" ? "" : v)
                  }, render: { c in c.link.mqtt.inbox.map { $0.isEmpty ? "off" : $0 } ?? "" }),
    ]
}

extension CrierConfig {
    /// Where the MQTT link journals received orders: `mqtt.inbox`, or next to `state.path`;
    /// nil when `mqtt.inbox = off`.
    public var orderInboxPath: String? {
        guard let p = link.mqtt.inbox else { return buttons.statePath + ".inbox" }
        return p.isEmpty ? nil : p
    }
}

/// The topics of one box (docs/protocol.md, "MQTT"). Pure.
public struct MQTTTopics: Sendable, Equatable {
    public let orders: String
    public let acks: String
    public let status: String

    public init(prefix: String, device: String) {
        let base = prefix + "/" + device
        orders = base + "/orders"
        acks = base + "/acks"
        status = base + "/status"
    }

    /// The retained presence message: `online` with what a fleet dashboard wants to see, or
    /// the last will `offline`.
    public static func statusPayload(online: Bool, device: String, version: String, volume: Int?, protocolVersion: String?,
                                     slot: String? = nil, lastUpdate: String? = nil, health: DeviceHealth = DeviceHealth()) -> [UInt8] {
        var o = JSONObject()
        o["type"] = .string("status")
        o["state"] = .string(online ? "online" : "offline")
        o["device"] = .string(device)
        if online {
            o["version"] = .string(version)
            if let v = volume { o["volume"] = .number(JSONNumber(v)) }
            if let p = protocolVersion { o["mqtt"] = .string(p) }
            // As the v1 hello's `slot` and `last_update` (docs/protocol.md, section 3).
            if let s = slot { o["slot"] = .string(s) }
            if let u = lastUpdate { o["last_update"] = .string(u) }
            health.add(to: &o)
        }
        return JSON.write(.object(o))
    }
}
