import Synchronization
import Testing
@testable import CrierCore

@Suite(.timeLimit(.minutes(1)))
struct SupervisorTests {
    @Test func startsInDependencyOrderAndStopsInReverse() async throws {
        let link = FakeComponent("link", dependencies: ["audio", "speech"])
        let speech = FakeComponent("speech", dependencies: ["audio"])
        let buttons = FakeComponent("buttons")
        let audio = FakeComponent("audio")
        let rig = try SupervisorRig([link, speech, audio, buttons])
        #expect(rig.supervisor.startOrder == ["audio", "speech", "link", "buttons"])
        var events = rig.supervisor.events.makeAsyncIterator()
        let run = rig.start()
        #expect(await events.take(4) == [
            .started("audio", run: 1), .started("speech", run: 1), .started("link", run: 1), .started("buttons", run: 1),
        ])
        #expect(rig.supervisor.health().healthy)
        rig.supervisor.stop()
        #expect(await events.take(9) == [
            .stopping("buttons"), .stopped("buttons", timedOut: false),
            .stopping("link"), .stopped("link", timedOut: false),
            .stopping("speech"), .stopped("speech", timedOut: false),
            .stopping("audio"), .stopped("audio", timedOut: false),
            .finished(fatal: false),
        ])
        try await run.value
        for c in [link, speech, audio, buttons] {
            #expect(c.runs == 1)
            #expect(c.stopRequests == [.shutdown])
        }
        #expect(rig.supervisor.statuses().map(\.state) == [.stopped, .stopped, .stopped, .stopped])
        #expect(rig.lines.contains("INFO supervisor: stopping order=buttons,link,speech,audio"))
    }

    @Test func aThrowingComponentIsRestartedWithBackoffAndTheOthersAreUnaffected() async throws {
        let audio = FakeComponent("audio")
        let link = FakeComponent("link", [.throwing, .throwing, .healthy])
        let rig = try SupervisorRig([audio, link])
        var events = rig.supervisor.events.makeAsyncIterator()
        let run = rig.start()
        #expect(await events.take(3) == [
            .started("audio", run: 1), .started("link", run: 1),
            .failed("link", reason: .error("boom 1"), decision: .restart(attempt: 1, backoff: 0.1)),
        ])
        #expect(rig.supervisor.health() == SupervisorHealth(down: ["link"]))
        #expect(rig.supervisor.statuses()[1].state == .restarting)
        rig.clock.advance(by: 0.1)
        #expect(await events.take(2) == [
            .started("link", run: 2),
            .failed("link", reason: .error("boom 2"), decision: .restart(attempt: 2, backoff: 0.2)),
        ])
        rig.clock.advance(by: 0.2)
        #expect(await events.take(1) == [.started("link", run: 3)])
        #expect(rig.supervisor.health().healthy)
        let status = rig.supervisor.statuses()
        #expect(status[1].restarts == 2)
        #expect(status[1].lastFailure == "error: boom 2")
        #expect(audio.runs == 1)
        #expect(audio.stopRequests.isEmpty)
        #expect(rig.lines.contains(
            "WARN supervisor: restarting component=link reason=error error=\"boom 1\" attempt=1 backoff=0.1s"))
        #expect(rig.lines.contains("INFO supervisor: restarted component=link run=3"))
        rig.supervisor.stop()
        try await run.value
    }

    @Test func aComponentReturningUnaskedIsAFailure() async throws {
        let link = FakeComponent("link", [.returning, .healthy])
        let rig = try SupervisorRig([link])
        var events = rig.supervisor.events.makeAsyncIterator()
        let run = rig.start()
        #expect(await events.take(2) == [
            .started("link", run: 1),
            .failed("link", reason: .returned, decision: .restart(attempt: 1, backoff: 0.1)),
        ])
        rig.supervisor.stop()
        try await run.value
        #expect(link.runs == 1)  // stopped during its backoff: never started again
    }

    @Test func aStalledComponentIsInterruptedAndRestartedTheOthersKeepRunning() async throws {
        let audio = FakeComponent("audio", stallDeadline: 2)
        let link = FakeComponent("link", stallDeadline: 2)
        let rig = try SupervisorRig([audio, link])
        var events = rig.supervisor.events.makeAsyncIterator()
        let run = rig.start()
        #expect(await events.take(2) == [.started("audio", run: 1), .started("link", run: 1)])
        await audio.waitForRun()
        await link.waitForRun()
        rig.clock.advance(by: 1)
        link.beat()
        audio.beat()
        rig.clock.advance(by: 1.5)
        link.beat()  // audio goes silent from here
        #expect(rig.supervisor.health().healthy)
        rig.clock.advance(by: 0.5)  // audio silent for 2 s
        #expect(await events.take(1) == [
            .failed("audio", reason: .stalled(silentFor: 2.0), decision: .restart(attempt: 1, backoff: 0.1)),
        ])
        #expect(audio.stopRequests == [.stalled])
        #expect(audio.handles[0].stopRequested == .stalled)
        rig.clock.advance(by: 0.1)
        #expect(await events.take(1) == [.started("audio", run: 2)])
        await audio.waitForRun(2)
        #expect(link.runs == 1)
        #expect(rig.lines.contains(
            "WARN supervisor: restarting component=audio reason=stalled no_progress_for=2.0s attempt=1 backoff=0.1s"))
        // A heartbeat through the old run's handle does not count for the new run.
        audio.handles[0].heartbeat()
        link.beat()
        rig.clock.advance(by: 1.9)
        link.beat()
        #expect(rig.supervisor.health().healthy)
        rig.clock.advance(by: 0.1)
        let second = await events.take(1)
        guard case .failed("audio", .stalled(let silent), .restart(2, 0.2)) = second.first else {
            Issue.record("expected audio's second stall, got \(second)")
            return
        }
        #expect(abs(silent - 2) < 1e-9)
        rig.supervisor.stop()
        try await run.value
    }

    @Test func oneThrowsOneStallsTheThirdIsUntouched() async throws {
        let audio = FakeComponent("audio", stallDeadline: 2)
        let link = FakeComponent("link", dependencies: ["audio"], [.throwing, .healthy])
        let buttons = FakeComponent("buttons", stallDeadline: 2)
        let rig = try SupervisorRig([audio, link, buttons])
        var events = rig.supervisor.events.makeAsyncIterator()
        let run = rig.start()
        #expect(await events.take(4) == [
            .started("audio", run: 1), .started("link", run: 1), .started("buttons", run: 1),
            .failed("link", reason: .error("boom 1"), decision: .restart(attempt: 1, backoff: 0.1)),
        ])
        await buttons.waitForRun()
        rig.clock.advance(by: 1)
        buttons.beat()
        rig.clock.advance(by: 1)  // audio silent for 2 s; the link's restart was due at 0.1 s
        var seen = await events.take(2)
        seen.sort { "\($0)" < "\($1)" }
        #expect(seen == [
            .failed("audio", reason: .stalled(silentFor: 2), decision: .restart(attempt: 1, backoff: 0.1)),
            .started("link", run: 2),
        ])
        rig.clock.advance(by: 0.1)
        #expect(await events.take(1) == [.started("audio", run: 2)])
        buttons.beat()
        #expect(rig.supervisor.health().healthy)
        #expect(buttons.runs == 1 && buttons.stopRequests.isEmpty)
        #expect(rig.supervisor.statuses().map(\.restarts) == [1, 1, 0])
        rig.supervisor.stop()
        try await run.value
    }

    @Test func aRunThatIgnoresTheStopRequestIsAbandonedAndANewOneStarts() async throws {
        let audio = FakeComponent("audio", stallDeadline: 2, [.hang, .healthy])
        let rig = try SupervisorRig([audio], options: .init(stallGrace: 1))
        var events = rig.supervisor.events.makeAsyncIterator()
        let run = rig.start()
        #expect(await events.take(1) == [.started("audio", run: 1)])
        rig.clock.advance(by: 2)
        #expect(await events.take(1) == [
            .failed("audio", reason: .stalled(silentFor: 2), decision: .restart(attempt: 1, backoff: 0.1)),
        ])
        rig.clock.advance(by: 0.5)  // backoff over, but the stalled run still gets its grace
        #expect(rig.supervisor.statuses()[0].state == .restarting)
        rig.clock.advance(by: 0.5)
        #expect(await events.take(2) == [.abandoned("audio", run: 1), .started("audio", run: 2)])
        #expect(rig.lines.contains("WARN supervisor: abandoning stalled run; a new one starts anyway component=audio run=1 waited=1.0s"))
        await audio.waitForRun(2)
        audio.release()  // the abandoned run finally returns: nothing happens to run 2
        audio.beat()
        rig.supervisor.stop()
        #expect(await events.take(3) == [.stopping("audio"), .stopped("audio", timedOut: false), .finished(fatal: false)])
        try await run.value
        #expect(audio.runs == 2)
    }

    @Test func exceedingTheRestartIntensityStopsEverythingAndFails() async throws {
        let audio = FakeComponent("audio")
        let link = FakeComponent("link", dependencies: ["audio"], policy: RestartPolicy(maxRestarts: 2, window: 60), [.throwing])
        let rig = try SupervisorRig([audio, link])
        var events = rig.supervisor.events.makeAsyncIterator()
        let run = rig.start()
        #expect(await events.take(3) == [
            .started("audio", run: 1), .started("link", run: 1),
            .failed("link", reason: .error("boom 1"), decision: .restart(attempt: 1, backoff: 0.1)),
        ])
        rig.clock.advance(by: 0.1)
        #expect(await events.take(2) == [
            .started("link", run: 2),
            .failed("link", reason: .error("boom 2"), decision: .restart(attempt: 2, backoff: 0.2)),
        ])
        rig.clock.advance(by: 0.2)
        #expect(await events.take(5) == [
            .started("link", run: 3),
            .failed("link", reason: .error("boom 3"), decision: .giveUp(restarts: 2, window: 60)),
            .stopping("audio"), .stopped("audio", timedOut: false),
            .finished(fatal: true),
        ])
        await #expect(throws: SupervisorError.restartIntensityExceeded(
            component: "link", restarts: 2, window: 60, lastFailure: "error: boom 3")) {
            try await run.value
        }
        #expect(rig.supervisor.statuses().map(\.state) == [.stopped, .failed])
        #expect(rig.lines.contains(
            "ERROR supervisor: giving up component=link reason=error error=\"boom 3\" restarts=2 window=60.0s"))
    }

    @Test func failuresSpreadOutsideTheWindowNeverGiveUp() async throws {
        let link = FakeComponent("link", policy: RestartPolicy(maxRestarts: 1, window: 10), [.throwing])
        let rig = try SupervisorRig([link])
        var events = rig.supervisor.events.makeAsyncIterator()
        let run = rig.start()
        #expect(await events.take(2) == [
            .started("link", run: 1),
            .failed("link", reason: .error("boom 1"), decision: .restart(attempt: 1, backoff: 0.1)),
        ])
        // Failing again only once the window has passed: a fresh first attempt each time.
        for n in 2...4 {
            rig.clock.advance(by: 10)
            #expect(await events.take(2) == [
                .started("link", run: n),
                .failed("link", reason: .error("boom \(n)"), decision: .restart(attempt: 1, backoff: 0.1)),
            ])
        }
        rig.supervisor.stop()
        try await run.value
    }

    @Test func aComponentThatDoesNotStopInTimeIsAbandonedAndTheRestStillStop() async throws {
        let audio = FakeComponent("audio")
        let link = FakeComponent("link", stopTimeout: 3, [.hang])
        let rig = try SupervisorRig([audio, link])
        var events = rig.supervisor.events.makeAsyncIterator()
        let run = rig.start()
        _ = await events.take(2)
        await link.waitForRun()
        rig.supervisor.stop()
        #expect(await events.take(1) == [.stopping("link")])
        rig.clock.advance(by: 2.5)
        #expect(rig.supervisor.statuses()[1].state == .stopping)
        rig.clock.advance(by: 0.5)
        #expect(await events.take(4) == [
            .stopped("link", timedOut: true), .stopping("audio"), .stopped("audio", timedOut: false), .finished(fatal: false),
        ])
        try await run.value
        #expect(rig.lines.contains("WARN supervisor: did not stop in time; abandoned component=link timeout=3.0s"))
        link.release()
    }

    @Test func cancellingTheRunTaskStopsGracefully() async throws {
        let audio = FakeComponent("audio")
        let rig = try SupervisorRig([audio])
        var events = rig.supervisor.events.makeAsyncIterator()
        let run = rig.start()
        _ = await events.take(1)
        await audio.waitForRun()
        run.cancel()
        try await run.value
        #expect(audio.stopRequests == [.shutdown])
    }

    @Test func runsOnlyOnce() async throws {
        let rig = try SupervisorRig([FakeComponent("audio")])
        var events = rig.supervisor.events.makeAsyncIterator()
        let run = rig.start()
        _ = await events.take(1)
        await #expect(throws: SupervisorError.alreadyRunning) { try await rig.supervisor.run() }
        rig.supervisor.stop()
        try await run.value
    }

    @Test func refusesBadComponentSets() {
        #expect(throws: SupervisorError.duplicateName("a")) {
            try SupervisorRig([FakeComponent("a"), FakeComponent("a")])
        }
        #expect(throws: SupervisorError.unknownDependency(component: "link", dependency: "audio")) {
            try SupervisorRig([FakeComponent("link", dependencies: ["audio"])])
        }
        #expect(throws: SupervisorError.dependencyCycle(["a", "b"])) {
            try SupervisorRig([FakeComponent("a", dependencies: ["b"]), FakeComponent("b", dependencies: ["a"]), FakeComponent("c")])
        }
    }
}

