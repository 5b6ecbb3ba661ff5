import CrierCore
import CrierLink
import CrierPosix
import Glibc
import Synchronization

/// What `crier-sim order-sim` runs.
public struct OrderServerConfig: Sendable, Equatable {
    /// Address to listen on; "0.0.0.0" for every IPv4 interface, "::" for IPv6 too.
    public var host = "0.0.0.0"
    /// 0: any free port (see `OrderServer.port` after `start`).
    public var port = ServerAddress.defaultPort
    /// Seconds between random orders (a random value in the range each time).
    public var every: ClosedRange<Double> = 60...240
    /// Orders per second instead of `every` (load tests).
    public var rate: Double?
    /// Stop making orders after this many; `run` returns when all are acked (or `drainTimeout`).
    public var count: Int?
    /// Required in every hello when set.
    public var token: String?
    /// Numbers of random new_customer orders.
    public var numbers: ClosedRange<Int> = 0...99
    /// With `count`: seconds to wait for the last acks after the last order went out.
    public var drainTimeout = 60.0
    /// The server pings a device it has heard nothing from for this many seconds (however much
    /// it sends itself: a flood of orders proves nothing about the device)...
    public var heartbeat = 15.0
    /// ...and drops one it has heard nothing (no whole line) from for this long.
    public var silenceTimeout = 45.0
    /// Random orders at all (false: only stdin and `submit`).
    public var randomOrders = true
    /// Turn stdin lines into orders.
    public var readStdin = false
    /// A journal of unacked orders, so that they are redelivered after a restart of the server
    /// too (`crier-sim order-sim --state FILE`). nil: memory only.
    public var stateFile: String?
    /// Order ids are `<prefix><n>`; nil: `O<start unix seconds>-` so ids differ across restarts.
    public var idPrefix: String?
    public var seed: UInt64?
    /// Signs every order and cancel it sends (`--key`; docs/protocol.md, "Signed orders"),
    /// afresh on each send, redeliveries included.
    public var key: [UInt8]?
    /// Serve TLS with this certificate chain and key (PEM files; `--tls-cert`, `--tls-key`).
    public var tlsCert: String?
    public var tlsKey: String?
    /// Offered to every device after its hello (`--offer-update URL --offer-version V`;
    /// docs/updates.md): how a vendor tries a bundle server before wiring it into their own.
    public var updateOffer: UpdateOffer?

    public init() {}

    /// `--every` values: `60-240` (seconds, min-max) or `5` (exactly). nil when malformed.
    public static func parseRange(_ s: String) -> ClosedRange<Double>? {
        let parts = s.split(separator: "-", omittingEmptySubsequences: false)
        guard parts.count == 1 || parts.count == 2,
              let lo = Double(parts[0]), let hi = Double(parts.last!), lo.isFinite, hi.isFinite, lo > 0, lo <= hi
        else { return nil }
        return lo...hi
    }
}

public struct OrderServerError: Error, Sendable, CustomStringConvertible {
    public var message: String
    public var description: String { message }
}

/// The reference order server (docs/protocol.md, "Reference server"): accepts several devices,
/// checks the token, sends orders, redelivers unacked orders on reconnect, answers pings.
/// Prints one greppable line per event through `output`:
///
///     listening addr=0.0.0.0:7700
///     device connected device=kiosk-1 addr=127.0.0.1:50522
///     order id=O1764489242-1 kind=new_customer number=42
///     redeliver id=O1764489242-1 device=kiosk-1
///     ack id=O1764489242-1 status=spoken device=kiosk-1
///     bad_message device=kiosk-1 error="…"
///     device rejected addr=127.0.0.1:50530 reason=unauthorized
///     device disconnected device=kiosk-1 reason="…"
///     done orders=10 spoken=10 expired=0 cancelled=0 rejected=0 unacked=0
public final class OrderServer: Sendable {
    public struct Summary: Sendable, Equatable {
        public var orders = 0
        public var acks: [Ack.Status: Int] = [:]
        /// Orders some device has not acked yet.
        public var unacked = 0
        public var timedOut = false
    }

    public let config: OrderServerConfig
    let output: @Sendable (String) -> Void

