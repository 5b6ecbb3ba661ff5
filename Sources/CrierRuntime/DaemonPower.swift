import CrierCore
import CrierLink

/// Power and heat in the daemon (issue 35 item 2): the under-voltage prompt and the health the
/// link tells the server. The readings come from `PowerMonitor` (CrierSystem), wired in
/// RunCommand; the prompt's rule is `UnderVoltagePrompt` (CrierCore).
struct DaemonPower {
    var prompt = UnderVoltagePrompt()
    /// Called when the prompt is queued (RunCommand records it for this boot).
    var onPromptSaid: (@Sendable () -> Void)?
    /// What the link tells the server (hello, MQTT status).
    var health = DeviceHealth()
}

extension Daemon {
    /// Before `start`: whether the prompt is on, whether this boot has said it already, and
    /// what to do when it is said.
    public func preparePowerPrompt(enabled: Bool, saidThisBoot: Bool, onSaid: @escaping @Sendable () -> Void) {
        power.prompt = UnderVoltagePrompt(enabled: enabled, saidThisBoot: saidThisBoot)
        power.onPromptSaid = onSaid
    }

    /// A reading from the power monitor; `health` when what the server sees changed.
    public func powerReading(_ r: PowerReading, health: DeviceHealth?) {
        if let h = health, h != power.health {
            power.health = h
            link?.healthChanged(h)
        }
        if power.prompt.observe(r) { poke() }
    }

    /// The speaker loop asks at every turn: the prompt once per boot, when nothing is waiting
    /// or being said and nothing was said for `UnderVoltagePrompt.quietSeconds`.
    func powerPromptDue(now: Double) -> Templates.Name? {
        let busy = queue.waitingCount > 0 || current != nil || !buttonPrompts.isEmpty || !requests.isEmpty
            || !statusPrompts.isEmpty || alertsHeld || promptGain == 0 || stopping
        guard let p = power.prompt.due(now: now, lastSaid: lastSaid, busy: busy) else { return nil }
        log.notice("saying once for this boot that the power supply is too weak (the firmware reported under-voltage)",
                   ["prompt": p.rawValue])
        power.onPromptSaid?()
        return p
    }
}
