/// What the setup hotspot is told (`SpeakerEvent.setup`): the page, the control socket, the
/// setup supplicant's scans and tries. The gesture comes as `ControlEffect.openSetup`.
public enum SetupInput: Sendable, Equatable {
    case open(SetupReason)
    case close(SetupReason)
    /// The page was used (any request): its idle timer starts again.
    case used
    case rescan
    /// A network the page submitted, validated (`SetupNetwork.validate`).
    case submit(SetupNetwork)
    /// The scan's result (empty when it failed).
    case scanned([ScannedNetwork])
    case tried(SetupTryOutcome)
}

/// The setup hotspot and the under-voltage prompt: the speaking side of each (when their
/// prompts are said, what they silence) lives here beside the other prompts; the radio, the
/// scans, the tries and saving a network are `SpeakerEffect.setup` for the runtime.
extension SpeakerPolicy {
    /// Before `start`: the under-voltage prompt's switch and whether this boot said it already
    /// (the run record: once per boot, whatever restarts crier).
    public mutating func preparePowerPrompt(enabled: Bool, saidThisBoot: Bool) {
        power = UnderVoltagePrompt(enabled: enabled, saidThisBoot: saidThisBoot)
    }

    mutating func setupInput(_ input: SetupInput, now: Double) {
        guard var s = setup else {
            if case .open(let why) = input {
                log(.notice, "setup", "setup hotspot requested but setup.hotspot = off in crier.conf", [("by", why.rawValue)])
            }
            return
        }
        let effects: [SetupEffect]
        switch input {
        case .open(let why): effects = s.open(why, now: now)
        case .close(let why): effects = s.close(why)
        case .used:
            s.used(now: now)
            effects = []
        case .rescan: effects = s.rescan(now: now)
        case .submit(let n): effects = s.submit(n, now: now)
        case .scanned(let list): effects = s.scanned(list, now: now)
        case .tried(let o): effects = s.tried(o, now: now)
        }
        setup = s
        setupEffects(effects, now: now)
    }

    /// The network's state (Wi-Fi online or the order link up) and the hotspot's timers:
    /// opening after setup.after_minutes, closing when unused, the repeated prompt.
    mutating func setupTick(now: Double) {
        guard var s = setup, running else { return }
        var effects = s.network(working: wifi?.state == .online || linkUp, now: now)
        effects += s.tick(now: now)
        setup = s
        setupEffects(effects, now: now)
    }

    /// A setup prompt (its own, or a try's outcome) joins the status prompts, one of each
    /// waiting; the rest is the runtime's.
    mutating func setupEffects(_ effects: [SetupEffect], now: Double) {
        for e in effects {
            switch e {
            case .say(let name):
                if !statusPrompts.contains(name) { statusPrompts.append(name) }
            case .save(let n):
                // The joined network is the Wi-Fi monitor's from now on (and crier.conf's: the
                // runtime saves it).
                var w = wifi?.config ?? config.wifi
                w.ssid = n.ssid
                w.psk = n.psk
                w.hidden = n.hidden
                if let c = n.country { w.country = c }
                wifi = WifiMonitor(config: w, repeatEvery: config.status.linkDownRepeat, now: now)
                out.append(.setup(e))
            default:
                out.append(.setup(e))
            }
        }
    }

    /// The under-voltage prompt, once per boot: only when nothing else is waiting or being
    /// said, nothing was said for `UnderVoltagePrompt.quietSeconds`, and prompts are heard
    /// (not muted, no alerts held, not stopping). Called when the speaker is idle.
    mutating func powerPromptDue(now: Double) {
        let busy = queue.waitingCount > 0 || !isIdle || !buttonPrompts.isEmpty || !requests.isEmpty
            || !statusPrompts.isEmpty || alertsHeld || promptGain == 0 || stopping
        guard let p = power.due(now: now, lastSaid: lastSaid, busy: busy) else { return }
        log(.notice, "runtime", "saying once for this boot that the power supply is too weak (the firmware reported under-voltage)",
            [("prompt", p.rawValue)])
        out.append(.powerPromptQueued)
        statusPrompts.append(p)
    }
}
