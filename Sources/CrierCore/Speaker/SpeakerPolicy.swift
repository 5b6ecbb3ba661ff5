/// The speaker's product rules in one pure state machine: what is said next, what cuts what,
/// which orders of a cut alert were heard and what is acked and logged for them, the music
/// duck and level, held alerts, status prompts (server link and Wi-Fi) and the shutdown grace.
/// The daemon feeds it events and performs the effects it returns; it does no I/O and keeps
/// no clock (`now` is passed in, monotonic seconds), so every rule is tested with an injected
/// clock (SpeakerPolicyTests, SpeakerPolicyModelTests).
///
/// Rules (docs/architecture.md, "What is said next"):
/// - One thing at a time: alerts (the `AlertQueue`'s order) before button prompts, before
///   `crier say` text, before status prompts.
/// - An order queued while a prompt plays cuts the prompt (prompts never delay an order); a
///   waiting order that `AlertQueue.preempts` the playing alert stops it (said again later
///   from its first unheard part). Nothing is cut while alerts are held.
/// - Alerts are held while muted with `mute.alerts = queue` or while the data reserve holds
///   them; prompts are silent while muted (prompt gain 0).
/// - The music is ducked whenever anything is to be said, from the moment an order is queued
///   (unless alerts are held), and released once nothing is left.
/// - Music level: `music.level_db` × min(1, prompt gain), 0 when off or switched off.
/// - Stopping: nothing new starts; only an alert being heard on an open device gets the grace.
public struct SpeakerPolicy: Sendable {
    /// crier.conf, by reference: the policy is copied on every step in a debug build, and a
    /// whole CrierConfig is dozens of strings and arrays to retain.
    final class Settings: Sendable {
        let config: CrierConfig
        init(_ config: CrierConfig) { self.config = config }
    }
    let settings: Settings
    public var config: CrierConfig { settings.config }
    /// The output rate (frames per second), for the seconds in the log.
    public let rate: Int
    let announcer: Announcer

    public internal(set) var queue: AlertQueue
    public internal(set) var linkPrompts: LinkPromptSchedule
    /// Wi-Fi (issue 19): nil when crier.conf configures none.
    public internal(set) var wifi: WifiMonitor?
    /// The setup hotspot (SpeakerPolicy+Setup.swift): nil with `setup.hotspot = off`.
    public internal(set) var setup: SetupMode?
    /// The under-voltage prompt: once per boot (SpeakerPolicy+Setup.swift).
    public internal(set) var power: UnderVoltagePrompt
    /// Spoken feedback: button prompts first, then status prompts. Never ahead of an order.
    public internal(set) var buttonPrompts: [Templates.Name] = []
    public internal(set) var statusPrompts: [Templates.Name] = []
    /// `crier say` text: after orders, before status prompts.
    public internal(set) var requests: [Utterance] = []

    public internal(set) var gains = OutputGain(prompts: 1, alerts: 1, holdAlerts: false)
    /// The data partition is full: the journals cannot be written, no alert begins.
    public internal(set) var reserveHolds = false
    public internal(set) var musicSwitchedOn = true
    /// The buttons set a volume (the music takes its level from then on).
    public internal(set) var buttonsSetGain = false
    /// The duck last asked for.
    public internal(set) var ducked = false
    /// Between `start` and `stop` the speaker says things; before `start` it only listens.
    public internal(set) var running = false
    public internal(set) var stopping = false
    public internal(set) var finished = false
    /// When the speaker last finished saying something (the quiet time before a reboot).
    public internal(set) var lastSaid: Double

    /// What plays: at most one of the three.
    public internal(set) var alertPlay: AlertPlay?
    public internal(set) var promptPlay: PromptPlay?
    public internal(set) var requestPlay: (clip: SpeakerClip, utterance: Utterance)?
    var nextToken: UInt64 = 0
    var out: [SpeakerEffect] = []

    /// An alert being said, or whose clip ended and whose synthesis is still finishing.
    public struct AlertPlay: Sendable {
        public var clip: SpeakerClip
        public var alert: Alert
        public var parts: [Utterance] = []
        /// Stopped for a more urgent order.
        public var interrupting = false
        public var failure: String?
        public var synthesis: SynthesisEnd?
        public var end: SpeakerClipEnd?
    }

