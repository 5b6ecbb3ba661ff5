import CrierCore
import CrierPosix
import Glibc
import Synchronization

/// What the link tells its owner. `connected` and `disconnected` alternate, starting with
/// `connected` (the link is down until the first welcome).
public enum LinkEvent: Sendable, Equatable {
    /// Handshake done; the string is the server (`tcp://10.0.0.5:7700`).
    case connected(String)
    case disconnected(reason: String)
    case order(Order)
    case cancel(id: String)
    /// An order the link could not decode (malformed: `invalid_order`). `answered == false`
    /// (the v1 link): the owner decides the answer (`AlertQueue.refuse`) in the order of the
    /// other events, since a cancel just before it may already have made the id final (chaos
    /// seed 34641). `answered == true` (MQTT, whose rejection is journaled before the broker's
    /// PUBACK): already answered; for the owner's memory, a later cancel gets the same answer.
    case rejected(Ack, answered: Bool)
    /// The server offers an update bundle (docs/updates.md); signed like orders when
    /// `server.key` is set.
    case updateOffer(UpdateOffer)
}

/// The box's end of protocol v1 (docs/protocol.md): one TCP (or TLS, `tls://`) connection to the
/// order server on its own thread, reconnecting forever with backoff. Orders and cancels go to
/// `onEvent` (called on the link thread: hand them off, don't block); acks come back through
/// `send`. With `server.key` set, unsigned, forged, stale and replayed orders are acked
/// `rejected` here and never reach `onEvent`.
public final class OrderLink: OrderLinking {
    public struct Options: Sendable {
        /// Seconds to wait for a TCP connect.
        public var connectTimeout = 5.0
        /// Seconds to wait for `welcome` after `hello`; nil: 2 × heartbeat, at most 10.
        public var handshakeTimeout: Double?
        public var backoff = ReconnectBackoff()
        /// Most acks kept in memory until delivered; the oldest go first (the server
        /// redelivers their orders and the queue's dedupe answers them again).
        public var maxPendingAcks = 100_000
        /// The outbox with its file (the daemon's, shared with a link that replaces this one);
        /// nil: a memory-only one of `maxPendingAcks`, closed by `stop`.
        public var ackStore: AckStore?
        /// Bytes waiting to be sent before the server counts as not reading (the link is reset).
        public var maxOutput = 4 << 20
        /// How long a clean stop waits for the pong confirming the last acks (seconds).
        public var stopDrain = 0.5
        /// Unix seconds for signature time checks (tests shift it).
        public var unixNow: @Sendable () -> Int64 = { Crypto.unixNow() }
        /// Whether the wall clock is synchronized (NTP), for the signature time rule (tests set it).
        public var clockSynchronized: @Sendable () -> Bool = { ClockSync.isSynchronized() }
        /// The software version the hello names beside the box's id (docs/protocol.md, section 3);
        /// the booted slot and the last update come from `deviceChanged`.
        public var software: String?
        /// SCHED_FIFO priority the link thread waits for the server at (0: ordinary), within a
        /// budget of work (`RealtimeWaitBudget`): the daemon's `speech.start_priority`.
        public var waitPriority = 0
        public init() {}
    }

    /// Set once the kernel refused the wait priority (logged once; never asked again).
    private let waitPriorityRefused = Atomic<Bool>(false)
    private let waitPriorityLogged = Atomic<Bool>(false)

    static let waitAsker = ThreadPolicy.Asker(thread: "link thread", key: "speech.start_priority",
                                              cost: "an order may wait for the box's other programs before it is read",
                                              grantedNote: " while it waits for the server (within 2% of a core)")

