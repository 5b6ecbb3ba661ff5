import Testing
@testable import CrierCore

/// The under-voltage prompt and the setup hotspot's speaking rules in the speaker policy
/// (what main's daemon held as `if`s: DaemonPower.powerPromptDue, DaemonSetup, the link-down
/// and Wi-Fi prompt checks).
extension SpeakerPolicyTests {
    static let underVoltage = PowerReading(source: .firmware, flags: ThrottledFlags(raw: 0x1_0001))

    static func quiet(_ c: inout CrierConfig) {
        c.status.onStart = false
    }

    func started(_ h: SpeakerHarness, _ name: Templates.Name) -> Int {
        h.started.filter { $0.kind == .prompt(name) }.count
    }

    // MARK: power

    @Test func underVoltageIsSaidOncePerRunAfterFiveQuietSeconds() {
        var h = SpeakerHarness(Self.quiet)
        h.send(.linkUp)
        h.drain()
        h.now = 10
        h.order("o1")
        h.drain()  // lastSaid = 10
        h.now = 11
        h.send(.powerReading(Self.underVoltage))
        #expect(h.current == nil, "not within 5 s of the last thing said")
        #expect(h.wakeAt == 15, "the policy asks to look again when the quiet time ends")
        h.advance(to: 15)
        #expect(h.currentKind == .prompt(.powerWeak))
        #expect(h.powerPromptsQueued == 1)
        #expect(h.logged("saying once for this boot that the power supply is too weak (the firmware reported under-voltage)").count == 1)
        h.drain()
        for t in stride(from: 30.0, through: 300, by: 30) {
            h.now = t
            h.send(.powerReading(Self.underVoltage))
        }
        h.drain()
        #expect(started(h, .powerWeak) == 1 && h.powerPromptsQueued == 1)
    }

    @Test func underVoltageWaitsForOrdersPromptsMuteHeldAlertsAndNeverWhileStopping() {
        var h = SpeakerHarness(Self.quiet)
        h.send(.linkUp)
        h.drain()
        h.now = 10
        h.order("o1")
        h.send(.powerReading(Self.underVoltage))
        h.advance(to: 20)
        #expect(h.currentKind == .alert(ids: ["o1"], occasion: .first), "never ahead of (or over) an order")
        h.drain()
        // Muted: prompts are silent, so it waits for the mute to end.
        h.send(.control(.setGain(OutputGain(prompts: 0, alerts: 0.3, holdAlerts: false))))
        h.advance(to: 40)
        #expect(started(h, .powerWeak) == 0)
        h.send(.control(.setGain(OutputGain(prompts: 1, alerts: 1, holdAlerts: false))))
        #expect(h.currentKind == .prompt(.powerWeak), "said as soon as the mute ends (quiet for long enough)")
        h.drain()

        var s = SpeakerHarness(Self.quiet)
        s.send(.linkUp)
        s.drain()
        s.send(.reserveHolds(true))
        s.send(.powerReading(Self.underVoltage))
        s.advance(to: 60)
        #expect(started(s, .powerWeak) == 0, "not while alerts are held")
        s.send(.stop(grace: 5, deviceOpen: true))
        s.send(.reserveHolds(false))
        s.advance(to: 120)
        #expect(started(s, .powerWeak) == 0 && s.powerPromptsQueued == 0, "not while stopping")
    }

    @Test func underVoltageAlreadySaidThisBootOrSwitchedOffIsNotSaid() {
        var h = SpeakerHarness(Self.quiet, start: false)
        h.policy.preparePowerPrompt(enabled: true, saidThisBoot: true)
        h.send(.start)
        h.send(.powerReading(Self.underVoltage))
        h.advance(to: 60)
        var off = SpeakerHarness({ c in c.status.onStart = false; c.status.onUnderVoltage = false })
        off.send(.powerReading(Self.underVoltage))
        off.advance(to: 60)
        #expect(started(h, .powerWeak) == 0 && started(off, .powerWeak) == 0)
    }

    // MARK: setup hotspot

