import CrierCore
import CrierPosix
import Glibc
import Synchronization

/// Why a control-socket operation failed, worded for the person at the console.
public enum ControlError: Error, Sendable, Equatable, CustomStringConvertible {
    /// No daemon answers at this path (no socket, or a stale one): `crier say` may then speak
    /// by itself.
    case notRunning(path: String)
    /// The socket exists but this user may not use it.
    case permissionDenied(path: String)
    /// Another daemon already answers at this path.
    case alreadyRunning(path: String)
    /// The daemon answered `error busy…`: all its control connections are in use.
    case busy(String)
    /// Something that is not a socket sits at the path.
    case notASocket(path: String)
    /// The daemon answered with an error.
    case refused(String)
    case timedOut(path: String)
    case system(SystemError)

    public var description: String {
        switch self {
        case .notRunning(let p): "no crier daemon is running (nothing answers at \(p))"
        case .permissionDenied(let p): "permission denied on \(p): run as root or as a member of the socket's group (crier)"
        case .alreadyRunning(let p): "another crier daemon is already running (it answers at \(p)); stop it first (`systemctl stop crier`), or give this one its own control.socket, audio.device and device.id"
        case .busy(let m): "the daemon is busy: \(m)"
        case .notASocket(let p): "\(p) exists and is not a socket; remove it"
        case .refused(let m): m
        case .timedOut(let p): "the daemon at \(p) did not answer in time"
        case .system(let e): e.description
        }
    }
}

/// The daemon's local control socket (unix stream, mode 0660 so only root and the socket's
/// group may talk to it). One request line per connection, answered then closed:
///
/// - `status` → the status snapshot as one line of JSON
/// - `status text` → the same for people (what `crier status` prints)
/// - `say <lang> <text>` → `ok <detail>` or `error <why>`: speaks through the running daemon,
///   so the audio device is never opened twice.
///
/// Runs on its own threads (an accept thread and one per connection, at most
/// `maxConnections`); the handlers are async and run on Swift's pool.
///
/// An idle client cannot keep `crier status` out: the request line must arrive whole within
/// `requestDeadline` (1 s) of the connection, and when every slot is taken a new connection
/// takes the slot of the oldest one still waiting for its request line (that one is told
/// `error no request within …; closed to make room` and closed). Only when every slot is busy
/// answering (a status being built, a say being queued) is the newcomer told `error busy…`.
public final class ControlServer: Sendable {
    public static let defaultPath = "/run/crier/control.sock"
    public static let maxLine = 4096

    public struct Handlers: Sendable {
        public var status: @Sendable () async -> StatusSnapshot
        /// Queues (or speaks) `text` in `lang`; returns a short confirmation, throws to refuse.
        public var say: @Sendable (_ lang: Lang, _ text: String) async throws -> String
        /// `setup <words>`: the setup hotspot from the console (docs/setup-hotspot.md); the answer line.
        public var setup: (@Sendable (_ words: String) async -> String)?

        public init(status: @escaping @Sendable () async -> StatusSnapshot,
                    say: @escaping @Sendable (_ lang: Lang, _ text: String) async throws -> String,
                    setup: (@Sendable (_ words: String) async -> String)? = nil) {
            self.status = status
            self.say = say
            self.setup = setup
        }
    }

    public let path: String
    public let maxConnections: Int
    /// Longest a handler may take before the client is told "timed out".
    public let handlerTimeout: Double
    /// Longest a connection may take to send its whole request line.
    public let requestDeadline: Double
    private let handlers: Handlers
    private let log: Logger
    private let listenFD: Int32
    private let stopLatch: WakePipe
    private let stopped: WakePipe
    private let slots = Mutex(ControlSlots())
    private let closed = Mutex(false)

