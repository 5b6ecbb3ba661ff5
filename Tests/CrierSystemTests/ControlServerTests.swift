import CrierCore
import CrierPosix
import Foundation
import Glibc
import Synchronization
import Testing
@testable import CrierSystem

func sampleSnapshot() -> StatusSnapshot {
    StatusSnapshot(
        version: "0.1.0", deviceID: "kiosk-1", time: WallTime(unixMillis: 1_795_000_000_000), uptime: 3725,
        components: [
            ComponentStatus(name: "audio", state: .running, sinceProgress: 0.02),
            ComponentStatus(name: "link", state: .restarting, restarts: 2, lastFailure: "error: connection refused"),
        ],
        link: LinkStatus(state: "down", server: "tcp://10.0.0.5:7700", since: 42, detail: "connection refused"),
        volume: 6, volumeMax: 10, muted: false, queueLength: 1,
        lastAlerts: [AlertSummary(time: WallTime(unixMillis: 1_794_999_990_000), id: "A1", lang: "zh", text: "新订单 42 号", state: "acked")])
}

final class Said: Sendable {
    let items = Mutex<[String]>([])
    let gate = Mutex<CheckedContinuation<Void, Never>?>(nil)
}

@Suite(.serialized, .timeLimit(.minutes(1)))
struct ControlServerTests {
    let dir = TestFS.tempDir()
    var path: String { dir + "/control.sock" }

    func server(_ said: Said = Said(), slowSay: Bool = false, handlerTimeout: Double = 10) throws -> ControlServer {
        let hub = LogHub(clock: { WallTime(unixMillis: 0) })
        return try ControlServer(path: path, handlerTimeout: handlerTimeout, handlers: .init(
            status: { sampleSnapshot() },
            say: { lang, text in
                if slowSay { await withCheckedContinuation { c in said.gate.withLock { $0 = c } } }
                if text == "fail" { throw FakeRefusal() }
                said.items.withLock { $0.append("\(lang.rawValue):\(text)") }
                return "queued as local-1"
            }), log: hub.logger("control"))
    }

    struct FakeRefusal: Error, CustomStringConvertible {
        var description: String { "speech engine not ready" }
    }

    @Test func answersStatusAsJSONAndText() async throws {
        defer { TestFS.remove(dir) }
        let s = try server()
        defer { s.close() }
        let p = path
        let json = try await offPool { try ControlClient.status(json: true, path: p) }
        #expect(json.hasSuffix("}\n"))
        let obj = try #require(try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any])
        #expect(obj["device"] as? String == "kiosk-1")
        #expect(obj["uptime_s"] as? Int == 3725)
        #expect(obj["healthy"] as? Bool == false)
        #expect(obj["queue_length"] as? Int == 1)
        #expect((obj["link"] as? [String: Any])?["state"] as? String == "down")
        let comps = try #require(obj["components"] as? [[String: Any]])
        #expect(comps.map { $0["state"] as? String } == ["running", "restarting"])
        #expect((obj["last_alerts"] as? [[String: Any]])?.first?["text"] as? String == "新订单 42 号")

        let text = try await offPool { try ControlClient.status(json: false, path: p) }
        #expect(text == StatusFormat.human(sampleSnapshot()))
    }

    @Test func theSocketIsGroupOnly() throws {
        defer { TestFS.remove(dir) }
        let s = try server()
        var st = stat()
        #expect(lstat(path, &st) == 0)
        #expect(st.st_mode & 0o777 == 0o660)
        #expect(st.st_mode & S_IFMT == S_IFSOCK)
        s.close()
        #expect(access(path, F_OK) != 0)  // removed on close
    }

