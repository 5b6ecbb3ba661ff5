import CrierCore
import CrierPosix
import Glibc
import Testing
@testable import CrierLink

/// Issue 31 item 1, the adapter: the reserve file, the retry after releasing it, the hold and
/// the recovery without a restart. A journal path leading to /dev/full is a card on which every
/// write fails with ENOSPC (a real full file system: Tests/integration/test_link.py).
@Suite("Data reserve: ENOSPC releases it, alerts wait, space back resumes them", .serialized)
struct DataReserveTests {
    func order(_ id: String) -> OrderInbox.Entry { .order(Order(id: id, kind: .newCustomer(number: 7))) }

    @Test("an append that fails for lack of space releases the reserve, the journal is written whole in its room, alerts wait; the reserve comes back by itself and they resume")
    func releaseHoldResume() throws {
        let dir = TempDir()
        let (log, sink) = makeLog()
        let reserve = DataReserve(path: dir.file("crier.reserve"), log: log,
                                  rule: JournalSpace(reserveBytes: 64 << 10, resumeMargin: 0, checkEvery: 0.05))
        defer { reserve.close() }
        var st = stat()
        #expect(stat(dir.file("crier.reserve"), &st) == 0 && Int64(st.st_blocks) * 512 >= 64 << 10, "made at start, blocks allocated")
        #expect(!reserve.holdsAlerts)
        let path = dir.file("state.inbox")
        let inbox = InboxStore(path: path, log: log, reserve: reserve)
        #expect(inbox.received([order("a")]))
        inbox.close()
        // The append goes to a device where every write fails with ENOSPC; the retry writes the
        // file whole (tmp + rename), which replaces the link: the room the reserve left.
        #expect(unlink(path) == 0)
        #expect(symlink("/dev/full", path) == 0)
        #expect(inbox.received([order("b")]), "on the card after the retry: its PUBACK may go")
        #expect(reserve.holdsAlerts, "no reserve left for the next alert's outcome")
        #expect(sink.lines.contains { $0.contains("ERROR link: the data partition is full") && $0.contains("No space left on device") && $0.contains("hint=") })
        #expect(eventually(5) { !reserve.holdsAlerts }, "the reserve comes back by itself (the temp dir has room)")
        #expect(FileIO.exists(dir.file("crier.reserve")))
        // Logged right after the state changes, on the reserve's thread: wait for it too.
        #expect(eventually(5) { sink.lines.contains { $0.contains("NOTICE link: the data partition has room again") } })
        inbox.close()
        let back = InboxStore(path: path, log: log)
        #expect(back.takeReplay() == [order("a"), order("b")])
    }

    @Test("a journal still failing after the release refuses (no PUBACK) and holds the alerts until it is written again")
    func stillFailing() throws {
        let dir = TempDir()
        let (log, _) = makeLog()
        let reserve = DataReserve(path: dir.file("crier.reserve"), log: log,
                                  rule: JournalSpace(reserveBytes: 64 << 10, resumeMargin: 0, checkEvery: 0.05))
        defer { reserve.close() }
        var ok = false
        let full = { () -> SystemError? in ok ? nil : SystemError("write", path: "inbox", code: ENOSPC) }
        #expect(reserve.write("inbox", full) != nil)
        #expect(reserve.holdsAlerts)
        #expect(eventually(5) { FileIO.exists(dir.file("crier.reserve")) }, "the reserve is back")
        #expect(reserve.holdsAlerts, "the inbox still fails")
        ok = true
        #expect(reserve.write("inbox", full) == nil)
        #expect(!reserve.holdsAlerts)
    }

    @Test("the ack outbox: the outcome written in the room the reserve leaves (the write after the release succeeds)")
    func outboxRetryAfterRelease() throws {
        let dir = TempDir()
        let (log, _) = makeLog()
        let reserve = DataReserve(path: dir.file("crier.reserve"), log: log,
                                  rule: JournalSpace(reserveBytes: 64 << 10, resumeMargin: 0, checkEvery: 60))
        defer { reserve.close() }
        // The first attempt fails for lack of space, the retry works: what a full card with a
        // reserve does.
        var attempts = 0
        let e = reserve.write("acks") { () -> SystemError? in
            attempts += 1
            return attempts == 1 ? SystemError("write", path: "acks", code: ENOSPC) : nil
        }
        #expect(e == nil && attempts == 2)
        #expect(reserve.holdsAlerts, "written, but no reserve is left for the next alert")
        #expect(reserve.write("acks") { SystemError("write", path: "acks", code: EROFS) } != nil)
        #expect(reserve.holdsAlerts)
    }
}