    private struct Shared {
        var stopping = false
        var inbox: [Order] = []
        var stdinLines: [String] = []
        var port = 0
        var thread: PosixThread?
        var summary = Summary()
        var finished = false
    }
    private let shared = Mutex(Shared())
    private let wake = WakePipe()
    private let idPrefix: String
    private let counter = Atomic<Int>(0)
    /// Unix seconds put in `ts` (tests shift it to make stale orders).
    let unixNow: @Sendable () -> Int64

    /// `output` defaults to `OrderServer.stdoutLine`: unbuffered, so a test reading the pipe sees
    /// each event at once.
    public init(config: OrderServerConfig, output: @escaping @Sendable (String) -> Void = OrderServer.stdoutLine,
                unixNow: @escaping @Sendable () -> Int64 = { Crypto.unixNow() }) {
        self.config = config
        self.output = output
        self.unixNow = unixNow
        idPrefix = config.idPrefix ?? "O\(wallMillis() / 1000)-"
    }

    /// The port actually listened on (after `start`).
    public var port: Int { shared.withLock { $0.port } }

    /// Binds, listens and starts the server thread. Returns the port.
    @discardableResult
    public func start() throws(OrderServerError) -> Int {
        var tls: TLSContext?
        if config.tlsCert != nil || config.tlsKey != nil {
            guard let cert = config.tlsCert, let key = config.tlsKey else {
                throw OrderServerError(message: "TLS needs both --tls-cert and --tls-key")
            }
            switch TLSContext.server(certFile: cert, keyFile: key) {
            case .success(let c): tls = c
            case .failure(let e): throw OrderServerError(message: e.message)
            }
        }
        let addrs: [SocketAddress]
        switch SocketAddress.resolve(host: config.host, port: config.port, passive: true) {
        case .success(let a): addrs = a
        case .failure(let e): throw OrderServerError(message: "cannot listen on \(config.host):\(config.port): \(e.message)")
        }
        var fd: Int32 = -1
        var why = ""
        for a in addrs {
            let s = socket(a.family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
            guard s >= 0 else { why = errnoText(errno); continue }
            Sock.setOption(s, SOL_SOCKET, SO_REUSEADDR, 1)
            var addr = a
            let rc = withUnsafePointer(to: &addr.storage) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(s, $0, a.length) }
            }
            if rc == 0, listen(s, 64) == 0 { fd = s; break }
            why = errnoText(errno)
            close(s)
        }
        guard fd >= 0 else { throw OrderServerError(message: "cannot listen on \(config.host):\(config.port): \(why)") }
        var bound = SocketAddress()
        bound.length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        _ = withUnsafeMutablePointer(to: &bound.storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &bound.length) }
        }
        let port = Int(bound.description.split(separator: ":").last.flatMap { Int($0) } ?? config.port)
        shared.withLock { $0.port = port }
        output("listening addr=\(bound)" + (tls != nil ? " tls=yes" : "") + (config.key != nil ? " signed=yes" : ""))
        let listenFD = fd
        let initial = loadState()
        let tlsContext = tls
        let t: PosixThread
        do {
            t = try PosixThread(name: "crier-ordersim") { [self] in loop(listenFD, initial, tlsContext) }
        } catch {
            close(listenFD)
            throw OrderServerError(message: "cannot start the server thread: \(error)")
        }
        shared.withLock { $0.thread = t }
        return port
    }

    /// Blocks until `stop`, or with `count` until every order was acked or the drain timed out.
    public func wait() -> Summary {
        let t = shared.withLock { s -> PosixThread? in defer { s.thread = nil }; return s.thread }
        t?.join()
        return shared.withLock { $0.summary }
    }

    /// `start` then `wait`.
    public func run() throws(OrderServerError) -> Summary {
        try start()
        return wait()
    }

    public func stop() {
        shared.withLock { $0.stopping = true }
        wake.wake()
        _ = wait()
    }

    /// Sends an order to every device (or keeps it until one connects).
    public func send(_ order: Order) {
        shared.withLock { $0.inbox.append(order) }
        wake.wake()
    }

    /// A line as typed on stdin: a number → new_customer, other text → text. Returns the order.
    @discardableResult
    public func submit(_ line: String) -> Order? {
        guard let o = makeOrder(fromLine: line) else { return nil }
        send(o)
        return o
    }

    public func nextID() -> String {
        "\(idPrefix)\(counter.add(1, ordering: .relaxed).newValue)"
    }

    func makeOrder(fromLine raw: String) -> Order? {
        let line = raw.trimmingWhitespace
        guard !line.isEmpty else { return nil }
        if let n = Int(line), Order.numberRange.contains(n) {
            return Order(id: nextID(), kind: .newCustomer(number: n))
        }
        return Order(id: nextID(), kind: .text(line))
    }

    /// Reads and compacts the state journal (before the server thread starts, so "state loaded"
    /// is printed before `start` returns).
    private func loadState() -> LoadedState {
        guard let path = config.stateFile else { return LoadedState() }
        var loaded = Journal.load(path)
        for w in loaded.warnings { output("state warning file=\(Self.quote(path)) problem=\(Self.quote(w))") }
        do throws(OrderServerError) {
            try Journal.rewrite(path, books: loaded.books, backlog: loaded.backlog)
        } catch {
            output("state warning file=\(Self.quote(path)) problem=\(Self.quote(error.message))")
        }
        output("state loaded file=\(Self.quote(path)) devices=\(loaded.books.count) unacked=\(loaded.books.values.reduce(0) { $0 + $1.count } + loaded.backlog.count)")
        loaded.warnings = []
        return loaded
    }

    // MARK: the server thread

    private final class Client {
        let fd: Int32
        let transport: LinkTransport
        let addr: String
        let signer: OrderSigner?
        var device: String?
        var framer = LineFramer()
        var out: [UInt8] = []
        /// When the last whole line arrived (a byte trickle does not count).
        var lastReceived = Monotonic.now()
        var lastPing = Monotonic.now()
        var closeAfterFlush = false
        var closeReason: String?
        init(transport: LinkTransport, addr: String, signer: OrderSigner?) {
            self.fd = transport.fd
            self.transport = transport
            self.addr = addr
            self.signer = signer
        }
        func queue(_ m: ProtocolMessage) {
            switch m {
            case .order, .cancel:
                if let signer {
                    out += JSON.write(.object(signer.sign(ProtocolCodec.object(m))))
                    out.append(0x0A)
                    return
                }
            default: break
            }
            out += ProtocolCodec.line(m)
        }
    }

    struct LoadedState {
        var books: [String: DeviceBook] = [:]
        var backlog: [Order] = []
        var warnings: [String] = []
    }

    /// Per device id: orders sent and not yet acked, in order (O(1) ack even in a 10 000 burst).
    struct DeviceBook {
        private var pending: [String: Order] = [:]
        private var sequence: [String] = []

        init(_ orders: [Order] = []) { for o in orders { append(o) } }

        var count: Int { pending.count }
        var unacked: [Order] { sequence.compactMap { pending[$0] } }

        mutating func append(_ o: Order) {
            if pending.updateValue(o, forKey: o.id) == nil { sequence.append(o.id) }
        }

        /// True when it was waiting for this ack.
        mutating func acked(_ id: String) -> Bool {
            guard pending.removeValue(forKey: id) != nil else { return false }
            if sequence.count > 2 * pending.count + 64 { sequence = sequence.filter { pending[$0] != nil } }
            return true
        }
    }

    private func loop(_ listenFD: Int32, _ initial: LoadedState, _ tls: TLSContext?) {
        defer { close(listenFD) }
        let signer = config.key.map { OrderSigner(key: $0, clock: unixNow) }
        var clients: [Client] = []
        var books: [String: DeviceBook] = [:]
        var backlog: [Order] = []  // orders made before any device said hello
        var journal: Journal?
        if let path = config.stateFile {
            books = initial.books
            backlog = initial.backlog
            journal = Journal.openForAppend(path)
            if journal == nil { output("state warning file=\(Self.quote(path)) problem=\(Self.quote("cannot append: \(errnoText(errno))"))") }
        }
        var rng = SplitMix64(seed: config.seed ?? UInt64.random(in: 0 ... .max))
        var made = 0
        var summary = Summary()
        let start = Monotonic.now()
        var nextRandom: Double? = nil
        var lastMadeAt = start
        var stdinOpen = config.readStdin
        var stdinFramer = LineFramer(maxLine: 4096)
        var readBuf = [UInt8](repeating: 0, count: 65536)
        var rateStart: Double?
        let limit = config.count ?? Int.max

        func fields(_ kv: [(String, String)]) -> String {
            kv.map { "\($0.0)=\(Self.quote($0.1))" }.joined(separator: " ")
        }
        func emit(_ event: String, _ kv: [(String, String)]) { output(event + (kv.isEmpty ? "" : " " + fields(kv))) }

        func describe(_ o: Order) -> [(String, String)] {
            var kv: [(String, String)] = [("id", o.id), ("kind", o.kind.name)]
            kv.append((o.kind.spec.field, o.kind.value.text))
            if let l = o.lang { kv.append(("lang", l.rawValue)) }
            if o.priority != 0 { kv.append(("priority", String(o.priority))) }
            return kv
        }

        func publish(_ o: Order) {
            made += 1
            lastMadeAt = Monotonic.now()
            emit("order", describe(o))
            if books.isEmpty {
                backlog.append(o)
                journal?.append(order: o, device: nil)
                return
            }
            for dev in books.keys.sorted() {
                books[dev]!.append(o)
                journal?.append(order: o, device: dev)
                if let c = clients.first(where: { $0.device == dev }) { c.queue(.order(o)) }
            }
        }

        func drop(_ c: Client, _ reason: String) {
            c.closeAfterFlush = true
            c.closeReason = reason
        }

        func handle(_ c: Client, _ line: [UInt8]) {
            let m: ProtocolMessage
            switch ProtocolCodec.decode(line) {
            case .success(let v): m = v
            case .failure(let e):
                emit("bad_message", [("device", c.device ?? "-"), ("addr", c.addr), ("error", e.message)])
                c.queue(.error(code: "bad_message", message: e.message))
                return
            }
            guard let dev = c.device else {
                guard case .hello(let h) = m else {
                    c.queue(.error(code: "bad_message", message: "expected hello first, got \(m.typeName)"))
                    emit("device rejected", [("addr", c.addr), ("reason", "no_hello")])
                    drop(c, "no hello")
                    return
                }
                if h.protocolVersion != ProtocolCodec.version {
                    c.queue(.error(code: "unsupported_protocol", message: "this server speaks protocol \(ProtocolCodec.version), got \(h.protocolVersion)"))
                    emit("device rejected", [("device", h.device), ("addr", c.addr), ("reason", "unsupported_protocol")])
                    drop(c, "unsupported protocol")
                    return
                }
                if let want = config.token, h.token != want {
                    c.queue(.error(code: "unauthorized", message: h.token == nil ? "this server needs a token" : "wrong token"))
                    emit("device rejected", [("device", h.device), ("addr", c.addr), ("reason", "unauthorized")])
                    drop(c, "unauthorized")
                    return
                }
                if let old = clients.first(where: { $0.device == h.device && $0 !== c }) {
                    drop(old, "replaced by a new connection from \(c.addr)")
                    old.device = nil
                }
                c.device = h.device
                c.queue(.welcome)
                emit("device connected", [("device", h.device), ("addr", c.addr)]
                     + [("software", h.software), ("slot", h.slot), ("last_update", h.lastUpdate), ("power", h.health.power),
                        ("temp_c", h.health.tempC.map(String.init)), ("last_start", h.health.lastStart)].compactMap { k, v in v.map { (k, $0) } })
                if let u = config.updateOffer {
                    c.queue(.update(u))
                    emit("update offered", [("device", h.device), ("version", u.version), ("url", ShownURL.redacted(u.url))])
                }
                if books[h.device] == nil {
                    books[h.device] = DeviceBook(backlog)
                    journal?.append(op: "device", device: h.device)
                    for o in backlog { c.queue(.order(o)) }
                    backlog.removeAll()
                } else {
                    for o in books[h.device]!.unacked {
                        emit("redeliver", [("id", o.id), ("device", h.device)])
                        c.queue(.order(o))
                    }
                }
                return
            }
            switch m {
            case .ack(let a):
                var kv: [(String, String)] = [("id", a.id), ("status", a.status.rawValue), ("device", dev)]
                if let r = a.reason { kv.append(("reason", r)) }
                if let msg = a.message { kv.append(("message", msg)) }
                emit("ack", kv)
                // A signature rejection concerns that delivery, not the order: it stays unacked
                // and is redelivered (signed afresh) on the next connection.
                let deliveryProblem = a.status == .rejected && ["bad_signature", "stale", "replayed", "unsigned"].contains(a.reason ?? "")
                if !deliveryProblem, books[dev]?.acked(a.id) == true {
                    journal?.append(op: "ack", device: dev, id: a.id)
                    summary.acks[a.status, default: 0] += 1
                }
            case .ping:
                c.queue(.pong)
            case .pong, .welcome:
                break
            case .error(let code, let msg):
                emit("device error", [("device", dev), ("code", code), ("message", msg)])
            case .hello:
                c.queue(.error(code: "bad_message", message: "hello sent twice"))
            case .order, .cancel, .update:
                c.queue(.error(code: "bad_message", message: "\(m.typeName) goes from server to device"))
            case .unknown(let t):
                emit("ignored", [("device", dev), ("type", t)])
            }
        }

        while true {
            let (stopping, inbox) = shared.withLock { s -> (Bool, [Order]) in
                defer { s.inbox.removeAll() }
                return (s.stopping, s.inbox)
            }
            if stopping { break }
            for o in inbox { publish(o) }
            let now = Monotonic.now()
            let anyDevice = clients.contains { $0.device != nil }

            // Random orders, only while some device listens.
            if config.randomOrders, made < limit, anyDevice {
                if let rate = config.rate, rate > 0 {
                    let t0 = rateStart ?? now
                    rateStart = t0
                    let due = min(limit, Int((now - t0) * rate) + 1)
                    while made < due {
                        publish(Order(id: nextID(), kind: .newCustomer(number: Int.random(in: config.numbers, using: &rng))))
                    }
                } else {
                    if nextRandom == nil { nextRandom = now + Double.random(in: config.every, using: &rng) }
                    if let t = nextRandom, now >= t {
                        publish(Order(id: nextID(), kind: .newCustomer(number: Int.random(in: config.numbers, using: &rng))))
                        nextRandom = now + Double.random(in: config.every, using: &rng)
                    }
                }
            }

            // --count: finished when everything made was acked, or the drain timed out.
            if let n = config.count, made >= n {
                let open = books.values.reduce(0) { $0 + $1.count } + backlog.count
                if open == 0 || now - lastMadeAt >= config.drainTimeout {
                    summary.timedOut = open > 0
                    summary.unacked = open
                    break
                }
            }

            // Writes, closes, silence.
            for c in clients {
                if c.device != nil, now - max(c.lastPing, c.lastReceived) >= config.heartbeat {
                    c.queue(.ping)
                    c.lastPing = now
                }
                if let err = c.transport.flush(&c.out) { c.closeReason = "write failed: \(err)"; c.closeAfterFlush = true; c.out = [] }
                if now - c.lastReceived > config.silenceTimeout, c.closeReason == nil {
                    drop(c, "no data for \(Int(config.silenceTimeout)) s")
                }
            }
            clients.removeAll { c in
                // Closed after one flush attempt: a peer that does not read cannot hold us.
                guard c.closeAfterFlush else { return false }
                if let d = c.device { emit("device disconnected", [("device", d), ("reason", c.closeReason ?? "closed")]) }
                c.transport.close()
                return true
            }

            var fds = [pollfd(fd: listenFD, events: Int16(POLLIN), revents: 0), pollfd(fd: wake.readFD, events: Int16(POLLIN), revents: 0)]
            if stdinOpen { fds.append(pollfd(fd: 0, events: Int16(POLLIN), revents: 0)) }
            let base = fds.count
            let polled = clients  // accept below appends; these match the pollfds
            for c in polled {
                fds.append(pollfd(fd: c.fd, events: c.transport.pollEvents(hasOutput: !c.out.isEmpty), revents: 0))
            }
            var timeout = 1000.0
            if polled.contains(where: { $0.transport.hasBufferedInput }) { timeout = 0 }
            if let t = nextRandom { timeout = min(timeout, max(0, (t - now) * 1000)) }
            if config.rate != nil, made < limit, anyDevice { timeout = min(timeout, 5) }
            _ = poll(&fds, nfds_t(fds.count), Int32(timeout) + 1)

            if fds[1].revents != 0 { wake.drain() }
            if fds[0].revents != 0 {
                while true {
                    var peer = SocketAddress()
                    peer.length = socklen_t(MemoryLayout<sockaddr_storage>.size)
                    let cfd = withUnsafeMutablePointer(to: &peer.storage) {
                        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { accept(listenFD, $0, &peer.length) }
                    }
                    guard cfd >= 0 else { break }
                    Sock.setNonBlocking(cfd)
                    _ = fcntl(cfd, F_SETFD, FD_CLOEXEC)
                    Sock.setOption(cfd, Int32(IPPROTO_TCP), TCP_NODELAY, 1)
                    let transport: LinkTransport
                    if let tls {
                        guard let t = TLSTransport.accepting(fd: cfd, context: tls) else { close(cfd); continue }
                        transport = t
                    } else {
                        transport = PlainTransport(fd: cfd)
                    }
                    clients.append(Client(transport: transport, addr: peer.description, signer: signer))
                }
            }
            if stdinOpen, fds[2].revents != 0 {
                switch Sock.readFile(0, into: &readBuf) {
                case .data(let n):
                    for item in stdinFramer.push(readBuf[0..<n]) {
                        if case .line(let l) = item, let o = makeOrder(fromLine: String(decoding: l, as: UTF8.self)) { publish(o) }
                    }
                case .wouldBlock: break
                case .eof, .failed: stdinOpen = false
                }
            }
            for (i, c) in polled.enumerated() where (fds[base + i].revents != 0 || c.transport.hasBufferedInput) && !c.closeAfterFlush {
                switch c.transport.read(into: &readBuf) {
                case .wouldBlock: break
                case .eof: drop(c, "device closed the connection")
                case .failed(let e):
                    if c.device == nil { emit("device rejected", [("addr", c.addr), ("reason", e)]) }
                    drop(c, "read failed: \(e)")
                case .data(let n):
                    for item in c.framer.push(readBuf[0..<n]) {
                        switch item {
                        case .line(let l):
                            c.lastReceived = Monotonic.now()
                            handle(c, l)
                        case .tooLong:
                            c.queue(.error(code: "line_too_long", message: "line longer than \(ProtocolCodec.maxLineBytes) bytes"))
                            drop(c, "line too long")
                        }
                    }
                }
            }
        }
        for c in clients {
            _ = c.transport.flush(&c.out)
            c.transport.close()
        }
        summary.orders = made
        if summary.unacked == 0 { summary.unacked = books.values.reduce(0) { $0 + $1.count } + backlog.count }
        let s = summary
        emit("done", [("orders", String(s.orders))] + Ack.Status.allCases.map { ($0.rawValue, String(s.acks[$0] ?? 0)) }
            + [("unacked", String(s.unacked))] + (s.timedOut ? [("timed_out", "yes")] : []))
        shared.withLock { $0.summary = s; $0.finished = true }
    }

    /// Writes `line` and a newline to fd 1 with one write(2) (no stdio buffering).
    public static let stdoutLine: @Sendable (String) -> Void = { line in
        var b = Array(line.utf8)
        b.append(0x0A)
        var off = 0
        while off < b.count {
            let n = b[off...].withUnsafeBytes { Glibc.write(1, $0.baseAddress, $0.count) }
            if n < 0 && errno == EINTR { continue }
            if n <= 0 { return }
            off += n
        }
    }

    /// `key=value` values: bare when safe, else quoted with `"` and `\` escaped; control
    /// characters become spaces so one event stays one line.
    static func quote(_ v: String) -> String {
        var clean = ""
        for u in v.unicodeScalars { clean.unicodeScalars.append(u.value < 0x20 || u.value == 0x7F ? " " : u) }
        if !clean.isEmpty, !clean.contains(where: { $0 == " " || $0 == "\"" || $0 == "=" || $0 == "\\" }) { return clean }
        var q = "\""
        for ch in clean {
            if ch == "\"" || ch == "\\" { q.append("\\") }
            q.append(ch)
        }
        return q + "\""
    }
}

