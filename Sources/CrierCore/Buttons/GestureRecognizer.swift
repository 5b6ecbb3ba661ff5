/// How a button's presses and holds are told apart (docs/buttons.md, "Gestures").
public enum GestureMode: Sendable, Equatable {
    /// One meaning: `press` fires as soon as the debounced press is seen. Holding does nothing.
    case immediate
    /// `press` at once, then after `hold_ms` a `repeat` every `repeat_ms` while held
    /// (volume: the first step is heard at once, holding keeps stepping).
    case repeating
    /// Two meanings: `press` fires on release if the button was not held that long, `hold`
    /// fires after `hold_ms`; never both for one press.
    case pressOrHold
}

/// What a button did.
public struct Gesture: Sendable, Equatable, CustomStringConvertible {
    public enum Kind: Sendable, Equatable {
        case press
        case hold
        /// The n-th extra step of a held `.repeating` button (1, 2, ...).
        case `repeat`(Int)
        /// Down longer than the stuck limit: reported once, ignored until released.
        case stuck
        /// A stuck (or down-at-start) button was released and works again.
        case unstuck
        /// Both volume keys held down together for the setup hold (`setup.hold_seconds`):
        /// open the setup hotspot. Reported on `volume_up`, once per hold.
        case setupHold
    }

    public var action: ButtonAction
    public var kind: Kind
    /// When it happened, in the recognizer's monotonic seconds.
    public var at: Double

    public init(_ action: ButtonAction, _ kind: Kind, at: Double) {
        self.action = action
        self.kind = kind
        self.at = at
    }

    public var description: String { "\(action.rawValue) \(kind) at \(at)" }
}

/// Turns electrical levels into gestures. Pure: it is fed levels with their times and
/// `tick(now:)`, and never reads a clock; `nextDeadline` says when a tick is due.
///
/// Debounce is by stability: a new level counts once it has lasted `debounce` without another
/// edge; it then counts from the moment it began (so debounce adds latency, not error to hold
/// timing). A glitch shorter than `debounce` is ignored entirely.
public struct GestureRecognizer: Sendable {
    public struct LineConfig: Sendable, Equatable {
        public var mode: GestureMode
        /// Electrical level of a pressed button.
        public var pressedLevel: Bool
        public var debounce: Double
        public var hold: Double
        public var repeatEvery: Double
        public var stuckAfter: Double

        public init(mode: GestureMode, pressedLevel: Bool = false, debounce: Double = 0.020,
                    hold: Double = 1.0, repeatEvery: Double = 0.25, stuckAfter: Double = 30) {
            self.mode = mode
            self.pressedLevel = pressedLevel
            self.debounce = debounce
            self.hold = hold
            self.repeatEvery = repeatEvery
            self.stuckAfter = stuckAfter
        }
    }

    struct Line: Sendable {
        var config: LineConfig
        /// Last raw (undebounced) state, pressed or not, and since when.
        var raw = false
        var rawSince = 0.0
        /// Debounced state.
        var down = false
        var downSince = 0.0
        var holdFired = false
        var repeats = 0
        /// Ignored until released: stuck, or already down when first seen.
        var ignored = false
        var known = false
        /// Down together with the other volume key: it does not repeat until released.
        var chorded = false
    }

    var lines: [ButtonAction: Line] = [:]
    /// Seconds both volume keys must be down together for `.setupHold` (0: never).
    let setupHold: Double
    var chordFired = false

    public init(_ configs: [ButtonAction: LineConfig], setupHold: Double = 0) {
        for (a, c) in configs { lines[a] = Line(config: c) }
        self.setupHold = setupHold
    }

    /// Recognizer for the fitted buttons of a config.
    public init(config: ButtonsConfig) {
        var m: [ButtonAction: LineConfig] = [:]
        for (a, spec) in config.fitted {
            m[a] = LineConfig(mode: a.gestureMode, pressedLevel: spec.pressedLevel,
                              debounce: Double(spec.debounceMs) / 1000, hold: Double(spec.holdMs) / 1000,
                              repeatEvery: Double(config.repeatMs) / 1000, stuckAfter: config.stuckSeconds)
        }
        self.init(m, setupHold: config.setupHoldSeconds)
    }

    public var actions: [ButtonAction] { lines.keys.sorted() }

    /// The first level read when a line is opened. A button already pressed at that moment
    /// (held, stuck, or wired with the wrong bias) is ignored until it is released, so a fault
    /// can never mute the box at every start. Returns `.stuck` for such a line.
    public mutating func start(_ action: ButtonAction, level: Bool, at t: Double) -> [Gesture] {
        guard var l = lines[action] else { return [] }
        let pressed = level == l.config.pressedLevel
        l = Line(config: l.config)
        l.known = true
        l.raw = pressed; l.rawSince = t
        l.down = pressed; l.downSince = t
        l.ignored = pressed
        lines[action] = l
        return pressed ? [Gesture(action, .stuck, at: t)] : []
    }

