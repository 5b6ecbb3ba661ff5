@testable import CrierCore

/// The runtime as the speaker policy sees it, simulated with an injected clock: a clip starts
/// when the policy asks (one part of `partFrames` frames per order, one part for a prompt or a
/// request), synthesis and clip ends come when the test (or the model) says. Everything the
/// policy returned is kept for the assertions.
struct SpeakerHarness {
    enum Kind: Equatable {
        case alert(ids: [String], occasion: Alert.Occasion)
        case prompt(Templates.Name)
        case request(String)
        var isAlert: Bool { if case .alert = self { true } else { false } }
        var isPrompt: Bool { if case .prompt = self { true } else { false } }
    }

    static let partFrames = 1000

    var policy: SpeakerPolicy
    var now = 0.0
    var effects: [SpeakerEffect] = []
    var acks: [(ack: Ack, again: Bool)] = []
    var logs: [SpeakerRecord] = []
    var ducked = false
    /// Clips started and not ended, with what they say and how many frames they hold.
    var sounding: [SpeakerClip: (kind: Kind, frames: Int)] = [:]
    var started: [(clip: SpeakerClip, kind: Kind)] = []
    var stops: [SpeakerClip] = []
    var stopped: Set<SpeakerClip> = []
    var wakeAt: Double?
    var finished = false
    var graceArmed: Double?
    var musicLevel: Double?
    var clicks: [Double] = []
    var updateTurns = 0
    /// The under-voltage prompt was queued (the run record's hook).
    var powerPromptsQueued = 0
    /// What the setup hotspot asked of the radio.
    var setupEffects: [SetupEffect] = []
    /// Broken invariants seen while effects were performed (`SpeakerPolicyModelTests`):
    /// speech started with the music up, the duck released under speech, a prompt started
    /// over an alert.
    var violations: [String] = []

    init(_ configure: (inout CrierConfig) -> Void = { _ in }, start: Bool = true) {
        var c = CrierConfig()
        c.link.server = ServerAddress(host: "orders.local", port: 7700)
        c.setup.hotspot = false  // on in crier.conf by default: the setup tests turn it on
        configure(&c)
        policy = SpeakerPolicy(config: c, rate: 1000, now: 0)
        if start { send(.start) }
    }

    @discardableResult
    mutating func send(_ e: SpeakerEvent) -> [SpeakerEffect] {
        let fx = policy.handle(e, now: now)
        var all: [SpeakerEffect] = []
        for f in fx {
            all.append(f)
            all += perform(f)
        }
        return all
    }

    mutating func perform(_ f: SpeakerEffect) -> [SpeakerEffect] {
        effects.append(f)
        checkBefore(f)
        var reply: SpeakerEvent?
        switch f {
        case .startAlert(let c, let a):
            sounding[c] = (.alert(ids: a.orderIDs, occasion: a.occasion), a.orders.count * Self.partFrames)
            started.append((c, .alert(ids: a.orderIDs, occasion: a.occasion)))
            reply = .clipStarted(c, parts: a.orders.map { Utterance(text: "say \($0.id)", lang: a.lang) })
        case .startPrompt(let c, let name, _):
            sounding[c] = (.prompt(name), Self.partFrames)
            started.append((c, .prompt(name)))
            reply = .clipStarted(c, parts: [Utterance(text: "prompt \(name.rawValue)", lang: .en)])
        case .startRequest(let c, let u):
            sounding[c] = (.request(u.text), Self.partFrames)
            started.append((c, .request(u.text)))
            reply = .clipStarted(c, parts: [u])
        case .stopClip(let c):
            stops.append(c)
            stopped.insert(c)
        case .duck(let on): ducked = on
        case .setMusicLevel(let l): musicLevel = l
        case .click(let g): clicks.append(g)
        case .ack(let a, let again, _, let fields):
            acks.append((a, again))
            logs.append(SpeakerRecord.ack(a, again: again, extra: fields, sent: nil))
        case .log(let r): logs.append(r)
        case .wake(let at): wakeAt = at
        case .finished: finished = true
        case .armGrace(let s): graceArmed = s
        case .updateTurn: updateTurns += 1
        case .powerPromptQueued: powerPromptsQueued += 1
        case .setup(let e): setupEffects.append(e)
        case .release, .setVolume, .volumeChanged, .spoken, .updateAnnounced: break
        }
        guard let reply else { return [] }
        return send(reply)
    }