    @Test func sayGoesToTheRunningDaemon() async throws {
        defer { TestFS.remove(dir) }
        let said = Said()
        let s = try server(said)
        defer { s.close() }
        let p = path
        #expect(try await offPool { try ControlClient.say(.zh, "新订单\n42 号", path: p) } == "queued as local-1")
        #expect(said.items.withLock { $0 } == ["zh:新订单 42 号"])
        await #expect(throws: ControlError.refused("speech engine not ready")) {
            try await offPool { try ControlClient.say(.en, "fail", path: p) }
        }
    }

    @Test func badRequestsGetAnErrorLine() async throws {
        defer { TestFS.remove(dir) }
        let s = try server()
        defer { s.close() }
        let p = path
        func ask(_ line: String) async throws -> String { try await offPool { try ControlClient.request(.invalid(line), path: p) } }
        #expect(try await ask("reboot")
                == "error unknown request \"reboot\"; expected status, status text or say <lang> <text>\n")
        #expect(try await ask("say xx hi")
                == "error unknown language \"xx\"; expected one of zh, en\n")
        #expect(try await ask("say en   ") == "error nothing to say\n")
    }

    @Test func statusStillAnswersWhileASayIsSlow() async throws {
        defer { TestFS.remove(dir) }
        let said = Said()
        let s = try server(said, slowSay: true)
        defer { s.close() }
        // Blocking clients run on their own threads, as in the CLI process.
        let p = path
        let slow = Task { try await offPool { try ControlClient.say(.en, "hello", path: p) } }
        while said.gate.withLock({ $0 == nil }) { await Task.yield() }
        #expect(try await offPool { try ControlClient.status(json: true, path: p) }.contains("\"device\":\"kiosk-1\""))
        said.gate.withLock { $0 }?.resume()
        #expect(try await slow.value == "queued as local-1")
    }

    @Test func aHandlerThatHangsTimesOut() async throws {
        defer { TestFS.remove(dir) }
        let said = Said()
        let s = try server(said, slowSay: true, handlerTimeout: 0.2)
        defer { s.close() }
        let p = path
        await #expect(throws: ControlError.refused("timed out after 1s")) {
            try await offPool { try ControlClient.say(.en, "hello", path: p) }
        }
        said.gate.withLock { $0 }?.resume()
    }

    @Test func noDaemonMeansNotRunning() async throws {
        defer { TestFS.remove(dir) }
        let p = path
        await #expect(throws: ControlError.notRunning(path: p)) { try await offPool { try ControlClient.status(json: true, path: p) } }
    }

    @Test func refusesASecondDaemonAndReplacesAStaleSocket() async throws {
        defer { TestFS.remove(dir) }
        let s = try server()
        #expect(throws: ControlError.alreadyRunning(path: path)) { try server() }
        s.close()
        // A socket file nobody listens on (a crashed daemon's) is replaced.
        let stale = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        var (addr, len) = Posix.unixAddress(path)!
        #expect(withUnsafePointer(to: &addr) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(stale, $0, len) } } == 0)
        close(stale)
        let again = try server()
        defer { again.close() }
        let p = path
        #expect(try await offPool { try ControlClient.status(json: true, path: p) }.hasPrefix("{"))
    }

    @Test func givesTheSocketToAGroup() throws {
        defer { TestFS.remove(dir) }
        let hub = LogHub(clock: { WallTime(unixMillis: 0) })
        let handlers = ControlServer.Handlers(status: { sampleSnapshot() }, say: { _, _ in "" })
        let gid = getegid()
        let name = String(cString: getgrgid(gid).pointee.gr_name)
        let s = try ControlServer(path: path, group: name, handlers: handlers, log: hub.logger("control"))
        defer { s.close() }
        var st = stat()
        #expect(lstat(path, &st) == 0 && st.st_gid == gid)
        #expect(throws: ControlError.self) {
            try ControlServer(path: dir + "/other.sock", group: "no-such-group-crier", handlers: handlers, log: hub.logger("control"))
        }
        #expect(access(dir + "/other.sock", F_OK) != 0)
    }

    @Test func refusesToReplaceSomethingElse() throws {
        defer { TestFS.remove(dir) }
        #expect(creat(path, 0o644) >= 0)
        #expect(throws: ControlError.notASocket(path: path)) { try server() }
    }
}

@Suite(.serialized)
struct SignalWatcherTests {
    @Test func deliversSignalsToTheStream() async throws {
        let w = try SignalWatcher.start()
        var it = w.signals.makeAsyncIterator()
        kill(getpid(), SIGHUP)
        #expect(await it.next() == .hangup)
        kill(getpid(), SIGTERM)
        kill(getpid(), SIGINT)
        // Two pending signals may be delivered in either order (the kernel favours lower numbers).
        let two = [await it.next(), await it.next()].compactMap { $0 }.map(\.rawValue).sorted()
        #expect(two == [SIGINT, SIGTERM])
        #expect(throws: SystemError.self) { try SignalWatcher.start() }
    }
}

