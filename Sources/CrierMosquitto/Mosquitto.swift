import CMosquitto
import CrierCore
import Glibc

/// What libmosquitto reported from inside a `loop*` call (or a connect), in order.
public enum MosquittoEvent: Sendable, Equatable {
    /// CONNACK: `code` 0 is success, else the MQTT 5 reason code or 3.1.1 return code.
    case connected(code: Int32, sessionPresent: Bool)
    /// The connection ended: `code` a MOSQ_ERR_*, `errno` at that moment.
    case disconnected(code: Int32, errno: Int32)
    /// A PUBLISH from the broker. Its PUBACK is queued but only leaves on the next `loopWrite`
    /// (the client is in threaded mode: see `MosquittoClient.init`).
    case message(mid: Int32, topic: String, payload: [UInt8], qos: Int32, retain: Bool)
    /// A PUBLISH whose payload is over `MosquittoClient.maxPayload`: not copied, only its size
    /// (libmosquitto has already read it whole; its PUBACK is queued like any other).
    case oversize(mid: Int32, topic: String, size: Int, qos: Int32)
    /// Our QoS 1 PUBLISH was acknowledged (PUBACK); `reason` ≥ 0x80 is a refusal (MQTT 5).
    case published(mid: Int32, reason: Int32)
    /// SUBACK: the granted QoS (or a failure code ≥ 0x80) per topic.
    case subscribed(mid: Int32, granted: [Int32])
    case log(level: Int32, text: String)
}

public struct MosquittoError: Error, Sendable, CustomStringConvertible {
    public var code: Int32
    public var errno: Int32
    public var operation: String
    public var description: String { "\(operation): \(MosquittoClient.errorText(code, errno: errno))" }
}

/// Collects callbacks during one libmosquitto call. Only the thread that owns the client
/// touches it (libmosquitto calls back inside `loop*`, on the caller's thread).
private final class EventSink {
    var events: [MosquittoEvent] = []
    var logEnabled = false
    var maxPayload = Int.max
}

private func sinkOf(_ obj: UnsafeMutableRawPointer?) -> EventSink {
    Unmanaged<EventSink>.fromOpaque(obj!).takeUnretainedValue()
}

/// One libmosquitto client, driven by its owner's own poll loop (never the library's threads:
/// `loop_start`/`loop_forever` are not used, so neither is the library's reconnect logic).
/// Not thread safe: create, use and drop it on one thread (the link thread).
public final class MosquittoClient {
    private let handle: OpaquePointer
    private let sink = EventSink()

    private static let initialized: Bool = {
        mosquitto_lib_init()
        return true
    }()

    /// `id` is the MQTT client id; `cleanSession: false` asks the broker to keep the session.
    public init(id: String, cleanSession: Bool, logEnabled: Bool = false) throws(MosquittoError) {
        _ = Self.initialized
        sink.logEnabled = logEnabled
        let obj = Unmanaged.passUnretained(sink).toOpaque()
        guard let h = mosquitto_new(id, cleanSession, obj) else {
            throw MosquittoError(code: MOSQ_ERR_NOMEM.rawValue, errno: errno, operation: "mosquitto_new")
        }
        handle = h
        // Threaded mode ("another thread may touch the handle") has one effect that matters
        // here: packets (our PUBACK for an incoming order above all) are only queued by the
        // library and written by `loopWrite`, never from inside `loopRead`. The owner journals
        // each order before it calls `loopWrite`, so no PUBACK leaves before the order is on disk.
        mosquitto_threaded_set(h, true)
        mosquitto_connect_v5_callback_set(h) { _, obj, rc, flags, _ in
            sinkOf(obj).events.append(.connected(code: rc, sessionPresent: flags & 1 != 0))
        }
        mosquitto_disconnect_v5_callback_set(h) { _, obj, rc, _ in
            let e = errno
            sinkOf(obj).events.append(.disconnected(code: rc, errno: e))
        }
        mosquitto_message_v5_callback_set(h) { _, obj, msg, _ in
            guard let m = msg?.pointee else { return }
            let topic = m.topic.map { String(cString: $0) } ?? ""
            let sink = sinkOf(obj)
            if Int(m.payloadlen) > sink.maxPayload {
                sink.events.append(.oversize(mid: m.mid, topic: topic, size: Int(m.payloadlen), qos: m.qos))
                return
            }
            var payload: [UInt8] = []
            if let p = m.payload, m.payloadlen > 0 {
                payload = Array(UnsafeRawBufferPointer(start: p, count: Int(m.payloadlen)))
            }
            sinkOf(obj).events.append(.message(mid: m.mid, topic: topic, payload: payload, qos: m.qos, retain: m.retain))
        }
        mosquitto_publish_v5_callback_set(h) { _, obj, mid, reason, _ in
            sinkOf(obj).events.append(.published(mid: mid, reason: reason))
        }
        mosquitto_subscribe_v5_callback_set(h) { _, obj, mid, count, granted, _ in
            var g: [Int32] = []
            if let granted { for i in 0..<Int(max(0, count)) { g.append(granted[i]) } }
            sinkOf(obj).events.append(.subscribed(mid: mid, granted: g))
        }
        mosquitto_log_callback_set(h) { _, obj, level, text in
            let s = sinkOf(obj)
            guard s.logEnabled, let text else { return }
            s.events.append(.log(level: level, text: String(cString: text)))
        }
    }

