import CrierCore
import CrierPosix
import Glibc
import Synchronization
import Testing
@testable import CrierSystem

@Suite(.timeLimit(.minutes(1)))
struct SystemdNotifierTests {
    @Test func speaksTheDatagramProtocolToAPathSocket() throws {
        let dir = TestFS.tempDir()
        defer { TestFS.remove(dir) }
        let systemd = DatagramReceiver(path: dir + "/notify")
        let n = try SystemdNotifier(notifySocket: systemd.path)
        #expect(n.isEnabled)
        try n.ready(status: "starting\nup")
        try n.status("link up; volume 6/10; 0 queued")
        try n.watchdog()
        try n.stopping()
        #expect(systemd.drain() == [
            "READY=1\nSTATUS=starting up", "STATUS=link up; volume 6/10; 0 queued", "WATCHDOG=1", "STOPPING=1",
        ])
    }

    @Test func reachesAnAbstractSocket() throws {
        let name = "@crier-test-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        let systemd = DatagramReceiver(path: name)
        try SystemdNotifier(notifySocket: name).ready()
        #expect(systemd.receive() == "READY=1")
    }

    @Test func isANoOpWithoutNotifySocket() throws {
        for v in [nil, ""] as [String?] {
            let n = try SystemdNotifier(notifySocket: v)
            #expect(!n.isEnabled)
            try n.ready()
            try n.watchdog()
        }
    }

    @Test func reportsAMissingSocket() throws {
        let n = try SystemdNotifier(notifySocket: "/nonexistent/notify")
        #expect(throws: SystemError.self) { try n.ready() }
        #expect(throws: SystemError.self) { try SystemdNotifier(notifySocket: "relative/path") }
    }

    /// The whole chain on a manual clock: supervisor health → watchdog rule → datagrams.
    @Test func petsAtHalfTheIntervalOnlyWhileEveryComponentIsHealthy() async throws {
        let dir = TestFS.tempDir()
        defer { TestFS.remove(dir) }
        let systemd = DatagramReceiver(path: dir + "/notify")
        let notifier = try SystemdNotifier(notifySocket: systemd.path)
        let clock = ManualClock(now: 0)
        let hub = LogHub(clock: { WallTime(unixMillis: 0) })
        let logs = MemoryLogSink()
        hub.add(logs)
        // "link" fails once and waits 1.5 s before its restart: down from t=1.6 to t=3.1.
        let link = Flaky(name: "link", failAt: 1.6, clock: clock)
        let supervisor = try Supervisor(
            components: [link], options: .init(policy: RestartPolicy(initialBackoff: 1.5, maxBackoff: 1.5)),
            clock: clock, log: hub.logger("supervisor"))
        var events = supervisor.events.makeAsyncIterator()
        let run = Task { try await supervisor.run() }
        #expect(await events.next() == .started("link", run: 1))

        let petter = try #require(WatchdogPetter(watchdogUSec: "2000000", watchdogPID: nil, ownPID: 1))
        #expect(petter.petInterval == 1 && petter.checkInterval == 0.25)
        let petTimes = Times()
        let checkTimes = Times()
        let watchdog = Task {
            await WatchdogPetter.run(petter, clock: clock, health: {
                checkTimes.append(clock.now())
                return supervisor.health()
            }, pet: {
                // A pet that takes a moment (a loaded machine): the clock must not move on
                // while the watchdog is still in its iteration. Widens the race the old
                // stepping lost under load.
                usleep(2000)
                petTimes.append(clock.now())
                try? notifier.watchdog()
            }, log: hub.logger("watchdog"))
        }
        // Step the clock one check at a time, each time once the watchdog has checked AND gone
        // back to sleep until the next check. Waiting only for the check raced: the clock moved
        // on while the watchdog was still between its check and its pet, so the pet at 4.25 was
        // recorded at 4.5 (seen under load).
        func checked(_ t: Double) async {
            while checkTimes.all.last != t || !clock.deadlines.contains(t + petter.checkInterval) { await Task.yield() }
        }
        var t = 0.0
        while t < 5 {
            await checked(t)
            t += 0.25
            if t == 1.75 {  // the link's failure at 1.6 is seen by the supervisor first
                clock.advance(to: 1.6)
                link.fire()
                _ = await events.next()  // failed
            }
            if t == 3.25 {
                clock.advance(to: 3.1)
                _ = await events.next()  // started run 2
            }
            clock.advance(to: t)
        }
        await checked(5)
        #expect(petTimes.all == [1, 3.25, 4.25])  // nothing while link was down (2.0, 2.25 ... 3.0)
        #expect(systemd.drain() == Array(repeating: "WATCHDOG=1", count: 3))
        #expect(logs.lines.contains { $0.hasSuffix("WARN watchdog: watchdog pets withheld while components are down down=link") })
        #expect(logs.lines.contains { $0.hasSuffix("NOTICE watchdog: watchdog pets resumed was_down=link") })
        watchdog.cancel()
        await watchdog.value
        supervisor.stop()
        try await run.value
    }
}

/// Fails its first run when told to, runs until stopped otherwise.
final class Flaky: SupervisedComponent {
    let name: String
    let failAt: Double
    let clock: ManualClock
    private let trigger = Mutex<CheckedContinuation<Void, Never>?>(nil)
    private let runs = Mutex(0)

    init(name: String, failAt: Double, clock: ManualClock) {
        self.name = name
        self.failAt = failAt
        self.clock = clock
    }

    func fire() {
        while true {
            if let c = trigger.withLock({ t -> CheckedContinuation<Void, Never>? in defer { t = nil }; return t }) {
                c.resume()
                return
            }
        }
    }

    func run(progress: ProgressHandle) async throws {
        let n = runs.withLock { $0 += 1; return $0 }
        if n == 1 {
            await withCheckedContinuation { c in trigger.withLock { $0 = c } }
            throw SystemError("fake", code: EIO)
        }
        let (s, c) = AsyncStream.makeStream(of: Void.self)
        await withTaskCancellationHandler { for await _ in s {} } onCancel: { c.finish() }
    }
}

final class Times: Sendable {
    private let m = Mutex<[Double]>([])
    func append(_ t: Double) { m.withLock { $0.append(t) } }
    var all: [Double] { m.withLock { $0 } }
}