@Suite(.serialized, .timeLimit(.minutes(1)))
struct ControlPathTests {
    @Test func onlyTheDefaultPathFallsBackToTheUsersRuntimeDirectory() {
        #expect(ControlPath.candidates(configured: ControlServer.defaultPath, xdgRuntimeDir: "/run/user/1000")
                == ["/run/crier/control.sock", "/run/user/1000/crier/control.sock"])
        #expect(ControlPath.candidates(configured: ControlServer.defaultPath, xdgRuntimeDir: "/run/user/1000/")
                == ["/run/crier/control.sock", "/run/user/1000/crier/control.sock"])
        #expect(ControlPath.candidates(configured: ControlServer.defaultPath, xdgRuntimeDir: nil) == ["/run/crier/control.sock"])
        #expect(ControlPath.candidates(configured: ControlServer.defaultPath, xdgRuntimeDir: "relative") == ["/run/crier/control.sock"])
        #expect(ControlPath.candidates(configured: "/srv/x.sock", xdgRuntimeDir: "/run/user/1000") == ["/srv/x.sock"])
    }

    @Test func theSocketDirectoryIsCreatedWhenMissing() throws {
        let dir = TestFS.tempDir()
        defer { TestFS.remove(dir) }
        let path = dir + "/sub/control.sock"
        let hub = LogHub(clock: { WallTime(unixMillis: 0) })
        let s = try ControlServer(path: path, handlers: .init(status: { sampleSnapshot() }, say: { _, _ in "ok" }),
                                  log: hub.logger("control"))
        defer { s.close() }
        var st = stat()
        #expect(stat(dir + "/sub", &st) == 0 && st.st_mode & 0o777 == 0o750)
        #expect(stat(path, &st) == 0 && st.st_mode & S_IFMT == S_IFSOCK)
    }

    @Test func aBusyAnswerIsAnErrorNotAStatus() async throws {
        let dir = TestFS.tempDir()
        defer { TestFS.remove(dir) }
        let path = dir + "/control.sock"
        // A daemon at its connection limit: every answer is "error busy…".
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        let (addr, len) = try #require(Posix.unixAddress(path))
        var a = addr
        _ = withUnsafePointer(to: &a) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, len) } }
        listen(fd, 4)
        defer { close(fd) }
        try PosixThread.detach(name: "fake-busy") {
            for _ in 0..<2 {
                let c = accept(fd, nil, nil)
                if c < 0 { return }
                var b = [UInt8](repeating: 0, count: 256)
                _ = recv(c, &b, b.count, 0)
                ControlServer.reply(c, "error busy: too many control connections; try again\n")
                close(c)
            }
        }
        for json in [false, true] {
            let r = try await offPool { () -> Result<String, ControlError> in
                do throws(ControlError) { return .success(try ControlClient.status(json: json, path: path)) } catch { return .failure(error) }
            }
            #expect(r == .failure(.busy("busy: too many control connections; try again")))
        }
    }

    @Test func theRealServerAtItsLimitSaysBusyAndTheClientThrowsIt() async throws {
        let dir = TestFS.tempDir()
        defer { TestFS.remove(dir) }
        let path = dir + "/control.sock"
        let hub = LogHub(clock: { WallTime(unixMillis: 0) })
        let gate = Said()
        let s = try ControlServer(path: path, maxConnections: 1, handlers: .init(status: { sampleSnapshot() }, say: { _, _ in
            // A say that is being queued holds its slot: it is working, not idle.
            await withCheckedContinuation { c in gate.gate.withLock { $0 = c } }
            return "ok"
        }), log: hub.logger("control"))
        defer { s.close() }
        let sayer = Task {
            try await offPool { () -> Result<String, ControlError> in
                do throws(ControlError) { return .success(try ControlClient.say(.en, "hold", path: path)) } catch { return .failure(error) }
            }
        }
        while gate.gate.withLock({ $0 == nil }) { usleep(10_000) }
        for json in [false, true] {
            let r = try await offPool { () -> Result<String, ControlError> in
                do throws(ControlError) { return .success(try ControlClient.status(json: json, path: path)) } catch { return .failure(error) }
            }
            #expect(r == .failure(.busy("busy: too many control connections; try again")))
        }
        gate.gate.withLock { $0?.resume(); $0 = nil }
        _ = try await sayer.value
    }

    /// Issue 31: a client that keeps control connections open and sends nothing held every
    /// slot for 2 s each, and `crier status` answered "busy" most of the time. Now a newcomer
    /// takes the slot of the oldest idle connection: with 12 idle connections held open (3×
    /// the slots), and new idle ones opened between the requests, every status answers.
    @Test func idleConnectionsNeverKeepAStatusOut() async throws {
        let dir = TestFS.tempDir()
        defer { TestFS.remove(dir) }
        let path = dir + "/control.sock"
        let hub = LogHub(clock: { WallTime(unixMillis: 0) })
        let sink = MemoryLogSink()
        hub.add(sink)
        let s = try ControlServer(path: path, handlers: .init(status: { sampleSnapshot() }, say: { _, _ in "ok" }),
                                  log: hub.logger("control"))
        defer { s.close() }
        var idle: [Int32] = []
        defer { idle.forEach { close($0) } }
        func openIdle() {
            if case .success(let fd) = ControlClient.connect(path: path) { idle.append(fd) }
        }
        for _ in 0..<12 { openIdle() }
        usleep(100_000)
        var answers: [Result<String, ControlError>] = []
        for i in 0..<20 {
            openIdle()
            openIdle()
            let json = i % 2 == 0
            answers.append(try await offPool { () -> Result<String, ControlError> in
                do throws(ControlError) { return .success(try ControlClient.status(json: json, path: path)) } catch { return .failure(error) }
            })
        }
        let failed = answers.filter { if case .failure = $0 { return true } else { return false } }
        #expect(failed.isEmpty, "\(failed.count) of 20 status requests failed: \(failed.first.map { "\($0)" } ?? "")")
        // An evicted client is told why.
        var buf = [UInt8](repeating: 0, count: 512)
        let n = recv(idle[0], &buf, buf.count, 0)
        #expect(n > 0 && String(decoding: buf[0..<max(0, n)], as: UTF8.self).hasPrefix("error no request within 1.0 s while every control connection was in use"))
        #expect(sink.lines.contains { $0.contains("closed the oldest one that had sent no request") })
    }

    /// A client that trickles its request line a byte at a time is cut off at the deadline
    /// (1 s for the whole line), not 2 s per byte.
    @Test func aTrickledRequestLineIsCutOffAtTheDeadline() throws {
        let dir = TestFS.tempDir()
        defer { TestFS.remove(dir) }
        let path = dir + "/control.sock"
        let hub = LogHub(clock: { WallTime(unixMillis: 0) })
        let s = try ControlServer(path: path, requestDeadline: 0.5, handlers: .init(status: { sampleSnapshot() }, say: { _, _ in "ok" }),
                                  log: hub.logger("control"))
        defer { s.close() }
        guard case .success(let fd) = ControlClient.connect(path: path) else { Issue.record("connect"); return }
        defer { close(fd) }
        let t0 = Monotonic.now()
        var answer = ""
        var buf = [UInt8](repeating: 0, count: 512)
        for b in Array("status".utf8) {
            _ = send(fd, [b], 1, Int32(MSG_NOSIGNAL))
            var pfd = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            if poll(&pfd, 1, 200) > 0 {
                let n = recv(fd, &buf, buf.count, 0)
                if n > 0 { answer = String(decoding: buf[0..<n], as: UTF8.self) }
                break
            }
        }
        let took = Monotonic.now() - t0
        #expect(answer.hasPrefix("error expected one request line"), "\(answer)")
        #expect(took < 1.0, "cut off after \(took) s")
    }

    @Test func slotsEvictTheOldestIdleAndNeverAWorkingOne() {
        var slots = ControlSlots()
        let a = slots.admit(fd: 10, limit: 2, now: 1).token!
        let b = slots.admit(fd: 11, limit: 2, now: 2).token!
        let aWorks = slots.startWork(a)
        #expect(aWorks)
        // Full: the idle one (b) goes, not the older working one (a).
        let c = slots.admit(fd: 12, limit: 2, now: 3)
        #expect(c.token != nil && c.evicted?.fd == 11)
        let bWorks = slots.startWork(b)
        #expect(!bWorks, "an evicted connection does not start work")
        #expect(slots.inUse == 2)
        let cWorks = slots.startWork(c.token!)
        #expect(cWorks)
        // Every slot working: the newcomer is refused.
        let d = slots.admit(fd: 13, limit: 2, now: 4)
        #expect(d.token == nil && d.evicted == nil)
        slots.release(b)
        slots.release(a)
        #expect(slots.admit(fd: 14, limit: 2, now: 5).token != nil)
    }
}

