/// What a button does. Raw values are the config names (`button.volume_up = GPIO17`).
public enum ButtonAction: String, Sendable, CaseIterable, Hashable, Comparable {
    case volumeUp = "volume_up"
    case volumeDown = "volume_down"
    case mute
    case replay
    case acknowledge
    /// Background music on/off (docs/music.md); not fitted by default.
    case music

    public static func < (a: ButtonAction, b: ButtonAction) -> Bool {
        allCases.firstIndex(of: a)! < allCases.firstIndex(of: b)!
    }

    /// How the gesture recognizer treats the button (docs/buttons.md, "Gestures").
    public var gestureMode: GestureMode {
        switch self {
        case .volumeUp, .volumeDown: .repeating
        case .replay: .pressOrHold
        case .mute, .acknowledge, .music: .immediate
        }
    }
}

/// Which GPIO line a button is wired to: a line name from the device tree (`GPIO17` on a
/// Raspberry Pi) or a chip and offset (`gpiochip0:17`).
public enum LineRef: Sendable, Equatable, Hashable, CustomStringConvertible {
    case name(String)
    case chip(String, offset: Int)

    public init(parsing s: String) throws(ConfigValueError) {
        if let colon = s.lastIndex(of: ":") {
            let chip = String(s[..<colon])
            let off = s[s.index(after: colon)...]
            guard !chip.isEmpty, !chip.contains(" "), let o = Int(off), (0...1023).contains(o) else {
                throw ConfigValueError("expected a line name like GPIO17 or CHIP:OFFSET like gpiochip0:17, got \(ConfigValue.shown(s))")
            }
            self = .chip(chip, offset: o)
        } else {
            guard !s.isEmpty, !s.contains(where: { $0 == " " || $0 == "\t" }) else {
                throw ConfigValueError("expected a line name like GPIO17 or CHIP:OFFSET like gpiochip0:17, got \(ConfigValue.shown(s))")
            }
            self = .name(s)
        }
    }

    public var description: String {
        switch self {
        case .name(let n): n
        case .chip(let c, let o): "\(c):\(o)"
        }
    }
}

/// The line's internal resistor, as requested from the kernel.
public enum LineBias: String, Sendable, CaseIterable, Equatable {
    case pullUp = "pull-up"
    case pullDown = "pull-down"
    case disabled
}

/// One button's wiring and timing.
public struct ButtonSpec: Sendable, Equatable {
    /// nil: the button is not fitted; it does nothing.
    public var line: LineRef?
    public var bias: LineBias = .pullUp
    /// Which electrical level means "pressed". nil follows the bias: a pull-down button is
    /// active high, everything else active low (a switch to ground, like gpiozero's default).
    public var activeLowSetting: Bool? = nil
    public var debounceMs = 20
    public var holdMs = 1000

    public init(line: LineRef?) { self.line = line }

    public var activeLow: Bool { activeLowSetting ?? (bias != .pullDown) }

    /// The electrical level a pressed button reads.
    public var pressedLevel: Bool { !activeLow }
}

/// Where button levels come from.
public enum ButtonInputKind: Sendable, Equatable, CustomStringConvertible {
    /// GPIO lines through libgpiod.
    case gpio
    /// Keys on the controlling terminal (for laptops): `+ - m r a`.
    case keyboard
    /// A named pipe taking lines `<line-name> <0|1>` (tests and simulations).
    case fifo(String)

    public init(parsing s: String) throws(ConfigValueError) {
        switch s.lowercased() {
        case "gpio": self = .gpio
        case "keyboard": self = .keyboard
        default:
            guard s.hasPrefix("fifo:"), s.count > 5 else {
                throw ConfigValueError("expected gpio, keyboard or fifo:/PATH, got \(ConfigValue.shown(s))")
            }
            let path = String(s.dropFirst(5))
            guard path.hasPrefix("/") else { throw ConfigValueError("expected an absolute path after fifo:, got \(ConfigValue.shown(s))") }
            self = .fifo(path)
        }
    }

    public var description: String {
        switch self {
        case .gpio: "gpio"
        case .keyboard: "keyboard"
        case .fifo(let p): "fifo:\(p)"
        }
    }
}

/// What an order does while the box is muted.
public enum MuteAlertPolicy: String, Sendable, Equatable, CaseIterable {
    /// Spoken at `volume.alert_floor` (the default: an order is never missed).
    case floor
    /// Held and spoken when mute ends (by a press or by `mute.max_minutes`).
    case queue
}

