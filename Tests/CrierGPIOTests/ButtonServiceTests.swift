import CrierCore
import CrierPosix
import Glibc
import Testing
@testable import CrierGPIO

@Suite("Button service: FIFO → gestures → Controls → effects and state file", .serialized)
struct ButtonServiceTests {
    /// The FIFO input and the state file in `d`; mute ends after `muteMinutes`.
    static func config(_ d: TempDir, muteMinutes: Double) -> ButtonsConfig {
        var c = ButtonsConfig()
        c.input = .fifo(d.file("buttons"))
        c.statePath = d.file("state/state")
        c.muteMaxMinutes = muteMinutes
        return c
    }

    @Test("restores state, steps volume, mutes, auto-unmutes, persists, stops on cancel")
    func endToEnd() async throws {
        let d = TempDir(); defer { d.remove() }
        let c = Self.config(d, muteMinutes: 0.01)  // 0.6 s (the config file's minimum is 1 minute)
        try StateFile(path: c.statePath).save(ControlState(volume: 5))
        let (log, sink) = testLog()
        let effects = Collector<ControlEffect>()
        let hooks = ButtonService.Hooks(historyCount: { 0 }, perform: { effects.add($0) })
        let service = ButtonService(config: c, log: log, hooks: hooks, wall: { WallTime(unixMillis: 1_000) })
        let task = Task { await service.run() }

        let g = { (l: Int) in VolumeCurve.gain(level: l, steps: 10, minDb: -30) }
        #expect(await effects.waitFor { $0 == [.setGain(OutputGain(prompts: g(5), alerts: g(5), holdAlerts: false))] })
        let w = try #require(await FifoWriter(c.input.description.replacing("fifo:", with: "")))
        await w.levels([("GPIO17 0", 0.1), ("GPIO17 1", 0.1)])
        #expect(await effects.waitFor { $0.count == 3 })
        #expect(Array(effects.all.suffix(2)) == [.setGain(OutputGain(prompts: g(6), alerts: g(6), holdAlerts: false)), .click])
        await w.levels([("GPIO22 0", 0.1), ("GPIO22 1", 0.1)])
        #expect(await effects.waitFor { $0.count == 4 })
        #expect(effects.all.last == .setGain(OutputGain(prompts: 0, alerts: g(4), holdAlerts: false)))
        #expect(await service.state == ControlState(volume: 6, muted: true, mutedSince: WallTime(unixMillis: 1_000)))
        // Mute ends by itself, saying so.
        #expect(await effects.waitFor(timeout: 3) { $0.contains(.say(.muteEnded)) })
        #expect(Array(effects.all.suffix(2)) == [.setGain(OutputGain(prompts: g(6), alerts: g(6), holdAlerts: false)), .say(.muteEnded)])
        // Replay with no history says so.
        await w.levels([("GPIO23 0", 0.1), ("GPIO23 1", 0.1)])
        #expect(await effects.waitFor { $0.last == .say(.noOrders) })
        w.close()

        task.cancel()
        await task.value
        #expect(StateFile(path: c.statePath).read() == .loaded(ControlState(volume: 6)))
        #expect(sink.lines.contains { $0.contains("mute ended after mute.max_minutes") })
        #expect(sink.lines.contains { $0.contains("buttons: stopped") })
    }

    /// Given an executor with a thread (the daemon's event thread), every hook runs on that
    /// thread, for the box's buttons (the reader thread's gestures), a press from the page and
    /// the mute timer alike: no step of a press runs on Swift's shared pool, where a busy box
    /// delays it (docs/buttons.md, "Press to click"). Fails if the hooks become async closures
    /// again or a gesture reaches the service through a task on the pool.
    @Test("hooks run on the given executor's thread: reader, page and timer")
    func hooksRunOnTheExecutorThread() async throws {
        let d = TempDir(); defer { d.remove() }
        let c = Self.config(d, muteMinutes: 0.005)  // 0.3 s
        let (log, _) = testLog()
        let executor = ThreadExecutor(name: "test-events")
        #expect(executor.startError == nil)
        let seen = Collector<(ControlEffect, Bool)>()
        let hooks = ButtonService.Hooks(historyCount: { precondition(executor.isCurrent); return 0 },
                                        perform: { seen.add(($0, executor.isCurrent)) })
        let service = ButtonService(config: c, log: log, hooks: hooks, wall: { WallTime(unixMillis: 1_000) }, executor: executor)
        let task = Task { await service.run() }
        #expect(await seen.waitFor { $0.count == 1 })
        let w = try #require(await FifoWriter(c.input.description.replacing("fifo:", with: "")))
        await w.levels([("GPIO17 0", 0.1), ("GPIO17 1", 0.1)])   // volume up: gain, click
        await w.levels([("GPIO22 0", 0.1), ("GPIO22 1", 0.1)])   // mute: gain; its timer unmutes
        await w.levels([("GPIO23 0", 0.1), ("GPIO23 1", 0.1)])   // replay: asks historyCount
        await service.press(.volumeDown)                           // the page
        #expect(await seen.waitFor(timeout: 3) { s in s.contains { $0.0 == .say(.muteEnded) } && s.contains { $0.0 == .say(.noOrders) } })
        w.close()
        task.cancel()
        await task.value
        let all = seen.all
        #expect(all.count >= 7, "\(all.map(\.0))")
        #expect(all.allSatisfy { $0.1 }, "not on the executor's thread: \(all.filter { !$0.1 }.map(\.0))")
    }
}
