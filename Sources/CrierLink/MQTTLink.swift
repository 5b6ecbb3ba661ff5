import CrierCore
import CrierMosquitto
import CrierPosix
import Glibc
import Synchronization

/// The box's end of the MQTT transport (docs/protocol.md, "MQTT"): one libmosquitto client on
/// the link's own thread, driven by our poll loop and reconnect backoff. Persistent session
/// (client id = device.id, clean session off, MQTT 5 session expiry), QoS 1 subscription to
/// `<prefix>/<device>/orders`, the v1 order JSON, acks published QoS 1 on `…/acks` only when an
/// order is finally answered, a retained `online`/`offline` status on `…/status`.
///
/// Exactly once: every received order is journaled and fsynced (`InboxStore`) before its
/// PUBACK can leave (libmosquitto writes it at our next `loopWrite`); an ack stays in the
/// outbox (`AckStore`, the same file as v1) until the broker's PUBACK for it, and only then
/// does its order leave the inbox.
public final class MQTTLink: OrderLinking {
    public struct Options: Sendable {
        /// Seconds from the connect to the SUBACK (TCP, TLS, CONNACK, SUBACK).
        public var connectTimeout = 10.0
        public var backoff = ReconnectBackoff()
        public var maxPendingAcks = 100_000
        public var ackStore: AckStore?
        public var inbox: InboxStore?
        /// How long a clean stop waits for the PUBACKs of the last acks (seconds).
        public var stopDrain = 0.5
        public var unixNow: @Sendable () -> Int64 = { Crypto.unixNow() }
        /// Whether the wall clock is synchronized (NTP), for the signature time rule (tests set it).
        public var clockSynchronized: @Sendable () -> Bool = { ClockSync.isSynchronized() }
        /// Most ack messages in flight (published, no PUBACK yet).
        public var maxInflight: UInt32 = 64
        public init() {}
    }

    public let topics: MQTTTopics
    let options: Options
    public let inbox: InboxStore

    private struct Shared {
        /// When the last connection was subscribed (monotonic).
        var connectedAt = 0.0
        var volume: Int?
        /// The retained `online` status is out of date (volume, slot or last update changed, or a
        /// new session): `publishPresence` sends it again.
        var statusChanged = false
        var slot: String?
        var lastUpdate: String?
        var health = DeviceHealth()
    }
    private let shared = Mutex(Shared())
    public let driver: LinkDriver

    public init(config: LinkConfig, deviceID: String, log: Logger, options: Options = Options(), onEvent: @escaping @Sendable (LinkEvent) -> Void) {
        self.options = options
        topics = MQTTTopics(prefix: config.mqtt.prefix, device: deviceID)
        let inbox = options.inbox ?? InboxStore(path: nil, log: log)
        self.inbox = inbox
        // The inbox is closed with an outbox of the link's own (memory only), else the daemon's.
        driver = LinkDriver(threadName: "crier-mqtt", config: config, deviceID: deviceID, log: log, backoff: options.backoff,
                            ackStore: options.ackStore, maxPendingAcks: options.maxPendingAcks, onEvent: onEvent,
                            closeOwned: { inbox.close() })
        driver.bind(prepare: { [config, log] in
            guard let server = config.server else { return }
            if !server.isEncrypted && (config.ca != nil || !config.pins.isEmpty || config.mqtt.clientCert != nil) {
                log.error("server.ca, server.pin and mqtt.cert only apply to mqtts:// brokers; this link is NOT encrypted or verified",
                          ["server": server.description, "hint": "use server = mqtts://HOST:PORT in crier.conf"])
            }
            if !server.isEncrypted && config.mqtt.password != nil {
                log.warning("mqtt.password travels in clear text over mqtt://", ["server": server.description, "hint": "use mqtts:// for a broker outside this LAN"])
            }
            if config.token != nil {
                log.warning("server.token is not used with an MQTT broker; the box authenticates with mqtt.username/mqtt.password or mqtt.cert", ["server": server.description])
            }
        }, session: { [self] in Session(link: self) })
    }