/// crier.service's `SystemCallFilter=~@privileged` (SystemCallErrorNumber=EPERM) as a seccomp
/// filter on one thread: every chown variant fails with EPERM there, as under systemd.
private func withChownRefused(_ body: @escaping @Sendable () -> Void) throws {
    let t = try PosixThread(name: "no-chown") {
        // SECCOMP_RET_ERRNO | EPERM for chown, fchown, lchown, fchownat (x86_64 and aarch64
        // numbers); everything else allowed. PR_SET_NO_NEW_PRIVS first: required without
        // CAP_SYS_ADMIN, and both are per thread, which ends with the test.
        #if arch(x86_64)
        let nrs: [UInt32] = [92, 93, 94, 260]
        #else
        let nrs: [UInt32] = [54, 55]  // fchownat, fchown (aarch64 has no chown/lchown)
        #endif
        // struct sock_filter { u16 code; u8 jt; u8 jf; u32 k } (linux/filter.h, not in Glibc's module)
        var prog: [UInt64] = []
        func op(_ code: UInt16, _ jt: UInt8, _ jf: UInt8, _ k: UInt32) {
            prog.append(UInt64(code) | UInt64(jt) << 16 | UInt64(jf) << 24 | UInt64(k) << 32)
        }
        op(0x20, 0, 0, 0)  // ld seccomp_data.nr
        for (i, nr) in nrs.enumerated() { op(0x15, UInt8(nrs.count - i), 0, nr) }  // jeq nr -> errno
        op(0x06, 0, 0, 0x7fff_0000)  // ret ALLOW
        op(0x06, 0, 0, 0x0005_0000 | UInt32(EPERM))  // ret ERRNO(EPERM)
        let ok = prog.withUnsafeMutableBufferPointer { p -> Bool in
            // struct sock_fprog { unsigned short len; struct sock_filter *filter } (pointer at 8)
            let fprog = UnsafeMutableRawPointer.allocate(byteCount: 16, alignment: 8)
            defer { fprog.deallocate() }
            fprog.storeBytes(of: UInt16(p.count), as: UInt16.self)
            fprog.storeBytes(of: UnsafeMutableRawPointer(p.baseAddress!), toByteOffset: 8, as: UnsafeMutableRawPointer.self)
            // prctl is variadic in C, so Swift does not import it: called through its symbol.
            typealias Prctl = @convention(c) (Int32, UInt, UInt, UInt, UInt) -> Int32
            guard let sym = dlsym(nil, "prctl") else { return false }
            let prctl = unsafeBitCast(sym, to: Prctl.self)
            return prctl(38 /* PR_SET_NO_NEW_PRIVS */, 1, 0, 0, 0) == 0
                && prctl(22 /* PR_SET_SECCOMP */, 2 /* SECCOMP_MODE_FILTER */, UInt(bitPattern: fprog), 0, 0) == 0
        }
        precondition(ok, "seccomp filter not installed: errno \(errno)")
        body()
    }
    t.join()
}