@Suite struct RestartPolicyTests {
    @Test func backoffDoublesUpToTheCap() {
        let p = RestartPolicy(initialBackoff: 0.1, maxBackoff: 5)
        #expect((1...8).map { p.backoff(attempt: $0) } == [0.1, 0.2, 0.4, 0.8, 1.6, 3.2, 5, 5])
    }

    @Test func fiveRestartsInSixtySecondsThenGiveUp() {
        var t = RestartTracker(policy: .standard)
        let decisions = (0..<6).map { t.recordFailure(at: Double($0) * 10) }
        #expect(decisions == [
            .restart(attempt: 1, backoff: 0.1), .restart(attempt: 2, backoff: 0.2), .restart(attempt: 3, backoff: 0.4),
            .restart(attempt: 4, backoff: 0.8), .restart(attempt: 5, backoff: 1.6), .giveUp(restarts: 5, window: 60),
        ])
    }

    @Test func oldRestartsLeaveTheWindow() {
        var t = RestartTracker(policy: .standard)
        for i in 0..<5 { _ = t.recordFailure(at: Double(i)) }
        #expect(t.recordFailure(at: 59.5) == .giveUp(restarts: 5, window: 60))
        // At 60 the restart at 0 is a full window old.
        #expect(t.recordFailure(at: 60) == .restart(attempt: 5, backoff: 1.6))
        #expect(t.total == 6)
        #expect(t.recordFailure(at: 200) == .restart(attempt: 1, backoff: 0.1))
    }
}

