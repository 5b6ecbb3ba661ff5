import Testing
@testable import CrierCore

/// The speaker's rules (SpeakerPolicy) with an injected clock: what only the Python tests that
/// run the binary checked before (test_speaker, test_daemon, test_wifi, test_buttons,
/// test_lifecycle, test_music).
@Suite struct SpeakerPolicyTests {
    // MARK: what is said next

    @Test func alertsThenButtonPromptsThenRequestsThenStatusPrompts() {
        var h = SpeakerHarness(start: false)
        h.send(.linkUp)
        h.send(.say(Utterance(text: "from crier say", lang: .en)))
        h.send(.control(.say(.volumeMax)))
        h.order("o1")
        #expect(h.started.isEmpty, "nothing is said before start")
        h.send(.start)
        #expect(h.drain() == [.alert(ids: ["o1"], occasion: .first), .prompt(.volumeMax), .request("from crier say"),
                              .prompt(.started), .prompt(.linkUp)])
        #expect(h.acked("o1") == [.spoken])
        #expect(h.logged("said").map { $0.field("prompt") } == ["volume_max", "started", "link_up"])
        #expect(h.logged("said on request").count == 1)
    }

    @Test func anArrivingOrderCutsThePromptInTheSameStep() {
        var h = SpeakerHarness()
        #expect(h.currentKind == .prompt(.started))
        let prompt = h.current!
        let fx = h.send(.order(Order(id: "o1", kind: .text("hi"), lang: .en)))
        let stop = fx.firstIndex { if case .stopClip(prompt) = $0 { true } else { false } }
        let begin = fx.firstIndex { if case .startAlert = $0 { true } else { false } }
        #expect(stop != nil && begin != nil && stop! < begin!)
        #expect(h.logged("prompt cut short").map { $0.field("prompt") } == ["started"])
        #expect(h.currentKind == .alert(ids: ["o1"], occasion: .first))
        // The cut prompt's own end, coming late, changes nothing.
        h.end(prompt, heard: 10)
        #expect(h.currentKind == .alert(ids: ["o1"], occasion: .first))
    }

    // MARK: preemption

    @Test func aMoreUrgentOrderCutsTheAlertAndTheCutOneIsSaidAgainAfter() {
        var h = SpeakerHarness { $0.status.onStart = false }
        h.order("low", priority: 0)
        let low = h.current!
        h.synthesize(low)
        let fx = h.send(.order(Order(id: "urgent", kind: .text("now"), lang: .en, priority: 5)))
        #expect(fx.contains { if case .stopClip(low) = $0 { true } else { false } }, "stopped in the step the urgent order arrives")
        #expect(h.logged("interrupting for a more urgent order").count == 1)
        h.end(low, heard: 400)
        #expect(h.logged("not heard in full").last?.field("why") == "interrupted by a more urgent order; said again after it")
        #expect(h.acked("low").isEmpty)
        #expect(h.drain() == [.alert(ids: ["urgent"], occasion: .first), .alert(ids: ["low"], occasion: .first)])
        #expect(h.acked("urgent") == [.spoken] && h.acked("low") == [.spoken])
    }

    @Test func equalPriorityNeverInterrupts() {
        var h = SpeakerHarness { $0.status.onStart = false }
        h.order("a", priority: 3)
        let a = h.current!
        let fx = h.send(.order(Order(id: "b", kind: .text("x"), lang: .en, priority: 3)))
        #expect(!fx.contains { if case .stopClip = $0 { true } else { false } })
        #expect(h.current == a)
    }

    @Test func nothingIsCutWhileAlertsAreHeld() {
        var h = SpeakerHarness { $0.status.onStart = false }
        h.order("low")
        h.send(.control(.setGain(OutputGain(prompts: 0, alerts: 1, holdAlerts: true))))
        h.order("urgent", priority: 9)
        #expect(h.stops.isEmpty)
        #expect(h.drain() == [.alert(ids: ["low"], occasion: .first)])
        #expect(h.policy.queue.waitingCount == 1, "held until the mute ends")
        h.send(.control(.setGain(OutputGain(prompts: 1, alerts: 1, holdAlerts: false))))
        #expect(h.logged("mute ended; saying held alerts").first?.field("waiting") == "1")
        #expect(h.currentKind == .alert(ids: ["urgent"], occasion: .first))
    }

    // MARK: partial acks

    @Test func aCutCoalescedAlertAcksOnlyTheOrdersHeardInFull() {
        var h = SpeakerHarness { $0.status.onStart = false }
        h.send(.control(.setGain(OutputGain(prompts: 1, alerts: 1, holdAlerts: true))))
        for (i, id) in ["a", "b", "c"].enumerated() { h.order(id, .newCustomer(number: i + 1)) }
        h.send(.control(.setGain(OutputGain(prompts: 1, alerts: 1, holdAlerts: false))))
        let clip = h.current!
        #expect(h.currentKind == .alert(ids: ["a", "b", "c"], occasion: .first))
        h.synthesize(clip)
        h.end(clip, heard: 2100)  // parts end at 1000, 2000, 3000
        #expect(h.acked("a") == [.spoken] && h.acked("b") == [.spoken] && h.acked("c").isEmpty)
        #expect(h.logged("spoken").compactMap { $0.field("text") } == ["say a", "say b"])
        let cut = h.logged("not heard in full")
        #expect(cut.first?.field("ids") == "c" && cut.first?.field("heard_s") == "2.1" && cut.first?.field("why") == "cut short; said again")
        #expect(h.drain() == [.alert(ids: ["c"], occasion: .first)])
        #expect(h.acked("c") == [.spoken])
    }

    @Test func aPartNotSynthesizedWhenTheClipWasCutIsNotHeard() {
        var h = SpeakerHarness { $0.status.onStart = false }
        h.send(.control(.setGain(OutputGain(prompts: 1, alerts: 1, holdAlerts: true))))
        h.order("a", .newCustomer(number: 1))
        h.order("b", .newCustomer(number: 2))
        h.send(.control(.setGain(OutputGain(prompts: 1, alerts: 1, holdAlerts: false))))
        let clip = h.current!
        h.end(clip, heard: 5000)  // stopped, its synthesis still running
        #expect(h.acks.isEmpty, "no outcome before the synthesis ends")
        h.send(.synthesisEnded(clip, SynthesisEnd(.cancelled, partEnds: [1000], frames: 1400)))
        #expect(h.acked("a") == [.spoken] && h.acked("b").isEmpty)
    }

    @Test func speechCutAtMaxSecondsCountsItsLastPartAsEnded() {
        var h = SpeakerHarness { $0.status.onStart = false }
        h.order("long")
        let clip = h.current!
        h.send(.synthesisEnded(clip, SynthesisEnd(.cancelled, partEnds: [], full: true, frames: 300_000)))
        #expect(h.logged("speech longer than 300 s; cut there (speech.max_seconds)").count == 1)
        h.end(clip, heard: 300_000, .played)
        #expect(h.acked("long") == [.spoken], "not said again for ever")
    }

    @Test func aSynthesisFailureRejectsTheAlert() {
        var h = SpeakerHarness { $0.status.onStart = false }
        h.order("x")
        let clip = h.current!
        let fx = h.send(.synthesisEnded(clip, SynthesisEnd(.failed("espeak-ng failed with error 2"), partEnds: [], frames: 0)))
        #expect(fx.contains { if case .stopClip(clip) = $0 { true } else { false } })
        h.end(clip, heard: 0)
        #expect(h.acks.map(\.ack) == [Ack(id: "x", status: .rejected, reason: "speech_failed", message: "espeak-ng failed with error 2")])
        #expect(h.logged("could not synthesize; rejecting").first?.level == .error)
        #expect(h.logs.contains { $0.message == "rejected" && $0.level == .warning })
        // Final: a redelivery and a cancel get the same rejection, never `spoken` (the queue
        // remembered a failed alert as spoken before).
        h.order("x")
        h.send(.cancel(id: "x"))
        #expect(h.acks.dropFirst().map(\.ack.status) == [.rejected, .rejected])
        #expect(h.acks.last?.ack.reason == "speech_failed" && h.current == nil)
    }

    // MARK: prompts

    @Test func linkDownPromptRepeatsAndWifiProblemReplacesIt() {
        var h = SpeakerHarness { c in
            c.status.onStart = false
            c.wifi.ssid = try? WifiSSID(parsing: "shop")
        }
        #expect(h.wakeAt == 30, "link_down_after")
        h.advance(to: 30)
        #expect(h.logged("order server unreachable").last?.field("for") == "30s")
        #expect(h.drain() == [.prompt(.linkDown)])
        #expect(h.wakeAt == 90, "then every link_down_repeat")
        h.send(.wifi(.wrongKey(ssid: Array("shop".utf8))))
        #expect(h.drain() == [.prompt(.wifiWrongPassword)])
        h.advance(to: 90)
        #expect(h.logged("order server unreachable").last?.field("prompt") == "replaced by the Wi-Fi prompt")
        #expect(!h.policy.statusPrompts.contains(.linkDown))
    }

    @Test func wifiBackCutsTheServerPromptAndGivesTheLinkTimeToReconnect() {
        var h = SpeakerHarness { c in
            c.status.onStart = false
            c.wifi.ssid = try? WifiSSID(parsing: "shop")
        }
        h.advance(to: 30)
        #expect(h.currentKind == .prompt(.linkDown))
        let clip = h.current!
        h.now = 80  // still saying it when Wi-Fi comes back
        let fx = h.send(.wifiStatus(Self.online, signal: -50))
        #expect(fx.contains { if case .stopClip(clip) = $0 { true } else { false } })
        #expect(h.logged("Wi-Fi connected").count == 1)
        h.end(clip, heard: 100)
        #expect(h.drain() == [.prompt(.wifiConnected)])
        #expect(h.policy.linkPrompts.nextDownPrompt == 110, "status.link_down_after after Wi-Fi came back, not the repeat at 90")
    }

    static var online: WpaStatus {
        var st = WpaStatus()
        st.wpaState = "COMPLETED"
        st.ipAddress = "10.0.0.9"
        return st
    }

    @Test func aStatusPromptNoLongerTrueWhenItsTurnComesIsDropped() {
        var h = SpeakerHarness { c in
            c.status.onStart = false
            c.wifi.ssid = try? WifiSSID(parsing: "shop")
        }
        h.send(.wifiStatus(Self.online, signal: -50))
        #expect(h.drain() == [.prompt(.wifiConnected)])
        h.send(.wifi(.disconnected(reason: 3)))  // a blip: searching, nothing said
        h.now = 30
        h.send(.control(.say(.volumeMax)))  // link_down is due too: it waits behind the button's prompt
        #expect(h.currentKind == .prompt(.volumeMax) && h.policy.statusPrompts == [.linkDown])
        h.now = 31
        h.send(.wifiStatus(Self.online, signal: -50))  // back, no prompt for a blip
        h.now = 32
        #expect(h.drain() == [.prompt(.volumeMax)])
        let dropped = h.logged("prompt dropped: no longer true")
        #expect(dropped.first?.field("prompt") == "link_down" && dropped.first?.field("wifi") == "online" && dropped.first?.field("link") == "down")
    }

    @Test func mutedPromptsAreSilentAndTheMuteEndsByItself() {
        var h = SpeakerHarness { c in
            c.status.onStart = false
            c.buttons.muteMaxMinutes = 1
        }
        var controls = Controls(config: h.policy.config.buttons, restored: nil, now: 0, wall: WallTime(unixMillis: 0))
        for e in controls.start() { h.send(.control(e)) }
        for e in controls.handle(Gesture(.mute, .press, at: 0), now: 0, wall: WallTime(unixMillis: 0), historyCount: 0) { h.send(.control(e)) }
        #expect(h.policy.promptGain == 0 && h.musicLevel == 0)
        h.send(.linkUp)
        h.send(.control(.click))
        #expect(h.drain().isEmpty && h.clicks.isEmpty, "prompts and clicks are silent while muted")
        h.order("o")
        #expect(h.currentKind == .alert(ids: ["o"], occasion: .first), "the floor: orders are still said")
        h.drain()
        h.now = 60
        for e in controls.tick(now: 60, wall: WallTime(unixMillis: 60_000)) { h.send(.control(e)) }
        #expect(h.drain() == [.prompt(.muteEnded)])
    }

    @Test func replayWithNothingSaidSaysNoOrders() {
        var h = SpeakerHarness { $0.status.onStart = false }
        h.send(.control(.replay(0)))
        #expect(h.drain() == [.prompt(.noOrders)])
        h.order("o")
        h.drain()
        h.send(.control(.replay(0)))
        #expect(h.drain() == [.alert(ids: ["o"], occasion: .replay)])
        #expect(h.acked("o") == [.spoken])
    }

    // MARK: duck and music

    @Test func musicDucksWhenAnOrderIsQueuedAndComesBackWhenNothingIsLeft() {
        var h = SpeakerHarness { $0.status.onStart = false }
        #expect(!h.ducked)
        let fx = h.send(.order(Order(id: "o", kind: .text("x"), lang: .en)))
        let duck = fx.firstIndex { if case .duck(true) = $0 { true } else { false } }
        let begin = fx.firstIndex { if case .startAlert = $0 { true } else { false } }
        #expect(duck != nil && begin != nil && duck! < begin!)
        h.order("p")
        h.finishCurrent()
        #expect(h.ducked, "still ducked between two alerts")
        h.finishCurrent()
        #expect(!h.ducked)
        h.send(.control(.setGain(OutputGain(prompts: 0, alerts: 1, holdAlerts: true))))
        h.order("held")
        #expect(!h.ducked, "a held alert does not duck")
    }

    @Test func musicLevelFollowsTheSwitchAndThePromptGain() {
        var h = SpeakerHarness { c in
            c.music.source = .files("/music")
            c.music.levelDb = -20
        }
        h.send(.musicStarted)
        #expect(h.musicLevel == nil, "no level before the buttons set one")
        h.send(.control(.setGain(OutputGain(prompts: 0.5, alerts: 1, holdAlerts: false))))
        #expect(abs(h.musicLevel! - 0.05) < 1e-9)
        h.send(.control(.setMusic(false)))
        #expect(h.musicLevel == 0 && h.logged("music off (button)").count == 1)
        h.send(.control(.setMusic(true)))
        h.send(.control(.setGain(OutputGain(prompts: 0, alerts: 0.2, holdAlerts: false))))
        #expect(h.musicLevel == 0, "silenced while muted")
    }

    // MARK: repeats, expiry, cancel

    @Test func repeatsUntilAcknowledged() {
        var h = SpeakerHarness { c in
            c.status.onStart = false
            c.alerts.repeatEvery = 10
            c.alerts.repeatMax = 3
        }
        h.order("o")
        h.drain()
        #expect(h.wakeAt == 10)
        h.advance(to: 10)
        #expect(h.currentKind == .alert(ids: ["o"], occasion: .repetition(1)))
        h.drain()
        #expect(h.logged("said again").count == 1)
        h.advance(to: 20)
        let clip = h.current!
        let fx = h.send(.control(.acknowledge))
        #expect(fx.contains { if case .stopClip(clip) = $0 { true } else { false } })
        #expect(h.logged("acknowledged").first?.field("ids") == "o")
        h.end(clip, heard: 10)
        h.advance(to: 100)
        #expect(h.current == nil && h.acked("o") == [.spoken])
    }

    @Test func ordersExpireAtTheirTtlWhileAnotherPlays() {
        var h = SpeakerHarness { $0.status.onStart = false }
        h.order("long")
        h.order("short-lived", ttl: 2)
        #expect(h.wakeAt == 2, "wakes at the ttl while the clip plays")
        h.advance(to: 2)
        #expect(h.acked("short-lived") == [.expired])
        h.drain()
        #expect(h.acked("long") == [.spoken])
    }

    @Test func ordersExpireAtTheirTtlWhileCrierSayTextPlaysToo() {
        var h = SpeakerHarness { $0.status.onStart = false }
        h.send(.say(Utterance(text: "a long text", lang: .en)))
        h.order("o", ttl: 2)
        #expect(h.currentKind == .request("a long text"), "an order does not cut crier say text")
        #expect(h.wakeAt == 2)
        h.advance(to: 2)
        #expect(h.acked("o") == [.expired], "at its ttl, not when the text ends (the daemon's loop waited for the end)")
    }

    @Test func anOrderBeingSaidWhenItsTtlPassesIsFinished() {
        var h = SpeakerHarness { $0.status.onStart = false }
        h.order("o", ttl: 1)
        h.advance(to: 5)
        h.drain()
        #expect(h.acked("o") == [.spoken])
    }

    @Test func cancellingThePlayingOrderStopsItsClip() {
        var h = SpeakerHarness { $0.status.onStart = false }
        h.order("o")
        let clip = h.current!
        let fx = h.send(.cancel(id: "o"))
        #expect(fx.contains { if case .stopClip(clip) = $0 { true } else { false } })
        #expect(fx.contains { if case .ack(let a, false, true, _) = $0 { a.status == .cancelled } else { false } })
        #expect(h.logs.first { $0.message == "cancelled" }?.field("was_playing") == "true")
        h.synthesize(clip)
        h.end(clip, heard: 300)
        #expect(h.acked("o") == [.cancelled])
    }

    // MARK: shutdown

    @Test func onlyAnAlertHeardOnAnOpenDeviceGetsTheGrace() {
        var h = SpeakerHarness { $0.status.onStart = false }
        h.order("o")
        h.order("next")
        let clip = h.current!
        h.send(.stop(grace: 5, deviceOpen: true))
        #expect(h.graceArmed == 5 && h.stops.isEmpty && h.logged("stopping").first?.field("current") == "o")
        h.send(.abandon(deviceOpen: true))
        #expect(h.stops == [clip] && h.logged("current alert still playing at the end of the grace period; cutting it").count == 1)
        h.synthesize(clip)
        h.end(clip, heard: 100)
        #expect(h.logged("not heard in full").first?.field("why") == "stopping; not acked, the server redelivers them")
        #expect(h.finished && h.acks.isEmpty && h.current == nil, "the waiting order is not started")

        var p = SpeakerHarness()
        #expect(p.currentKind == .prompt(.started))
        p.send(.stop(grace: 5, deviceOpen: true))
        #expect(p.graceArmed == nil && p.finished, "a prompt is cut at once")

        var d = SpeakerHarness { $0.status.onStart = false }
        d.order("o")
        let c = d.current!
        d.send(.stop(grace: 5, deviceOpen: false))
        #expect(d.graceArmed == nil && d.stops == [c], "nothing can be heard on a closed device")
        d.send(.synthesisEnded(c, SynthesisEnd(.cancelled, partEnds: [], frames: 10)))
        #expect(d.finished && d.acks.isEmpty)
    }

    @Test func ordersArrivingWhileStoppingAreLeftToTheServer() {
        var h = SpeakerHarness { $0.status.onStart = false }
        h.send(.stop(grace: 5, deviceOpen: true))
        #expect(h.finished)
        h.order("late")
        #expect(h.acks.isEmpty && h.current == nil && h.logged("queued").isEmpty)
    }

    @Test func theUpdateTurnComesOnlyWhenNothingWaits() {
        var h = SpeakerHarness { $0.status.onStart = false }
        let idle = h.updateTurns
        #expect(idle > 0)
        h.send(.control(.setGain(OutputGain(prompts: 1, alerts: 1, holdAlerts: true))))
        h.order("held")
        let before = h.updateTurns
        h.advance(to: 1)
        #expect(h.updateTurns == before, "a held alert waits: no install")
    }

    @Test func ackLogLines() {
        let r = SpeakerRecord.ack(Ack(id: "o", status: .spoken), again: true, extra: [("redelivered", "true")], sent: .confirmedHere)
        #expect(r.message == "not acked again: spoken")
        #expect(r.fields.map(\.0) == ["id", "status", "redelivered", "sent"])
        let w = SpeakerRecord.ack(Ack(id: "o", status: .rejected, reason: "queue_full", message: "full"), again: false, extra: [], sent: .queued)
        #expect(w.level == .warning && w.message == "rejected" && w.field("why") == "full")
    }
}