/// Signs orders and cancels at send time. Each send of the same id gets a larger `ts` than the
/// one before, even within one second, so a quick redelivery is never taken for a replay.
/// Server thread only.
final class OrderSigner {
    let key: [UInt8]
    let clock: @Sendable () -> Int64
    private var lastTS: [String: Int64] = [:]

    init(key: [UInt8], clock: @escaping @Sendable () -> Int64) {
        self.key = key
        self.clock = clock
    }

    func sign(_ o: JSONObject) -> JSONObject {
        let now = clock()
        var id = ""
        if case .string(let s)? = o["id"] { id = s }
        if case .string(let t)? = o["type"] { id = t + ":" + id }
        let ts = max(now, (lastTS[id] ?? Int64.min) &+ 1)
        if lastTS.count > 20_000 { lastTS = lastTS.filter { $0.value > now - 2 * OrderSigning.window } }
        lastTS[id] = ts
        return OrderSigning.sign(o, ts: ts, key: key, mac: Crypto.hmacSHA256)
    }
}

/// The reference server's memory of unacked orders, as JSON lines appended per event:
/// `{"op":"order","device":"d","order":{…}}` (device absent: waiting for the first device),
/// `{"op":"device","device":"d"}` (a new device took the waiting orders),
/// `{"op":"ack","device":"d","id":"…"}`. Rewritten compactly at start.
private final class Journal {
    let fd: Int32