    static func hotspot(_ c: inout CrierConfig) {
        c.status.onStart = false
        c.setup.hotspot = true
        c.setup.afterMinutes = 3
        c.setup.repeatEvery = 60
        c.setup.closeAfterMinutes = 15
    }

    @Test func setupOpensWithoutNetworkRepeatsItsPromptAndSilencesTheServerPrompt() {
        var h = SpeakerHarness(Self.hotspot)
        h.advance(to: 179)
        #expect(h.setupEffects.isEmpty)
        h.drain()
        let linkDownBefore = started(h, .linkDown)
        #expect(linkDownBefore >= 1, "the server prompt is said before setup opens")
        #expect(h.wakeAt.map { $0 <= 180 } == true, "the opening is a deadline the policy wakes for")
        h.advance(to: 180)
        #expect(h.setupEffects == [.station, .scan])
        h.send(.setup(.scanned([])))
        #expect(h.setupEffects.last == .startAP)
        #expect(h.currentKind == .prompt(.setupHotspot))
        h.drain()
        for t in stride(from: 190.0, through: 400, by: 10) {
            h.advance(to: t)
            h.drain()
        }
        #expect(started(h, .setupHotspot) == 4, "at 180, 240, 300, 360 (setup.repeat = 60 s)")
        #expect(started(h, .linkDown) == linkDownBefore, "status.link_down_repeat is quiet while the hotspot is open")
        #expect(h.logged("order server unreachable").last?.field("prompt") == "replaced by the Wi-Fi prompt")
    }

    @Test func theGestureOpensSetupAndOffSaysWhy() {
        var h = SpeakerHarness(Self.hotspot)
        h.send(.control(.openSetup))
        #expect(h.setupEffects == [.station, .scan])
        #expect(h.policy.setup?.openedBy == .gesture)
        var off = SpeakerHarness(Self.quiet)
        off.send(.control(.openSetup))
        #expect(off.setupEffects.isEmpty)
        #expect(off.logged("setup hotspot requested but setup.hotspot = off in crier.conf").first?.field("by") == "gesture")
    }

    @Test func aSetupPromptWaitingWhenSetupClosesIsDropped() {
        var h = SpeakerHarness(Self.hotspot)
        h.send(.linkUp)
        h.drain()
        h.order("o1")
        h.send(.setup(.open(.page)))
        h.send(.setup(.scanned([])))
        #expect(h.policy.statusPrompts.contains(.setupHotspot), "queued behind the order")
        h.send(.setup(.close(.page)))
        #expect(h.setupEffects.last == .stop)
        h.drain()
        #expect(started(h, .setupHotspot) == 0)
        #expect(h.logged("prompt dropped: no longer true").first?.field("setup") == "closed")
    }

    @Test func wifiPromptsAreDroppedWhileSetupIsOpenAndATrysOutcomeIsSaid() {
        var h = SpeakerHarness { c in
            Self.hotspot(&c)
            c.wifi.ssid = try? WifiSSID(parsing: "shop")
        }
        h.send(.control(.openSetup))
        h.send(.setup(.scanned([])))
        h.drain()
        h.send(.wifi(.wrongKey(ssid: nil)))
        h.advance(to: 30)
        h.drain()
        #expect(started(h, .wifiWrongPassword) == 0, "the monitor sees the setup supplicant's tries: not said while open")
        let n = try! SetupNetwork.validate(ssid: "cafe", psk: "password1", country: "DE", configuredCountry: nil).get()
        h.send(.setup(.submit(n)))
        #expect(h.setupEffects.suffix(2) == [.station, .tryNetwork(n)])
        h.send(.setup(.tried(.wrongPassword)))
        #expect(h.currentKind == .prompt(.wifiWrongPassword), "the try's own outcome is said")
        h.drain()
        h.send(.setup(.submit(n)))
        h.send(.setup(.tried(.connected)))
        #expect(h.setupEffects.suffix(2) == [.save(n), .stop])
        #expect(h.policy.setup?.isOpen == false)
        #expect(h.policy.wifi?.config.ssid == n.ssid, "the Wi-Fi monitor follows the joined network")
    }
}
