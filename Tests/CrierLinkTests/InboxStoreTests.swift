import CrierCore
import CrierPosix
import Glibc
import Testing
@testable import CrierLink

@Suite("MQTT order inbox file: what is journaled comes back after a restart, torn or not")
struct InboxStoreTests {
    let log = LogHub(clock: { WallTime(unixMillis: 0) }).logger("link")

    func order(_ id: String) -> OrderInbox.Entry { .order(Order(id: id, kind: .newCustomer(number: 7))) }

    @Test("journaled orders and cancels are replayed once after a restart; answered ones are not, their outcome is remembered")
    func replay() {
        let dir = TempDir()
        let path = dir.file("state.inbox")
        do {
            let s = InboxStore(path: path, log: log)
            s.received([order("a"), order("b"), .cancel(id: "c")])
            s.delivered([Ack(id: "a", status: .spoken)])
            // no close(): a SIGKILL leaves the file as the appends left it
        }
        let s = InboxStore(path: path, log: log)
        #expect(s.takeReplay() == [order("b"), .cancel(id: "c")])
        #expect(s.takeReplay().isEmpty, "a replacement link does not get them again")
        #expect(s.restoredDone == [Ack(id: "a", status: .spoken)])
    }

    @Test("a torn last append is reported and the next record is not glued onto it")
    func tornAppend() throws {
        let dir = TempDir()
        let path = dir.file("state.inbox")
        let s = InboxStore(path: path, log: log)
        s.received([order("a")])
        s.close()
        let fd = open(path, O_WRONLY | O_APPEND)
        #expect(FileIO.writeAll(fd, Array(#"{"type":"order","id":"half"#.utf8)))
        close(fd)
        let sink = MemoryLogSink()
        let hub = LogHub(clock: { WallTime(unixMillis: 0) })
        hub.add(sink)
        let s2 = InboxStore(path: path, log: hub.logger("link"))
        #expect(sink.lines.contains { $0.contains("order inbox file damaged") })
        s2.received([order("b")])
        s2.close()
        let s3 = InboxStore(path: path, log: log)
        #expect(s3.takeReplay() == [order("a"), order("b")])
    }

    @Test("records whose append failed reach the file with the next change (it is written whole)")
    func failedAppendIsWrittenLater() throws {
        let dir = TempDir()
        let path = dir.file("state.inbox")
        let s = InboxStore(path: path, log: log)
        s.received([order("a")])
        s.close()  // the next record opens the path again
        // The journal's path now leads to a device where every write fails (ENOSPC), then is
        // a plain path again: a card that was full for a moment.
        #expect(unlink(path) == 0)
        #expect(symlink("/dev/full", path) == 0)
        s.received([order("b")])
        #expect(unlink(path) == 0)
        s.delivered([Ack(id: "a", status: .spoken)])
        s.received([order("c")])
        s.close()
        let back = InboxStore(path: path, log: log)
        #expect(back.takeReplay() == [order("b"), order("c")])
        #expect(back.restoredDone == [Ack(id: "a", status: .spoken)])
    }

    @Test("a journal line the wire limit would refuse (an order re-encoded larger) comes back, and so does every record after it")
    func rewrittenOrderLongerThanTheWireLimit() throws {
        // 3000 DEL bytes: accepted raw from the wire, written back as \u007f (6 bytes each).
        let text = String(repeating: "\u{7F}", count: 3000)
        let wire = Array(#"{"type":"order","id":"D-1","kind":"text","text":""#.utf8) + Array(text.utf8) + Array(#""}"#.utf8)
        #expect(wire.count < ProtocolCodec.maxLineBytes)
        guard case .success(.order(let big)) = ProtocolCodec.decode(wire) else {
            Issue.record("the order did not decode")
            return
        }
        let dir = TempDir()
        let path = dir.file("state.inbox")
        do {
            let s = InboxStore(path: path, log: log)
            s.received([order("a"), .order(big), order("b")])
            s.delivered([Ack(id: "a", status: .spoken)])
        }
        #expect(try FileIO.read(path).count > ProtocolCodec.maxLineBytes)
        let back = InboxStore(path: path, log: log)
        #expect(back.takeReplay() == [.order(big), order("b")])
        #expect(back.restoredDone == [Ack(id: "a", status: .spoken)])
    }

    @Test("seeded: the file stays bounded under a long stream of orders and acks")
    func bounded() throws {
        let dir = TempDir()
        let path = dir.file("state.inbox")
        let s = InboxStore(path: path, log: log, doneMax: 100)
        var rng = SplitMix64(seed: 7)
        var pending: [String] = []
        for n in 0..<600 {
            let id = "o\(n)"
            s.received([order(id)])
            pending.append(id)
            if pending.count > 5 || Bool.random(using: &rng) {
                let i = Int.random(in: 0..<pending.count, using: &rng)
                s.delivered([Ack(id: pending.remove(at: i), status: .spoken)])
            }
        }
        let size = try FileIO.read(path).count
        #expect(size < 40_000, "compacted: \(size) bytes")
        let back = InboxStore(path: path, log: log, doneMax: 100)
        #expect(back.takeReplay().map(\.id) == pending)
        #expect(back.restoredDone.count == 100)
    }
}