    public func deviceChanged(_ change: DeviceChange) {
        shared.withLock { s in
            switch change {
            case .volume(let volume):
                if s.volume != volume { s.volume = volume; s.statusChanged = true }
            case .update(let slot, let lastUpdate):
                if s.slot != slot || s.lastUpdate != lastUpdate { s.slot = slot; s.lastUpdate = lastUpdate; s.statusChanged = true }
            case .health(let h):
                if s.health != h { s.health = h; s.statusChanged = true }
            }
        }
        wake.wake()
    }

    @discardableResult
    public func send(_ ack: Ack, reply: Bool) -> AckOutbox.Outcome {
        let (r, count) = ackStore.with { o in (o.offer(ack, reply: reply), o.dropped) }
        if let d = r.dropped, count == 1 || count % 1000 == 0 {
            log.warning("too many undelivered acks; dropped the oldest", ["id": d.id, "status": d.status.rawValue, "dropped": count])
        }
        wake.wake()
        return r.outcome
    }

    // MARK: the link thread

    private enum SessionEnd {
        case failedToConnect(MQTTProblem)
        case tlsFailed(String)
        case refused(String, hint: String)
        case lost(MQTTProblem)
        /// The broker does not speak MQTT 5: again at once with 3.1.1.
        case downgrade(String)
    }

    /// The MQTT transport's part of the driver: one libmosquitto client for the link's life,
    /// connected again for each session.
    private final class Session: LinkSession {
        let link: MQTTLink
        var client: MosquittoClient?
        var useV5: Bool
        var verifier: SignatureVerifier?
        /// Acks published and not PUBACKed, by mid, for the client's life: libmosquitto keeps an
        /// unacknowledged QoS 1 publish across a reconnect (same client, persistent session) and
        /// sends it again with the same mid, so its PUBACK can come in a later session. Kept per
        /// session, that PUBACK found nothing, the order stayed in the inbox while the outbox let
        /// the ack go, and the order was said again after the next restart.
        var ackMids: [Int32: Ack] = [:]
        var tls: (TLSContext, MQTTTLSCheck)?
        var configuredV5: Bool?
        var clash = ClientIDClash()
        /// The problem of the last connection lost.
        var lastLoss: MQTTProblem?

        init(link: MQTTLink) {
            self.link = link
            useV5 = link.config.mqtt.protocolChoice != .v311
            verifier = link.config.key.map { SignatureVerifier(key: $0, mac: Crypto.hmacSHA256, startedAt: (link.options.unixNow(), Monotonic.now())) }
        }

        func begin(_ run: LinkRun) -> [(String, String)]? {
            let log = link.log, deviceID = link.deviceID, config = link.config
            // The same rule check-config applies (a config that passed it never gets here).
            if let p = MQTTConfig.deviceIDProblem(deviceID) {
                log.error("cannot use this device.id in MQTT topics; the MQTT link does not connect", ["problem": p, "hint": "set device.id in crier.conf to letters, digits, - and _"])
                return nil
            }
            // Orders received before a restart and not yet answered: the daemon gets them first
            // (its dedupe answers the ones already said from the ack outbox).
            for e in link.inbox.takeReplay() {
                switch e {
                case .order(let o): link.onEvent(.order(o))
                case .cancel(let id): link.onEvent(.cancel(id: id))
                }
            }
            let url = config.server?.description ?? "?"
            let client: MosquittoClient
            do throws(MosquittoError) {
                client = try MosquittoClient(id: deviceID, cleanSession: false, logEnabled: false)
                try client.setCredentials(username: config.mqtt.username, password: config.mqtt.password)
                let will = MQTTTopics.statusPayload(online: false, device: deviceID, version: CrierVersion.string, volume: nil, protocolVersion: nil)
                try client.setWill(topic: link.topics.status, payload: will, qos: 1, retain: true)
            } catch {
                log.error("cannot set up the MQTT client: \(error)", ["server": url])
                return nil
            }
            client.setMaxInflight(link.options.maxInflight)
            client.maxPayload = MQTTLimits.maxPayloadBytes
            self.client = client
            return [("orders", link.topics.orders), ("keepalive", "\(link.keepalive)s")]
        }