/// Buttons, volume, mute and the state file: everything docs/buttons.md describes.
public struct ButtonsConfig: Sendable, Equatable {
    public var input: ButtonInputKind = .gpio
    public var buttons: [ButtonAction: ButtonSpec] = ButtonsConfig.piDefaults
    /// Interval of hold-repeat (volume keeps stepping while held), in ms.
    public var repeatMs = 250
    /// A button down longer than this is reported once and ignored until released.
    public var stuckSeconds = 30.0
    /// Both volume keys held together this long open the setup hotspot (`setup.hold_seconds`;
    /// 0: no such gesture).
    public var setupHoldSeconds = 5.0

    /// Volume levels above 0; level 0 is the quietest (still audible), `volumeSteps` is full.
    public var volumeSteps = 10
    public var volumeDefault = 7
    /// Gain of level 0 in dB (negative); levels are evenly spaced in dB up to 0 dB.
    public var volumeMinDb = -30.0
    /// The level orders are spoken at while muted with `mute.alerts = floor`.
    public var alertFloor = 4
    public var muteAlerts: MuteAlertPolicy = .floor
    public var muteMaxMinutes = 30.0
    public var statePath = "/var/lib/crier/state"

    public init() {}

    /// Raspberry Pi wiring: free of the UART (GPIO14/15) and I2S (GPIO18-21).
    public static let piDefaults: [ButtonAction: ButtonSpec] = [
        .volumeUp: ButtonSpec(line: .name("GPIO17")),
        .volumeDown: ButtonSpec(line: .name("GPIO27")),
        .mute: ButtonSpec(line: .name("GPIO22")),
        .replay: ButtonSpec(line: .name("GPIO23")),
        .acknowledge: ButtonSpec(line: .name("GPIO24")),
        .music: ButtonSpec(line: nil),
    ]

    /// The fitted buttons, in a stable order.
    public var fitted: [(ButtonAction, ButtonSpec)] {
        ButtonAction.allCases.compactMap { a in buttons[a].flatMap { $0.line == nil ? nil : (a, $0) } }
    }

    public subscript(action: ButtonAction) -> ButtonSpec {
        get { buttons[action] ?? ButtonSpec(line: nil) }
        set { buttons[action] = newValue }
    }

