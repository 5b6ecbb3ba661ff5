import CrierCore
import CrierPosix
import Glibc
import Synchronization
import Testing
@testable import CrierLink

/// Issue 13 item 18 (the chaos run, seeds 66466 and 67856): an ack written on a connection
/// that ended before its pong must not be written again after the next welcome; the server's
/// redelivery of that order is answered instead, exactly once (docs/protocol.md, section 6a).
@Suite("Acks written before a drop: not resent, answered on redelivery", .serialized)
struct AckRedeliveryTests {
    /// A link with a file-backed store, connected to `raw` and welcomed.
    final class Box {
        let store: AckStore
        let link: OrderLink
        let events = EventSink()
        let logs: MemoryLogSink

        /// `dedupe`: like the daemon, answer every order with what its queue remembers (the
        /// status the restored file gives, else `spoken`).
        init(path: String, port: Int, heartbeat: Double = 15, dedupe: Bool) {
            let (log, logs) = makeLog()
            self.logs = logs
            store = AckStore(path: path, log: log)
            var options = fastOptions()
            options.ackStore = store
            let events = events
            let box = LinkBox()
            let remembered = Dictionary(store.restored.map { ($0.id, $0.status) }, uniquingKeysWith: { _, b in b })
            link = OrderLink(config: linkConfig(port: port, heartbeat: heartbeat), deviceID: "d", log: log, options: options) { e in
                events.add(e)
                if dedupe, case .order(let o) = e { box.link?.send(Ack(id: o.id, status: remembered[o.id] ?? .spoken, message: "already done; not said again")) }
            }
            box.link = link
            link.start()
        }

        func stop() {
            link.stop()
            store.close()
        }
    }

    /// Lets the event handler reach the link it belongs to.
    final class LinkBox: Sendable {
        private let slot = Mutex<OrderLink?>(nil)
        var link: OrderLink? {
            get { slot.withLock { $0 } }
            set { slot.withLock { $0 = newValue } }
        }
    }