        func connect(_ run: LinkRun) -> LinkEnd {
            guard let client, let server = link.config.server else { return .broken }
            let log = link.log, config = link.config
            let url = server.description
            while true {
                var end: SessionEnd?
                if server.isEncrypted && tls == nil {
                    let check = MQTTTLSCheck(host: server.host, pins: config.pins)
                    switch mqttTLSContext(config: config, check: check) {
                    case .success(let c):
                        do throws(MosquittoError) {
                            try client.setTLSContext(c.ctx)
                            tls = (c, check)
                        } catch {
                            log.error("cannot hand the TLS context to libmosquitto: \(error)", ["server": url])
                            return .broken
                        }
                    case .failure(let e): end = .tlsFailed(e.message)
                    }
                }
                if end == nil, configuredV5 != useV5 {
                    do throws(MosquittoError) {
                        try client.setProtocol(v5: useV5, sessionExpiry: UInt32(clamping: config.mqtt.sessionExpiry),
                                               maxPacket: UInt32(MQTTLimits.maxPacketBytes))
                        configuredV5 = useV5
                    } catch {
                        log.error("cannot set the MQTT protocol version: \(error)", ["server": url])
                        return .broken
                    }
                }
                let result = end ?? link.session(client, server, v5: useV5, tls: tls?.1, run: run, verifier: &verifier, ackMids: &ackMids)
                if run.stopping { return .lost(LinkLoss(reason: "stopped")) }
                switch result {
                case .downgrade(let why):
                    // Again at once, with 3.1.1.
                    log.notice("broker does not speak MQTT 5; using MQTT 3.1.1", ["server": url, "error": why])
                    useV5 = false
                    if run.stopping { return .lost(LinkLoss(reason: "stopped")) }
                    run.tick()
                case .tlsFailed(let why):
                    return .failed(LinkFailure(key: why, level: .error, message: why, fields: [],
                                               hint: "check the broker certificate, server.ca and server.pin in crier.conf; the box never falls back to plain MQTT",
                                               again: nil))
                case .failedToConnect(let problem):
                    let headline = problem.headline(connecting: true)
                    return .failed(LinkFailure(key: headline + ": " + problem.detail, level: problem.isError ? .error : .warning,
                                               message: headline, fields: [("error", problem.detail)], hint: problem.hint,
                                               again: ("still: " + headline, problem.detail, false)))
                case .refused(let why, let hint):
                    return .failed(LinkFailure(key: why, level: .error, message: "MQTT broker refused this box", fields: [("error", why)],
                                               hint: hint, again: nil))
                case .lost(let problem):
                    lastLoss = problem
                    return .lost(LinkLoss(reason: problem.detail, level: problem.isError ? .error : .warning,
                                          message: problem.headline(connecting: false), hint: problem.hint))
                }
            }
        }

        func lost(_ loss: LinkLoss, now: Double, run: LinkRun) {
            let deviceID = link.deviceID
            clash.connected(now: link.shared.withLock { $0.connectedAt })
            // MQTT 3.1.1: a broker gives a taken client id no reason, it closes the older
            // connection; two clients with one id then take turns (issue 31 item 11).
            if clash.lost(now: now), lastLoss != .sessionTakenOver(clientID: deviceID) {
                link.log.warning("the connection was lost \(clash.quickLosses) times in a row within \(Int(clash.window)) s of connecting; another client may be using this box's client id \"\(deviceID)\"",
                                 ["server": link.config.server?.description ?? "?", "hint": "each box needs its own device.id: look for another box, or a tool (mosquitto_sub -i \(deviceID)), using client id \"\(deviceID)\""])
            }
        }
    }

    private var keepalive: Int { max(5, Int(config.heartbeat.rounded())) }

    /// Per connection: what is in flight.
    private struct Conn {
        var connacked = false
        var subscribed = false
        var subscribeMid: Int32 = -1
        /// mid of each ack publish → the ack (its PUBACK delivers it); carried from session to
        /// session (see `ackMids` in `run`).
        var ackMids: [Int32: Ack] = [:]
        /// A publish of an ack failed: no more on this connection (the ack was put back and
        /// goes out after the next connect).
        var ackPublishFailed = false
        /// The last mid of each batch of acks, oldest first: its PUBACK is the outbox's "pong".
        var probeMids: [Int32] = []
        var statusMid: Int32 = -1
        var refusedAcks = 0
        var badMessages = 0
        var unauthenticated = 0
        var otherTopics = 0
        var oversize = 0
        /// A final rejection went into the outbox during this batch: the file is written
        /// before the batch's PUBACKs may leave.
        var rejectionsToWrite = false
    }