    /// The invariants an effect can break at the moment it is performed.
    mutating func checkBefore(_ f: SpeakerEffect) {
        switch f {
        case .startAlert(let c, _), .startPrompt(let c, _, _), .startRequest(let c, _):
            if !ducked { violations.append("music not ducked when \(c) started") }
            // 7. the setup prompt only while the hotspot is open (the policy's state after the step)
            if case .startPrompt(_, .setupHotspot, _) = f, policy.setup?.phase != .open {
                violations.append("setup prompt \(c) started with the hotspot \(policy.setup?.phase.rawValue ?? "off")")
            }
            if case .startAlert = f { break }
            if let a = sounding.first(where: { $0.value.kind.isAlert }) {
                violations.append("\(c) (not an alert) started while alert \(a.key) \(a.value.kind) sounds")
            }
        case .duck(false):
            if let s = sounding.first(where: { !stopped.contains($0.key) }) {
                violations.append("music released while \(s.key) \(s.value.kind) sounds")
            }
        default:
            break
        }
    }

    // MARK: driving clips

    var current: SpeakerClip? { policy.playingClip }
    var currentKind: Kind? { current.flatMap { sounding[$0]?.kind } }

    /// The synthesis of `clip` finished every part.
    @discardableResult
    mutating func synthesize(_ clip: SpeakerClip, seconds: Double = 0.05) -> [SpeakerEffect] {
        let frames = sounding[clip]?.frames ?? Self.partFrames
        let ends = Array(stride(from: Self.partFrames, through: frames, by: Self.partFrames))
        return send(.synthesisEnded(clip, SynthesisEnd(.done(synthSeconds: seconds, firstSamples: 0.01), partEnds: ends, frames: frames)))
    }

    /// The clip ended: played through, or stopped after `heard` frames.
    @discardableResult
    mutating func end(_ clip: SpeakerClip, heard: Int? = nil, _ outcome: SpeakerClipEnd.Outcome? = nil) -> [SpeakerEffect] {
        let frames = sounding.removeValue(forKey: clip)?.frames ?? 0
        let o = outcome ?? (heard == nil ? .played : .stopped)
        return send(.clipEnded(clip, SpeakerClipEnd(o, heardFrames: heard ?? frames)))
    }

    /// Synthesizes and plays the current clip to its end; returns what it said.
    @discardableResult
    mutating func finishCurrent() -> Kind? {
        guard let c = current, let kind = sounding[c]?.kind else { return nil }
        synthesize(c)
        end(c)
        return kind
    }

    /// Plays whatever is said until the speaker is idle; returns what was said.
    @discardableResult
    mutating func drain(limit: Int = 50) -> [Kind] {
        var said: [Kind] = []
        for _ in 0..<limit {
            guard let k = finishCurrent() else { break }
            said.append(k)
        }
        return said
    }

    mutating func advance(to t: Double) {
        now = t
        send(.tick)
    }

    mutating func order(_ id: String, _ kind: Order.Kind = .text("hello"), priority: Int = 0, ttl: Double? = nil) {
        send(.order(Order(id: id, kind: kind, lang: .en, priority: priority, ttl: ttl)))
    }

    func acked(_ id: String) -> [Ack.Status] { acks.filter { $0.ack.id == id }.map(\.ack.status) }
    func logged(_ message: String) -> [SpeakerRecord] { logs.filter { $0.message == message } }
}