    public struct PromptPlay: Sendable {
        public var clip: SpeakerClip
        public var name: Templates.Name
        public var text = ""
    }

    /// `setupName`: the hotspot's name (from device.id and the radio's MAC, read by the runtime).
    public init(config: CrierConfig, rate: Int, now: Double, setupName: HotspotName? = nil) {
        settings = Settings(config)
        self.rate = rate
        announcer = Announcer(templates: config.templates, maxChars: config.speech.maxChars)
        queue = AlertQueue(config: config.alerts, defaultLang: config.speech.lang)
        var status = config.status
        if config.link.server == nil { status.onLinkDown = false }
        linkPrompts = LinkPromptSchedule(config: status, startedAt: now)
        if config.wifi.enabled {
            wifi = WifiMonitor(config: config.wifi, repeatEvery: config.status.linkDownRepeat, now: now)
        }
        if config.setup.hotspot {
            setup = SetupMode(config: config.setup, name: setupName ?? HotspotName(deviceID: config.deviceID, mac: nil), now: now)
        }
        power = UnderVoltagePrompt(enabled: config.status.onUnderVoltage)
        if config.status.onStart { statusPrompts.append(.started) }
        lastSaid = now
    }

    /// Outcomes from before a restart (`AlertQueue.restore`).
    public mutating func restore(_ acks: [Ack]) { queue.restore(acks) }

    /// Alerts wait: held by the mute button (`mute.alerts = queue`), or by a full data partition.
    public var alertsHeld: Bool { gains.holdAlerts || reserveHolds }
    /// Prompts and clicks relative to the master gain (which carries the alert volume): 0 while muted.
    public var promptGain: Double { gains.alerts > 0 ? gains.prompts / gains.alerts : 0 }
    /// music.level_db relative to the alerts, silenced while muted (the alert floor is for
    /// orders, not for music).
    public var musicLevel: Double {
        config.music.enabled && musicSwitchedOn ? Decibel.gain(config.music.levelDb) * min(1, promptGain) : 0
    }
    public var linkUp: Bool { linkPrompts.up }
    public var isIdle: Bool { alertPlay == nil && promptPlay == nil && requestPlay == nil }
    /// The alert being said (its clip has not ended).
    public var currentAlert: AlertPlay? { alertPlay?.end == nil ? alertPlay : nil }
    /// The clip whose end the speaker waits for.
    public var playingClip: SpeakerClip? {
        if let a = alertPlay { return a.end == nil ? a.clip : nil }
        return promptPlay?.clip ?? requestPlay?.clip
    }

    // MARK: the step

    /// Applies `event` at `now`; returns what to do, ending with `.wake`.
    public mutating func handle(_ event: SpeakerEvent, now: Double) -> [SpeakerEffect] {
        out = []
        apply(event, now: now)
        advance(now: now)
        defer { out = [] }
        return out
    }