    /// The link thread's scheduling while it waits (`Options.waitPriority`). Returns what it is now.
    private func setWaitPriority(_ realtime: Bool, flood: Bool) -> Bool {
        if !realtime {
            ThreadScheduling.setOrdinary()
            if flood {
                log.warning("the order server keeps the link busy (over 2% of a core in a second): the link thread waits as an ordinary thread until it calms down",
                            ["server": config.server?.description ?? "-"])
            }
            return false
        }
        if waitPriorityRefused.load(ordering: .relaxed) { return false }
        let code = ThreadScheduling.requestRealtime(priority: options.waitPriority)
        if code != 0 { waitPriorityRefused.store(true, ordering: .relaxed) }
        // A refusal is never asked again, so it is logged once; a grant, the first time.
        let first = code != 0 || !waitPriorityLogged.exchange(true, ordering: .relaxed)
        let policy = ThreadPolicy.asked(options.waitPriority, errno: code, errnoName: errnoName(code), errnoText: errnoText(code),
                                        by: Self.waitAsker, log: first ? log : nil)
        return policy.kind == .fifo
    }

    let options: Options

    /// What the next hello says about updates (`deviceChanged`).
    private struct Shared {
        var slot: String?
        var lastUpdate: String?
        var health = DeviceHealth()
    }
    private let shared = Mutex(Shared())
    public let driver: LinkDriver

    public convenience init(config: LinkConfig, deviceID: String, log: Logger, onEvent: @escaping @Sendable (LinkEvent) -> Void) {
        self.init(config: config, deviceID: deviceID, log: log, options: Options(), onEvent: onEvent)
    }

    public init(config: LinkConfig, deviceID: String, log: Logger, options: Options, onEvent: @escaping @Sendable (LinkEvent) -> Void) {
        self.options = options
        driver = LinkDriver(threadName: "crier-link", config: config, deviceID: deviceID, log: log, backoff: options.backoff,
                            ackStore: options.ackStore, maxPendingAcks: options.maxPendingAcks, onEvent: onEvent)
        driver.bind(prepare: { [config, log] in
            guard let server = config.server else { return }
            if server.transport != .tls && (config.ca != nil || !config.pins.isEmpty) {
                log.error("server.ca and server.pin only apply to tls:// servers; this link is NOT encrypted or verified",
                          ["server": server.description, "hint": "use server = tls://HOST:PORT in crier.conf"])
            }
            if config.key != nil {
                log.info("signed orders required (server.key is set): unsigned or forged orders are rejected", ["server": server.description])
            }
        }, session: { [self] in Session(link: self) })
    }

    /// Queues an ack; it goes out once (at once when connected, else after the next welcome),
    /// and stays in the outbox (and its file) until the server has it, answering a redelivery
    /// of its order meanwhile (docs/protocol.md, section 6a). Any thread.
    /// `reply`: the answer to a server's cancel, sent even if this connection delivered it before.
    @discardableResult
    public func send(_ ack: Ack, reply: Bool = false) -> AckOutbox.Outcome {
        let connected = driver.isConnected
        let (outcome, dropped, count) = ackStore.with { o -> (AckOutbox.Outcome, Ack?, Int) in
            let r = o.offer(ack, reply: reply)
            // Connected: it goes out at once, so the file write that records the ack also marks
            // it written (one write, not two, before it may be sent).
            if connected { o.flagUnwritten() }
            return (r.outcome, r.dropped, o.dropped)
        }
        if let d = dropped, count == 1 || count % 1000 == 0 {
            log.warning("too many undelivered acks; dropped the oldest (the server redelivers its order)",
                        ["id": d.id, "status": d.status.rawValue, "dropped": count, "max": options.maxPendingAcks])
        }
        wake.wake()
        return outcome
    }

    /// The slot and last update are said in the next connection's hello: the v1 protocol has
    /// one hello per connection (the server also sees it in `crier status`). The volume is not
    /// told to a v1 server.
    public func deviceChanged(_ change: DeviceChange) {
        switch change {
        case .update(let slot, let lastUpdate): shared.withLock { $0.slot = slot; $0.lastUpdate = lastUpdate }
        case .health(let h): shared.withLock { $0.health = h }
        case .volume: break
        }
    }

