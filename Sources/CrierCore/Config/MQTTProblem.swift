/// How big an MQTT message the box takes (docs/protocol.md §15, "Size limit"; docs/fleet.md).
public enum MQTTLimits {
    /// The Maximum Packet Size the box announces in its MQTT 5 CONNECT: an order is at most
    /// 16 384 bytes of JSON (protocol §1); a PUBLISH adds its topic, packet id and properties.
    /// 64 KiB leaves room for any of those, and a message between 16 KiB and 64 KiB still
    /// reaches the box, which names it in its log. A broker must not send this box a larger
    /// packet (MQTT 5 §3.1.2.11.4: it drops the message for this client; mosquitto logs
    /// "Dropping too large outgoing PUBLISH").
    public static let maxPacketBytes = 65_536
    /// The payloads the libmosquitto adapter copies out: a larger one (only a 3.1.1 session or
    /// a broker that ignores the limit sends it) is reported by its size alone.
    public static let maxPayloadBytes = maxPacketBytes
}

/// Why an MQTT connection could not be made or ended, as the box says it in the log: each
/// cause its own line and hint, not "cannot reach MQTT broker" for all of them (issue 31).
/// The adapter maps libmosquitto's return codes and the broker's CONNACK/DISCONNECT reason
/// codes onto these.
public enum MQTTProblem: Sendable, Equatable {
    /// TCP: refused, timed out, no route, reset, closed before CONNACK.
    case unreachable(String)
    /// getaddrinfo failed for the broker's host name.
    case nameResolution(host: String)
    /// The TLS handshake failed (not a verification failure: that has its own line).
    case tls(String)
    /// The broker sent something that is not valid MQTT.
    case protocolError(String)
    /// libmosquitto could not allocate memory while reading from the broker: it allocates a
    /// whole incoming packet at once, so a message larger than this box can hold is queued
    /// for it (MQTT 3.1.1 has no size limit the box can announce).
    case outOfMemory
    /// A packet the box sent is over the broker's Maximum Packet Size (libmosquitto's
    /// MOSQ_ERR_OVERSIZE_PACKET, or the broker's DISCONNECT 0x95).
    case packetTooLarge(String)
    /// The broker sent DISCONNECT with a reason code ≥ 0x80 (MQTT 5).
    case brokerDisconnect(code: Int, text: String)
    /// DISCONNECT 0x8E Session taken over: another client connected with this client id.
    case sessionTakenOver(clientID: String)
    /// The connection ended for another reason (keepalive, EOF after CONNACK, ...).
    case lost(String)

    /// 0x8E, 0x95: the reason codes with a meaning of their own here.
    public static let sessionTakenOverCode = 0x8E
    public static let packetTooLargeCode = 0x95

    /// A broker DISCONNECT reason code turned into the problem it says.
    public static func disconnect(code: Int, text: String, clientID: String) -> MQTTProblem {
        switch code {
        case sessionTakenOverCode: .sessionTakenOver(clientID: clientID)
        case packetTooLargeCode: .packetTooLarge("the broker says a packet from this box was too large (\(text), code \(code))")
        default: .brokerDisconnect(code: code, text: text)
        }
    }

    /// The log line's message (before the connection was up: `connecting`).
    public func headline(connecting: Bool) -> String {
        switch self {
        case .unreachable: connecting ? "cannot reach MQTT broker" : "connection lost"
        case .nameResolution: "cannot resolve the MQTT broker's host name"
        case .tls: "TLS handshake with the MQTT broker failed"
        case .protocolError: "the MQTT broker broke the MQTT protocol; closed the connection"
        case .outOfMemory: "out of memory reading a message from the MQTT broker; a message too large for this box is probably queued for it"
        case .packetTooLarge: "a packet was too large for the MQTT broker"
        case .brokerDisconnect: connecting ? "the MQTT broker closed the connection" : "connection lost"
        case .sessionTakenOver(let id): "the MQTT broker closed the connection: another client connected with this box's client id \"\(id)\" (Session taken over)"
        case .lost: connecting ? "cannot connect to MQTT broker" : "connection lost"
        }
    }

    /// The `error` field.
    public var detail: String {
        switch self {
        case .unreachable(let s), .tls(let s), .protocolError(let s), .packetTooLarge(let s), .lost(let s): s
        case .nameResolution(let host): "cannot resolve \(host)"
        case .outOfMemory: "libmosquitto: out of memory"
        case .brokerDisconnect(let code, let text): "the broker sent DISCONNECT: \(text) (code \(code))"
        case .sessionTakenOver: "Session taken over (code \(Self.sessionTakenOverCode))"
        }
    }

    /// What to do.
    public var hint: String? {
        switch self {
        case .unreachable: "check server in crier.conf and that the broker runs"
        case .nameResolution: "check the host name in server in crier.conf and the network's DNS"
        case .tls: "check that the broker speaks TLS on this port (mqtts://), its certificate, server.ca and server.pin"
        case .protocolError: "check that server in crier.conf points at an MQTT broker"
        case .outOfMemory:
            "the box cannot skip a message it cannot read (MQTT 3.1.1): delete it on the broker (clear this box's session); set max_packet_size \(MQTTLimits.maxPacketBytes) in mosquitto.conf so the broker refuses such messages, and let the box use MQTT 5 (mqtt.protocol = auto), which announces the limit (docs/fleet.md)"
        case .packetTooLarge: "raise the broker's max_packet_size to at least \(MQTTLimits.maxPacketBytes) (docs/fleet.md)"
        case .brokerDisconnect: nil
        case .sessionTakenOver(let id):
            "each box needs its own device.id: look for another box, or a tool (mosquitto_sub -i \(id)), using client id \"\(id)\""
        case .lost: nil
        }
    }

    /// An error (someone must change something) rather than a warning (it may pass).
    public var isError: Bool {
        switch self {
        case .outOfMemory, .packetTooLarge, .sessionTakenOver, .protocolError, .tls: true
        default: false
        }
    }
}

/// MQTT 3.1.1 has no DISCONNECT from the broker: a broker whose client id is taken by another
/// client just closes the older connection, and both clients reconnect in turn. Connections
/// that end within `window` seconds of being set up, `threshold` times in a row, are said to
/// look like that (issue 31). Pure; the link feeds it its clock.
public struct ClientIDClash: Sendable {
    public let window: Double
    public let threshold: Int
    public private(set) var quickLosses = 0
    private var connectedAt: Double?

    public init(window: Double = 10, threshold: Int = 2) {
        self.window = window
        self.threshold = threshold
    }

    public mutating func connected(now: Double) { connectedAt = now }

    /// The connection was lost. True when the log should say another client may hold the id:
    /// at the `threshold`-th quick loss in a row, then every 10th.
    public mutating func lost(now: Double) -> Bool {
        defer { connectedAt = nil }
        guard let at = connectedAt, now - at < window else {
            if connectedAt != nil { quickLosses = 0 }
            return false
        }
        quickLosses += 1
        return quickLosses == threshold || (quickLosses > threshold && (quickLosses - threshold) % 10 == 0)
    }
}