    static let keys: [ConfigKey] = {
        var keys: [ConfigKey] = [
            ConfigKey("input", section: "buttons", default: "gpio",
                      doc: "Where button presses come from: gpio (libgpiod), keyboard (+ - m r a on the console, for testing) or fifo:/PATH (lines \"<line-name> <0|1>\").",
                      apply: { c, v throws(ConfigValueError) in c.buttons.input = try ButtonInputKind(parsing: v) },
                      render: { $0.buttons.input.description }),
        ]
        for action in ButtonAction.allCases {
            let a = action
            let d = piDefaults[a]!
            let n = "button.\(a.rawValue)"
            keys += [
                ConfigKey(n, section: "buttons", default: d.line?.description ?? "",
                          doc: "GPIO line of the \(a.rawValue.replacingAll("_", with: " ")) button: a line name (GPIO17) or CHIP:OFFSET (gpiochip0:17). Empty: no such button.",
                          apply: { c, v throws(ConfigValueError) in c.buttons[a].line = v.isEmpty ? nil : try LineRef(parsing: v) },
                          render: { $0.buttons[a].line?.description ?? "" }),
                ConfigKey("\(n).bias", section: "buttons", default: d.bias.rawValue,
                          doc: "Internal resistor of that line: pull-up (button to ground, active low), pull-down (button to 3.3 V, active high) or disabled (external resistor).",
                          apply: { c, v throws(ConfigValueError) in
                              c.buttons[a].bias = LineBias(rawValue: try ConfigValue.choice(v, LineBias.allCases.map(\.rawValue)))!
                          }, render: { $0.buttons[a].bias.rawValue }),
                ConfigKey("\(n).active", section: "buttons", default: "auto",
                          doc: "Level that means pressed: low, high, or auto (high with pull-down, low otherwise).",
                          apply: { c, v throws(ConfigValueError) in
                              switch try ConfigValue.choice(v, ["auto", "low", "high"]) {
                              case "low": c.buttons[a].activeLowSetting = true
                              case "high": c.buttons[a].activeLowSetting = false
                              default: c.buttons[a].activeLowSetting = nil
                              }
                          }, render: { c in c.buttons[a].activeLowSetting.map { $0 ? "low" : "high" } ?? "auto" }),
                ConfigKey("\(n).debounce_ms", section: "buttons", default: String(d.debounceMs),
                          doc: "A level must stay this long (ms) before it counts; contact bounce is shorter.",
                          apply: { c, v throws(ConfigValueError) in c.buttons[a].debounceMs = try ConfigValue.int(v, 1...500) },
                          render: { String($0.buttons[a].debounceMs) }),
                ConfigKey("\(n).hold_ms", section: "buttons", default: String(d.holdMs),
                          doc: "Held this long (ms) counts as a hold (volume starts repeating, replay steps back through history).",
                          apply: { c, v throws(ConfigValueError) in c.buttons[a].holdMs = try ConfigValue.int(v, 200...10_000) },
                          render: { String($0.buttons[a].holdMs) }),
            ]
        }
        keys += [
            ConfigKey("button.repeat_ms", section: "buttons", default: "250",
                      doc: "While a volume button is held, one more step every this many ms.",
                      apply: { c, v throws(ConfigValueError) in c.buttons.repeatMs = try ConfigValue.int(v, 50...2000) },
                      render: { String($0.buttons.repeatMs) }),
            ConfigKey("volume.steps", section: "volume and mute", default: "10",
                      doc: "Volume levels above the quietest (0 is quietest but audible, this number is full volume).",
                      apply: { c, v throws(ConfigValueError) in c.buttons.volumeSteps = try ConfigValue.int(v, 1...50) },
                      render: { String($0.buttons.volumeSteps) }),
            ConfigKey("volume.default", section: "volume and mute", default: "7",
                      doc: "Volume level on first start (afterwards the last level is kept in state.path).",
                      apply: { c, v throws(ConfigValueError) in c.buttons.volumeDefault = try ConfigValue.int(v, 0...50) },
                      render: { String($0.buttons.volumeDefault) }),
            ConfigKey("volume.min_db", section: "volume and mute", default: "-30",
                      doc: "Loudness of level 0 in dB below full; the levels between are evenly spaced in dB.",
                      apply: { c, v throws(ConfigValueError) in c.buttons.volumeMinDb = try ConfigValue.number(v, -60 ... -3) },
                      render: { ConfigValue.fmt($0.buttons.volumeMinDb) }),
            ConfigKey("volume.alert_floor", section: "volume and mute", default: "4",
                      doc: "Volume level orders are spoken at while muted (with mute.alerts = floor).",
                      apply: { c, v throws(ConfigValueError) in c.buttons.alertFloor = try ConfigValue.int(v, 0...50) },
                      render: { String($0.buttons.alertFloor) }),
            ConfigKey("mute.alerts", section: "volume and mute", default: "floor",
                      doc: "Orders while muted: floor (spoken at volume.alert_floor) or queue (held, spoken when mute ends).",
                      apply: { c, v throws(ConfigValueError) in
                          c.buttons.muteAlerts = MuteAlertPolicy(rawValue: try ConfigValue.choice(v, MuteAlertPolicy.allCases.map(\.rawValue)))!
                      }, render: { $0.buttons.muteAlerts.rawValue }),
            ConfigKey("mute.max_minutes", section: "volume and mute", default: "30",
                      doc: "Mute ends by itself after this many minutes, and the box says so.",
                      apply: { c, v throws(ConfigValueError) in c.buttons.muteMaxMinutes = try ConfigValue.number(v, 1...1440) },
                      render: { ConfigValue.fmt($0.buttons.muteMaxMinutes) }),
            ConfigKey("state.path", section: "volume and mute", default: "/var/lib/crier/state",
                      doc: "File keeping volume and mute across power loss (written atomically; a damaged file is replaced by defaults).",
                      apply: { c, v throws(ConfigValueError) in
                          let v = try ConfigValue.nonEmpty(v, what: "an absolute path")
                          guard v.hasPrefix("/") else { throw ConfigValueError("expected an absolute path, got \(ConfigValue.shown(v))") }
                          c.buttons.statePath = v
                      }, render: { $0.buttons.statePath }),
        ]
        return keys
    }()
}
