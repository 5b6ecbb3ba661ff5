/// Gains the audio engine applies, as linear factors (1 = full scale after headroom).
public struct OutputGain: Sendable, Equatable, CustomStringConvertible {
    /// Everything that is not an order: key clicks, status prompts, "音量最大". 0 while muted.
    public var prompts: Double
    /// Orders (alerts). While muted: the alert floor's gain (`mute.alerts = floor`).
    public var alerts: Double
    /// `mute.alerts = queue` while muted: hold orders, speak them when this turns false.
    public var holdAlerts: Bool

    public init(prompts: Double, alerts: Double, holdAlerts: Bool) {
        self.prompts = prompts
        self.alerts = alerts
        self.holdAlerts = holdAlerts
    }

    public var description: String {
        "prompts=\(VolumeCurve.format(prompts)) alerts=\(VolumeCurve.format(alerts))\(holdAlerts ? " hold" : "")"
    }
}

/// Something the runtime must do because of a button or a timer. Controls decides, the
/// runtime performs; effects come in the order they should be performed.
public enum ControlEffect: Sendable, Equatable {
    /// Play the short key-click tone (after any `setGain` before it in the same list).
    case click
    /// Speak a prompt (`volumeMax`, `volumeMin`, `muteEnded`, `noOrders`) in the box's language.
    case say(Templates.Name)
    /// Apply these gains from the next audio period on.
    case setGain(OutputGain)
    /// Speak an alert from history again: 0 = the latest, 1 = the one before, ... (< 10).
    case replay(Int)
    /// Stop the current alert's repetition (the alert queue's acknowledge).
    case acknowledge
    /// Write this state to `state.path`.
    case persist(ControlState)
    /// Background music on (true) or off; the level is `music.level_db` either way.
    case setMusic(Bool)
    /// Both volume keys held together: open the setup hotspot (docs/setup-hotspot.md).
    case openSetup
}

/// Volume level to gain. Level 0 is `minDb` (quiet, never silent: only mute silences),
/// `steps` is 0 dB, and the levels between are evenly spaced in dB, so each step changes the
/// loudness by the same amount: `-minDb / steps` dB (3 dB with the defaults, -30 dB and 10
/// steps), which is what the ear hears as equal steps.
public enum VolumeCurve {
    public static func decibels(level: Int, steps: Int, minDb: Double) -> Double {
        let l = max(0, min(level, steps))
        return minDb * Double(steps - l) / Double(max(steps, 1))
    }

    public static func gain(level: Int, steps: Int, minDb: Double) -> Double {
        linear(decibels: decibels(level: level, steps: steps, minDb: minDb))
    }

    /// 10^(dB/20), without Foundation (the mixer's own conversion).
    public static func linear(decibels db: Double) -> Double { Decibel.gain(db) }

    static func format(_ g: Double) -> String {
        let milli = Int((g * 1000).rounded())
        let frac = String(milli % 1000)
        return "\(milli / 1000)." + String(repeating: "0", count: 3 - frac.count) + frac
    }
}

/// Volume, mute, replay and acknowledge: a pure state machine fed gestures and clock ticks,
/// returning effects. `now` is monotonic seconds (timers); `wall` is only stored in the
/// state file, so a wall clock that jumps (a Pi has no RTC) cannot stretch or cut a mute
/// while the box runs.
public struct Controls: Sendable {
    public let config: ButtonsConfig
    public private(set) var volume: Int
    public private(set) var muted: Bool
    public private(set) var mutedSince: WallTime?
    /// Monotonic time mute ends by itself.
    public private(set) var muteEndsAt: Double?
    var replayCursor: Int?
    var lastReplayAt = -Double.infinity
    var startEffects: [ControlEffect] = []

    /// How long a replay position is remembered: a hold within this after a replay steps
    /// further back, later it starts again from the one before the latest.
    public static let replayMemory = 30.0
    /// How many alerts back replay goes.
    public static let historyDepth = 10

    /// Starts from the saved state (or the defaults when there is none). A saved mute resumes
    /// with what is left of `mute.max_minutes`; if that has passed, mute ends now.
    public init(config: ButtonsConfig, restored: ControlState?, now: Double, wall: WallTime) {
        self.config = config
        let steps = config.volumeSteps
        volume = max(0, min(restored?.volume ?? config.volumeDefault, steps))
        muted = false
        if let r = restored, r.muted {
            let maxMs = Int64(config.muteMaxMinutes * 60_000)
            let since = r.mutedSince ?? wall
            let elapsed = wall.unixMillis - since.unixMillis
            // A clock that went backwards (no RTC, no NTP yet) counts as "just muted": the
            // mute is still bounded by max_minutes from now.
            let left = elapsed < 0 ? maxMs : maxMs - elapsed
            if left > 0 {
                muted = true
                mutedSince = elapsed < 0 ? wall : since
                muteEndsAt = now + Double(left) / 1000
            } else {
                startEffects = [.say(.muteEnded)]
            }
        }
        let persistNeeded = restored.map { $0 != state } ?? false
        startEffects = [.setGain(gain)] + startEffects + (persistNeeded ? [.persist(state)] : [])
    }

