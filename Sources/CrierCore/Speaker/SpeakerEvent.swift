/// One clip the speaker policy started (an alert, a prompt or `crier say` text). The token is
/// the policy's own: the runtime maps it to the audio engine's clip id and its speech stream,
/// so a late end of an old clip can never be taken for the end of the current one.
public struct SpeakerClip: Hashable, Sendable, CustomStringConvertible {
    public let token: UInt64
    public init(token: UInt64) { self.token = token }
    public var description: String { "clip \(token)" }
}

/// How a clip ended, as the audio engine reports it (`ClipEnd` in CrierAudio).
public struct SpeakerClipEnd: Sendable, Equatable {
    public enum Outcome: Sendable, Equatable {
        /// Its last sample left the device.
        case played
        /// Stopped (faded out) early.
        case stopped
        /// The engine shut down or was replaced first (nothing known to be heard).
        case shutdown
    }

    public var outcome: Outcome
    /// Frames heard at full level: all when played, up to the fade when stopped, 0 at shutdown.
    public var heardFrames: Int

    public init(_ outcome: Outcome, heardFrames: Int) {
        self.outcome = outcome
        self.heardFrames = heardFrames
    }
}

/// How the streamed synthesis of a clip ended (`SpeechPipeline.StreamReport` / `SpeechError`).
public struct SynthesisEnd: Sendable, Equatable {
    public enum Outcome: Sendable, Equatable {
        /// Every part synthesized: `synthSeconds` from the start to the end, `firstSamples`
        /// seconds to the first samples (nil: not measured).
        case done(synthSeconds: Double, firstSamples: Double?)
        /// Stopped early: the clip was cut, or it reached `speech.max_seconds` (`full`).
        case cancelled
        /// Synthesis failed; the description says why.
        case failed(String)
    }

    public var outcome: Outcome
    /// The frame just past each part synthesized in full (`ClipStream.partEnds`).
    public var partEnds: [Int]
    /// The clip reached its capacity (`speech.max_seconds`).
    public var full: Bool
    /// Frames in the clip.
    public var frames: Int

    public init(_ outcome: Outcome, partEnds: [Int], full: Bool = false, frames: Int) {
        self.outcome = outcome
        self.partEnds = partEnds
        self.full = full
        self.frames = frames
    }
}

/// What the speaker policy is told. Every event carries no time: `SpeakerPolicy.handle` gets
/// `now` (monotonic seconds) beside it.
public enum SpeakerEvent: Sendable {
    // Orders, from the link.
    /// An order arrived.
    case order(Order)
    /// The link refused an order (malformed, bad signature) and did not answer it itself.
    case refused(Ack)
    /// The link refused an order and answered it (MQTT): a later cancel gets the same answer.
    case rejectionAnswered(Ack)
    /// The server cancelled an order.
    case cancel(id: String)
    case linkUp
    case linkDown

    // Clips.
    /// A clip the policy asked for started; its words, one utterance per part.
    case clipStarted(SpeakerClip, parts: [Utterance])
    case clipEnded(SpeakerClip, SpeakerClipEnd)
    case synthesisEnded(SpeakerClip, SynthesisEnd)
    /// The audio engine was replaced (its thread stalled): what it played is lost.
    case engineReplaced

    // Buttons, `crier say`, music.
    case control(ControlEffect)
    /// `crier say` text through the control socket (already checked speakable).
    case say(Utterance)
    /// The music player (re)started: it takes the level once the buttons set one.
    case musicStarted

    // Wi-Fi, storage, updates.
    case wifi(WpaEvent)
    case wifiStatus(WpaStatus, signal: Int?)
    case wifiUnreachable(String)
    /// The data partition's reserve holds alerts (the journals cannot be written) or not.
    case reserveHolds(Bool)
    /// An update outcome to announce (`updated` / `update_failed`).
    case updateOutcome(Templates.Name)

    // Power and the setup hotspot.
    /// A reading of the power monitor: under-voltage makes the prompt due once per boot.
    case powerReading(PowerReading)
    /// The setup hotspot: opened or closed by the page, used, a scan or a try ended.
    case setup(SetupInput)

    // Lifecycle and time.
    /// Every part is up: the speaker begins (events before it only change the state).
    case start
    /// SIGTERM: stop taking orders; an alert being heard on an open device gets `grace` s.
    case stop(grace: Double, deviceOpen: Bool)
    /// The grace ran out, or a second signal: stop waiting for what plays.
    case abandon(deviceOpen: Bool)
    /// A wake-up the policy asked for (`SpeakerEffect.wake`).
    case tick
}