@Suite struct SupervisionConfigTests {
    @Test func keysParse() {
        let r = ConfigParser().parse("""
            supervisor.max_restarts = 3
            supervisor.restart_window = 120
            supervisor.backoff_initial = 0.5
            supervisor.backoff_max = 10
            supervisor.stall_grace = 2
            log.serial = /dev/serial0
            log.serial_baud = 9600
            """, file: "crier.conf")
        #expect(r.diagnostics.isEmpty)
        #expect(r.config.supervision.policy == RestartPolicy(initialBackoff: 0.5, maxBackoff: 10, maxRestarts: 3, window: 120))
        #expect(r.config.supervision.stallGrace == 2)
        #expect(r.config.log.serial == "/dev/serial0")
        #expect(r.config.log.serialBaud == 9600)
    }

    @Test func badValuesKeepTheDefault() {
        let r = ConfigParser().parse("log.serial_baud = 12345\nlog.serial = serial0\n", file: "crier.conf")
        #expect(r.errors.map(\.description) == [
            "crier.conf:1: log.serial_baud: expected one of 9600, 19200, 38400, 57600, 115200, 230400, 460800, 921600, got \"12345\"; using the default (115200)",
            "crier.conf:2: log.serial: expected a device path such as /dev/serial0, got \"serial0\"; using the default (empty)",
        ])
        #expect(r.config.log.serialBaud == 115200)
    }
}

