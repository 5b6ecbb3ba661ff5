import CrierCore
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

    @Test func answersStatusAsJSONAndText() throws {
        defer { TestFS.remove(dir) }
        let s = try server()
        defer { s.close() }
        let json = try ControlClient.status(json: true, path: path)
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

        let text = try ControlClient.status(json: false, path: path)
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

    @Test func sayGoesToTheRunningDaemon() throws {
        defer { TestFS.remove(dir) }
        let said = Said()
        let s = try server(said)
        defer { s.close() }
        #expect(try ControlClient.say(.zh, "新订单\n42 号", path: path) == "queued as local-1")
        #expect(said.items.withLock { $0 } == ["zh:新订单 42 号"])
        #expect(throws: ControlError.refused("speech engine not ready")) { try ControlClient.say(.en, "fail", path: path) }
    }

    @Test func badRequestsGetAnErrorLine() throws {
        defer { TestFS.remove(dir) }
        let s = try server()
        defer { s.close() }
        #expect(try ControlClient.request(.invalid("reboot"), path: path)
                == "error unknown request \"reboot\"; expected status, status text or say <lang> <text>\n")
        #expect(try ControlClient.request(.invalid("say xx hi"), path: path)
                == "error unknown language \"xx\"; expected one of zh, en\n")
        #expect(try ControlClient.request(.invalid("say en   "), path: path) == "error nothing to say\n")
    }

    @Test func statusStillAnswersWhileASayIsSlow() async throws {
        defer { TestFS.remove(dir) }
        let said = Said()
        let s = try server(said, slowSay: true)
        defer { s.close() }
        // The blocking client runs on its own thread, as it does in the CLI process: blocking
        // Swift's (2-thread) pool with it would starve the server's handlers.
        let p = path
        let answer = Mutex<String?>(nil)
        let done = try Latch()
        try SystemThread.start(name: "test-say") {
            answer.withLock { $0 = (try? ControlClient.say(.en, "hello", path: p)) ?? "failed" }
            done.signal()
        }
        while said.gate.withLock({ $0 == nil }) { await Task.yield() }
        #expect(try ControlClient.status(json: true, path: path).contains("\"device\":\"kiosk-1\""))
        said.gate.withLock { $0 }?.resume()
        #expect(done.wait(timeout: 10))
        #expect(answer.withLock { $0 } == "queued as local-1")
    }

    @Test func aHandlerThatHangsTimesOut() async throws {
        defer { TestFS.remove(dir) }
        let said = Said()
        let s = try server(said, slowSay: true, handlerTimeout: 0.2)
        defer { s.close() }
        #expect(throws: ControlError.refused("timed out after 1s")) { try ControlClient.say(.en, "hello", path: path) }
        said.gate.withLock { $0 }?.resume()
    }

    @Test func noDaemonMeansNotRunning() throws {
        defer { TestFS.remove(dir) }
        #expect(throws: ControlError.notRunning(path: path)) { try ControlClient.status(json: true, path: path) }
    }

    @Test func refusesASecondDaemonAndReplacesAStaleSocket() throws {
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
        #expect(try ControlClient.status(json: true, path: path).hasPrefix("{"))
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
        #expect(await it.next() == .terminate)
        #expect(await it.next() == .interrupt)
        #expect(throws: SystemError.self) { try SignalWatcher.start() }
    }
}