    /// Acks the server may not have yet (written or not).
    public var pendingAcks: Int { ackStore.count }

    // MARK: the link thread

    /// The v1 transport's part of the driver: one TCP or TLS connection at a time.
    private final class Session: LinkSession {
        let link: OrderLink
        /// One for the link's life: replay memory must outlive a reconnect.
        var verifier: SignatureVerifier?

        init(link: OrderLink) {
            self.link = link
            verifier = link.config.key.map { SignatureVerifier(key: $0, mac: Crypto.hmacSHA256, startedAt: (link.options.unixNow(), Monotonic.now())) }
        }

        func begin(_ run: LinkRun) -> [(String, String)]? {
            [("heartbeat", "\(ConfigValue.fmt(link.config.heartbeat))s")]
        }

        func connect(_ run: LinkRun) -> LinkEnd {
            guard let server = link.config.server else { return .broken }
            switch link.session(server, run: run, verifier: &verifier) {
            case .tlsFailed(let why):
                return .failed(LinkFailure(key: why, level: .error, message: why, fields: [],
                                           hint: "check the server certificate, server.ca and server.pin in crier.conf; the box never falls back to plain TCP",
                                           again: ("TLS still failing", why, true)))
            case .failedToConnect(let why):
                return .failed(LinkFailure(key: why, level: .warning, message: "cannot reach order server", fields: [("error", why)],
                                           hint: "check server in crier.conf and that the order server runs",
                                           again: ("still cannot reach order server", why, true)))
            case .refused(let why):
                return .failed(LinkFailure(key: why, level: .error, message: "order server refused this box", fields: [("error", why)],
                                           hint: "check server.token and device.id in crier.conf",
                                           again: ("still cannot reach order server", why, true)))
            case .lost(let why):
                return .lost(LinkLoss(reason: why))
            }
        }
    }

    private enum SessionEnd {
        case failedToConnect(String)
        /// The server's certificate (or pin) was refused: never retried without TLS.
        case tlsFailed(String)
        case refused(String)
        case lost(String)
    }