@Suite(.timeLimit(.minutes(1)))
struct ProgressFollowTests {
    final class Source: Sendable {
        let value = Mutex(0.0)
    }

    @Test func heartbeatsOnlyWhenTheSourceMoves() async {
        let clock = ManualClock(now: 10)
        let handle = ProgressHandle(component: "audio", generation: 1, clock: clock)
        let source = Source()
        let follower = Task { await handle.follow(every: 0.5) { source.value.withLock { $0 } } }
        func step() async {
            while clock.sleeperCount == 0 { await Task.yield() }
            clock.advance(by: 0.5)
        }
        while clock.sleeperCount == 0 { await Task.yield() }  // it has read the source once
        source.value.withLock { $0 = 1 }
        await step()  // 10.5: moved → heartbeat
        while handle.lastProgress != 10.5 { await Task.yield() }
        await step()  // 11.0: unchanged → none
        await step()  // 11.5: unchanged → none
        while clock.sleeperCount == 0 { await Task.yield() }
        #expect(handle.lastProgress == 10.5)
        follower.cancel()
        await follower.value
    }
}

@Suite struct WatchdogPetterTests {
    @Test func readsSystemdsEnvironment() {
        let p = WatchdogPetter(watchdogUSec: "30000000", watchdogPID: nil, ownPID: 42)
        #expect(p?.petInterval == 15)
        #expect(p?.checkInterval == 3.75)
        #expect(WatchdogPetter(watchdogUSec: "30000000", watchdogPID: "42", ownPID: 42) != nil)
        #expect(WatchdogPetter(watchdogUSec: "30000000", watchdogPID: "7", ownPID: 42) == nil)  // inherited
        #expect(WatchdogPetter(watchdogUSec: nil, watchdogPID: nil, ownPID: 42) == nil)
        #expect(WatchdogPetter(watchdogUSec: "0", watchdogPID: nil, ownPID: 42) == nil)
        #expect(WatchdogPetter(watchdogUSec: "soon", watchdogPID: nil, ownPID: 42) == nil)
    }