@Suite(.serialized, .timeLimit(.minutes(1)))
struct ControlServerUnderSystemdFilterTests {
    let dir = TestFS.tempDir()

    /// Under crier.service the socket is made by a process whose group is already crier, and
    /// chown is refused: the socket must still be there (it was not, and no trial update could
    /// ever be committed).
    @Test func listensWhenChownIsRefusedAndTheGroupIsAlreadyRight() throws {
        defer { TestFS.remove(dir) }
        let path = dir + "/control.sock"
        let hub = LogHub(clock: { WallTime(unixMillis: 0) })
        let gid = getegid()
        let name = String(cString: getgrgid(gid).pointee.gr_name)
        let result = Mutex<String>("not run")
        let chownFails = Mutex(false)
        try withChownRefused {
            chownFails.withLock { $0 = chown(dir, uid_t.max, gid) != 0 && errno == EPERM }
            do {
                let s = try ControlServer(path: path, group: name, handlers: .init(status: { sampleSnapshot() }, say: { _, _ in "" }),
                                          log: hub.logger("control"))
                s.close()
                result.withLock { $0 = "ok" }
            } catch {
                result.withLock { $0 = "\(error)" }
            }
        }
        #expect(chownFails.withLock { $0 }, "the filter must refuse chown, or this test proves nothing")
        #expect(result.withLock { $0 } == "ok")
    }

    /// A group the daemon is not in, with chown refused: a warning naming both groups and a
    /// socket for root and the daemon's group, not a daemon without a control socket.
    @Test func warnsAndKeepsTheSocketWhenTheGroupCannotBeGiven() throws {
        defer { TestFS.remove(dir) }
        let path = dir + "/control.sock"
        let sink = MemoryLogSink()
        let hub = LogHub(clock: { WallTime(unixMillis: 0) })
        hub.add(sink)
        guard let other = getgrgid(getegid() == 0 ? 1 : 0).map({ String(cString: $0.pointee.gr_name) }) else { return }
        let result = Mutex<String>("not run")
        try withChownRefused {
            do {
                let s = try ControlServer(path: path, group: other, handlers: .init(status: { sampleSnapshot() }, say: { _, _ in "" }),
                                          log: hub.logger("control"))
                var st = stat()
                result.withLock { $0 = lstat(path, &st) == 0 && (st.st_mode & 0o777) == 0o660 ? "ok" : "no socket" }
                s.close()
            } catch {
                result.withLock { $0 = "\(error)" }
            }
        }
        #expect(result.withLock { $0 } == "ok")
        #expect(sink.lines.contains { $0.contains("WARN") && $0.contains("cannot give it to group \(other)") })
    }
}