    private func session(_ server: ServerAddress, run: LinkRun, verifier: inout SignatureVerifier?) -> SessionEnd {
        let addrs: [SocketAddress]
        switch SocketAddress.resolve(host: server.host, port: server.port) {
        case .success(let a): addrs = a
        case .failure(let e): return .failedToConnect(e.message)
        }
        var fd: Int32 = -1
        var lastError = ""
        for a in addrs {
            switch Sock.connect(a, timeout: options.connectTimeout, wake: wake, stopping: { stopping }) {
            case .success(let s): fd = s
            case .failure(let e): lastError = e.message
            }
            if fd >= 0 || stopping { break }
        }
        guard fd >= 0 else { return .failedToConnect(lastError) }
        let transport: LinkTransport
        if server.transport == .tls {
            let ctx: TLSContext
            switch TLSContext.client(caFile: config.ca) {
            case .success(let c): ctx = c
            case .failure(let e):
                close(fd)
                return .tlsFailed(e.message)
            }
            switch TLSTransport.connect(fd: fd, host: server.host, context: ctx, pins: config.pins,
                                        deadline: Monotonic.now() + options.connectTimeout, wake: wake, stopping: { stopping }) {
            case .success(let t): transport = t
            case .failure(let e): return e.verification ? .tlsFailed(e.message) : .failedToConnect(e.message)
            }
        } else {
            transport = PlainTransport(fd: fd)
        }
        defer { transport.close() }

        let ackBudget = max(1024, min(64 << 10, options.maxOutput / 4))
        var conn = Connection(fd: fd, heartbeat: LinkHeartbeat(interval: config.heartbeat, now: Monotonic.now()))
        // Acks still in our own buffer when the connection ends never reached the socket: they
        // were never written, and go out on the next connection (AckOutbox.unflushed).
        defer {
            if let seq = conn.lastUnflushed() { ackStore.with { $0.unflushed(after: seq) } }
        }
        var hello = Hello(device: deviceID, token: config.token)
        hello.software = options.software
        (hello.slot, hello.lastUpdate, hello.health) = shared.withLock { ($0.slot, $0.lastUpdate, $0.health) }
        conn.queue(.hello(hello))
        let handshakeDeadline = Monotonic.now() + (options.handshakeTimeout ?? min(10, max(1, 2 * config.heartbeat)))
        var welcomed = false
        var unknownTypes = Set<String>()
        var oddMessages = 0  // out-of-place messages logged, at most 10 per connection
        var badLines = 0
        var unauthenticated = 0  // rejected for their signature, logged at most 20 per connection
        var answeredFromOutbox = 0  // redeliveries answered from the ack outbox, logged at most 5 per connection
        // Waiting at real-time priority (Options.waitPriority) while the server stays within budget.
        var waitBudget = RealtimeWaitBudget()
        var waitingRealtime = false
        var wokeAt: Double?
        defer { if waitingRealtime { _ = setWaitPriority(false, flood: false) } }

        while !stopping {
            tick()
            // Acks go out only after the welcome: the server has not accepted us before it.
            // A ping follows them: its pong says they were read (what "delivered" means).
            if welcomed {
                let t = Monotonic.now()
                let lastReceived = conn.heartbeat.lastReceived
                let probe = ackStore.with { o -> Bool in
                    o.tick(now: t, lastReceived: lastReceived, heartbeat: config.heartbeat)
                    // Only what the output buffer should hold: the rest waits for the socket
                    // to drain (a big backlog must not count as "server is not reading").
                    while conn.out.count < ackBudget, let e = o.takeNextEntry() { conn.queueAck(e) }
                    guard o.needsProbe else { return false }
                    o.pinged(now: t)
                    return true
                }
                if probe {
                    conn.queue(.ping)
                    conn.heartbeat.pinged(now: t)
                }
            }
            if let err = transport.flush(&conn.out) {
                return welcomed ? .lost("write failed: \(err)") : .failedToConnect("write failed: \(err)")
            }
            // Not reading is not a reason to wait: the acks stay in the outbox for the next
            // connection, and a peer that also sends nothing is found dead by the heartbeat.
            if conn.out.count > options.maxOutput {
                return .lost("server is not reading (\(conn.out.count) bytes unsent)")
            }
            // The socket took everything: the next batch of a backlog goes at once.
            if welcomed, conn.out.count < ackBudget, ackStore.peek({ $0.hasSendable }) { continue }

            let now = Monotonic.now()
            let deadline: Double
            if welcomed {
                switch conn.heartbeat.action(now: now) {
                case .dead(let silent):
                    return .lost("no data from server for \(fmt1(silent)) s (heartbeat \(ConfigValue.fmt(config.heartbeat)) s)")
                case .ping:
                    conn.queue(.ping)
                    conn.heartbeat.pinged(now: now)
                    ackStore.with { $0.pinged(now: now) }
                    continue
                case .none: break
                }
                deadline = conn.heartbeat.nextDeadline
            } else {
                if now >= handshakeDeadline {
                    return .failedToConnect("no welcome within \(fmt1(handshakeDeadline - conn.startedAt)) s after hello")
                }
                deadline = handshakeDeadline
            }
            var fds = [
                pollfd(fd: fd, events: transport.pollEvents(hasOutput: !conn.out.isEmpty), revents: 0),
                pollfd(fd: wake.readFD, events: Int16(POLLIN), revents: 0),
            ]
            let buffered = transport.hasBufferedInput
            var wait = min(deadline - now, 5)
            if options.waitPriority > 0 && !buffered {
                let t = Monotonic.now()
                if let w = wokeAt { waitBudget.worked(t - w, now: t) }
                let want = waitBudget.allowsRealtime(now: t)
                if want != waitingRealtime { waitingRealtime = setWaitPriority(want, flood: !want) }
                if let again = waitBudget.realtimeAgain(now: t) { wait = min(wait, again - t) }
            }
            let n = poll(&fds, 2, buffered ? 0 : Int32(max(0, wait) * 1000) + 1)
            wokeAt = Monotonic.now()
            if n < 0 && errno != EINTR { return .lost("poll failed: \(errnoText(errno))") }
            if fds[1].revents != 0 { wake.drain() }
            // TLS may need the socket writable to read (renegotiation, key update): any event counts.
            guard buffered || fds[0].revents != 0 else { continue }

            switch transport.read(into: &conn.readBuf) {
            case .wouldBlock: continue
            case .eof: return welcomed ? .lost("server closed the connection") : .failedToConnect("server closed the connection before welcome")
            case .failed(let e): return welcomed ? .lost("read failed: \(e)") : .failedToConnect("read failed: \(e)")
            case .data(let count):
                for item in conn.framer.push(conn.readBuf[0..<count]) {
                    let line: [UInt8]
                    switch item {
                    case .tooLong(let size):
                        let msg = "line longer than \(ProtocolCodec.maxLineBytes) bytes (\(size) without a newline)"
                        log.error("bad message from server; closing the connection", ["server": server.description, "error": msg])
                        conn.queue(.error(code: "line_too_long", message: msg))
                        _ = transport.flush(&conn.out)
                        return welcomed ? .lost(msg) : .failedToConnect(msg)
                    case .line(let l): line = l
                    }
                    // Only a whole line is news from the server: a trickle of bytes is not.
                    conn.heartbeat.received(now: Monotonic.now())
                    let message: ProtocolMessage
                    let decoded = ProtocolCodec.decodeKeepingObject(line)
                    switch decoded.message {
                    case .success(let m): message = m
                    case .failure(let e):
                        badLines += 1
                        if badLines <= 10 {
                            log.warning("bad message from server", ["server": server.description, "error": e.message,
                                                                    "line": Self.excerpt(line), "id": e.orderID ?? "-"])
                        } else if badLines == 11 {
                            log.warning("more bad messages from server; not logging each", ["server": server.description])
                        }
                        conn.queue(.error(code: "bad_message", message: e.message))
                        // Answered by the owner, in order with the cancels before it.
                        if let ack = e.rejectedAck { onEvent(.rejected(ack, answered: false)) }
                        continue
                    }
                    switch message {
                    case .welcome where !welcomed:
                        welcomed = true
                        ackStore.with { $0.connectionStarted() }
                        run.connected(at: Monotonic.now())
                    case .welcome:
                        log.debug("repeated welcome ignored", [:])
                    case .error(let code, let msg):
                        if !welcomed {
                            return .refused(code + (msg.isEmpty ? "" : ": \(msg)"))
                        }
                        log.warning("order server reported an error", ["server": server.description, "code": code, "message": msg])
                    case .ping:
                        conn.queue(.pong)
                    case .pong:
                        ackStore.with { $0.pong() }
                    case .order(let o) where welcomed:
                        if let rejection = verifier?.check(decoded.object ?? JSONObject(), now: options.unixNow(), synchronized: options.clockSynchronized(), monotonic: Monotonic.now()) {
                            unauthenticated += 1
                            logUnauthenticated(rejection, type: "order", id: o.id, count: unauthenticated, server: server)
                            conn.queue(.ack(Ack(id: o.id, status: .rejected, reason: rejection.reason.rawValue, message: rejection.message)))
                            continue
                        }
                        // A redelivery of an order whose ack went to an earlier connection and
                        // was never confirmed: the server did not get it; answered again here,
                        // before any pong can take that ack for delivered (section 6a), and not
                        // handed to the speaker: the outbox's final ack is the proof it was
                        // finished here, however many newer outcomes the speaker's memory
                        // (1 024) has taken since (the year's soak: a server 8 000 orders behind
                        // redelivered orders said 4 748 outcomes earlier, and they were said again).
                        if ackStore.with({ $0.redelivered(o.id) }) {
                            answeredFromOutbox += 1
                            if answeredFromOutbox <= 5 {
                                log.info("redelivered order answered from the ack outbox; not said again", ["id": o.id])
                            } else if answeredFromOutbox == 6 {
                                log.info("more redelivered orders answered from the ack outbox; not logging each", ["server": server.description])
                            }
                            continue
                        }
                        onEvent(.order(o))
                    case .cancel(let id) where welcomed:
                        if let rejection = verifier?.check(decoded.object ?? JSONObject(), now: options.unixNow(), synchronized: options.clockSynchronized(), monotonic: Monotonic.now()) {
                            unauthenticated += 1
                            logUnauthenticated(rejection, type: "cancel", id: id, count: unauthenticated, server: server)
                            conn.queue(.error(code: rejection.reason.rawValue, message: "cancel \(id) ignored: \(rejection.message)"))
                            continue
                        }
                        onEvent(.cancel(id: id))
                    case .update(let offer) where welcomed:
                        if let rejection = verifier?.check(decoded.object ?? JSONObject(), now: options.unixNow(), synchronized: options.clockSynchronized(), monotonic: Monotonic.now()) {
                            unauthenticated += 1
                            logUnauthenticated(rejection, type: "update", id: offer.version, count: unauthenticated, server: server)
                            conn.queue(.error(code: rejection.reason.rawValue, message: "update \(offer.version) ignored: \(rejection.message)"))
                            continue
                        }
                        onEvent(.updateOffer(offer))
                    case .order, .cancel, .update:
                        oddMessages += 1
                        if oddMessages <= 10 {
                            log.warning("order server sent \(message.typeName) before welcome; ignored", ["server": server.description])
                        }
                    case .hello, .ack:
                        oddMessages += 1
                        if oddMessages <= 10 {
                            log.warning("unexpected \(message.typeName) from order server; ignored", ["server": server.description])
                        }
                    case .unknown(let type):
                        // Bounded: a hostile server cannot grow this set (or the log) without limit.
                        if unknownTypes.count < 32, unknownTypes.insert(type).inserted {
                            log.info("ignoring messages of unknown type (newer protocol?)", ["server": server.description, "type": type])
                        }
                    }
                }
            }
        }
        // Stopping: an ack queued just before stop() (the alert that finished during shutdown)
        // still goes out; one non-blocking write, so a server that is not reading cannot hold
        // the shutdown.
        // They stay in the outbox: the server may not have read them.
        if welcomed {
            // Write-ahead: the file marks them written first (the link thread may wait for the
            // card now: this is the stop).
            ackStore.with { $0.flagUnwritten() }
            ackStore.persist()
            ackStore.with { o in while let e = o.takeNextEntry() { conn.queueAck(e) } }
            awaitConfirmation(&conn, transport: transport, fd: fd)
        }
        return .lost("stopped")
    }