    init(fd: Int32) { self.fd = fd }
    deinit { close(fd) }

    static func load(_ path: String) -> OrderServer.LoadedState {
        var out = OrderServer.LoadedState()
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else {
            if errno != ENOENT { out.warnings.append("cannot read: \(errnoText(errno))") }
            return out
        }
        defer { close(fd) }
        var data: [UInt8] = []
        var buf = [UInt8](repeating: 0, count: 65536)
        while true {
            let n = read(fd, &buf, buf.count)
            if n <= 0 { break }
            data += buf[0..<n]
        }
        var lineNo = 0
        for line in data.split(separator: 0x0A) {
            lineNo += 1
            guard case .success(.object(let o)) = JSON.parse(line, limits: .init(maxDepth: 4, maxBytes: 1 << 16)),
                  case .string(let op)? = o["op"] else {
                out.warnings.append("line \(lineNo) unreadable, skipped")
                continue
            }
            var device: String?
            if case .string(let d)? = o["device"] { device = d }
            switch op {
            case "order":
                guard let ov = o["order"], case .success(.order(let order)) = ProtocolCodec.decode(JSON.write(ov)) else {
                    out.warnings.append("line \(lineNo): bad order, skipped")
                    continue
                }
                if let d = device { out.books[d, default: .init()].append(order) } else { out.backlog.append(order) }
            case "device":
                guard let d = device else { continue }
                out.books[d] = .init(out.backlog)
                out.backlog = []
            case "ack":
                if let d = device, case .string(let id)? = o["id"] { _ = out.books[d]?.acked(id) }
            default:
                out.warnings.append("line \(lineNo): unknown op \(op), skipped")
            }
        }
        return out
    }