    private func session(_ client: MosquittoClient, _ server: ServerAddress, v5: Bool, tls: MQTTTLSCheck?,
                         run: LinkRun, verifier: inout SignatureVerifier?,
                         ackMids: inout [Int32: Ack]) -> SessionEnd {
        _ = tls?.take()
        _ = client.takeEvents()
        if let e = client.connect(host: server.host, port: server.port, keepalive: keepalive) {
            // On loopback the handshake can fail inside the connect call itself.
            if let why = tls?.take() { return .tlsFailed(why) }
            return .failedToConnect(MosquittoClient.problem(code: e.code, errno: e.errno, host: server.host, clientID: deviceID, connecting: true))
        }
        let started = Monotonic.now()
        var conn = Conn()
        conn.ackMids = ackMids
        defer { ackMids = conn.ackMids }
        var lastMisc = started
        var end: SessionEnd?

        func ended(code: Int32, errno e: Int32) -> SessionEnd {
            if let why = tls?.take() { return .tlsFailed(why) }
            if !conn.connacked, v5, config.mqtt.protocolChoice == .auto,
               code == MosquittoClient.errProtocol || code == MosquittoClient.errMalformed {
                return .downgrade(MosquittoClient.errorText(code, errno: e))
            }
            let problem = MosquittoClient.problem(code: code, errno: e, host: server.host, clientID: deviceID, connecting: !conn.subscribed)
            return conn.subscribed ? .lost(problem) : .failedToConnect(problem)
        }

        while !stopping {
            tick()
            if let e = handleEvents(client, &conn, v5: v5, run: run, verifier: &verifier) { end = e; break }
            if conn.subscribed { publishAcks(client, &conn) }
            if client.wantWrite {
                let w = client.loopWrite()
                if w.code != 0 {
                    if let e = handleEvents(client, &conn, v5: v5, run: run, verifier: &verifier) { end = e; break }
                    end = ended(code: w.code, errno: w.errno)
                    break
                }
            }
            let fd = client.socket
            if fd < 0 {
                if let e = handleEvents(client, &conn, v5: v5, run: run, verifier: &verifier) { end = e; break }
                end = ended(code: MosquittoClient.errNoConn, errno: 0)
                break
            }
            let now = Monotonic.now()
            if !conn.subscribed && now - started > options.connectTimeout {
                let what = !conn.connacked ? (server.isEncrypted ? "TLS handshake and CONNACK" : "CONNACK") : "SUBACK"
                end = .failedToConnect(.unreachable("no \(what) within \(fmt1(options.connectTimeout)) s" + (server.isEncrypted && !conn.connacked ? " (is the broker speaking TLS on this port?)" : "")))
                break
            }
            let more = conn.subscribed && conn.probeMids.count < 32 && ackStore.peek { $0.hasSendable }
            let timeout: Int32 = more ? 0 : 1000
            var events = Int16(POLLIN) | pollRDHUP
            if client.wantWrite { events |= Int16(POLLOUT) }
            var fds = [pollfd(fd: fd, events: events, revents: 0), pollfd(fd: wake.readFD, events: Int16(POLLIN), revents: 0)]
            let n = poll(&fds, 2, timeout)
            if n < 0 && errno != EINTR { end = .lost(.lost("poll failed: \(errnoText(errno))")); break }
            if fds[1].revents != 0 {
                wake.drain()
                // A change while nothing arrives from the broker (a volume button, an update's
                // outcome) goes out now, not at the next PINGRESP.
                publishPresence(client, &conn, v5: v5)
            }
            if fds[0].revents & (Int16(POLLIN) | Int16(POLLERR) | Int16(POLLHUP) | pollRDHUP) != 0 {
                let r = client.loopRead()
                // At once: what arrived is journaled before any other library call can write.
                if let e = handleEvents(client, &conn, v5: v5, run: run, verifier: &verifier) { end = e; break }
                if r.code != 0 {
                    end = ended(code: r.code, errno: r.errno)
                    break
                }
                if !conn.connacked, fds[0].revents & (Int16(POLLHUP) | pollRDHUP) != 0 {
                    // libmosquitto retries a TLS handshake on a closed socket for ever.
                    if let e = handleEvents(client, &conn, v5: v5, run: run, verifier: &verifier) { end = e; break }
                    if let why = tls?.take() { end = .tlsFailed(why); break }
                    if v5, config.mqtt.protocolChoice == .auto, !server.isEncrypted { end = .downgrade("the broker closed the connection after an MQTT 5 CONNECT"); break }
                    end = .failedToConnect(.unreachable("the broker closed the connection before CONNACK" + (server.isEncrypted ? " (is it speaking TLS on this port?)" : "")))
                    break
                }
            }
            if Monotonic.now() - lastMisc >= 1 {
                lastMisc = Monotonic.now()
                let rc = client.loopMisc()
                if rc != 0 && rc != MosquittoClient.errNoConn {
                    if let e = handleEvents(client, &conn, v5: v5, run: run, verifier: &verifier) { end = e; break }
                    end = ended(code: rc, errno: errno)
                    break
                }
            }
        }
        if stopping && end == nil {
            drainAndDisconnect(client, &conn, v5: v5, run: run, verifier: &verifier)
            return .lost(.lost("stopped"))
        }
        // Whatever happened, the connection is over: the next connect starts afresh.
        client.disconnect()
        _ = client.takeEvents()
        return end ?? .lost(.lost("stopped"))
    }