    /// A clean stop (SIGTERM, reload) waits briefly for the pong that proves the server read
    /// the acks still unconfirmed, so that they leave the outbox and its file now. Bounded by
    /// `stopDrain`, so a server that does not answer pings delays the stop by at most that;
    /// what stays unconfirmed stays in the file marked written: after the restart it answers a
    /// redelivery of its order, or leaves at the first pong (it is not written again).
    private func awaitConfirmation(_ conn: inout Connection, transport: LinkTransport, fd: Int32) {
        guard ackStore.peek({ !$0.isEmpty }) else {
            _ = transport.flush(&conn.out)
            return
        }
        conn.queue(.ping)
        ackStore.with { $0.pinged(now: Monotonic.now()) }
        let until = Monotonic.now() + options.stopDrain
        while ackStore.peek({ !$0.isEmpty }) {
            if transport.flush(&conn.out) != nil { return }
            let left = until - Monotonic.now()
            guard left > 0 else { return }
            var fds = [pollfd(fd: fd, events: transport.pollEvents(hasOutput: !conn.out.isEmpty), revents: 0)]
            let n = transport.hasBufferedInput ? 1 : poll(&fds, 1, Int32(left * 1000) + 1)
            if n < 0 && errno != EINTR { return }
            guard n > 0 else { continue }
            let count: Int
            switch transport.read(into: &conn.readBuf) {
            case .wouldBlock: continue
            case .eof, .failed: return
            case .data(let c): count = c
            }
            for case .line(let line) in conn.framer.push(conn.readBuf[0..<count]) {
                // Only the pong matters now; orders are not taken while stopping (the server
                // redelivers them after the restart). A redelivery of an order whose ack is
                // stale still counts: that ack must not be taken for delivered by the pong
                // (it is sent after the next welcome). Not checked against server.key: a
                // forged one costs one ack line, never a speech.
                switch ProtocolCodec.decodeKeepingObject(line).message {
                case .success(.pong): ackStore.with { _ = $0.pong() }
                case .success(.order(let o)): ackStore.with { _ = $0.redelivered(o.id) }
                default: break
                }
            }
        }
    }