/// A reload (SIGHUP: crier re-executes itself; `crier apply-config` sends it after the setup
/// portal saved a network) is not a new connection: "Wi-Fi connected" said before it is not
/// said again by the new image (docs/setup.md section 6, "Saving").
extension SpeakerPolicyTests {
    static func wifi(_ ssid: String) -> (inout CrierConfig) -> Void {
        { c in
            c.status.onStart = false
            c.wifi.ssid = try? WifiSSID(parsing: ssid)
        }
    }

    /// The image before the reload: Wi-Fi online and "Wi-Fi connected" said.
    static func saidBeforeTheReload() -> [UInt8]? {
        var a = SpeakerHarness(wifi("shop"))
        #expect(a.policy.wifiConnectedSaid == nil)
        a.send(.wifiStatus(online, signal: -50))
        #expect(a.drain() == [.prompt(.wifiConnected)])
        return a.policy.wifiConnectedSaid
    }

    @Test func aReloadDoesNotSayWifiConnectedAgainForTheSameNetwork() {
        guard let said = Self.saidBeforeTheReload() else { Issue.record("nothing to hand over"); return }
        #expect(said == Array("shop".utf8))
        var b = SpeakerHarness(Self.wifi("shop"), start: false)
        b.policy.reloaded(wifiConnectedSaid: said)
        b.send(.start)
        b.send(.wifiStatus(Self.online, signal: -50))
        #expect(b.drain() == [], "said again after the reload")
        #expect(b.logged("Wi-Fi connected").count == 1, "the state change is still logged")
        // A problem after the reload, then back: both said, as always.
        b.now = 5
        b.send(.wifi(.wrongKey(ssid: Array("shop".utf8))))
        #expect(b.drain() == [.prompt(.wifiWrongPassword)])
        b.now = 9
        b.send(.wifiStatus(Self.online, signal: -50))
        #expect(b.drain() == [.prompt(.wifiConnected)])
    }