    /// A clean stop: `offline` status, the acks still unconfirmed get `stopDrain` to be
    /// PUBACKed, DISCONNECT (the session stays; the will is not sent, so the status says it).
    private func drainAndDisconnect(_ client: MosquittoClient, _ conn: inout Conn, v5: Bool, run: LinkRun, verifier: inout SignatureVerifier?) {
        guard conn.subscribed else { client.disconnect(); return }
        publishAcks(client, &conn)
        let off = MQTTTopics.statusPayload(online: false, device: deviceID, version: CrierVersion.string, volume: nil, protocolVersion: nil)
        _ = client.publish(topic: topics.status, payload: off, qos: 1, retain: true)
        let until = Monotonic.now() + options.stopDrain
        // `hasUnwritten` too: the acks of an alert that ended in the grace period wait for the
        // outbox file's write (write-ahead) a few ms; stopping before it left them unpublished,
        // their orders pending in the inbox, to be handed over again after the restart (soak).
        while Monotonic.now() < until, !conn.ackMids.isEmpty || ackStore.peek({ $0.hasSendable || $0.hasUnwritten }) {
            if client.wantWrite, client.loopWrite().code != 0 { break }
            let fd = client.socket
            if fd < 0 { break }
            var fds = [pollfd(fd: fd, events: Int16(POLLIN) | (client.wantWrite ? Int16(POLLOUT) : 0), revents: 0)]
            _ = poll(&fds, 1, 50)
            if fds[0].revents != 0, client.loopRead().code != 0 { break }
            // Orders arriving now are journaled too: their PUBACK may still leave.
            _ = handleEvents(client, &conn, v5: v5, run: run, verifier: &verifier, stopping: true)
            publishAcks(client, &conn)
        }
        if client.wantWrite { _ = client.loopWrite() }
        client.disconnect()
        _ = handleEvents(client, &conn, v5: v5, run: run, verifier: &verifier, stopping: true)
    }