    /// Never spoken, always logged (the first 20 of a connection, then a count).
    private func logUnauthenticated(_ r: SignatureRejection, type: String, id: String, count: Int, server: ServerAddress) {
        if count <= 20 {
            log.warning("\(type) rejected: \(r.reason == .unsigned ? "not signed" : r.reason == .badSignature ? "bad signature" : r.reason == .stale ? "timestamp out of range" : "replayed")",
                        ["server": server.description, "id": id, "reason": r.reason.rawValue, "error": r.message])
        } else if count == 21 {
            log.warning("more unauthenticated messages from server; not logging each", ["server": server.description])
        }
    }

    private struct Connection {
        let fd: Int32
        var heartbeat: LinkHeartbeat
        var framer = LineFramer()
        var out: [UInt8] = []
        var readBuf = [UInt8](repeating: 0, count: 65536)
        let startedAt = Monotonic.now()

        init(fd: Int32, heartbeat: LinkHeartbeat) {
            self.fd = fd
            self.heartbeat = heartbeat
        }

        /// Bytes ever queued on this connection; `queued - out.count` reached the socket.
        var queued = 0
        /// Acks queued and maybe not yet flushed: where each ends in `queued`, and its seq.
        var ackEnds: [(end: Int, seq: UInt64)] = []
        /// The seq of the last ack known to have reached the socket.
        var flushedSeq: UInt64 = 0

