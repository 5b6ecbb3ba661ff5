/// Buttons (`ControlEffect`s from `Controls`) and what they change for the speaker.
extension SpeakerPolicy {
    mutating func control(_ effect: ControlEffect, now: Double) {
        switch effect {
        case .click:
            if promptGain > 0 { out.append(.click(gain: promptGain)) }
        case .say(let name):
            buttonPrompts.append(name)
        case .setGain(let g):
            let wasHeld = gains.holdAlerts
            gains = g
            buttonsSetGain = true
            out += [.setVolume(g.alerts), .setMusicLevel(musicLevel), .volumeChanged]
            if wasHeld && !g.holdAlerts { log(.info, "runtime", "mute ended; saying held alerts", [("waiting", "\(queue.waitingCount)")]) }
        case .replay(let back):
            if queue.replay(stepsBack: back) == nil { buttonPrompts.append(.noOrders) }
        case .acknowledge:
            let ids = queue.acknowledge(now: now)
            log(.info, "runtime", "acknowledged", [("ids", ids.isEmpty ? "none" : ids.joined(separator: ","))])
            if let a = currentAlert, case .repetition = a.alert.occasion { out.append(.stopClip(a.clip)) }
        case .persist:
            break  // the button service writes its own state file
        case .setMusic(let on):
            musicSwitchedOn = on
            out.append(.setMusicLevel(musicLevel))
            log(.info, "runtime", on ? "music on (button)" : "music off (button)")
        case .openSetup:
            setupInput(.open(.gesture), now: now)
        }
    }

    /// `crier say` through the running daemon: the reply, and the text to queue (nil: refused).
    public static func request(_ u: Utterance) -> (reply: String, queued: Utterance?) {
        guard TextSanitizer.isSpeakable(u.text) else { return ("rejected: nothing to say", nil) }
        return ("queued: \(u.text)", u)
    }
}
