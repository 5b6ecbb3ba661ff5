import Testing
@testable import CrierCore

@Suite struct LinkPromptScheduleTests {
    @Test func downAtStartThenRepeatedUntilConnected() {
        var s = LinkPromptSchedule(config: StatusPromptConfig(), startedAt: 100)
        #expect(s.due(now: 129.9) == nil)
        #expect(s.due(now: 130) == .linkDown)  // 30 s after start
        #expect(s.due(now: 131) == nil)
        #expect(s.due(now: 189.9) == nil)
        #expect(s.due(now: 190) == .linkDown)  // every 60 s while down
        #expect(s.connected() == .linkUp)
        #expect(s.due(now: 1000) == nil)
    }

    @Test func aShortDropIsNotAnnounced() {
        var s = LinkPromptSchedule(config: StatusPromptConfig(), startedAt: 0)
        _ = s.connected()
        s.disconnected(now: 50)
        #expect(s.due(now: 79) == nil)
        #expect(s.connected() == .linkUp)
        #expect(s.due(now: 90) == nil)
    }

    @Test func switchedOff() {
        var c = StatusPromptConfig()
        c.onLinkDown = false
        c.onLinkUp = false
        var s = LinkPromptSchedule(config: c, startedAt: 0)
        #expect(s.due(now: 1000) == nil)
        #expect(s.connected() == nil)
        s.disconnected(now: 1)
        #expect(s.due(now: 1000) == nil)
    }

    @Test func repeatedDisconnectsDoNotRestartTheClock() {
        var s = LinkPromptSchedule(config: StatusPromptConfig(), startedAt: 0)
        s.disconnected(now: 10)  // still down since start: no effect
        #expect(s.due(now: 30) == .linkDown)
    }

    @Test func networkReturnedGivesTheLinkTimeToReconnect() {
        var s = LinkPromptSchedule(config: StatusPromptConfig(), startedAt: 0)
        #expect(s.due(now: 30) == .linkDown)  // repeat due at 90
        s.networkReturned(now: 85)
        #expect(s.due(now: 90) == nil)
        #expect(s.nextDownPrompt == 115)
        #expect(s.due(now: 115) == .linkDown)  // still down after the grace: said
        s.networkReturned(now: 116)  // a later due (175) is kept
        #expect(s.nextDownPrompt == 175)
        _ = s.connected()
        s.networkReturned(now: 200)  // up: nothing to postpone
        #expect(s.nextDownPrompt == nil)
    }
}