        mutating func queue(_ m: ProtocolMessage) {
            let line = ProtocolCodec.line(m)
            out += line
            queued += line.count
        }

        mutating func queueAck(_ e: AckOutbox.Entry) {
            queue(.ack(e.ack))
            ackEnds.append((queued, e.seq))
            if ackEnds.count > 1024 { trimFlushed() }
        }

        /// Forgets the acks that reached the socket (bounded memory on a long connection).
        mutating func trimFlushed() {
            let flushed = queued - out.count
            let n = ackEnds.prefix { $0.end <= flushed }.count
            if n > 0 { flushedSeq = ackEnds[n - 1].seq }
            ackEnds.removeFirst(n)
        }

        /// The seq after which queued acks never reached the socket, or nil when all did.
        mutating func lastUnflushed() -> UInt64? {
            trimFlushed()
            return ackEnds.isEmpty ? nil : flushedSeq
        }
    }

    /// The first 120 bytes of a bad line, printable (invalid UTF-8 shown as U+FFFD).
    static func excerpt(_ line: [UInt8]) -> String {
        let s = String(decoding: line.prefix(120), as: UTF8.self)
        return line.count > 120 ? s + "…" : s
    }
}

func fmt1(_ d: Double) -> String {
    let tenths = Int((d * 10).rounded())
    return "\(tenths / 10).\(tenths % 10)"
}