    /// An electrical level seen at time `t` (an edge, or a repeated reading).
    public mutating func feed(_ action: ButtonAction, level: Bool, at t: Double) -> [Gesture] {
        guard var l = lines[action] else { return [] }
        if !l.known {  // no start(): assume it was released until now
            l.known = true
            l.rawSince = t; l.downSince = t
        }
        var out: [Gesture] = []
        Self.advance(action, &l, to: t, &out)
        let pressed = level == l.config.pressedLevel
        if pressed != l.raw {
            l.raw = pressed
            l.rawSince = t
        }
        Self.advance(action, &l, to: t, &out)
        lines[action] = l
        chord(upTo: t, &out)
        return out
    }

    /// Everything due by `now`, in time order.
    public mutating func tick(now: Double) -> [Gesture] {
        var out: [Gesture] = []
        for a in actions {
            guard var l = lines[a], l.known else { continue }
            Self.advance(a, &l, to: now, &out)
            lines[a] = l
        }
        chord(upTo: now, &out)
        return out.sorted { $0.at < $1.at }
    }

    /// Both volume keys down (debounced, neither stuck): since when; nil otherwise.
    var chordSince: Double? {
        guard setupHold > 0, let u = lines[.volumeUp], let d = lines[.volumeDown],
              u.down, d.down, !u.ignored, !d.ignored else { return nil }
        return max(u.downSince, d.downSince)
    }

    /// The two volume keys held together: neither repeats from then on (until released), and
    /// after `setupHold` one `.setupHold`. Released: armed again.
    mutating func chord(upTo t: Double, _ out: inout [Gesture]) {
        guard setupHold > 0 else { return }
        guard let since = chordSince else {
            if lines[.volumeUp]?.down != true || lines[.volumeDown]?.down != true { chordFired = false }
            for a in [ButtonAction.volumeUp, .volumeDown] where lines[a]?.down == false { lines[a]?.chorded = false }
            return
        }
        lines[.volumeUp]?.chorded = true
        lines[.volumeDown]?.chorded = true
        let at = since + setupHold
        if !chordFired, at <= t {
            chordFired = true
            out.append(Gesture(.volumeUp, .setupHold, at: at))
        }
    }

    /// The earliest time a `tick` could produce something; nil while every button rests.
    public var nextDeadline: Double? {
        var best: Double?
        for (_, l) in lines where l.known {
            var d: Double?
            if l.raw != l.down {
                d = l.rawSince + l.config.debounce
            } else if l.down && !l.ignored {
                d = l.downSince + l.config.stuckAfter
                switch l.config.mode {
                case .immediate: break
                case .pressOrHold: if !l.holdFired { d = l.downSince + l.config.hold }
                case .repeating: if !l.chorded { d = min(d!, Self.repeatTime(l, l.repeats + 1)) }
                }
            }
            if let d, best == nil || d < best! { best = d }
        }
        if let since = chordSince, !chordFired, best == nil || since + setupHold < best! { best = since + setupHold }
        return best
    }

    /// Whether the button currently counts as pressed (debounced).
    public func isDown(_ action: ButtonAction) -> Bool { lines[action]?.down ?? false }

    static func repeatTime(_ l: Line, _ n: Int) -> Double {
        l.downSince + l.config.hold + Double(n - 1) * l.config.repeatEvery
    }

    static func advance(_ a: ButtonAction, _ l: inout Line, to t: Double, _ out: inout [Gesture]) {
        // While a change is pending, what happens after it began is unknown until it is
        // confirmed (it commits) or turns out to be a glitch (the timed events then catch up
        // with their own times): run the current state's timed events only up to its start.
        let pendingAt: Double? = l.raw != l.down ? l.rawSince + l.config.debounce : nil
        timed(a, &l, upTo: pendingAt == nil ? t : min(l.rawSince, t), &out)
        guard let at = pendingAt, at <= t else { return }
        // Commit: the new level began at rawSince.
        let began = l.rawSince
        if l.raw {
            l.down = true
            l.downSince = began
            l.holdFired = false
            l.repeats = 0
            if l.config.mode != .pressOrHold { out.append(Gesture(a, .press, at: at)) }
        } else {
            l.down = false
            if l.ignored {
                l.ignored = false
                out.append(Gesture(a, .unstuck, at: at))
            } else if l.config.mode == .pressOrHold && !l.holdFired {
                out.append(Gesture(a, .press, at: at))
            }
            l.holdFired = false
            l.repeats = 0
        }
        timed(a, &l, upTo: t, &out)
    }

    /// Hold, repeats and stuck of a button that is down, up to time `t` inclusive.
    static func timed(_ a: ButtonAction, _ l: inout Line, upTo t: Double, _ out: inout [Gesture]) {
        guard l.down, !l.ignored else { return }
        let stuckAt = l.downSince + l.config.stuckAfter
        switch l.config.mode {
        case .immediate: break
        case .pressOrHold:
            let holdAt = l.downSince + l.config.hold
            if !l.holdFired, holdAt <= t, holdAt < stuckAt {
                l.holdFired = true
                out.append(Gesture(a, .hold, at: holdAt))
            }
        case .repeating:
            while !l.chorded {
                let next = repeatTime(l, l.repeats + 1)
                guard next <= t, next < stuckAt else { break }
                l.repeats += 1
                l.holdFired = true
                out.append(Gesture(a, .repeat(l.repeats), at: next))
            }
        }
        if stuckAt <= t {
            l.ignored = true
            out.append(Gesture(a, .stuck, at: stuckAt))
        }
    }
}