    static func handshake(_ raw: RawServer) -> Bool {
        guard raw.accept(), raw.readLine()?.hasPrefix(#"{"type":"hello""#) == true else { return false }
        raw.write("{\"type\":\"welcome\"}\n")
        return true
    }

    static let ackA = #"{"type":"ack","id":"A-1","status":"spoken"}"#

    @Test("written, dropped before the pong, reconnect: no second ack; the next connection's first pong drops it from the outbox and the file")
    func notResent() {
        let dir = TempDir()
        let path = dir.file("acks")
        let raw = RawServer()
        defer { raw.close() }
        let box = Box(path: path, port: raw.port, dedupe: true)
        defer { box.stop() }
        #expect(Self.handshake(raw))
        #expect(eventually { box.link.isConnected })
        box.link.send(.spoken("A-1"))
        #expect(raw.readUntil(#"{"type":"ping"}"#) == [Self.ackA, #"{"type":"ping"}"#])
        #expect(fileText(path) == #"{"type":"ack","id":"A-1","status":"spoken","written":true}"# + "\n", "marked written before it went out")
        // The connection ends before the pong (a server restart, a close, a half-open link).
        #expect(Self.handshake(raw))
        #expect(raw.readLine() == #"{"type":"ping"}"#, "a ping right after the welcome, to settle the earlier connection's ack")
        #expect(raw.readLine(timeout: 0.5) == nil, "the ack is not written again")
        raw.write("{\"type\":\"pong\"}\n")
        #expect(eventually { box.store.count == 0 })
        #expect(eventually { undeliveredText(path) == "" })
        #expect(box.events.orders.isEmpty)
    }

    @Test("written, dropped before the pong, reconnect, the server redelivers: exactly one re-ack, with or without the daemon's dedupe answering too",
          arguments: [true, false])
    func redeliveryAnsweredOnce(dedupe: Bool) {
        let dir = TempDir()
        let path = dir.file("acks")
        let raw = RawServer()
        defer { raw.close() }
        let box = Box(path: path, port: raw.port, dedupe: dedupe)
        defer { box.stop() }
        #expect(Self.handshake(raw))
        #expect(eventually { box.link.isConnected })
        box.link.send(.spoken("A-1"))
        #expect(raw.readUntil(#"{"type":"ping"}"#).first == Self.ackA)
        // New connection: welcome and the redelivery in one write, as a server that
        // redelivers right after the welcome does.
        #expect(raw.accept())
        #expect(raw.readLine()?.hasPrefix(#"{"type":"hello""#) == true)
        raw.write("{\"type\":\"welcome\"}\n" + #"{"type":"order","id":"A-1","kind":"new_customer","number":7}"# + "\n")
        var lines: [String] = []
        while let l = raw.readLine(timeout: 1) {
            lines.append(l)
            if l == #"{"type":"ping"}"# { raw.write("{\"type\":\"pong\"}\n") }
        }
        #expect(lines.filter { $0.contains(#""type":"ack""#) } == [Self.ackA], "\(lines)")
        // Answered from the outbox and not handed to the speaker: with `dedupe: false` the
        // speaker has forgotten the order (1 024 newer outcomes, the year's soak) and would say
        // it again (it did: the old link handed every redelivery over).
        #expect(box.events.orders.isEmpty, "a redelivery the outbox answers never reaches the speaker")
        #expect(box.logs.lines.contains { $0.contains("redelivered order answered from the ack outbox; not said again id=A-1") })
        #expect(eventually { box.store.count == 0 })
        #expect(eventually { undeliveredText(path) == "" })
    }

    @Test("a power cut after the ack was written and before its pong: the restarted box does not resend it, and answers the redelivery once")
    func powerCut() throws {
        let dir = TempDir()
        let path = dir.file("acks")
        let raw = RawServer()
        defer { raw.close() }
        let first = Box(path: path, port: raw.port, dedupe: true)
        #expect(Self.handshake(raw))
        #expect(eventually { first.link.isConnected })
        first.link.send(.spoken("A-1"))
        first.link.send(Ack(id: "B-2", status: .expired))
        var wire: [String] = []
        while let l = raw.readLine(timeout: 1) { wire.append(l) }
        #expect(wire.filter { $0.contains(#""type":"ack""#) }.count == 2, "\(wire)")
        // What the card holds at the power cut (the first box goes on running unwatched).
        let cut = dir.file("acks-at-cut")
        try FileIO.write(cut, try FileIO.read(path))
        first.link.abandon()
        #expect(fileText(cut)?.components(separatedBy: "\"written\":true").count == 3, "\(fileText(cut) ?? "-")")

        let raw2 = RawServer()
        defer { raw2.close() }
        let box = Box(path: cut, port: raw2.port, dedupe: true)
        defer { box.stop(); first.stop() }
        #expect(box.store.restored.map(\.id) == ["A-1", "B-2"], "the dedupe learns both")
        #expect(box.logs.lines.contains { $0.contains("acks=2 unsent=0 sent_unconfirmed=2") }, "\(box.logs.lines)")
        #expect(raw2.accept())
        #expect(raw2.readLine()?.hasPrefix(#"{"type":"hello""#) == true)
        raw2.write("{\"type\":\"welcome\"}\n" + #"{"type":"order","id":"B-2","kind":"new_customer","number":8}"# + "\n")
        var lines: [String] = []
        while let l = raw2.readLine(timeout: 1) {
            lines.append(l)
            if l == #"{"type":"ping"}"# { raw2.write("{\"type\":\"pong\"}\n") }
        }
        #expect(lines.filter { $0.contains(#""type":"ack""#) } == [#"{"type":"ack","id":"B-2","status":"expired"}"#],
                "A-1 not resent (the server did not ask); B-2 answered once: \(lines)")
        #expect(eventually { box.store.count == 0 })
    }

    @Test("a malformed order goes to the owner unanswered, in order after a cancel before it; the owner's answer is what goes out (chaos seed 34641)")
    func malformedReported() {
        let t = WelcomedLink()
        t.raw.write(#"{"type":"cancel","id":"M-1"}"# + "\n" + #"{"type":"order","id":"M-1","kind":"new_customer","number":1000000}"# + "\n")
        #expect(t.raw.readUntil(#"{"type":"error""#).last?.contains("must be 0...999999") == true)
        #expect(eventually { t.events.all.count >= 3 })
        let tail = Array(t.events.all.suffix(2))
        guard tail.count == 2, case .cancel(let cid) = tail[0], case .rejected(let a, let answered) = tail[1] else {
            Issue.record("expected the cancel, then the rejection: \(t.events.all)")
            return
        }
        #expect(cid == "M-1" && a.id == "M-1" && a.reason == Ack.Reason.invalidOrder && !answered)
        #expect(t.events.orders.isEmpty)
        t.link.send(Ack(id: "M-1", status: .cancelled))
        #expect(t.raw.readUntil(#"{"type":"ack""#).last == #"{"type":"ack","id":"M-1","status":"cancelled"}"#,
                "only the owner's answer goes out, not a rejection of the link's own")
    }

    @Test("a server that never pongs: the stale ack is never resent, and leaves after 2 × heartbeat with the server heard from")
    func neverPongs() {
        let dir = TempDir()
        let path = dir.file("acks")
        let raw = RawServer()
        defer { raw.close() }
        let box = Box(path: path, port: raw.port, heartbeat: 0.3, dedupe: true)
        defer { box.stop() }
        #expect(Self.handshake(raw))
        #expect(eventually { box.link.isConnected })
        box.link.send(.spoken("A-1"))
        #expect(raw.readUntil(#"{"type":"ping"}"#).first == Self.ackA)
        #expect(Self.handshake(raw))
        // Heard from (an unknown message keeps the link alive), never a pong.
        var lines: [String] = []
        let end = Monotonic.now() + 2
        while Monotonic.now() < end {
            raw.write(#"{"type":"noise"}"# + "\n")
            while let l = raw.readLine(timeout: 0.05) { lines.append(l) }
        }
        #expect(!lines.contains { $0.contains(#""type":"ack""#) }, "\(lines)")
        #expect(box.store.count == 0, "taken as delivered by the time fallback")
    }

    @Test("each file the store writes, at every step, marks every ack it let out; cut there (whole, truncated or missing), a restart resends only what never went out")
    func powerCutAtEachStep() throws {
        let dir = TempDir()
        let path = dir.file("acks")
        let (log, _) = makeLog()
        let store = AckStore(path: path, log: log)
        var handedOut: Set<String> = []
        var snapshots: [[UInt8]] = []
        func step(_ body: (inout AckOutbox) -> [Ack]) {
            let out = store.with(body)
            store.persist()
            // Write-ahead: what went out is marked written in the file that is on disk now.
            let file = AckOutbox.decodeFile((try? FileIO.read(path)) ?? [])
            for a in out { handedOut.insert(a.id) }
            let pending = Set(store.peek { $0.entries.map(\.ack.id) })
            for id in handedOut.intersection(pending) where store.peek({ o in o.entries.contains { $0.ack.id == id && $0.ack.status != .rejected } }) {
                #expect(file.written.contains(id), "\(id) went out but the file does not say so")
            }
            snapshots.append((try? FileIO.read(path)) ?? [])
        }
        step { o in o.add(.spoken("a")); o.add(Ack(id: "b", status: .expired)); return [] }   // server down
        step { o in o.connectionStarted(); o.flagUnwritten(); return [] }
        step { o in o.takeUnwritten() }                                                           // a, b written
        step { o in o.add(.spoken("c")); o.flagUnwritten(); return [] }                         // connected: marked at once
        step { o in o.takeUnwritten() + [] }
        step { o in o.pinged(now: 1); o.connectionStarted(); return [] }                        // dropped before the pong
        step { o in o.add(Ack(id: "d", status: .cancelled)); return [] }                        // not connected yet
        step { o in o.connectionStarted(); _ = o.redelivered("b"); o.flagUnwritten(); return [] }
        step { o in o.takeUnwritten() }                                                           // d, b (re-ack)
        step { o in o.pinged(now: 2); return [] }
        step { o in o.pong(); return [] }                                                         // a, c inferred, b and d confirmed
        store.close()
        #expect(undeliveredText(path) == "")
        #expect(Set(AckOutbox.decodeFile(try FileIO.read(path)).delivered.map(\.id)) == ["a", "b", "c", "d"], "remembered for the dedupe")

        for (i, snap) in snapshots.enumerated() {
            let full = AckOutbox.decodeFile(snap)
            #expect(full.problems.isEmpty)
            // Half: inside a record (a cut at a record boundary is a shorter valid file, which
            // only a power cut before that append's fsync leaves: tornAppendAtStart, and
            // AckOutboxFileTests.powerCutMidAppend).
            var half = snap.count / 2
            if half > 0 && snap[half - 1] == 0x0A { half -= 1 }
            for cut in [snap.count, half, 1, 0] {
                let f = dir.file("cut-\(i)-\(cut)")
                try FileIO.write(f, Array(snap.prefix(cut)))
                let restarted = AckStore(path: f, log: log)
                let sent = restarted.with { o -> [String] in
                    o.connectionStarted()
                    o.flagUnwritten()
                    o.fileWritten(through: o.fileContent().flaggedThrough)
                    return o.takeUnwritten().map(\.id)
                }
                restarted.close()
                let unsent = Set(full.acks.map(\.id)).subtracting(full.written)
                #expect(Set(sent).isSubset(of: unsent), "step \(i), cut \(cut): resent \(sent), file said unsent only \(unsent)")
                #expect(Set(restarted.restored.map(\.id)).isSubset(of: Set((full.acks + full.delivered).map(\.id))))
            }
        }
        let missing = AckStore(path: dir.file("never-written"), log: log)
        #expect(missing.restored.isEmpty && missing.count == 0)
        missing.close()
    }
}