    deinit { mosquitto_destroy(handle) }

    /// Incoming payloads larger than this are reported as `.oversize`, not copied.
    public var maxPayload: Int {
        get { sink.maxPayload }
        set { sink.maxPayload = newValue }
    }


    /// Everything reported since the last call, oldest first.
    public func takeEvents() -> [MosquittoEvent] {
        defer { sink.events = [] }
        return sink.events
    }

    // MARK: settings (before connecting)

    /// MQTT 5 (true) or 3.1.1. For 5, `sessionExpiry` seconds and the Maximum Packet Size
    /// `maxPacket` (bytes; 0: none) go into every CONNECT: a broker must not send a larger
    /// packet (it drops that message for this client). libmosquitto 2.0 itself takes any
    /// incoming packet up to 256 MB and allocates it whole before reading it.
    public func setProtocol(v5: Bool, sessionExpiry: UInt32, maxPacket: UInt32 = 0) throws(MosquittoError) {
        var rc = mosquitto_int_option(handle, MOSQ_OPT_PROTOCOL_VERSION, v5 ? Int32(MQTT_PROTOCOL_V5) : Int32(MQTT_PROTOCOL_V311))
        guard rc == MOSQ_ERR_SUCCESS.rawValue else { throw MosquittoError(code: rc, errno: 0, operation: "protocol version") }
        // The library keeps CONNECT properties only from a (blocking) mosquitto_connect_bind_v5.
        // A connect to a unix socket path that cannot exist fails at once and leaves the
        // properties set (or cleared, with nil) for every later connect_async/reconnect.
        var props: OpaquePointer? = nil
        defer { mosquitto_property_free_all(&props) }
        if v5 {
            rc = mosquitto_property_add_int32(&props, Int32(MQTT_PROP_SESSION_EXPIRY_INTERVAL.rawValue), sessionExpiry)
            guard rc == MOSQ_ERR_SUCCESS.rawValue else { throw MosquittoError(code: rc, errno: 0, operation: "session expiry") }
            if maxPacket > 0 {
                rc = mosquitto_property_add_int32(&props, Int32(MQTT_PROP_MAXIMUM_PACKET_SIZE.rawValue), maxPacket)
                guard rc == MOSQ_ERR_SUCCESS.rawValue else { throw MosquittoError(code: rc, errno: 0, operation: "maximum packet size") }
            }
        }
        rc = mosquitto_connect_bind_v5(handle, "/nonexistent/crier-mqtt-properties", 0, 60, nil, props)
        if rc == MOSQ_ERR_INVAL.rawValue || rc == MOSQ_ERR_NOMEM.rawValue {
            throw MosquittoError(code: rc, errno: 0, operation: "connect properties")
        }
        _ = takeEvents()
    }