    /// Effects to perform once at start: the gains, and "mute ended" if it ran out while off.
    public mutating func start() -> [ControlEffect] {
        defer { startEffects = [] }
        return startEffects
    }

    /// The music button's toggle (not persisted: music is on again after a restart).
    public private(set) var musicOn = true

    public var state: ControlState { ControlState(volume: volume, muted: muted, mutedSince: mutedSince) }

    public var gain: OutputGain {
        let level = VolumeCurve.gain(level: volume, steps: config.volumeSteps, minDb: config.volumeMinDb)
        guard muted else { return OutputGain(prompts: level, alerts: level, holdAlerts: false) }
        switch config.muteAlerts {
        case .floor:
            return OutputGain(prompts: 0, alerts: VolumeCurve.gain(level: config.alertFloor, steps: config.volumeSteps,
                                                                    minDb: config.volumeMinDb), holdAlerts: false)
        case .queue:
            return OutputGain(prompts: 0, alerts: level, holdAlerts: true)
        }
    }

    /// When `tick` must next be called (mute's end); nil when nothing is pending.
    public var nextDeadline: Double? { muteEndsAt }

    /// A gesture from the recognizer. `historyCount` is how many alerts the alert queue can
    /// replay right now.
    public mutating func handle(_ g: Gesture, now: Double, wall: WallTime, historyCount: Int) -> [ControlEffect] {
        switch (g.action, g.kind) {
        case (.volumeUp, .press), (.volumeUp, .repeat):
            return step(+1, repeated: g.kind != .press)
        case (.volumeDown, .press), (.volumeDown, .repeat):
            return step(-1, repeated: g.kind != .press)
        case (.mute, .press):
            if muted { return unmute(say: nil) }
            muted = true
            mutedSince = wall
            muteEndsAt = now + config.muteMaxMinutes * 60
            return [.setGain(gain), .persist(state)]
        case (.replay, .press):
            return replay(index: 0, now: now, historyCount: historyCount)
        case (.replay, .hold):
            let recent = now - lastReplayAt < Self.replayMemory
            let next = recent ? (replayCursor ?? 0) + 1 : 1
            return replay(index: next, now: now, historyCount: historyCount)
        case (.acknowledge, .press):
            return [.acknowledge]
        case (.music, .press):
            musicOn.toggle()
            return [.setMusic(musicOn), .click]
        case (_, .setupHold):
            return [.openSetup]
        default:
            return []  // holds without a meaning, stuck/unstuck (the reader logs those)
        }
    }

    /// Timers: mute ends after `mute.max_minutes`.
    public mutating func tick(now: Double, wall: WallTime) -> [ControlEffect] {
        guard muted, let end = muteEndsAt, now >= end else { return [] }
        return unmute(say: .muteEnded)
    }

    mutating func unmute(say: Templates.Name?) -> [ControlEffect] {
        muted = false
        mutedSince = nil
        muteEndsAt = nil
        return [.setGain(gain), say.map { .say($0) } ?? .click, .persist(state)]
    }

    mutating func step(_ delta: Int, repeated: Bool) -> [ControlEffect] {
        // A volume key while muted ends the mute first: someone wants to hear the box.
        let wasMuted = muted
        if muted {
            muted = false
            mutedSince = nil
            muteEndsAt = nil
        }
        let target = max(0, min(volume + delta, config.volumeSteps))
        let endLevel = delta > 0 ? config.volumeSteps : 0
        let end: Templates.Name = delta > 0 ? .volumeMax : .volumeMin
        if target == volume {
            // Already at the end: say so on a press; repeats of a held key stay quiet (the
            // step that reached the end said it).
            var out: [ControlEffect] = wasMuted ? [.setGain(gain)] : []
            if !repeated || wasMuted { out.append(.say(end)) }
            if wasMuted { out.append(.persist(state)) }
            return out
        }
        volume = target
        return [.setGain(gain), target == endLevel ? .say(end) : .click, .persist(state)]
    }

    mutating func replay(index: Int, now: Double, historyCount: Int) -> [ControlEffect] {
        let available = min(historyCount, Self.historyDepth)
        guard available > 0 else {
            replayCursor = nil
            return [.say(.noOrders)]
        }
        let i = index < available ? index : 0  // past the oldest: back to the latest
        replayCursor = i
        lastReplayAt = now
        return [.replay(i)]
    }
}
