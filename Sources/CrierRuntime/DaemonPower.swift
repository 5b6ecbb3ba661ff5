import CrierCore
import CrierLink

/// Power and heat in the daemon (issue 35 item 2): the health the link tells the server and
/// the run record's hook. The readings come from `PowerMonitor` (CrierSystem), wired in
/// RunCommand; when the under-voltage prompt is said is the speaker policy's rule
/// (`UnderVoltagePrompt` in SpeakerPolicy+Setup.swift).
struct DaemonPower {
    /// Called when the prompt is queued (RunCommand records it for this boot).
    var onPromptSaid: (@Sendable () -> Void)?
    /// What the link tells the server (hello, MQTT status).
    var health = DeviceHealth()
}

extension Daemon {
    /// Before `start`: whether the prompt is on, whether this boot has said it already, and
    /// what to do when it is said.
    public func preparePowerPrompt(enabled: Bool, saidThisBoot: Bool, onSaid: @escaping @Sendable () -> Void) {
        policy.preparePowerPrompt(enabled: enabled, saidThisBoot: saidThisBoot)
        power.onPromptSaid = onSaid
    }

    /// A reading from the power monitor; `health` when what the server sees changed.
    public func powerReading(_ r: PowerReading, health: DeviceHealth?) {
        if let h = health, h != power.health {
            power.health = h
            link?.healthChanged(h)
        }
        feed(.powerReading(r))
    }
}
