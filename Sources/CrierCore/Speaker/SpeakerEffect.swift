/// A log line the policy wants written, field for field as the runtime writes it.
public struct SpeakerRecord: Sendable, Equatable, CustomStringConvertible {
    public var level: LogLevel
    public var component: String
    public var message: String
    public var fields: [(String, String)]

    public init(_ level: LogLevel, _ component: String, _ message: String, _ fields: [(String, String)] = []) {
        self.level = level
        self.component = component
        self.message = message
        self.fields = fields
    }

    public static func == (a: SpeakerRecord, b: SpeakerRecord) -> Bool {
        a.level == b.level && a.component == b.component && a.message == b.message
            && a.fields.map(\.0) == b.fields.map(\.0) && a.fields.map(\.1) == b.fields.map(\.1)
    }

    public func field(_ key: String) -> String? { fields.first { $0.0 == key }?.1 }

    public var description: String {
        "\(component): \(message)" + fields.map { " \($0.0)=\($0.1)" }.joined()
    }

    /// The log line of an order's outcome, written from the ack itself so the log and the
    /// server never tell different stories (issue 13, item 16). `again`: a repeated ack (a
    /// redelivery, or a cancel of an order already final); `sent`: what the link did with it.
    public static func ack(_ ack: Ack, again: Bool, extra: [(String, String)], sent: AckOutbox.Outcome?) -> SpeakerRecord {
        var fields: [(String, String)] = [("id", ack.id)]
        if ack.status != .spoken || again { fields.append(("status", ack.status.rawValue)) }
        if let r = ack.reason { fields.append(("reason", r)) }
        if let m = ack.message { fields.append(("why", m)) }
        fields += extra
        // v1: a redelivery that crossed its ack on one connection is not answered twice
        // (protocol §6a); the log says so instead of "acked again" (issue 31).
        let swallowed = again && sent == .confirmedHere
        if swallowed { fields.append(("sent", "no: the server confirmed this ack on this connection")) }
        let message = (swallowed ? "not acked again: " : again ? "acked again: " : "") + ack.status.rawValue
        return SpeakerRecord(ack.status == .rejected && !again ? .warning : .info, "alert", message, fields)
    }
}

/// What the runtime must do because of an event, in the order given.
public enum SpeakerEffect: Sendable {
    /// Synthesize the alert (one part per order) into a streamed clip and play it at gain 1
    /// (the master gain carries the alert volume); answer with `clipStarted`.
    case startAlert(SpeakerClip, Alert)
    /// Say a status or button prompt at `gain` (relative to the master gain).
    case startPrompt(SpeakerClip, Templates.Name, gain: Double)
    /// Say `crier say` text.
    case startRequest(SpeakerClip, Utterance)
    /// Fade the clip out now (its end comes back as `clipEnded`).
    case stopClip(SpeakerClip)
    /// The policy is done with this clip: stop its synthesis, forget it.
    case release(SpeakerClip)
    /// The key-click tone at `gain`; it does not duck the music.
    case click(gain: Double)
    /// Music down (true) for as long as anything is to be said, or back up.
    case duck(Bool)
    /// The master (alert) gain: on the mixer element, or the engine's software gain.
    case setVolume(Double)
    case setMusicLevel(Double)
    /// The volume changed: tell the server (presence / status).
    case volumeChanged
    /// Send this ack (`reply`: the answer to the server's cancel) and log it with
    /// `SpeakerRecord.ack` and these fields.
    case ack(Ack, again: Bool, reply: Bool, fields: [(String, String)])
    case log(SpeakerRecord)
    /// Orders heard in full for the first time, for `crier status`'s last alerts.
    case spoken(ids: [String], lang: Lang, text: String)
    /// An update's outcome was heard in full: write `announced=1`.
    case updateAnnounced(Templates.Name)
    /// The speaker is idle with nothing waiting: an offered update may install or reboot
    /// (quiet since `quietSince`).
    case updateTurn(quietSince: Double)
    /// The under-voltage prompt was queued: record that this boot said it.
    case powerPromptQueued
    /// The setup hotspot's radio, a scan, a try, saving a network (never `.say`: the policy
    /// queues its prompts itself).
    case setup(SetupEffect)
    /// Send `abandon` after this many seconds (the shutdown grace).
    case armGrace(Double)
    /// Stopping, and nothing plays any more: the speaker is done.
    case finished
    /// Send `tick` at this time (nil: only events). Always the last effect of a step.
    case wake(at: Double?)
}