    /// systemd's timer after a reload runs from the last pet before it (same PID, re-executed):
    /// the schedule a re-executed crier keeps must reach systemd within WatchdogSec, counted
    /// from that pet, whatever the stop and start-up took. A fresh start counts as a pet, as
    /// systemd's own timer starts with the service.
    @Test func aReExecutedCrierPetsAtOnceBecauseSystemdsTimerRunsOnThroughTheReload() {
        let ok = SupervisorHealth(down: [])
        var fresh = WatchdogPetter(timeout: 10)
        #expect(fresh.start(now: 100, reloaded: false) == false)
        #expect(fresh.check(now: 100, health: ok) == .wait)
        for gap in [0.5, 2.5, 4.9] {  // the stop, the exec and the start-up before the petter runs
            let lastPetBefore = 0.0, reexecAt = 4.4 + gap  // the pet before the stop: up to 4.4 s old
            var p = WatchdogPetter(timeout: 10)
            var pets = p.start(now: reexecAt, reloaded: true) ? [reexecAt] : []
            var t = reexecAt
            while t < 30 {
                t += p.checkInterval
                if p.check(now: t, health: ok) == .pet { pets.append(t) }
            }
            // systemd: every gap between pets, from the last one before the reload, under 10 s
            let seen = [lastPetBefore] + pets
            #expect(zip(seen, seen.dropFirst()).allSatisfy { $1 - $0 < 10 }, "gap \(gap): \(seen)")
            #expect(pets.first == reexecAt)
        }
    }

    @Test func petsEveryHalfIntervalOnlyWhenHealthy() {
        var p = WatchdogPetter(timeout: 2)  // pet every 1 s, check every 0.25 s
        let ok = SupervisorHealth(down: [])
        let down = SupervisorHealth(down: ["audio"])
        var actions: [String] = []
        for i in 0...20 {
            let t = Double(i) * 0.25
            let h = (2.0..<3.0).contains(t) ? down : ok
            switch p.check(now: t, health: h) {
            case .pet: actions.append("pet@\(t)")
            case .withhold(let d): actions.append("withhold@\(t):\(d.joined())")
            case .wait: break
            }
        }
        #expect(actions == [
            "pet@0.0", "pet@1.0", "withhold@2.0:audio", "withhold@2.25:audio", "withhold@2.5:audio",
            "withhold@2.75:audio", "pet@3.0", "pet@4.0", "pet@5.0",
        ])
    }
}