    mutating func apply(_ event: SpeakerEvent, now: Double) {
        switch event {
        case .order(let o):
            guard !stopping else { return }  // unacked: the server redelivers after restart
            if let reject = announcer.nothingToSay(o, lang: o.lang ?? config.speech.lang) {
                // Said in 0 s, it would be acked `spoken` unheard (issue 13 item 12).
                admitted(queue.refuse(reject), id: o.id, [("kind", o.kind.name)], now: now)
                return
            }
            admitted(queue.add(o, now: now), id: o.id, [("kind", o.kind.name)], now: now)
        case .refused(let ack):
            admitted(queue.refuse(ack), id: ack.id, [], now: now)
        case .rejectionAnswered(let ack):
            queue.rememberRejection(ack)  // answered by the link (MQTT): a later cancel gets it again
        case .cancel(let id):
            let c = queue.cancel(id: id, now: now)
            // A cancel of an order already final re-acks that outcome: logged as what it is.
            report(c.ack, again: c.ack.status != .cancelled, reply: true,
                   [("cancel", "true"), ("was_playing", "\(c.wasPlaying)"), ("stopped_repeats", "\(c.stoppedRepeats)")])
            if c.wasPlaying, let a = currentAlert, a.alert.orderIDs == [id] { out.append(.stopClip(a.clip)) }
        case .linkUp:
            statusPrompts.removeAll { $0 == .linkDown }
            if let p = linkPrompts.connected() { statusPrompts.append(p) }
        case .linkDown:
            linkPrompts.disconnected(now: now)
        case .clipStarted(let clip, let parts):
            started(clip, parts: parts)
        case .clipEnded(let clip, let end):
            clipEnded(clip, end, now: now)
        case .synthesisEnded(let clip, let s):
            synthesisEnded(clip, s, now: now)
        case .engineReplaced:
            out += [.setVolume(gains.alerts), .setMusicLevel(musicLevel)]
            ducked = false  // a fresh engine starts with the music up
            if let c = playingClip { clipEnded(c, SpeakerClipEnd(.shutdown, heardFrames: 0), now: now) }
        case .control(let e):
            control(e, now: now)
        case .say(let u):
            requests.append(u)
        case .musicStarted:
            // The level follows the first volume the buttons set (the master gain starts at 1
            // until then): from 0, so the music fades in over 20 ms instead of starting loud.
            if buttonsSetGain { out.append(.setMusicLevel(musicLevel)) }
        case .wifi(let e):
            wifiEvent(e, now: now)
        case .wifiStatus(let st, let signal):
            guard var w = wifi else { return }
            w.observe(status: st, signal: signal, now: now)
            wifi = w
            wifiTick(now: now)
        case .wifiUnreachable(let why):
            guard var w = wifi else { return }
            w.unreachable(now: now)
            wifi = w
            log(.warning, "wifi", "Wi-Fi supplicant not reachable: \(why); retrying every 2 s (is crier-wpa-supplicant.service running? journalctl -u crier-wpa-supplicant)")
            wifiTick(now: now)
        case .reserveHolds(let h):
            reserveHolds = h
        case .powerReading(let r):
            _ = power.observe(r)  // said when the speaker is next idle and quiet (advance)
        case .setup(let input):
            setupInput(input, now: now)
        case .updateOutcome(let name):
            if config.update.announce, !statusPrompts.contains(name) { statusPrompts.append(name) }
        case .stop(let grace, let deviceOpen):
            guard !stopping else { return }
            stopping = true
            log(.info, "runtime", "stopping", [("current", currentAlert.map { $0.alert.orderIDs.joined(separator: ",") } ?? "none")])
            // Only an alert being heard is worth the grace. A prompt, a request, or anything on
            // a device that is not open (missing, being retried: nothing can be heard, and the
            // clip would wait forever) is cut at once.
            if isIdle { return }
            if currentAlert != nil && deviceOpen {
                out.append(.armGrace(grace))
            } else {
                abandon(deviceOpen: deviceOpen, now: now)
            }
        case .abandon(let deviceOpen):
            guard stopping else { return }
            abandon(deviceOpen: deviceOpen, now: now)
        case .start:
            running = true
        case .tick:
            break
        }
    }

    /// What the queue said of an arrival: queued (music ducks, a prompt is cut), or the ack to
    /// send now.
    mutating func admitted(_ admission: AlertQueue.Admission, id: String, _ extra: [(String, String)], now: Double) {
        switch admission {
        case .queued:
            log(.info, "alert", "queued", [("id", id)] + extra + [("waiting", "\(queue.waitingCount)")]
                + (reserveHolds ? [("held", "the data partition is full; said once there is room")] : []))
            // Music starts going down now, before the alert's first sample exists.
            if !alertsHeld { duck(true) }
            // An order cuts the prompt being said: it fades out while the order's speech starts.
            if let p = promptPlay, !alertsHeld {
                out.append(.stopClip(p.clip))
                clipEnded(p.clip, SpeakerClipEnd(.stopped, heardFrames: 0), now: now)
            }
        case .alreadyQueued:
            log(.info, "alert", "duplicate ignored (already queued or playing)", [("id", id)])
        case .alreadyDone(let ack):
            report(ack, again: true, [("redelivered", "true")])
        case .rejected(let ack):
            report(ack, extra)
        }
    }

