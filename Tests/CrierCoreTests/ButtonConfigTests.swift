import Testing
@testable import CrierCore

@Suite("Button config keys")
struct ButtonConfigTests {
    func parse(_ text: String) -> ConfigParser.Result { ConfigParser().parse(text, file: "crier.conf") }

    @Test("Pi defaults: GPIO17/27/22/23/24, pull-up, active low, 20 ms, 1000 ms")
    func defaults() {
        let c = CrierConfig().buttons
        #expect(c.input == .gpio)
        #expect(c.fitted.map { $0.1.line!.description } == ["GPIO17", "GPIO27", "GPIO22", "GPIO23", "GPIO24"])
        #expect(c.fitted.allSatisfy { $0.1.bias == .pullUp && $0.1.activeLow && $0.1.debounceMs == 20 && $0.1.holdMs == 1000 })
        #expect(c.volumeSteps == 10 && c.muteAlerts == .floor && c.muteMaxMinutes == 30 && c.statePath == "/var/lib/crier/state")
    }

    @Test("every key reads and renders")
    func keys() {
        let r = parse("""
            input = fifo:/run/crier/buttons
            button.volume_up = gpiochip0:5
            button.volume_up.bias = pull-down
            button.volume_up.debounce_ms = 30
            button.volume_up.hold_ms = 800
            button.mute.active = high
            button.acknowledge =
            button.repeat_ms = 200
            volume.steps = 5
            volume.default = 3
            volume.min_db = -24
            volume.alert_floor = 2
            mute.alerts = queue
            mute.max_minutes = 10
            state.path = /data/state
            """)
        #expect(r.diagnostics.isEmpty)
        let c = r.config.buttons
        #expect(c.input == .fifo("/run/crier/buttons"))
        #expect(c[.volumeUp].line == .chip("gpiochip0", offset: 5))
        #expect(c[.volumeUp].bias == .pullDown && !c[.volumeUp].activeLow)
        #expect(c[.volumeUp].debounceMs == 30 && c[.volumeUp].holdMs == 800)
        #expect(c[.mute].activeLowSetting == false)
        #expect(c[.acknowledge].line == nil)
        #expect(!c.fitted.contains { $0.0 == .acknowledge })
        #expect(c.repeatMs == 200 && c.volumeSteps == 5 && c.volumeDefault == 3 && c.volumeMinDb == -24)
        #expect(c.alertFloor == 2 && c.muteAlerts == .queue && c.muteMaxMinutes == 10 && c.statePath == "/data/state")
        let rendered = r.config.rendered()
        #expect(rendered.contains("input = fifo:/run/crier/buttons\n"))
        #expect(rendered.contains("button.volume_up = gpiochip0:5\n"))
        #expect(rendered.contains("button.acknowledge = \n"))
        #expect(rendered.contains("button.mute.active = high\n"))
    }

    @Test("bad values are reported with what was expected, and keep the default")
    func errors() {
        let r = parse("""
            input = serial
            button.mute = GPIO 22
            button.mute.bias = up
            button.replay.hold_ms = x
            volume.steps = 0
            state.path = state
            """)
        let msgs = r.errors.map(\.description)
        #expect(msgs == [
            "crier.conf:1: input: expected gpio, keyboard or fifo:/PATH, got \"serial\"; using the default (gpio)",
            "crier.conf:2: button.mute: expected a line name like GPIO17 or CHIP:OFFSET like gpiochip0:17, got \"GPIO 22\"; using the default (GPIO22)",
            "crier.conf:3: button.mute.bias: expected one of pull-up, pull-down, disabled, got \"up\"; using the default (pull-up)",
            "crier.conf:4: button.replay.hold_ms: expected an integer 200...10000, got \"x\"; using the default (1000)",
            "crier.conf:5: volume.steps: expected an integer 1...50, got \"0\"; using the default (10)",
            "crier.conf:6: state.path: expected an absolute path, got \"state\"; using the default (/var/lib/crier/state)",
        ])
        #expect(r.config.buttons == ButtonsConfig())
    }
}