    @Test func aReloadThatChangedTheNetworkOrCameBeforeTheWordsStillSaysIt() {
        // The settings form changed wifi.ssid: the new network is announced when it connects.
        guard let said = Self.saidBeforeTheReload() else { Issue.record("nothing to hand over"); return }
        var b = SpeakerHarness(Self.wifi("cafe"), start: false)
        b.policy.reloaded(wifiConnectedSaid: said)
        b.send(.start)
        b.send(.wifiStatus(Self.online, signal: -50))
        #expect(b.drain() == [.prompt(.wifiConnected)])
        // Online, but "Wi-Fi connected" still waiting behind a button's prompt when the reload
        // comes: nothing is handed over, so the new image says it.
        var a = SpeakerHarness(Self.wifi("shop"))
        a.send(.control(.say(.volumeMax)))
        a.send(.wifiStatus(Self.online, signal: -50))
        #expect(a.currentKind == .prompt(.volumeMax) && a.policy.statusPrompts.contains(.wifiConnected))
        #expect(a.policy.wifiConnectedSaid == nil)
        // A problem said after "connected": nothing handed over either.
        _ = a.drain()
        a.now = 3
        a.send(.wifi(.wrongKey(ssid: Array("shop".utf8))))
        _ = a.drain()
        #expect(a.policy.wifiConnectedSaid == nil)
    }
}