    public func setCredentials(username: String?, password: String?) throws(MosquittoError) {
        let rc = mosquitto_username_pw_set(handle, username, password)
        guard rc == MOSQ_ERR_SUCCESS.rawValue else { throw MosquittoError(code: rc, errno: 0, operation: "username") }
    }

    public func setWill(topic: String, payload: [UInt8], qos: Int32, retain: Bool) throws(MosquittoError) {
        let rc = payload.withUnsafeBytes { mosquitto_will_set(handle, topic, Int32($0.count), $0.baseAddress, qos, retain) }
        guard rc == MOSQ_ERR_SUCCESS.rawValue else { throw MosquittoError(code: rc, errno: 0, operation: "last will") }
    }

    /// TLS with the caller's OpenSSL `SSL_CTX` (verification, pins and client certificate are
    /// set up there); the library takes its own reference.
    public func setTLSContext(_ ctx: OpaquePointer) throws(MosquittoError) {
        // Without this the library applies its own defaults over ours (and wants a cafile).
        var rc = mosquitto_int_option(handle, MOSQ_OPT_SSL_CTX_WITH_DEFAULTS, 0)
        guard rc == MOSQ_ERR_SUCCESS.rawValue else { throw MosquittoError(code: rc, errno: 0, operation: "TLS defaults") }
        rc = mosquitto_void_option(handle, MOSQ_OPT_SSL_CTX, UnsafeMutableRawPointer(ctx))
        guard rc == MOSQ_ERR_SUCCESS.rawValue else { throw MosquittoError(code: rc, errno: 0, operation: "TLS context") }
    }

    /// Most of our QoS 1 messages in flight at once (the rest wait inside the library).
    public func setMaxInflight(_ n: UInt32) {
        _ = mosquitto_max_inflight_messages_set(handle, n)
    }

    // MARK: connection

    /// Starts a connection: resolves `host` (blocking, like any getaddrinfo), then a
    /// non-blocking TCP connect; CONNECT is queued. Progress comes from the loop calls.
    public func connect(host: String, port: Int, keepalive: Int) -> MosquittoError? {
        errno = 0
        let rc = mosquitto_connect_bind_async(handle, host, Int32(port), Int32(keepalive), nil)
        let e = errno
        return rc == MOSQ_ERR_SUCCESS.rawValue ? nil : MosquittoError(code: rc, errno: e, operation: "connect")
    }

    /// Sends DISCONNECT (best effort: one write) and closes the socket. The session stays on
    /// the broker (clean_session false); the last will is not published.
    public func disconnect() {
        if mosquitto_disconnect(handle) == MOSQ_ERR_SUCCESS.rawValue {
            _ = mosquitto_loop_write(handle, 1)
        }
    }

    /// The socket to poll, or -1 when there is no connection.
    public var socket: Int32 { mosquitto_socket(handle) }
    /// Output is waiting: poll for POLLOUT and call `loopWrite`.
    public var wantWrite: Bool { mosquitto_want_write(handle) }

    /// Reads and handles what arrived. Returns a MOSQ_ERR_* (0: fine); errno with it.
    public func loopRead() -> (code: Int32, errno: Int32) {
        errno = 0
        let rc = mosquitto_loop_read(handle, 1)
        return (rc, errno)
    }

    public func loopWrite() -> (code: Int32, errno: Int32) {
        errno = 0
        let rc = mosquitto_loop_write(handle, 1)
        return (rc, errno)
    }

    /// Keepalive (PINGREQ, and a dead connection closed) and retries; about once a second.
    public func loopMisc() -> Int32 { mosquitto_loop_misc(handle) }

    /// Queues a PUBLISH; returns its message id.
    public func publish(topic: String, payload: [UInt8], qos: Int32, retain: Bool) -> Result<Int32, MosquittoError> {
        var mid: Int32 = 0
        let rc = payload.withUnsafeBytes { mosquitto_publish(handle, &mid, topic, Int32($0.count), $0.baseAddress, qos, retain) }
        return rc == MOSQ_ERR_SUCCESS.rawValue ? .success(mid) : .failure(MosquittoError(code: rc, errno: errno, operation: "publish"))
    }

