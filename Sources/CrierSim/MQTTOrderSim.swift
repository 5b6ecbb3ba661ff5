import CrierCore
import CrierLink
import CrierMosquitto
import CrierPosix
import Glibc
import Synchronization

/// Where `crier-sim order-sim --mqtt URL` publishes and what it reads (docs/protocol.md, "MQTT").
public struct MQTTSimConfig: Sendable {
    public var server: ServerAddress
    public var prefix = "crier"
    /// Boxes to send orders to, round robin.
    public var devices = ["crier"]
    public var username: String?
    public var password: String?
    public var ca: String?
    public var pins: [[UInt8]] = []
    /// The ack reader's client id: a persistent session, so acks published while the simulator
    /// is down wait on the broker.
    public var clientID = "crier-order-sim"
    /// Print only the summary (benchmarks).
    public var quiet = false

    public init(server: ServerAddress) { self.server = server }
}

/// `crier-sim order-sim --mqtt URL`: the order-server side over a broker. Publishes orders (QoS 1)
/// to `<prefix>/<device>/orders`, reads every box's acks and status from `<prefix>/+/acks` and
/// `<prefix>/+/status` with a persistent session, prints one line per event and, at the end, the
/// publish → ack latency. Ids are `M<start unix seconds>-<n>` (unique across restarts).
public final class MQTTOrderSim: Sendable {
    public let mqtt: MQTTSimConfig
    public let orders: OrderServerConfig
    private let output: @Sendable (String) -> Void

    public struct Summary: Sendable {
        public var orders = 0
        public var byStatus: [String: Int] = [:]
        public var duplicates = 0
        public var unacked = 0
        /// Publish → first ack, seconds, one per acked order.
        public var latencies: [Double] = []
        public var timedOut = false
    }

    public init(mqtt: MQTTSimConfig, orders: OrderServerConfig, output: @escaping @Sendable (String) -> Void = { print($0) }) {
        self.mqtt = mqtt
        self.orders = orders
        self.output = output
    }

    private let stop = Atomic<Bool>(false)
    private let wake = WakePipe()
    private let typed = Mutex<[String]>([])

    /// Ends `run` soon (from another thread).
    public func requestStop() {
        stop.store(true, ordering: .relaxed)
        wake.wake()
    }