    /// Binds and starts answering. Refuses when another daemon already answers at `path`;
    /// removes a stale socket left by a crashed one.
    /// `group`: the group allowed to use the socket (e.g. "crier"); nil keeps the daemon's own.
    public init(path: String = ControlServer.defaultPath, mode: mode_t = 0o660, group: String? = nil,
                maxConnections: Int = 4, handlerTimeout: Double = 10, requestDeadline: Double = 1,
                handlers: Handlers, log: Logger) throws(ControlError) {
        self.path = path
        self.maxConnections = maxConnections
        self.handlerTimeout = handlerTimeout
        self.requestDeadline = requestDeadline
        self.handlers = handlers
        self.log = log
        guard let (addr, len) = Posix.unixAddress(path), !path.hasPrefix("@") else {
            throw .system(SystemError("control socket", path: path, code: ENAMETOOLONG))
        }
        try ControlServer.clearStale(path)
        let dirErr = ControlPath.ensureDirectory(of: path, mode: 0o750)
        if dirErr == EACCES || dirErr == EPERM || dirErr == EROFS { throw .permissionDenied(path: path) }
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw .system(SystemError("socket AF_UNIX SOCK_STREAM")) }
        var a = addr
        let rc = withUnsafePointer(to: &a) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, len) } }
        guard rc == 0 else {
            let e = SystemError("bind", path: path)
            Glibc.close(fd)
            switch e.code {
            case EACCES, EPERM: throw .permissionDenied(path: path)
            // Bound by another daemon between clearStale and here: it runs.
            case EADDRINUSE: throw .alreadyRunning(path: path)
            default: throw .system(e)
            }
        }
        // bind() honours the umask; set the mode the socket must have explicitly. (The window
        // in between is closed by the directory: /run/crier is 0750.)
        guard chmod(path, mode) == 0, listen(fd, 16) == 0 else {
            let e = SystemError("chmod/listen", path: path)
            Glibc.close(fd)
            unlink(path)
            throw .system(e)
        }
        if let group {
            guard let gr = getgrnam(group) else {
                Glibc.close(fd)
                unlink(path)
                throw .system(SystemError("group \(group) (no such group)", path: path, code: ENOENT))
            }
            // The socket already has the daemon's group, which is the wanted one under
            // crier.service (Group=crier): no chown then. It is not only saved work: the unit's
            // SystemCallFilter=~@privileged refuses every chown with EPERM, and failing here
            // left the box without `crier status`, so crier-mark-good never saw a healthy
            // trial and rolled back every update (found by scripts/ota-test-arm64.sh).
            var st = stat()
            let wanted = gr.pointee.gr_gid
            if lstat(path, &st) != 0 || st.st_gid != wanted {
                if chown(path, uid_t.max, wanted) != 0 {
                    // Still usable by root and by the daemon's own group: a narrower socket,
                    // not none (a daemon without one cannot be asked how it is).
                    let e = SystemError("chown :\(group)", path: path)
                    let own = getgrgid(getegid()).map { String(cString: $0.pointee.gr_name) } ?? "\(getegid())"
                    log.warning("control socket: cannot give it to group \(group) (\(e)); only root and group \(own) can use it")
                }
            }
        }
        listenFD = fd
        do throws(SystemError) {
            stopLatch = WakePipe()
            stopped = WakePipe()
            // Without its pipes the accept loop could not be stopped.
            if let e = stopLatch.failure ?? stopped.failure { throw e }
            try PosixThread.detach(name: "crier-control") { [self] in
                self.acceptLoop()
                self.stopped.wake()
            }
        } catch {
            Glibc.close(fd)
            unlink(path)
            throw .system(error)
        }
        log.info("control socket listening", ["path": path])
    }

    /// Stops accepting, removes the socket file. Connections in progress finish on their own.
    public func close() {
        let first = closed.withLock { c in
            defer { c = true }
            return !c
        }
        guard first else { return }
        stopLatch.wake()
        _ = stopped.wait(timeout: 2)
        Glibc.close(listenFD)
        unlink(path)
    }

    /// Binds the configured path; for the default path, falls back to the user's runtime
    /// directory when /run/crier cannot be used (not root, not under systemd). Refuses when a
    /// daemon answers at any of the paths a client would try (`ControlPath.candidates`).
    public static func bindDefaultOrFallback(configured: String, group: String?, handlers: Handlers, log: Logger,
                                             xdgRuntimeDir: String? = FileIO.env("XDG_RUNTIME_DIR")) throws(ControlError) -> ControlServer {
        let candidates = ControlPath.candidates(configured: configured, xdgRuntimeDir: xdgRuntimeDir)
        // A live daemon at any of them: a client could reach only one of the two.
        for p in candidates.dropFirst() {
            if case .success(let fd) = ControlClient.connect(path: p) {
                Glibc.close(fd)
                throw .alreadyRunning(path: p)
            }
        }
        var firstError: ControlError?
        for (i, p) in candidates.enumerated() {
            do {
                // Group access only where the package made /run/crier; the user's own dir is 0700.
                return try ControlServer(path: p, mode: i == 0 ? 0o660 : 0o600, group: i == 0 ? group : nil,
                                         handlers: handlers, log: log)
            } catch {
                switch error {
                case .permissionDenied, .system:
                    if firstError == nil { firstError = error }
                    if i + 1 < candidates.count {
                        log.info("control socket: \(p) not usable (\(error)); using \(candidates[i + 1]) (XDG_RUNTIME_DIR)")
                    }
                default:
                    throw error
                }
            }
        }
        throw firstError ?? .notRunning(path: configured)
    }

    static func clearStale(_ path: String) throws(ControlError) {
        var st = stat()
        guard lstat(path, &st) == 0 else { return }
        guard st.st_mode & S_IFMT == S_IFSOCK else { throw .notASocket(path: path) }
        switch ControlClient.connect(path: path) {
        case .success(let fd):
            Glibc.close(fd)
            throw .alreadyRunning(path: path)
        case .failure(.notRunning):
            unlink(path)
        case .failure(let e):
            throw e
        }
    }

    // MARK: - Threads

    private func acceptLoop() {
        while true {
            var fds = [pollfd(fd: listenFD, events: Int16(POLLIN), revents: 0),
                       pollfd(fd: stopLatch.readFD, events: Int16(POLLIN), revents: 0)]
            let r = poll(&fds, 2, -1)
            if r < 0 {
                if errno == EINTR { continue }
                log.error("control socket poll failed", ["error": SystemError("poll").description])
                return
            }
            if fds[1].revents != 0 { return }
            guard fds[0].revents & Int16(POLLIN) != 0 else { continue }
            let c = accept(listenFD, nil, nil)
            if c < 0 { continue }
            _ = fcntl(c, F_SETFD, FD_CLOEXEC)
            let (admitted, evicted) = slots.withLock { s in
                let r = s.admit(fd: c, limit: maxConnections, now: Monotonic.now())
                // Its thread waits in poll(): shutting its reading side ends that at once (the
                // answer can still be written); the thread answers, closes its descriptor and
                // does not give back the slot it no longer has. Under the lock: the thread
                // closes the descriptor only after releasing its entry, so the number is
                // still that connection's.
                if let e = r.evicted { shutdown(e.fd, Int32(SHUT_RD)) }
                return r
            }
            if evicted != nil {
                // One reason, no per-connection fields: the log's limiter folds a flood into
                // one line a minute with a count.
                log.warning("control socket: all connections in use; closed the oldest one that had sent no request, to serve a new one",
                            ["limit": maxConnections, "hint": "a local client opens connections and sends nothing"])
            }
            guard let token = admitted else {
                ControlServer.refuseBusy(c)
                continue
            }
            do {
                try PosixThread.detach(name: "crier-ctl-conn") { [self] in
                    self.serve(c, token: token)
                    // The descriptor is closed only once no one can shut it down any more.
                    self.slots.withLock { $0.release(token) }
                    Glibc.close(c)
                }
            } catch {
                slots.withLock { $0.release(token) }
                ControlServer.reply(c, "error \(error)\n")
                Glibc.close(c)
            }
        }
    }

    private func serve(_ fd: Int32, token: Int) {
        var tv = timeval(tv_sec: 2, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
        let line = ControlServer.readLine(fd, deadline: Monotonic.now() + requestDeadline)
        // From here the connection is working, never evicted (unless it was, meanwhile).
        let evicted = !slots.withLock { $0.startWork(token) }
        guard let line, !evicted else {
            let deadline = Format.fixed(requestDeadline, 1)
            ControlServer.reply(fd, evicted
                ? "error no request within \(deadline) s while every control connection was in use; closed to make room\n"
                : "error expected one request line of at most \(ControlServer.maxLine) bytes within \(deadline) s\n")
            return
        }
        let request = ControlRequest(parsing: line)
        let answer: String
        switch request {
        case .invalid(let why):
            answer = "error \(why)\n"
        case .status, .statusText, .say, .setup:
            answer = runHandler(request) ?? "error timed out after \(Int(handlerTimeout.rounded(.up)))s\n"
        }
        ControlServer.reply(fd, answer)
    }

    /// Runs the async handler from this (dedicated) thread and waits for it, bounded.
    private func runHandler(_ request: ControlRequest) -> String? {
        let result = Mutex<String?>(nil)
        let done = WakePipe()
        guard done.failure == nil else { return "error out of file descriptors\n" }
        let handlers = self.handlers
        let log = self.log
        let task = Task {
            let answer: String
            switch request {
            case .status:
                answer = StatusFormat.json(await handlers.status()) + "\n"
            case .statusText:
                answer = StatusFormat.human(await handlers.status())
            case .say(let lang, let text):
                do {
                    let detail = try await handlers.say(lang, text)
                    log.info("say via control socket", ["lang": lang.rawValue, "chars": text.count])
                    answer = "ok \(ControlRequest.oneLine(detail))\n"
                } catch {
                    answer = "error \(ControlRequest.oneLine(String(describing: error)))\n"
                }
            case .setup(let words):
                if let h = handlers.setup {
                    answer = ControlRequest.oneLine(await h(words)) + "\n"
                } else {
                    answer = "error this daemon has no setup hotspot\n"
                }
            case .invalid(let why):
                answer = "error \(why)\n"
            }
            result.withLock { $0 = answer }
            done.wake()
        }
        guard done.wait(timeout: handlerTimeout) else {
            task.cancel()
            return nil
        }
        return result.withLock { $0 }
    }

    /// Answers "busy" without a thread. The request is read (what has arrived, without
    /// waiting) before closing: a socket closed with unread data resets the connection, and the
    /// client would see "connection reset" instead of the answer.
    static func refuseBusy(_ c: Int32) {
        var buf = [UInt8](repeating: 0, count: maxLine + 1)
        var tv = timeval(tv_sec: 0, tv_usec: 50_000)
        setsockopt(c, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
        _ = recv(c, &buf, buf.count, 0)
        reply(c, "error busy: too many control connections; try again\n")
        shutdown(c, Int32(SHUT_WR))
        while recv(c, &buf, buf.count, Int32(MSG_DONTWAIT)) > 0 {}
        Glibc.close(c)
    }

    /// The request line, read until `deadline` (monotonic seconds) at the latest: a client that
    /// trickles a byte a second is cut off at the deadline like one that sends nothing.
    static func readLine(_ fd: Int32, deadline: Double) -> String? {
        var data: [UInt8] = []
        var buf = [UInt8](repeating: 0, count: 1024)
        while data.count <= maxLine {
            // Out of time without a whole line: no request (a partial one is not guessed at).
            let left = deadline - Monotonic.now()
            if left <= 0 { return nil }
            var pfd = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            let r = poll(&pfd, 1, Int32(max(1, (left * 1000).rounded(.up))))
            if r < 0 && errno == EINTR { continue }
            if r == 0 { return nil }
            if r < 0 { break }
            let n = recv(fd, &buf, buf.count, Int32(MSG_DONTWAIT))
            if n < 0 && (errno == EINTR || errno == EAGAIN) { continue }
            if n <= 0 { break }  // EOF (or shut down to make room) or error: take what came
            data += buf[0..<n]
            if let nl = data.firstIndex(of: 10) {
                data = Array(data[..<nl])
                break
            }
        }
        guard data.count <= maxLine, !data.isEmpty else { return nil }
        if data.last == 13 { data.removeLast() }
        return String(decoding: data, as: UTF8.self)
    }

    static func reply(_ fd: Int32, _ text: String) {
        let bytes = Array(text.utf8)
        bytes.withUnsafeBytes { b in
            var off = 0
            while off < b.count {
                let n = send(fd, b.baseAddress! + off, b.count - off, Int32(MSG_NOSIGNAL))
                if n > 0 { off += n } else if n < 0 && errno == EINTR { continue } else { return }
            }
        }
    }
}

/// Who holds the control connections' slots: each admitted connection has a token; one still
/// waiting for its request line is idle and may be evicted (oldest first) to let a new
/// connection in; one that has its request is working and keeps its slot until it answers.
struct ControlSlots {
    struct Entry {
        var fd: Int32
        var since: Double
        var working = false
        var evicted = false
    }
    private var entries: [Int: Entry] = [:]
    private var next = 0

    /// Slots in use (an evicted connection's slot already belongs to its successor).
    var inUse: Int { entries.values.filter { !$0.evicted }.count }

    /// A token for the new connection, or nil (every slot is working: answer busy); and the
    /// idle connection whose slot it took, if any (shut it down).
    mutating func admit(fd: Int32, limit: Int, now: Double) -> (token: Int?, evicted: Entry?) {
        var evicted: Entry?
        if inUse >= limit {
            guard let oldest = entries.filter({ !$0.value.working && !$0.value.evicted }).min(by: { $0.value.since < $1.value.since }) else {
                return (nil, nil)
            }
            entries[oldest.key]!.evicted = true
            evicted = entries[oldest.key]
        }
        next += 1
        entries[next] = Entry(fd: fd, since: now)
        return (next, evicted)
    }

    /// The request line is in: false when the connection was evicted meanwhile.
    mutating func startWork(_ token: Int) -> Bool {
        guard let e = entries[token], !e.evicted else { return false }
        entries[token]!.working = true
        return true
    }

    mutating func release(_ token: Int) { entries[token] = nil }
}

/// One parsed control request.
public enum ControlRequest: Sendable, Equatable {
    case status
    case statusText
    case say(Lang, String)
    /// `setup open|close|state|rescan|submit HEX-SSID HEX-PSK|- [hidden] [COUNTRY]`.
    case setup(String)
    case invalid(String)

    public init(parsing line: String) {
        let trimmed = line.drop(while: { $0 == " " })
        let words = trimmed.split(separator: " ", maxSplits: 2, omittingEmptySubsequences: true)
        switch words.first {
        case "status":
            if words.count == 1 { self = .status; return }
            if words.count == 2 && words[1] == "text" { self = .statusText; return }
            self = .invalid("expected \"status\" or \"status text\"")
        case "say":
            guard words.count >= 2 else { self = .invalid("expected \"say <lang> <text>\""); return }
            guard let lang = Lang(rawValue: String(words[1])) else {
                self = .invalid("unknown language \"\(words[1])\"; expected one of \(Lang.allCases.map(\.rawValue).joined(separator: ", "))")
                return
            }
            let text = words.count == 3 ? String(words[2]) : ""
            guard !text.allSatisfy({ $0 == " " }) else { self = .invalid("nothing to say"); return }
            self = .say(lang, text)
        case "setup":
            self = .setup(words.dropFirst().joined(separator: " "))
        default:
            self = .invalid("unknown request \"\(ControlRequest.oneLine(String(trimmed.prefix(40))))\"; expected status, status text or say <lang> <text>")
        }
    }

    /// The request line a client sends.
    public var line: String {
        switch self {
        case .status: "status"
        case .statusText: "status text"
        case .say(let lang, let text): "say \(lang.rawValue) \(ControlRequest.oneLine(text))"
        case .setup(let words): "setup \(ControlRequest.oneLine(words))"
        case .invalid(let s): s
        }
    }

    static func oneLine(_ s: String) -> String {
        String(s.map { $0 == "\n" || $0 == "\r" ? " " : $0 })
    }
}
