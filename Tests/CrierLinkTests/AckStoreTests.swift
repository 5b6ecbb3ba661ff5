import CrierCore
import CrierPosix
import Glibc
import Testing
@testable import CrierLink

/// A fresh directory (mkdtemp), removed with its files at the end.
final class TempDir {
    let path: String
    init() {
        var template = Array((FileIO.temporaryDirectory() + "crier-acks-XXXXXX").utf8CString)
        path = template.withUnsafeMutableBufferPointer { String(cString: mkdtemp($0.baseAddress!)!) }
    }
    func file(_ name: String) -> String { path + "/" + name }
    deinit {
        if let d = opendir(path) {
            while let e = readdir(d) {
                let name = withUnsafeBytes(of: e.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
                if name != "." && name != ".." { unlink(file(name)) }
            }
            closedir(d)
        }
        rmdir(path)
    }
}

func fileText(_ path: String) -> String? {
    (try? FileIO.read(path)).map { String(decoding: $0, as: UTF8.self) }
}

/// The outbox file without its `"delivered":true` lines (confirmed outcomes kept for the
/// dedupe): the acks the server may not have yet.
func undeliveredText(_ path: String) -> String? {
    fileText(path).map { $0.split(separator: "\n").filter { !$0.contains(#""delivered":true"#) }.map { $0 + "\n" }.joined() }
}

/// Issue 13, item 8: acks not yet delivered survive a restart (and a power cut after they
/// were queued), are bounded, and go out after the next welcome.
@Suite("Ack outbox file across restarts", .serialized)
struct AckStoreTests {
    @Test("acks queued while the server is down are on disk at once, survive a restart, go out after the next welcome, and leave the file once ponged")
    func survivesRestart() {
        let dir = TempDir()
        let path = dir.file("acks")
        let raw = RawServer()
        defer { raw.close() }
        let (log, _) = makeLog()
        do {
            // "Restart" 1: the server is not there (nobody accepts yet); the box acks two orders.
            let store = AckStore(path: path, log: log)
            var options = fastOptions()
            options.ackStore = store
            let link = OrderLink(config: linkConfig(port: freePort()), deviceID: "d", log: log, options: options, onEvent: { _ in })
            link.start()
            link.send(.spoken("S-1"))
            link.send(Ack(id: "S-2", status: .expired))
            // No clean stop needed: on disk before any shutdown (a SIGKILL here loses nothing).
            #expect(eventually(2) { fileText(path)?.contains("S-2") == true })
            #expect(fileText(path) == "{\"type\":\"ack\",\"id\":\"S-1\",\"status\":\"spoken\"}\n{\"type\":\"ack\",\"id\":\"S-2\",\"status\":\"expired\"}\n")
            link.abandon()  // as if the process died: nothing more is written
        }
        let (log2, logs2) = makeLog()
        let store = AckStore(path: path, log: log2)
        #expect(store.restored == [.spoken("S-1"), Ack(id: "S-2", status: .expired)])
        #expect(logs2.lines.contains { $0.contains("INFO link: acks from before the restart: the unsent go out after the next welcome") && $0.contains("acks=2 unsent=2 sent_unconfirmed=0") })
        var options = fastOptions()
        options.ackStore = store
        let link = OrderLink(config: linkConfig(port: raw.port), deviceID: "d", log: log2, options: options, onEvent: { _ in })
        link.start()
        defer { link.stop(); store.close() }
        #expect(raw.accept())
        #expect(raw.readLine()?.hasPrefix(#"{"type":"hello""#) == true)
        #expect(raw.readLine(timeout: 0.2) == nil, "nothing before the welcome")
        raw.write("{\"type\":\"welcome\"}\n")
        let got = raw.readUntil(#"{"type":"ping"}"#)
        #expect(got.dropLast() == [#"{"type":"ack","id":"S-1","status":"spoken"}"#, #"{"type":"ack","id":"S-2","status":"expired"}"#])
        #expect(fileText(path)?.contains("S-1") == true, "read by the server is not known yet")
        raw.write("{\"type\":\"pong\"}\n")
        #expect(eventually(2) { undeliveredText(path) == "" })
    }

    @Test("a garbage or damaged file is logged line by line and ignored, never a crash; the good lines still count")
    func damagedFile() throws {
        let dir = TempDir()
        let path = dir.file("acks")
        let good = "{\"type\":\"ack\",\"id\":\"G-1\",\"status\":\"spoken\"}\n"
        try FileIO.write(path, Array(("\u{00}\u{FF}garbage\n" + good + "{\"type\":\"ack\",\"id\":\"G-2\",\"stat").utf8))
        let (log, logs) = makeLog()
        let store = AckStore(path: path, log: log)
        defer { store.close() }
        #expect(store.restored == [.spoken("G-1")])
        let warnings = logs.lines.filter { $0.contains("WARN link: ack outbox file damaged; the line is ignored") }
        #expect(warnings.count == 2, "\(logs.lines)")
        #expect(warnings.first?.contains("line 1") == true)
    }

    @Test("an unwritable outbox is one clear error (not one per ack), and the acks still go out from memory")
    func unwritable() throws {
        let dir = TempDir()
        try FileIO.write(dir.file("file"), [0x41])
        let path = dir.file("file") + "/acks"  // ENOTDIR: a file where a directory should be
        let (log, logs) = makeLog()
        let store = AckStore(path: path, log: log)
        for i in 0..<20 { store.with { $0.add(.spoken("U-\(i)")) } }
        #expect(eventually(2) { logs.lines.contains { $0.contains("ERROR link: cannot write the ack outbox") } })
        usleep(100_000)
        store.close()
        #expect(logs.lines.filter { $0.contains("cannot write the ack outbox") }.count == 1, "\(logs.lines)")
        #expect(store.count == 20)
    }

    @Test("a missing data directory is created (one level)")
    func missingDirectory() {
        let dir = TempDir()
        let path = dir.file("sub") + "/acks"
        let (log, logs) = makeLog()
        let store = AckStore(path: path, log: log)
        store.with { $0.add(.spoken("M-1")) }
        store.close()
        #expect(fileText(path)?.contains("M-1") == true, "\(logs.lines)")
        unlink(path)
        rmdir(dir.file("sub"))
    }

    @Test("write cost with a full file (1000 acks): each rewrite is write + fsync + rename + dir fsync")
    func writeCost() {
        let dir = TempDir()
        let path = dir.file("acks")
        let (log, _) = makeLog()
        let store = AckStore(path: path, log: log)
        for i in 0..<1000 { store.with { $0.add(.spoken("order-\(i)")) } }
        store.persist()
        let before = store.writeStats
        let n = 50
        let t0 = Monotonic.now()
        for i in 0..<n {
            store.with { $0.add(.spoken("more-\(i)")) }
            store.persist()
        }
        let per = (Monotonic.now() - t0) / Double(n)
        let after = store.writeStats
        store.close()
        let size = (try? FileIO.read(path))?.count ?? 0
        print("ack outbox: \(after.writes - before.writes) rewrites of \(size) bytes, \(per * 1000) ms per ack (write+fsync+rename+dir fsync)")
        #expect(AckOutbox.decodeFile((try? FileIO.read(path)) ?? []).acks.count == 1000, "bounded to 1000 on disk")
        #expect(per < 0.5, "a rewrite took \(per) s")
        // The usual case: the outbox holds the one ack not yet ponged.
        let small = AckStore(path: dir.file("small"), log: log)
        let t1 = Monotonic.now()
        for i in 0..<n {
            small.with { $0.add(.spoken("one-\(i)")) }
            small.persist()
            small.with { o in o.connectionStarted(); o.flagUnwritten() }
            small.persist()  // marked written (write-ahead), then it may go out
            small.with { o in _ = o.takeUnwritten(); o.pinged(now: 0); o.pong() }
            small.persist()
        }
        let perSmall = (Monotonic.now() - t1) / Double(n)
        small.close()
        print("ack outbox: \(perSmall * 1000) ms per ack with 1 pending (3 rewrites: queued, marked written, delivered; the link coalesces the first two)")
        #expect(undeliveredText(dir.file("small")) == "")
        #expect(AckOutbox.decodeFile((try? FileIO.read(dir.file("small"))) ?? []).delivered.count == min(n, 1024), "the confirmed outcomes are remembered")
        #expect(perSmall < 0.5)
    }

    @Test("seeded: whenever the process ends (reload, stop: the store is closed), the next one knows every outcome of the last 1024, confirmed or not (issue 31 item 4)")
    func dedupeSurvivesEveryEnd() throws {
        for seed in UInt64(1)...20 {
            var rng = SplitMix64(seed: seed)
            let dir = TempDir()
            let path = dir.file("acks")
            let (log, _) = makeLog()
            var store = AckStore(path: path, log: log)
            // Fewer than the file's 1000 undelivered acks (beyond them, the oldest are in memory
            // only: docs/protocol.md, section 6a).
            var outcomes: [String] = []  // every final outcome, oldest first
            var next = 0
            for step in 0..<300 {
                switch Int.random(in: 0..<10, using: &rng) {
                case 0..<4:
                    next += 1
                    let id = "s\(seed)-\(next)"
                    store.with { $0.add(.spoken(id)) }
                    outcomes.append(id)
                case 4: store.with { o in o.connectionStarted(); o.flagUnwritten() }
                case 5: store.with { o in _ = o.takeUnwritten(); o.pinged(now: Double(step)) }
                case 6, 7: store.with { _ = $0.pong() }
                case 8: store.persist()
                default:
                    // The process ends here (SIGHUP re-exec or SIGTERM): close, start again.
                    store.close()
                    store = AckStore(path: path, log: log)
                    let known = Set(store.restored.map(\.id))
                    let missing = outcomes.suffix(1024).filter { !known.contains($0) }
                    #expect(missing.isEmpty, "seed \(seed) step \(step): forgotten across the restart: \(missing.prefix(5))")
                }
            }
            store.close()
        }
    }
}
