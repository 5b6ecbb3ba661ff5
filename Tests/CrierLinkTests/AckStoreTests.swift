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

/// What the outbox file means (it is a log of appended records): the state it replays to,
/// as the whole file of the release before appends wrote it (`AckOutbox.plainText`).
func fileText(_ path: String) -> String? {
    (try? FileIO.read(path)).map { AckOutbox.plainText(AckOutbox.decodeFile($0)) }
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
        #expect(warnings.count == 1, "\(logs.lines)")
        #expect(warnings.first?.contains("line 1") == true)
        #expect(logs.lines.filter { $0.contains("WARN link: ack outbox file ends in an unfinished record") && $0.contains("dropped=\"30 bytes after the last complete record\"") }.count == 1, "\(logs.lines)")
        #expect(!logs.lines.contains { $0.contains("WARN link: ack outbox file damaged: every ack in it counts as sent") }, "said once, in the torn line's warning")
    }

    /// Bytes this process passed to write() so far (/proc/self/io `wchar`).
    func bytesWrittenByProcess() -> Int {
        let text = (try? FileIO.read("/proc/self/io")).map { String(decoding: $0, as: UTF8.self) } ?? ""
        let line = text.split(separator: "\n").first { $0.hasPrefix("wchar:") }
        return line.flatMap { Int(String($0.dropFirst(6).filter { $0 != " " })) } ?? 0
    }

    @Test("card wear (issue 35): with 1024 outcomes remembered, an order at a shop's pace writes a few hundred bytes (appended records), not the whole 84 KB file twice")
    func bytesPerOrder() throws {
        let dir = TempDir()
        let path = dir.file("acks")
        // The file of a box that has confirmed 1024 orders.
        var full = AckOutbox()
        full.connectionStarted()
        for i in 0..<1024 { full.add(.spoken("earlier-order-\(i)")) }
        full.flagUnwritten()
        _ = full.takeUnwritten()
        full.pinged(now: 0)
        full.pong()
        try FileIO.write(path, full.encodeForFile())
        let (log, _) = makeLog()
        let store = AckStore(path: path, log: log)
        #expect(store.restored.count == 1024)
        store.persist()
        let orders = 200
        let before = bytesWrittenByProcess()
        store.with { $0.connectionStarted() }
        for i in 0..<orders {
            store.with { o in
                o.add(.spoken("order-\(i)"))
                o.flagUnwritten()  // OrderLink.send while connected
            }
            store.persist()
            store.with { o in
                _ = o.takeUnwritten()
                o.pinged(now: Double(i))
                o.pong()
            }
            store.persist()
        }
        let perOrder = (bytesWrittenByProcess() - before) / orders
        store.close()
        print("ack outbox: \(perOrder) bytes written per order with 1024 outcomes remembered (/proc/self/io wchar)")
        #expect(perOrder > 0 && perOrder < 2000, "\(perOrder) bytes per order")
        let back = AckOutbox.decodeFile((try? FileIO.read(path)) ?? [])
        #expect(back.problems.isEmpty && back.acks.isEmpty && back.delivered.count == 1024)
        #expect(back.delivered.last == .spoken("order-\(orders - 1)"))
    }

    @Test("a power cut mid-append (torn last record) or mid-compaction (PATH.tmp left beside): one warning naming what was dropped, the rest restored, the file written whole before anything is appended")
    func tornAppendAtStart() throws {
        let dir = TempDir()
        let path = dir.file("acks")
        let (log, _) = makeLog()
        do {
            let store = AckStore(path: path, log: log)
            store.with { o in
                o.add(.spoken("T-1"))
                o.connectionStarted()
                o.flagUnwritten()
            }
            store.persist()
            store.with { $0.add(Ack(id: "T-2", status: .expired)) }
            store.persist()
            store.close()
        }
        let good = try FileIO.read(path)
        // The next append was cut short, and a compaction's temporary file never got renamed.
        var torn = good
        torn += Array(#"{"type":"ack","id":"T-3","status":"spo"#.utf8)
        try FileIO.write(path, torn)
        try FileIO.write(path + ".tmp", Array("{\"type\":\"ack\",\"id\":\"T-9\"".utf8))
        let (log2, logs2) = makeLog()
        let store = AckStore(path: path, log: log2)
        #expect(store.restored == [.spoken("T-1"), Ack(id: "T-2", status: .expired)])
        let warnings = logs2.lines.filter { $0.contains("WARN") }
        #expect(warnings.count == 1 && warnings[0].contains("ack outbox file ends in an unfinished record") && warnings[0].contains("dropped=\"38 bytes after the last complete record\""), "\(logs2.lines)")
        #expect(eventually(2) { (try? FileIO.read(path))?.last == 0x0A && !FileIO.exists(path + ".tmp") }, "written whole at start")
        store.with { $0.add(.spoken("T-4")) }
        store.close()
        let back = AckOutbox.decodeFile(try FileIO.read(path))
        #expect(back.problems.isEmpty && back.torn == nil)
        #expect(back.acks.map(\.id) == ["T-1", "T-2", "T-4"] && back.written == ["T-1", "T-2"], "a torn file's acks count as sent")
    }

    @Test("upgrade: the previous release's whole file is read (acks, marks, remembered outcomes) and written whole with checksums at start")
    func previousReleaseFile() throws {
        let dir = TempDir()
        let path = dir.file("acks")
        // What the release before appends wrote (its whole-file format, no checksums).
        let old = #"{"type":"ack","id":"c","status":"spoken","written":true,"delivered":true}"# + "\n"
            + #"{"type":"ack","id":"w","status":"spoken","written":true}"# + "\n"
            + #"{"type":"ack","id":"u","status":"expired"}"# + "\n"
        try FileIO.write(path, Array(old.utf8))
        let (log, logs) = makeLog()
        let store = AckStore(path: path, log: log)
        #expect(store.restored == [.spoken("c"), .spoken("w"), Ack(id: "u", status: .expired)])
        #expect(logs.lines.contains { $0.contains("acks=2 unsent=1 sent_unconfirmed=1") }, "\(logs.lines)")
        #expect(!logs.lines.contains { $0.contains("WARN") })
        #expect(eventually(2) { fileText(path) == old && (try? FileIO.read(path)).map { String(decoding: $0, as: UTF8.self).contains(#","crc":""#) } == true })
        store.close()
    }

    @Test("a full card (ENOSPC on an append): one clear error, nothing half written left, the acks still go out; the next write is whole; with a reserve it is written in the room the reserve leaves; a restart reads every ack once")
    func fullDiskOnAppend() throws {
        for withReserve in [false, true] {
            let dir = TempDir()
            let path = dir.file("acks")
            let (log, logs) = makeLog()
            let reserve = withReserve ? DataReserve(path: dir.file("crier.reserve"), log: log,
                                                    rule: JournalSpace(reserveBytes: 64 << 10, resumeMargin: 0, checkEvery: 60)) : nil
            defer { reserve?.close() }
            let store = AckStore(path: path, log: log, reserve: reserve)
            store.with { o in
                o.add(.spoken("F-1"))
                o.connectionStarted()
                o.flagUnwritten()
            }
            store.persist()  // the first write of a process is whole (the writer thread may do it)
            #expect(store.with { $0.takeUnwritten() } == [.spoken("F-1")])
            // Every write to the file now fails with ENOSPC; a whole write (rename) replaces the link.
            #expect(unlink(path) == 0 && symlink("/dev/full", path) == 0)
            store.with { o in
                o.add(.spoken("F-2"))
                o.flagUnwritten()
            }
            store.persist()  // here or on the writer thread: done once it returns
            #expect(store.with { $0.takeUnwritten() } == [.spoken("F-2")], "an unwritable card does not hold the ack back")
            if withReserve {
                #expect(logs.lines.contains { $0.contains("ERROR link: the data partition is full") && $0.contains("No space left on device") }, "\(logs.lines)")
            } else {
                #expect(logs.lines.filter { $0.contains("ERROR link: cannot write the ack outbox") && $0.contains("No space left on device") }.count == 1, "\(logs.lines)")
                // The next write is whole (here, or the writer thread's retry): the rename
                // replaces what the append could not write to.
                store.with { $0.add(.spoken("F-3")) }
                store.persist()
                #expect(eventually(2) { logs.lines.contains { $0.contains("INFO link: ack outbox written again") } })
            }
            var st = stat()
            #expect(lstat(path, &st) == 0 && (st.st_mode & S_IFMT) == S_IFREG)
            store.close()
            let back = AckOutbox.decodeFile(try FileIO.read(path))
            #expect(back.problems.isEmpty && back.torn == nil)
            let ids = back.acks.map(\.id)
            #expect(ids == (withReserve ? ["F-1", "F-2"] : ["F-1", "F-2", "F-3"]), "once each")
            #expect(back.written == ["F-1", "F-2"], "both went out: both marked, so neither goes out again unasked")
        }
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