    /// Publishes acks from the outbox: one batch, then its last mid is the probe.
    private func publishAcks(_ client: MosquittoClient, _ conn: inout Conn) {
        guard conn.probeMids.count < 32, !conn.ackPublishFailed else { return }
        let now = Monotonic.now()
        var published: [(Int32, Ack)] = []
        var failure: MosquittoError?
        ackStore.with { o in
            var last: Int32?
            while published.count < 64, let e = o.takeNextEntry() {
                switch client.publish(topic: topics.acks, payload: ProtocolCodec.encode(.ack(e.ack)), qos: 1, retain: false) {
                case .success(let mid):
                    published.append((mid, e.ack))
                    last = mid
                case .failure(let err):
                    failure = err
                    // Not sent: the outbox must not count it as written (it would then only
                    // answer a redelivery, and a broker never redelivers the box's own ack).
                    if e.ack.status == .rejected && !AckOutbox.isKeptInFile(e.ack) { _ = o.add(e.ack) } else { o.unflushed(after: e.seq - 1) }
                }
                if failure != nil { break }
            }
            if last != nil { o.pinged(now: now) }
        }
        for (mid, a) in published { conn.ackMids[mid] = a }
        if let last = published.last?.0 { conn.probeMids.append(last) }
        if let failure {
            conn.ackPublishFailed = true
            log.warning("cannot publish an ack; it is sent again after the next connect", ["error": failure.description])
        }
    }

