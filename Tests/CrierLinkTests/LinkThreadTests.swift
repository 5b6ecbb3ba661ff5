import CrierCore
import CrierPosix
import Synchronization
import Testing
@testable import CrierLink

/// The rules of the links' thread (`LinkThread`): started once, `stop` joins promptly,
/// `abandon` never waits. Real threads: a hang here would be the bug, hence the time limits.
@Suite("LinkThread start, stop and abandon", .timeLimit(.minutes(1)))
struct LinkThreadTests {
    /// What the bodies did, read after a `stop` (which joined them).
    final class Probe: Sendable {
        struct Seen {
            var prepares = 0
            var runs = 0
            var entered = false
            var ended = false
            var sawStopping = false
        }
        private let seen = Mutex(Seen())
        func update(_ change: (inout Seen) -> Void) { seen.withLock { change(&$0) } }
        var now: Seen { seen.withLock { $0 } }
    }

    /// A link body in miniature: round its loop until stopped, blocked on the wake fd between
    /// (for a minute: only the wake-up can end the wait in time).
    static func linkBody(_ t: LinkThread, _ p: Probe) -> @Sendable () -> Void {
        {
            p.update { $0.runs += 1; $0.entered = true }
            while !t.stopping { t.wake.wait(timeout: 60) }
            p.update { $0.ended = true }
        }
    }

    @Test("a stop before start returns at once; a start after it runs a body that sees stopping at once")
    func stopBeforeStart() {
        let (log, sink) = makeLog()
        let t = LinkThread(name: "crier-test")
        let p = Probe()
        let before = Monotonic.now()
        t.stop()
        #expect(Monotonic.now() - before < 1)
        #expect(t.stopping)
        t.start(log: log) { p.update { $0.runs += 1; $0.sawStopping = t.stopping } }
        t.stop()
        #expect(p.now.runs == 1)
        #expect(p.now.sawStopping)
        #expect(sink.lines.isEmpty, "\(sink.lines)")
    }

    @Test("start twice: the second call neither prepares nor runs anything")
    func startTwice() {
        let (log, _) = makeLog()
        let t = LinkThread(name: "crier-test")
        let p = Probe(), second = Probe()
        t.start(log: log, prepare: { p.update { $0.prepares += 1 } }, Self.linkBody(t, p))
        t.start(log: log, prepare: { second.update { $0.prepares += 1 } }, Self.linkBody(t, second))
        t.stop()
        #expect(p.now.prepares == 1 && p.now.runs == 1 && p.now.ended)
        #expect(second.now.prepares == 0 && second.now.runs == 0)
    }

    @Test("a second stop returns at once; the body ran once")
    func doubleStop() {
        let (log, _) = makeLog()
        let t = LinkThread(name: "crier-test")
        let p = Probe()
        t.start(log: log, Self.linkBody(t, p))
        #expect(eventually { p.now.entered })
        t.stop()
        #expect(p.now.ended)
        let before = Monotonic.now()
        t.stop()
        #expect(Monotonic.now() - before < 1)
        #expect(p.now.runs == 1)
    }

    @Test("abandon returns while the body is stuck where no wake-up reaches it; a later stop still joins it")
    func abandonThenStop() {
        let (log, _) = makeLog()
        let t = LinkThread(name: "crier-test")
        let p = Probe()
        // Stands for a name lookup: only the test ends this wait.
        let gate = WakePipe()
        t.start(log: log) {
            p.update { $0.entered = true }
            gate.wait(timeout: nil)
            p.update { $0.sawStopping = t.stopping; $0.ended = true }
        }
        #expect(eventually { p.now.entered })
        t.abandon()
        #expect(t.stopping)
        #expect(!p.now.ended, "abandon did not wait for the body")
        gate.wake()
        t.stop()
        #expect(p.now.ended && p.now.sawStopping)
    }

    @Test("stop while the body is blocked on the wake fd (for 60 s) returns within 1 s")
    func stopWakesABlockedBody() {
        let (log, _) = makeLog()
        let t = LinkThread(name: "crier-test")
        let p = Probe()
        t.start(log: log, Self.linkBody(t, p))
        #expect(eventually { p.now.entered })
        let before = Monotonic.now()
        t.stop()
        let took = Monotonic.now() - before
        #expect(took < 1, "stop took \(took) s")
        #expect(p.now.ended)
    }
}