    public func subscribe(topic: String, qos: Int32) -> Result<Int32, MosquittoError> {
        var mid: Int32 = 0
        let rc = mosquitto_subscribe(handle, &mid, topic, qos)
        return rc == MOSQ_ERR_SUCCESS.rawValue ? .success(mid) : .failure(MosquittoError(code: rc, errno: errno, operation: "subscribe"))
    }

    // MARK: text

    /// libmosquitto's error text; for MOSQ_ERR_ERRNO the OS error instead.
    public static func errorText(_ code: Int32, errno e: Int32) -> String {
        if code == MOSQ_ERR_ERRNO.rawValue { return e != 0 ? String(cString: strerror(e)) : "connection closed" }
        if code == MOSQ_ERR_EAI.rawValue { return "cannot resolve the broker's host name" }
        if code == MOSQ_ERR_CONN_LOST.rawValue { return "the broker closed the connection" }
        if code == MOSQ_ERR_KEEPALIVE.rawValue { return "no answer from the broker within the keepalive" }
        return String(cString: mosquitto_strerror(code))
    }

    /// What a CONNACK code means (MQTT 5 reason code, or 3.1.1 return code when `v5` is false).
    public static func connackText(_ code: Int32, v5: Bool) -> String {
        v5 ? String(cString: mosquitto_reason_string(code)) : String(cString: mosquitto_connack_string(code))
    }

    public static func reasonText(_ code: Int32) -> String { String(cString: mosquitto_reason_string(code)) }

    /// What a failed loop call, connect or disconnect callback code means for the log.
    /// `code` ≥ 0x80 in a disconnect callback is the broker's DISCONNECT reason code (MQTT 5:
    /// libmosquitto hands it on as is); below, a MOSQ_ERR_*.
    public static func problem(code: Int32, errno e: Int32, host: String, clientID: String, connecting: Bool) -> MQTTProblem {
        if code >= 0x80 { return .disconnect(code: Int(code), text: reasonText(code), clientID: clientID) }
        switch code {
        case MOSQ_ERR_EAI.rawValue, MOSQ_ERR_LOOKUP.rawValue: return .nameResolution(host: host)
        case MOSQ_ERR_NOMEM.rawValue: return .outOfMemory
        case MOSQ_ERR_OVERSIZE_PACKET.rawValue: return .packetTooLarge("libmosquitto: a packet of this box is over the broker's maximum packet size")
        case MOSQ_ERR_TLS.rawValue, MOSQ_ERR_TLS_HANDSHAKE.rawValue:
            return .tls("TLS handshake with \(host) failed (is the broker speaking TLS on this port?)")
        case MOSQ_ERR_PROTOCOL.rawValue, MOSQ_ERR_MALFORMED_PACKET.rawValue, MOSQ_ERR_MALFORMED_UTF8.rawValue,
             MOSQ_ERR_DUPLICATE_PROPERTY.rawValue, MOSQ_ERR_QOS_NOT_SUPPORTED.rawValue:
            return .protocolError(errorText(code, errno: e))
        case MOSQ_ERR_ERRNO.rawValue, MOSQ_ERR_CONN_LOST.rawValue, MOSQ_ERR_NO_CONN.rawValue, MOSQ_ERR_CONN_REFUSED.rawValue:
            return connecting ? .unreachable(errorText(code, errno: e)) : .lost(errorText(code, errno: e))
        default:
            return .lost(errorText(code, errno: e))
        }
    }

    public static var errTLS: Int32 { MOSQ_ERR_TLS.rawValue }
    public static var errNoConn: Int32 { MOSQ_ERR_NO_CONN.rawValue }
    public static var errConnRefused: Int32 { MOSQ_ERR_CONN_REFUSED.rawValue }
    public static var errProtocol: Int32 { MOSQ_ERR_PROTOCOL.rawValue }
    public static var errMalformed: Int32 { MOSQ_ERR_MALFORMED_PACKET.rawValue }

    /// "2.0.11": the library this process runs with.
    public static var libraryVersion: String {
        var a: Int32 = 0, b: Int32 = 0, c: Int32 = 0
        _ = mosquitto_lib_version(&a, &b, &c)
        return "\(a).\(b).\(c)"
    }
}