    /// Acts on what libmosquitto reported. Received orders are journaled (one fsync for the
    /// batch) before this returns, so before the next `loopWrite` sends their PUBACKs.
    private func handleEvents(_ client: MosquittoClient, _ conn: inout Conn, v5: Bool, run: LinkRun, verifier: inout SignatureVerifier?, stopping: Bool = false) -> SessionEnd? {
        let events = client.takeEvents()
        guard !events.isEmpty else { return nil }
        var arrivals: [Arrival] = []  // orders, cancels and malformed orders, in the broker's order
        var delivered: [Ack] = []
        var pongs = 0
        var end: SessionEnd?
        let url = config.server?.description ?? "?"
        for e in events {
            switch e {
            case .connected(let code, let sessionPresent):
                guard code == 0 else {
                    if v5, config.mqtt.protocolChoice == .auto, code == 132 || code == 1 {
                        end = .downgrade(MosquittoClient.connackText(code, v5: true))
                    } else {
                        let text = MosquittoClient.connackText(code, v5: v5)
                        end = .refused("\(text) (code \(code))", hint: "check mqtt.username, mqtt.password and device.id in crier.conf, and the broker's password file and ACL")
                    }
                    continue
                }
                conn.connacked = true
                log.debug("MQTT connected", ["server": url, "session_present": sessionPresent, "protocol": v5 ? "5" : "3.1.1"])
                switch client.subscribe(topic: topics.orders, qos: 1) {
                case .success(let mid): conn.subscribeMid = mid
                case .failure(let err): end = .lost(.lost("cannot subscribe: \(err)"))
                }
            case .subscribed(let mid, let granted):
                guard mid == conn.subscribeMid else { continue }
                if let g = granted.first, g >= 0 && g <= 2 {
                    conn.subscribed = true
                    ackStore.with { $0.connectionStarted() }
                    conn.probeMids = []
                    let t = Monotonic.now()
                    shared.withLock { $0.statusChanged = true; $0.connectedAt = t }
                    run.connected(at: t, [("protocol", v5 ? "MQTT 5" : "MQTT 3.1.1"), ("orders", topics.orders)])
                } else {
                    let g = granted.first ?? -1
                    end = .refused("the broker refused the subscription to \(topics.orders) (\(MosquittoClient.reasonText(g)), code \(g))",
                                   hint: "the broker's ACL must let this box's user read \(topics.orders) and write \(topics.acks) and \(topics.status)")
                }
            case .disconnected(let code, let err):
                if end == nil, code != 0 {
                    let problem = MosquittoClient.problem(code: code, errno: err, host: config.server?.host ?? "?", clientID: deviceID, connecting: !conn.subscribed)
                    end = conn.subscribed ? .lost(problem) : .failedToConnect(problem)
                }
            case .published(let mid, let reason):
                if let a = conn.ackMids.removeValue(forKey: mid) {
                    delivered.append(a)
                    if reason >= 0x80 {
                        conn.refusedAcks += 1
                        if conn.refusedAcks == 1 {
                            log.error("the broker refused this box's ack", ["server": url, "id": a.id, "error": MosquittoClient.reasonText(reason),
                                                                         "hint": "the broker's ACL must let this box's user write \(topics.acks)"])
                        }
                    }
                }
                if let i = conn.probeMids.firstIndex(of: mid) {
                    pongs += i + 1
                    conn.probeMids.removeFirst(i + 1)
                }
            case .message(_, let topic, let payload, _, _):
                guard topic == topics.orders else {
                    conn.otherTopics += 1
                    if conn.otherTopics <= 10 { log.warning("message on an unexpected topic ignored", ["server": url, "topic": topic]) }
                    continue
                }
                if let a = decode(payload, &conn, verifier: &verifier) { arrivals.append(a) }
            case .oversize(_, let topic, let size, _):
                // Only a 3.1.1 session, or a broker that ignores the Maximum Packet Size of the
                // MQTT 5 CONNECT, sends one. libmosquitto has read it whole (that memory is
                // gone again); its PUBACK is queued: it is never delivered again.
                conn.oversize += 1
                if conn.oversize <= 10 {
                    log.warning("message from the broker larger than this box takes; dropped, not an order",
                                ["server": url, "topic": topic, "size": size, "limit": MQTTLimits.maxPayloadBytes,
                                 "hint": "an order is at most \(ProtocolCodec.maxLineBytes) bytes of JSON; set max_packet_size \(MQTTLimits.maxPacketBytes) on the broker so it refuses such messages (docs/fleet.md)"])
                }
            case .log(let level, let text):
                log.debug("libmosquitto", ["level": level, "text": text])
            }
        }
        // On the card before anything else happens: the PUBACKs go out at the next loopWrite.
        let received = arrivals.compactMap { a -> OrderInbox.Entry? in if case .entry(let e) = a { e } else { nil } }
        if !received.isEmpty, !inbox.received(received) {
            // Not on the card for lack of space, even after the reserve made room (issue 31):
            // their PUBACKs must not leave. The socket is shut before any loopWrite, so the
            // broker keeps them and delivers them again on the next connection.
            if client.socket >= 0 { _ = Glibc.shutdown(client.socket, Int32(SHUT_RDWR)) }
            if end == nil { end = .lost(.lost("the order inbox cannot be written (the data partition is full): \(received.count) order(s) left with the broker, not PUBACKed")) }
            arrivals.removeAll { if case .entry = $0 { true } else { false } }
        }
        // The broker has these acks: the orders leave the inbox, then the outbox lets them go.
        if !delivered.isEmpty { inbox.delivered(delivered) }
        if pongs > 0 { ackStore.with { o in for _ in 0..<pongs { _ = o.pong() } } }
        for a in arrivals {
            switch a {
            case .entry(.order(let o)):
                // Every delivery asks for an answer: an order server republishes an order whose
                // ack it lacks (the broker's PUBACK of our ack says nothing about the server).
                // Without this, an ack already confirmed on this connection swallowed the
                // dedupe's answer: logged "acked again", nothing published (issue 31).
                ackStore.with { $0.deliveredAgain(o.id) }
                onEvent(.order(o))
            case .entry(.cancel(let id)): onEvent(.cancel(id: id))
            case .rejected(let ack):
                // Answered here, into the outbox file before the PUBACK: a crash cannot lose it.
                // Checked against the inbox (this batch's cancels are in it now), so a cancel
                // that came first keeps its answer (chaos seed 34641, v1).
                guard let answer = inbox.answer(rejected: ack) else { continue }
                ackStore.with { _ = $0.add(answer) }
                conn.rejectionsToWrite = true
                if answer.status == .rejected { onEvent(.rejected(answer, answered: true)) }
            }
        }
        if conn.rejectionsToWrite {
            // The malformed order is in no journal and its PUBACK leaves at the next loopWrite
            // (libmosquitto's threaded mode only queues it): after that the broker never
            // delivers it again, so its rejection is appended and fsynced here, on this
            // thread, not left to the outbox's writer (a SIGKILL in between lost the order's
            // only answer). One append per batch, only in a batch with a rejection.
            conn.rejectionsToWrite = false
            ackStore.persist()
        }
        if !stopping { publishPresence(client, &conn, v5: v5) }
        return end
    }