    public func run() throws(OrderServerError) -> Summary {
        let client: MosquittoClient
        var tls: (TLSContext, MQTTTLSCheck)?
        do throws(MosquittoError) {
            client = try MosquittoClient(id: mqtt.clientID, cleanSession: false)
            try client.setCredentials(username: mqtt.username, password: mqtt.password)
            try client.setProtocol(v5: true, sessionExpiry: 86_400)
            client.setMaxInflight(1000)
            if mqtt.server.isEncrypted {
                var lc = LinkConfig()
                lc.ca = mqtt.ca
                lc.pins = mqtt.pins
                let check = MQTTTLSCheck(host: mqtt.server.host, pins: mqtt.pins)
                if case .success(let c) = mqttTLSContext(config: lc, check: check) {
                    try client.setTLSContext(c.ctx)
                    tls = (c, check)
                }
            }
        } catch {
            throw OrderServerError(message: "cannot set up the MQTT client: \(error)")
        }
        if mqtt.server.isEncrypted, tls == nil {
            var lc = LinkConfig()
            lc.ca = mqtt.ca
            if case .failure(let e) = mqttTLSContext(config: lc, check: MQTTTLSCheck(host: mqtt.server.host, pins: [])) {
                throw OrderServerError(message: e.message)
            }
        }
        if let e = client.connect(host: mqtt.server.host, port: mqtt.server.port, keepalive: 30) {
            throw OrderServerError(message: tls?.1.take() ?? "cannot reach the broker \(mqtt.server): \(e)")
        }
        if orders.readStdin { startStdinReader() }
        let idBase = orders.idPrefix ?? "M\(Crypto.unixNow())-"
        let signer = orders.key.map { OrderSigner(key: $0, clock: { Crypto.unixNow() }) }
        var rng: SplitMix64 = orders.seed.map { SplitMix64(seed: $0) } ?? SplitMix64(seed: UInt64(truncatingIfNeeded: Int64(Monotonic.now() * 1e9)))
        var summary = Summary()
        var sentAt: [String: Double] = [:]
        var acked: Set<String> = []
        var n = 0
        var subscribed = false
        var nextOrder: Double?
        var lastOrderAt: Double?
        var lastMisc = Monotonic.now()
        let started = Monotonic.now()

        func schedule(_ now: Double) {
            if let r = orders.rate {
                nextOrder = (nextOrder ?? now) + 1 / r
            } else if orders.randomOrders {
                nextOrder = now + Double.random(in: orders.every, using: &rng)
            } else {
                nextOrder = nil
            }
        }
        func publish(_ o: Order, to device: String) {
            var obj = ProtocolCodec.object(.order(o))
            if let signer { obj = signer.sign(obj) }
            let topic = MQTTTopics(prefix: mqtt.prefix, device: device).orders
            switch client.publish(topic: topic, payload: JSON.write(.object(obj)), qos: 1, retain: false) {
            case .success:
                sentAt[o.id] = Monotonic.now()
                summary.orders += 1
                lastOrderAt = Monotonic.now()
                if !mqtt.quiet {
                    switch (o.kind.spec, o.kind.value) {
                    case (.newCustomer, .integer(let num)): output("order id=\(o.id) kind=new_customer number=\(num) device=\(device)")
                    default: output("order id=\(o.id) kind=\(o.kind.name) device=\(device)")
                    }
                }
            case .failure(let e): output("publish failed id=\(o.id) error=\(Self.quoted(e.description))")
            }
        }

        while !stop.load(ordering: .relaxed) {
            for e in client.takeEvents() {
                switch e {
                case .connected(let code, _):
                    guard code == 0 else { throw OrderServerError(message: "the broker refused the simulator: \(MosquittoClient.connackText(code, v5: true))") }
                    _ = client.subscribe(topic: mqtt.prefix + "/+/acks", qos: 1)
                    _ = client.subscribe(topic: mqtt.prefix + "/+/status", qos: 1)
                case .subscribed:
                    if !subscribed {
                        subscribed = true
                        output("connected server=\(mqtt.server) acks=\(mqtt.prefix)/+/acks devices=" + (mqtt.devices.count <= 5 ? mqtt.devices.joined(separator: ",") : "\(mqtt.devices.count)"))
                        // The first random order after one interval: a box starting with the
                        // simulator (crier-sim demo --mqtt) has subscribed by then.
                        schedule(Monotonic.now())
                    }
                case .disconnected(let code, let err):
                    if code != 0 { throw OrderServerError(message: "lost the broker: \(MosquittoClient.errorText(code, errno: err))") }
                case .message(_, let topic, let payload, _, _):
                    let parts = topic.split(separator: "/").map(String.init)
                    let device = parts.count >= 2 ? parts[parts.count - 2] : "?"
                    if topic.hasSuffix("/status") {
                        if !mqtt.quiet { output("status device=\(device) \(String(decoding: payload, as: UTF8.self))") }
                        continue
                    }
                    guard case .success(.ack(let a)) = ProtocolCodec.decode(payload) else {
                        output("bad_message device=\(device) error=\"not an ack\"")
                        continue
                    }
                    if acked.contains(a.id) {
                        summary.duplicates += 1
                    } else if a.status != .rejected || a.reason != "queue_full" {
                        acked.insert(a.id)
                        summary.byStatus[a.status.rawValue, default: 0] += 1
                        if let t = sentAt[a.id] { summary.latencies.append(Monotonic.now() - t) }
                    }
                    if !mqtt.quiet {
                        output("ack id=\(a.id) status=\(a.status.rawValue) device=\(device)" + (a.reason.map { " reason=\($0)" } ?? "")
                               + (a.message.map { " message=\(Self.quoted($0))" } ?? ""))
                    }
                default: break
                }
            }
            let now = Monotonic.now()
            if subscribed {
                for line in typed.withLock({ t in defer { t = [] }; return t }) {
                    n += 1
                    let id = idBase + String(n)
                    let o = Int(line).map { Order(id: id, kind: .newCustomer(number: $0)) } ?? Order(id: id, kind: .text(line))
                    publish(o, to: mqtt.devices[0])
                }
                var burst = 0
                while let t = nextOrder, t <= now, orders.count.map({ n < $0 }) ?? true, burst < 1000 {
                    n += 1
                    burst += 1
                    let o = Order(id: idBase + String(n), kind: .newCustomer(number: Int.random(in: orders.numbers, using: &rng)))
                    publish(o, to: mqtt.devices[(n - 1) % mqtt.devices.count])
                    schedule(now)
                }
                if let c = orders.count, n >= c {
                    nextOrder = nil
                    if acked.count >= summary.orders { break }
                    if let last = lastOrderAt, now - last > orders.drainTimeout {
                        summary.timedOut = true
                        break
                    }
                }
            }
            if client.wantWrite, client.loopWrite().code != 0 { continue }
            let fd = client.socket
            if fd < 0 {
                if let why = tls?.1.take() { throw OrderServerError(message: why) }
                throw OrderServerError(message: "lost the broker \(mqtt.server)")
            }
            if !subscribed, now - started > 10 { throw OrderServerError(message: "no answer from the broker \(mqtt.server) within 10 s") }
            var fds = [pollfd(fd: fd, events: Int16(POLLIN) | (client.wantWrite ? Int16(POLLOUT) : 0), revents: 0),
                       pollfd(fd: wake.readFD, events: Int16(POLLIN), revents: 0)]
            let wait = nextOrder.map { max(0, min(1, $0 - now)) } ?? 1
            _ = poll(&fds, 2, Int32(wait * 1000))
            if fds[1].revents != 0 { wake.drain() }
            if fds[0].revents != 0 {
                let r = client.loopRead()
                if r.code != 0 {
                    if let why = tls?.1.take() { throw OrderServerError(message: why) }
                    _ = client.takeEvents()
                    throw OrderServerError(message: "lost the broker: \(MosquittoClient.errorText(r.code, errno: r.errno))")
                }
            }
            if now - lastMisc >= 1 {
                lastMisc = now
                _ = client.loopMisc()
            }
        }
        summary.unacked = sentAt.keys.filter { !acked.contains($0) }.count
        client.disconnect()
        let lat = summary.latencies.sorted()
        func pct(_ p: Double) -> String {
            guard !lat.isEmpty else { return "-" }
            return Format.fixed(lat[min(lat.count - 1, Int(Double(lat.count) * p))] * 1000, 1)
        }
        output("done orders=\(summary.orders) spoken=\(summary.byStatus["spoken"] ?? 0) expired=\(summary.byStatus["expired"] ?? 0) "
               + "cancelled=\(summary.byStatus["cancelled"] ?? 0) rejected=\(summary.byStatus["rejected"] ?? 0) unacked=\(summary.unacked) "
               + "duplicate_acks=\(summary.duplicates) latency_p50_ms=\(pct(0.5)) latency_p99_ms=\(pct(0.99))")
        _ = tls
        return summary
    }

    private func startStdinReader() {
        try? PosixThread.detach(name: "crier-sim-stdin") { [self] in
            var buf = [UInt8](repeating: 0, count: 4096)
            var line: [UInt8] = []
            while true {
                let k = read(0, &buf, buf.count)
                if k <= 0 { return }
                for b in buf[0..<k] {
                    if b == 0x0A {
                        let s = String(decoding: line, as: UTF8.self).filter { $0 != "\r" }
                        if !s.allSatisfy({ $0 == " " }) { typed.withLock { $0.append(s) } }
                        line = []
                        wake.wake()
                    } else {
                        line.append(b)
                    }
                }
            }
        }
    }

    static func quoted(_ s: String) -> String {
        guard s.contains(where: { $0 == " " || $0 == "\"" || $0 == "=" || $0 == "\\" }) else { return s }
        var out = "\""
        for c in s {
            if c == "\"" || c == "\\" { out.append("\\") }
            out.append(c)
        }
        return out + "\""
    }
}