    static func openForAppend(_ path: String) -> Journal? {
        let fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0o644)
        return fd >= 0 ? Journal(fd: fd) : nil
    }

    /// Writes the current state to a new file and renames it over `path`.
    static func rewrite(_ path: String, books: [String: OrderServer.DeviceBook], backlog: [Order]) throws(OrderServerError) {
        let tmp = path + ".tmp"
        let fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw OrderServerError(message: "cannot write \(tmp): \(errnoText(errno))") }
        let j = Journal(fd: fd)
        for o in backlog { j.append(order: o, device: nil) }
        for d in books.keys.sorted() {
            j.append(op: "device", device: d)
            for o in books[d]!.unacked { j.append(order: o, device: d) }
        }
        guard rename(tmp, path) == 0 else { throw OrderServerError(message: "cannot rename \(tmp) to \(path): \(errnoText(errno))") }
    }

    func append(order: Order, device: String?) {
        var o = JSONObject()
        o["op"] = .string("order")
        if let device { o["device"] = .string(device) }
        o["order"] = .object(ProtocolCodec.object(.order(order)))
        write(o)
    }

    func append(op: String, device: String, id: String? = nil) {
        var o = JSONObject()
        o["op"] = .string(op)
        o["device"] = .string(device)
        if let id { o["id"] = .string(id) }
        write(o)
    }

    private func write(_ o: JSONObject) {
        var line = JSON.write(.object(o))
        line.append(0x0A)
        var off = 0
        while off < line.count {
            let n = line[off...].withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) }
            if n <= 0 { return }
            off += n
        }
    }
}

extension Sock {
    /// `read(2)` for a non-socket (stdin).
    static func readFile(_ fd: Int32, into buf: inout [UInt8]) -> ReadResult {
        let n = buf.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
        if n > 0 { return .data(n) }
        if n == 0 { return .eof }
        let e = errno
        if e == EAGAIN || e == EINTR { return .wouldBlock }
        return .failed(errnoText(e))
    }
}

extension String {
    var trimmingWhitespace: String {
        var s = Substring(self)
        while let f = s.first, f.isWhitespace { s = s.dropFirst() }
        while let l = s.last, l.isWhitespace { s = s.dropLast() }
        return String(s)
    }
}