    /// The retained `online` status, again when the volume, slot or last update changed (or
    /// the session was just subscribed).
    private func publishPresence(_ client: MosquittoClient, _ conn: inout Conn, v5: Bool) {
        guard conn.subscribed else { return }
        let presence = shared.withLock { s -> (volume: Int?, slot: String?, lastUpdate: String?, health: DeviceHealth)? in
            guard s.statusChanged else { return nil }
            s.statusChanged = false
            return (s.volume, s.slot, s.lastUpdate, s.health)
        }
        guard let p = presence else { return }
        let payload = MQTTTopics.statusPayload(online: true, device: deviceID, version: CrierVersion.string, volume: p.volume,
                                               protocolVersion: v5 ? "5" : "3.1.1", slot: p.slot, lastUpdate: p.lastUpdate,
                                               health: p.health)
        if case .success(let mid) = client.publish(topic: topics.status, payload: payload, qos: 1, retain: true) { conn.statusMid = mid }
    }

    private enum Arrival {
        case entry(OrderInbox.Entry)
        /// Malformed, with an id: answered after the batch is journaled.
        case rejected(Ack)
    }

    /// One message from the order topic: an order or cancel to journal, a malformed order to
    /// answer, or nil (refused; an unauthenticated order is answered here).
    private func decode(_ payload: [UInt8], _ conn: inout Conn, verifier: inout SignatureVerifier?) -> Arrival? {
        let url = config.server?.description ?? "?"
        var body = payload[...]
        while let last = body.last, last == 0x0A || last == 0x0D { body = body.dropLast() }
        func bad(_ message: String, ack: Ack?) {
            conn.badMessages += 1
            if conn.badMessages <= 10 {
                log.warning("bad message from broker", ["server": url, "error": message, "message": OrderLink.excerpt(Array(body)), "id": ack?.id ?? "-"])
            } else if conn.badMessages == 11 {
                log.warning("more bad messages from broker; not logging each", ["server": url])
            }
        }
        guard body.count <= ProtocolCodec.maxLineBytes else {
            bad("message longer than \(ProtocolCodec.maxLineBytes) bytes (\(body.count))", ack: nil)
            return nil
        }
        let decoded = ProtocolCodec.decodeKeepingObject(body)
        let message: ProtocolMessage
        switch decoded.message {
        case .success(let m): message = m
        case .failure(let e):
            bad(e.message, ack: e.rejectedAck)
            return e.rejectedAck.map { .rejected($0) }
        }
        switch message {
        case .order(let o):
            if let r = verifier?.check(decoded.object ?? JSONObject(), now: options.unixNow(), synchronized: options.clockSynchronized(), monotonic: Monotonic.now()) {
                conn.unauthenticated += 1
                if conn.unauthenticated <= 20 {
                    log.warning("order rejected: \(r.reason.rawValue)", ["server": url, "id": o.id, "reason": r.reason.rawValue, "error": r.message])
                }
                ackStore.with { _ = $0.add(Ack(id: o.id, status: .rejected, reason: r.reason.rawValue, message: r.message)) }
                conn.rejectionsToWrite = true
                return nil
            }
            return .entry(.order(o))
        case .cancel(let id):
            if let r = verifier?.check(decoded.object ?? JSONObject(), now: options.unixNow(), synchronized: options.clockSynchronized(), monotonic: Monotonic.now()) {
                conn.unauthenticated += 1
                if conn.unauthenticated <= 20 {
                    log.warning("cancel rejected: \(r.reason.rawValue)", ["server": url, "id": id, "reason": r.reason.rawValue, "error": r.message])
                }
                return nil
            }
            return .entry(.cancel(id: id))
        case .update(let offer):
            // Not journaled: an offer lost in a restart is offered again by the server.
            if let r = verifier?.check(decoded.object ?? JSONObject(), now: options.unixNow(), synchronized: options.clockSynchronized(), monotonic: Monotonic.now()) {
                conn.unauthenticated += 1
                if conn.unauthenticated <= 20 {
                    log.warning("update offer rejected: \(r.reason.rawValue)", ["server": url, "version": offer.version, "error": r.message])
                }
                return nil
            }
            onEvent(.updateOffer(offer))
            return nil
        default:
            bad("only order, cancel and update messages belong on \(topics.orders), got \(message.typeName)", ack: nil)
            return nil
        }
    }
}

/// POLLRDHUP (Linux, 0x2000): the peer closed its end. Glibc's module does not export it.
private let pollRDHUP: Int16 = 0x2000