    /// What is said next, and when to look again.
    mutating func advance(now: Double) {
        if !isIdle {
            // While a clip plays: waiting orders expire at their ttl, not when it ends; a more
            // urgent order cuts the alert (AlertQueue.preempts).
            for ack in queue.expire(now: now) { report(ack) }
            if var a = currentAlert, !a.interrupting, !stopping, !alertsHeld, queue.preempts(a.alert) {
                a.interrupting = true
                alertPlay = a
                log(.info, "alert", "interrupting for a more urgent order", [("ids", a.alert.orderIDs.joined(separator: ","))])
                out.append(.stopClip(a.clip))
            }
            out.append(.wake(at: queue.nextExpiry))
            return
        }
        if stopping {
            if !finished {
                finished = true
                out.append(.finished)
            }
            out.append(.wake(at: nil))
            return
        }
        guard running else { return }
        while true {
            wifiTick(now: now)
            setupTick(now: now)
            if let p = linkPrompts.due(now: now) {
                // While Wi-Fi says what is wrong ("password wrong"…), that replaces this prompt;
                // so does the setup hotspot's (the box is off the network on purpose).
                let quiet = wifi?.suppressesLinkDown == true || setup?.isOpen == true
                if !quiet && !statusPrompts.contains(p) { statusPrompts.append(p) }
                log(.warning, "runtime", "order server unreachable", [("for", Format.fixed(now - (linkPrompts.downSince ?? now), 0) + "s")]
                    + (quiet ? [("prompt", "replaced by the Wi-Fi prompt")] : []))
            }
            powerPromptDue(now: now)
            for ack in queue.expire(now: now) { report(ack) }
            var alert: Alert?
            if !alertsHeld {
                let n = queue.next(now: now)
                for ack in n.expired { report(ack) }
                alert = n.alert
            }
            // Music stays ducked for the whole queue, released once nothing is left to say.
            duck(alert != nil || !buttonPrompts.isEmpty || !requests.isEmpty || !statusPrompts.isEmpty)
            if let alert {
                let clip = newClip()
                alertPlay = AlertPlay(clip: clip, alert: alert)
                out.append(.startAlert(clip, alert))
            } else if !buttonPrompts.isEmpty {
                if !startPrompt(buttonPrompts.removeFirst(), now: now) { continue }
            } else if !requests.isEmpty {
                let clip = newClip()
                let u = requests.removeFirst()
                requestPlay = (clip, u)
                out.append(.startRequest(clip, u))
            } else if !statusPrompts.isEmpty {
                if !startPrompt(statusPrompts.removeFirst(), now: now) { continue }
            } else {
                var wakeAt = alertsHeld ? queue.nextExpiry : queue.nextWakeup(now: now)
                // Nothing to say and nothing waiting (held alerts wait too): an offered update.
                if queue.waitingCount == 0 { out.append(.updateTurn(quietSince: lastSaid)) }
                if let p = linkPrompts.nextDownPrompt { wakeAt = min(wakeAt ?? p, p) }
                if let w = wifi?.nextDeadline(now: now) { wakeAt = min(wakeAt ?? w, w) }
                if let p = power.nextCheck(lastSaid: lastSaid, now: now) { wakeAt = min(wakeAt ?? p, p) }
                if let s = setup?.nextDeadline { wakeAt = min(wakeAt ?? s, s) }
                out.append(.wake(at: wakeAt))
                return
            }
            out.append(.wake(at: queue.nextExpiry))
            return
        }
    }

    // MARK: helpers

    mutating func newClip() -> SpeakerClip {
        nextToken &+= 1
        return SpeakerClip(token: nextToken)
    }

    mutating func duck(_ on: Bool) {
        guard on != ducked else { return }
        ducked = on
        out.append(.duck(on))
    }

    /// Sends an ack; its log line is written from that same ack (`SpeakerRecord.ack`).
    mutating func report(_ ack: Ack, again: Bool = false, reply: Bool = false, _ extra: [(String, String)] = []) {
        if ack.status == .rejected { queue.rememberRejection(ack) }
        out.append(.ack(ack, again: again, reply: reply, fields: extra))
    }

    mutating func log(_ level: LogLevel, _ component: String, _ message: String, _ fields: [(String, String)] = []) {
        out.append(.log(SpeakerRecord(level, component, message, fields)))
    }
}
