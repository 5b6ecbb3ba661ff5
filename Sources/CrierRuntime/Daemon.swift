import CrierAudio
import CrierCore
import CrierGPIO
import CrierLink
import CrierMusic
import CrierPosix
import CrierSpeech
import CrierSystem
import Glibc
import Synchronization

/// `crier run`: the audio engine, speech, the order link, the alert queue, buttons and status
/// prompts in one process. This actor owns the queue (so a component restart never loses an
/// order) and the one speaker loop that decides what is said next.
public actor Daemon {
    public let config: CrierConfig
    let hub: LogHub
    let log: Logger
    let alertLog: Logger
    /// Replaced (not repaired) when its thread stalls: a thread stuck in a driver call cannot be
    /// stopped, so a new engine takes over and the old one is abandoned.
    private let engineBox: Mutex<AudioEngine>
    public nonisolated var engine: AudioEngine { engineBox.withLock { $0 } }
    /// Background music (nil: `music.source = off`); replaced, like the engine, when it stalls.
    private let musicBox = Mutex<MusicPlayer?>(nil)
    public nonisolated var music: MusicPlayer? { musicBox.withLock { $0 } }
    let pipeline: SpeechPipeline
    var link: (any OrderLinking)?
    /// Acks the server may not have yet, kept on the data partition across restarts.
    var ackStore: AckStore?
    /// MQTT only: orders the broker handed over and the box has not answered yet (journal).
    var inboxStore: InboxStore?
    /// The data partition's reserve: while the journals cannot be written for lack of space,
    /// no alert begins (docs/protocol.md, section 6a, "A full data partition").
    var dataReserve: DataReserve?
    /// Alerts wait: held by the mute button, or by a full data partition.
    var alertsHeld: Bool { gains.holdAlerts || dataReserve?.holdsAlerts == true }
    var linkEvents: AsyncStream<LinkEvent>.Continuation?
    var buttons: ButtonService?
    var buttonTask: Task<Void, Never>?

    var queue: AlertQueue
    /// Spoken feedback: button prompts first, then status prompts. Never ahead of an order.
    var buttonPrompts: [Templates.Name] = []
    var statusPrompts: [Templates.Name] = []
    /// Text from `crier say` through the control socket: after orders, before status prompts.
    var requests: [Utterance] = []
    /// The alert being said and its clip, for cancel.
    var current: (alert: Alert, clip: UInt64)?
    /// The prompt being said: an arriving order cuts it short (prompts never delay an order).
    var currentPrompt: UInt64?
    var currentPromptName: Templates.Name?
    var gains = OutputGain(prompts: 1, alerts: 1, holdAlerts: false)
    /// `audio.mixer`: the volume goes to this ALSA element instead of the software gain.
    var hardwareVolume: HardwareVolume?
    var hardwareVolumeError: String?

    var linkPrompts: LinkPromptSchedule
    /// The under-voltage prompt and the health told to the server (DaemonPower.swift).
    var power = DaemonPower()
    var linkUp: Bool { linkPrompts.up }
    /// Wi-Fi (issue 19): the supplicant's state and what the box says about it; nil when
    /// crier.conf configures no Wi-Fi.
    var wifi: WifiMonitor?
    var wpa: WpaControl?
    let wifiLog: Logger
    /// The setup hotspot (DaemonSetup.swift); nil with `setup.hotspot = off`.
    var setup: SetupMode?
    var setupRadio: SetupRadio?
    /// crier.conf, where a network joined from the setup hotspot is saved.
    let configPath: String?
    /// crier's runtime directory, where a crier.conf it may not write goes (LocalPage.writeConfig).
    var runtimeDir: String?

    /// Slots and update records (DaemonUpdates.swift); nil until `start`.
    var update: UpdateStatus?
    var updateFileKeys: (pending: [Int]?, outcome: [Int]?) = (nil, nil)
    /// The outcome said in this run, before its `announced=1` reached the card.
    var updateSaid: UpdateOutcome?
    let updateLog: Logger
    var remoteUpdate: RemoteUpdate?
    var failedOffers: [String: Double] = [:]
    var lastIgnoredOffer: String?
    /// When the speaker last finished saying something (the quiet time before a reboot).
    var lastSaid = 0.0

    var stopping = false
    var speakerDone: CheckedContinuation<Void, Never>?
    var speakerFinished = false
    let started = Monotonic.now()

    public init(config: CrierConfig, hub: LogHub, configPath: String? = nil) {
        self.config = config
        self.configPath = configPath
        self.hub = hub
        log = hub.logger("runtime")
        alertLog = hub.logger("alert")
        engineBox = Mutex(AudioEngine(config: AudioEngineConfig(config.audio), log: hub.logger("audio"), music: config.music))
        let speech = SpeechEngine(dataPath: config.speech.dataPath, deadline: config.speech.deadline, log: hub.logger("speech"))
        pipeline = SpeechPipeline(config: config, speech: speech, log: hub.logger("speech"))
        queue = AlertQueue(config: config.alerts, defaultLang: config.speech.lang)
        var status = config.status
        if config.link.server == nil { status.onLinkDown = false }
        linkPrompts = LinkPromptSchedule(config: status, startedAt: Monotonic.now())
        wifiLog = hub.logger("wifi")
        updateLog = hub.logger("update")
        if config.wifi.enabled {
            wifi = WifiMonitor(config: config.wifi, repeatEvery: config.status.linkDownRepeat, now: Monotonic.now())
        }
        if config.setup.hotspot {
            setup = SetupMode(config: config.setup, name: SetupNaming.name(config: config), now: Monotonic.now())
            setupRadio = SetupRadio(requestPath: config.setup.requestFile, controlPath: config.wifi.controlDir + "/" + config.wifi.interface)
        }
    }

    static func now() -> Double { Monotonic.now() }

    // MARK: lifecycle

    /// Starts every part; returns once the box is up (the audio device open or being retried).
    public func start() async {
        engine.start()
        startMusic()
        if config.status.onStart { statusPrompts.append(.started) }
        startUpdates()
        if let server = config.link.server {
            let (stream, cont) = AsyncStream.makeStream(of: LinkEvent.self)
            linkEvents = cont
            let reserve = config.ackOutboxPath.map { DataReserve(path: FileIO.directory(of: $0) + "/crier.reserve", log: hub.logger("storage")) }
            reserve?.onChange { [weak self] in Task { await self?.poke() } }
            dataReserve = reserve
            let store = AckStore(path: config.ackOutboxPath, log: hub.logger("link"), reserve: reserve)
            queue.restore(store.restored)  // said before the restart: acked again, not said again
            ackStore = store
            if server.isMQTT {
                let inbox = InboxStore(path: config.orderInboxPath, log: hub.logger("link"), reserve: reserve)
                queue.restore(inbox.restoredDone)  // the broker has these acks: a duplicate is acked again
                inboxStore = inbox
            }
            link = makeLink()
            Task { for await e in stream { self.handle(e) } }
            link?.start()
            link?.presenceChanged(volume: config.buttons.volumeDefault)
            log.info("order link starting", ["server": server.description, "device": config.deviceID])
        } else {
            log.warning("no order server configured; set `server = tcp://HOST:PORT` in crier.conf to receive orders")
        }
        startWifi()
        try? setupRadio?.request(nil)  // a request left by an earlier run: the radio is the box's again
        // Load the voice data now: the first synthesis of a language reads its dictionaries,
        // which should not be paid by the first order.
        let warm = pipeline
        Task { _ = try? await warm.clip(Utterance(text: "。", lang: warm.config.speech.lang), rate: warm.config.audio.rate) }
        Task { await self.speakerLoop() }
        log.info("ready", ["version": CrierVersion.string, "device": config.audio.device,
                           "server": config.link.server?.description ?? "none"])
    }

    /// SIGTERM: stop taking orders, let the current alert finish (at most `grace` seconds) and
    /// send its ack, then close the device.
    public func shutdown(grace: Double = 5) async {
        guard !stopping else { return }
        stopping = true
        log.info("stopping", ["current": current.map { $0.alert.orderIDs.joined(separator: ",") } ?? "none"])
        poke()
        if !speakerFinished {
            // Only an alert being heard is worth the grace. A prompt, a request, or anything on
            // a device that is not open (missing, being retried: nothing can be heard, and the
            // clip would wait forever) is cut at once.
            let deadline: Task<Void, Never>?
            if current != nil && engine.stats.deviceOpen {
                deadline = Task {
                    try? await Task.sleep(for: .seconds(grace))
                    self.abandonCurrent()
                }
            } else {
                deadline = nil
                abandonCurrent()
            }
            if !speakerFinished { await withCheckedContinuation { speakerDone = $0 } }
            deadline?.cancel()
        }
        buttonTask?.cancel()
        _ = await buttonTask?.value
        wpa?.stop()
        link?.stop()  // flushes what it can of the acks already sent
        ackStore?.close()  // the undelivered ones wait in the file for the next start
        inboxStore?.close()
        dataReserve?.close()
        music?.stop()
        engine.stop()
        log.info("stopped")
    }

    /// A second SIGTERM/SIGINT while stopping: do not wait for the rest of the grace period.
    public func hurry() {
        guard stopping else { return }
        abandonCurrent()
    }

    /// Ends whatever the speaker loop waits for, from now on. An alert on an open device is
    /// faded out and its outcome (`stopped`) ends the wait; anything else (a prompt, a request,
    /// a clip on a device that is not open and would wait forever) ends as `shutdown` at once:
    /// an alert then stays unacked and the server redelivers it after the restart.
    func abandonCurrent() {
        cutting = true
        if let c = current, engine.stats.deviceOpen {
            log.warning("current alert still playing at the end of the grace period; cutting it", ["ids": c.alert.orderIDs.joined(separator: ",")])
            engine.stop(id: c.clip)
            return
        }
        // A prompt, `crier say` text, or a clip on a device that is not open (it would wait for
        // ever): nothing to ack, and it must not hold up the stop.
        if let id = playingClip { engine.stop(id: id) }
        clipDone(token: expectedClip ?? 0, ClipEnd(.shutdown, heardFrames: 0))
    }

    /// Set when shutdown stops waiting for clips: a clip started after it is not waited for.
    var cutting = false

    // MARK: events

    func handle(_ e: LinkEvent) {
        let now = Self.now()
        switch e {
        case .connected:
            statusPrompts.removeAll { $0 == .linkDown }
            if let p = linkPrompts.connected() { statusPrompts.append(p) }
        case .disconnected:
            linkPrompts.disconnected(now: now)
        case .order(let o):
            guard !stopping else { return }  // unacked: the server redelivers after restart
            if let reject = pipeline.nothingToSay(o, lang: o.lang ?? config.speech.lang) {
                // Said in 0 s, it would be acked `spoken` unheard (issue 13 item 12).
                admitted(queue.refuse(reject), id: o.id, ["kind": o.kind.name])
                return
            }
            admitted(queue.add(o, now: now), id: o.id, ["kind": o.kind.name])
        case .updateOffer(let offer):
            offerUpdate(offer)
        case .rejected(let ack, answered: true):
            queue.rememberRejection(ack)  // answered by the link (MQTT): a later cancel gets it again
        case .rejected(let ack, answered: false):
            admitted(queue.refuse(ack), id: ack.id, [:])
        case .cancel(let id):
            let c = queue.cancel(id: id, now: now)
            // A cancel of an order already final re-acks that outcome: logged as what it is.
            report(c.ack, again: c.ack.status != .cancelled, reply: true, ["cancel": true, "was_playing": c.wasPlaying, "stopped_repeats": c.stoppedRepeats])
            if c.wasPlaying, let cur = current, cur.alert.orderIDs == [id] { engine.stop(id: cur.clip) }
        }
        poke()
    }

    /// Acts on what the queue said of an arrival: queued (music ducks, a prompt is cut), or the
    /// ack to send now.
    func admitted(_ admission: AlertQueue.Admission, id: String, _ extra: KeyValuePairs<String, any CustomStringConvertible>) {
        switch admission {
        case .queued:
            alertLog.hub.emit(.info, alertLog.component, "queued",
                              [("id", id)] + extra.map { ($0.key, $0.value.description) } + [("waiting", "\(queue.waitingCount)")]
                                + (dataReserve?.holdsAlerts == true ? [("held", "the data partition is full; said once there is room")] : []))
            // Music starts going down now, before the alert's first sample exists.
            if !alertsHeld { engine.requestDuck(true) }
            if let p = currentPrompt, !alertsHeld { cutPrompt(p) }
            beginIfIdle(now: Self.now())
        case .alreadyQueued:
            alertLog.info("duplicate ignored (already queued or playing)", ["id": id])
        case .alreadyDone(let ack):
            report(ack, again: true, ["redelivered": true])
        case .rejected(let ack):
            report(ack, extra)
        }
    }

    // MARK: the speaker loop

    /// When a wait of the speaker loop ends (SpeakerWake: a stale timer can never end a later
    /// wait, pokes coalesce, a past deadline still waits `minSleep`): idle stays idle.
    var wake = SpeakerWake()
    var waiter: CheckedContinuation<Void, Never>?
    var timer: Task<Void, Never>?
    /// Turns of the speaker loop, for the idle check in `crier status` and the tests.
    var loopTurns: UInt64 = 0

    func poke() {
        if wake.poke(), let w = waiter {
            waiter = nil
            w.resume()
        }
    }

    func timerFired(_ generation: UInt64) {
        if wake.timerFired(generation: generation), let w = waiter {
            waiter = nil
            w.resume()
        }
    }

    /// Waits for a poke or `deadline` (nil: a poke only).
    func sleep(until deadline: Double?) async {
        switch wake.beginWait(until: deadline, now: Self.now()) {
        case .proceed:
            return
        case .wait(let cancelTimer, let start):
            if cancelTimer {
                timer?.cancel()
                timer = nil
            }
            if let t = start {
                timer = Task {
                    let ms = max(0, (t.deadline - Self.now()) * 1000)
                    try? await Task.sleep(for: .milliseconds(Int(ms.rounded(.up))))
                    // Cancelled or not: SpeakerWake ignores a timer that is no longer armed.
                    self.timerFired(t.generation)
                }
            }
            await withCheckedContinuation { waiter = $0 }
        }
    }

    func speakerLoop() async {
        // A begun alert is seen through even when a stop came meanwhile (the grace period).
        while !stopping || begun != nil {
            loopTurns &+= 1
            if let b = begun {
                begun = nil
                await play(b)
                lastSaid = Self.now()
                continue
            }
            let now = Self.now()
            wifiTick(now: now)
            setupTick(now: now)
            if let p = linkPrompts.due(now: now) {
                // While Wi-Fi says what is wrong ("password wrong"…), that replaces this prompt;
                // so does the setup hotspot's (the box is off the network on purpose).
                let quiet = wifi?.suppressesLinkDown == true || setup?.isOpen == true
                if !quiet && !statusPrompts.contains(p) { statusPrompts.append(p) }
                log.hub.emit(.warning, log.component, "order server unreachable", [("for", Format.fixed(now - (linkPrompts.downSince ?? now), 0) + "s")]
                             + (quiet ? [("prompt", "replaced by the Wi-Fi prompt")] : []))
            }
            if let p = powerPromptDue(now: now) { statusPrompts.append(p) }
            for ack in queue.expire(now: now) { report(ack) }
            let held = alertsHeld
            var alert: Alert?
            if !held {
                let n = queue.next(now: now)
                for ack in n.expired { report(ack) }
                alert = n.alert
            }
            // Music stays ducked for the whole queue, released once nothing is left to say.
            let speaking = alert != nil || !buttonPrompts.isEmpty || !requests.isEmpty || !statusPrompts.isEmpty
            engine.requestDuck(speaking)
            if let alert {
                await say(alert)
                lastSaid = Self.now()
            } else if !buttonPrompts.isEmpty {
                await sayPrompt(buttonPrompts.removeFirst())
                lastSaid = Self.now()
            } else if !requests.isEmpty {
                await sayUtterance(requests.removeFirst())
                lastSaid = Self.now()
            } else if !statusPrompts.isEmpty {
                await sayPrompt(statusPrompts.removeFirst())
                lastSaid = Self.now()
            } else {
                var wakeAt = held ? queue.nextExpiry : queue.nextWakeup(now: now)
                // Nothing to say and nothing waiting (held alerts wait too): an offered update.
                if queue.waitingCount == 0, let u = updateTurn(now: now) { wakeAt = min(wakeAt ?? u, u) }
                if let p = linkPrompts.nextDownPrompt { wakeAt = min(wakeAt ?? p, p) }
                if let w = wifi?.nextDeadline(now: now) { wakeAt = min(wakeAt ?? w, w) }
                if let p = power.prompt.nextCheck(lastSaid: lastSaid, now: now) { wakeAt = min(wakeAt ?? p, p) }
                if let s = setup?.nextDeadline { wakeAt = min(wakeAt ?? s, s) }
                asleep = true
                await sleep(until: wakeAt)
                asleep = false
            }
        }
        timer?.cancel()
        speakerFinished = true
        speakerDone?.resume()
        speakerDone = nil
    }

    /// Sends an ack and logs the order's outcome from that same ack, so the log and the server
    /// can never tell different stories (issue 13, item 16). `again`: a repeated ack (a
    /// redelivery or a cancel of an order already final).
    func report(_ ack: Ack, again: Bool = false, reply: Bool = false, _ extra: KeyValuePairs<String, any CustomStringConvertible> = [:]) {
        let outcome = link?.send(ack, reply: reply)
        if ack.status == .rejected { queue.rememberRejection(ack) }
        var fields: [(String, String)] = [("id", ack.id)]
        if ack.status != .spoken || again { fields.append(("status", ack.status.rawValue)) }
        if let r = ack.reason { fields.append(("reason", r)) }
        if let m = ack.message { fields.append(("why", m)) }
        for (k, v) in extra { fields.append((k, v.description)) }
        // v1: a redelivery that crossed its ack on one connection is not answered twice
        // (protocol §6a); the log says so instead of "acked again" (issue 31).
        let swallowed = again && outcome == .confirmedHere
        if swallowed { fields.append(("sent", "no: the server confirmed this ack on this connection")) }
        let message = (swallowed ? "not acked again: " : again ? "acked again: " : "") + ack.status.rawValue
        alertLog.hub.emit(ack.status == .rejected && !again ? .warning : .info, alertLog.component, message, fields)
    }

    /// An alert whose speech has started and that the speaker loop is to see through.
    struct Begun {
        var alert: Alert
        var parts: [Utterance]
        var speech: Speech
    }

    /// Started by `handle` while the speaker loop slept with nothing to say: the loop plays it
    /// first when it wakes. Saves the hop from the link's event to the loop's task before the
    /// first sound (issue 16); the loop would have chosen the same alert.
    var begun: Begun?
    /// The speaker loop sleeps with nothing to say (not waiting for a clip to end).
    var asleep = false

    /// An order was queued: when the speaker loop is asleep with nothing to say, start what it
    /// would start on waking, now, in this turn.
    func beginIfIdle(now: Double) {
        guard asleep, begun == nil, current == nil, !alertsHeld, !stopping else { return }
        let n = queue.next(now: now)
        for ack in n.expired { report(ack) }
        guard let alert = n.alert else { return }
        begun = begin(alert)  // the music's duck was requested when the order was queued
    }

    func say(_ alert: Alert) async {
        await play(begin(alert))
    }

    /// Starts an alert's speech: played from its first synthesized chunk on, while the rest is
    /// synthesized (issue 16).
    func begin(_ alert: Alert) -> Begun {
        let parts = pipeline.wordParts(alert.content, lang: alert.lang, overrideText: alert.overrideText)
        let speech = startSpeech(parts, gain: 1)
        alertLog.info("saying", ["ids": alert.orderIDs.joined(separator: ","), "parts": parts.count])
        current = (alert, speech.id)
        return Begun(alert: alert, parts: parts, speech: speech)
    }

    /// Waits for a begun alert to end, then acks what was heard.
    func play(_ b: Begun) async {
        let (alert, parts, speech) = (b.alert, b.parts, b.speech)
        let ids = alert.orderIDs.joined(separator: ",")
        let rateHz = Double(engine.config.format.rate)
        let id = speech.id
        var interrupting = false
        var failure: SpeechError?
        var synthesisSeen = false
        let end = await waitClip {
            // While it plays: waiting orders expire at their ttl, not when it ends; a more
            // urgent order cuts it (AlertQueue.preempts).
            for ack in self.queue.expire(now: Self.now()) { self.report(ack) }
            if !synthesisSeen, let r = self.synthesisEnd {
                synthesisSeen = true
                switch r {
                case .success(let rep):
                    var fields: [(String, String)] = [("ids", ids), ("seconds", Format.fixed(Double(rep.frames) / rateHz, 1)),
                                                      ("synth_ms", Format.fixed(rep.total * 1000, 1))]
                    if let f = rep.firstSamples { fields.append(("first_ms", Format.fixed(f * 1000, 2))) }
                    self.alertLog.hub.emit(.info, self.alertLog.component, "synthesized", fields)
                case .failure(.cancelled):
                    if speech.stream.isFull {
                        self.alertLog.warning("speech longer than \(self.config.speech.maxSeconds) s; cut there (speech.max_seconds)", ["ids": ids])
                    }
                case .failure(let e):
                    failure = e
                    self.engine.stop(id: id)
                }
            }
            if !interrupting && !self.stopping && !self.alertsHeld && self.queue.preempts(alert) {
                interrupting = true
                self.alertLog.info("interrupting for a more urgent order", ["ids": ids])
                self.engine.stop(id: id)
            }
            return self.queue.nextExpiry
        }
        current = nil
        speech.stream.cancel()
        if failure == nil, case .failure(let e) = await speech.synthesis.value, e != .cancelled { failure = e }
        if let error = failure {
            alertLog.error("could not synthesize; rejecting", ["ids": ids, "error": error.description])
            for ack in queue.finished(alert, now: Self.now()) where alert.occasion == .first {
                report(Ack(id: ack.id, status: .rejected, reason: "speech_failed", message: error.description))
            }
            return
        }
        var ends = speech.stream.partEnds
        // Cut at speech.max_seconds: the part being synthesized ends where the clip does. With
        // no end for it, playing the clip through counted it as not heard, and the alert was
        // said again, cut again, for ever, never acked, holding up every order behind it.
        if speech.stream.isFull, ends.count < parts.count { ends.append(speech.stream.count) }
        // Which orders' parts left the device in full. A clip that could not be cut per order
        // (one part for several orders) is heard whole or not at all.
        // Parts not synthesized yet when the clip was cut have no end: not heard.
        let partsHeard = end.outcome == .played && ends.count == parts.count ? parts.count : ends.prefix { $0 <= end.heardFrames }.count
        let heard = parts.count == alert.orders.count ? partsHeard : (partsHeard == parts.count ? alert.orders.count : 0)
        let acks = queue.finished(alert, heard: heard, now: Self.now())
        let spokenIDs = Set(acks.filter { $0.status == .spoken }.map(\.id))
        for ack in acks {
            let i = alert.orders.firstIndex { $0.id == ack.id }
            let text = i.map { parts.count == alert.orders.count ? parts[$0].text : parts.map(\.text).joined() } ?? ""
            report(ack, ["text": text])
        }
        if alert.occasion == .first {
            let said = alert.orders.filter { spokenIDs.contains($0.id) }
            if !said.isEmpty { remember(said.map(\.id), lang: alert.lang, text: parts.map(\.text).joined()) }
        } else if heard == alert.orders.count {
            alertLog.info("said again", ["ids": alert.orderIDs.joined(separator: ","), "occasion": alert.description])
        }
        if heard < alert.orders.count {
            let unheard = alert.orders[heard...].map(\.id).filter { queue.inFlightIDs.contains($0) || queue.isWaiting($0) }
            if !unheard.isEmpty {
                let why = stopping ? "stopping; not acked, the server redelivers them"
                    : interrupting ? "interrupted by a more urgent order; said again after it"
                    : "cut short; said again"
                alertLog.info("not heard in full", ["ids": unheard.joined(separator: ","), "heard_s": Format.fixed(Double(end.heardFrames) / rateHz, 1),
                                                    "why": why])
            }
        }
    }

    /// The streamed synthesis the speaker loop is playing, and how it ended (nil: still running).
    var synthesisToken: UInt64 = 0
    var synthesisEnd: Result<SpeechPipeline.StreamReport, SpeechError>?

    /// A clip playing while it is synthesized: its engine id, its samples, and the synthesis.
    typealias Speech = (id: UInt64, stream: ClipStream, synthesis: Task<Result<SpeechPipeline.StreamReport, SpeechError>, Never>)

    /// Starts `parts` as a clip that plays while it is synthesized: the clip is handed to the
    /// engine at once, its samples follow as espeak makes them. `synthesisEnd` is set (and the
    /// loop poked) when the synthesis ends.
    func startSpeech(_ parts: [Utterance], gain: Double) -> Speech {
        let rate = engine.config.format.rate
        // speech.max_seconds: a bound on memory whatever the text and voice settings.
        let stream = ClipStream(capacity: rate * config.speech.maxSeconds)
        synthesisToken &+= 1
        synthesisEnd = nil
        let (token, p) = (synthesisToken, pipeline)
        let id = startClip(Clip(stream: stream), gain: gain)
        // The first part goes to the speech thread from here, in this turn; a task only waits
        // for its end and makes the rest.
        let run = p.startStream(parts: parts, rate: rate, into: stream)
        let task = Task.detached { () -> Result<SpeechPipeline.StreamReport, SpeechError> in
            let r = await p.finish(run)
            await self.synthesisEnded(token, r)
            return r
        }
        return (id, stream, task)
    }

    func synthesisEnded(_ token: UInt64, _ r: Result<SpeechPipeline.StreamReport, SpeechError>) {
        guard token == synthesisToken else { return }
        synthesisEnd = r
        poke()
    }

    /// The end of the clip the speaker loop waits for; ends of any other (a replaced engine's
    /// late callback) are ignored.
    var clipEnd: ClipEnd?
    /// The engine's id of the clip the loop waits for (alert, prompt or `crier say` text).
    var playingClip: UInt64?
    var expectedClip: UInt64?
    var clipTokens: UInt64 = 0

    /// Prompts and clicks relative to the master gain (which carries the alert volume): 0 while muted.
    var promptGain: Double { gains.alerts > 0 ? gains.prompts / gains.alerts : 0 }

    /// Plays `clip` as the one the speaker loop waits for (`waitClip`); returns the engine's id.
    @discardableResult
    func startClip(_ clip: Clip, gain: Double) -> UInt64 {
        let token = newClipToken()
        let id = engine.play(clip, gain: gain, onEnd: { end in Task { await self.clipDone(token: token, end) } })
        playingClip = id
        return id
    }

    func newClipToken() -> UInt64 {
        clipTokens += 1
        expectedClip = clipTokens
        clipEnd = nil
        return clipTokens
    }

    func clipDone(token: UInt64, _ e: ClipEnd) {
        guard token == expectedClip else { return }
        expectedClip = nil
        clipEnd = e
        poke()
    }

    /// Waits for the current clip to end. `meanwhile` runs now and after every poke or its own
    /// deadline (what it returns) until then. Once shutdown has stopped waiting for clips
    /// (`cutting`), a clip started after that is cut and not waited for.
    func waitClip(meanwhile: () -> Double? = { nil }) async -> ClipEnd {
        if cutting, clipEnd == nil {
            if let id = playingClip { engine.stop(id: id) }
            playingClip = nil
            expectedClip = nil
            return ClipEnd(.shutdown, heardFrames: 0)
        }
        while true {
            if let e = clipEnd {
                clipEnd = nil
                playingClip = nil
                return e
            }
            await sleep(until: meanwhile())
        }
    }

    /// `crier say` through the running daemon: the device is never opened twice.
    public func request(_ lang: Lang, _ text: String) -> String {
        let u = pipeline.words(.text(text), lang: lang)
        guard TextSanitizer.isSpeakable(u.text) else { return "rejected: nothing to say" }
        requests.append(u)
        poke()
        return "queued: \(u.text)"
    }

    /// The local page's pairing code: said like `request`, its text never logged.
    public func requestSecret(_ lang: Lang, _ text: String) {
        var u = pipeline.words(.text(text), lang: lang)
        u.secret = true
        requests.append(u)
        poke()
    }

    /// A button pressed on the local page: the same path as the box's own buttons.
    public func press(_ action: ButtonAction) async { await buttons?.press(action) }

    func sayUtterance(_ u: Utterance) async {
        let speech = startSpeech([u], gain: 1)
        _ = await waitClip()
        speech.stream.cancel()
        log.info("said on request", ["text": u.secret ? "(not logged)" : u.text])
    }

    func sayPrompt(_ name: Templates.Name) async {
        let u = updateWords(name) ?? setupWords(name) ?? pipeline.words(.prompt(name), lang: config.speech.lang)
        guard promptGain > 0 else { return }  // muted: prompts are silent (an update's is said at the next start)
        let now = Self.now()
        wifiTick(now: now)
        if let w = wifi, !w.stillTrue(name, linkUp: linkUp, linkDownAfter: config.status.linkDownAfter, now: now) {
            log.info("prompt dropped: no longer true", ["prompt": name.rawValue, "wifi": w.state.rawValue, "link": linkUp ? "up" : "down"])
            return
        }
        if name == .setupHotspot, setup?.promptStillTrue != true {
            log.info("prompt dropped: no longer true", ["prompt": name.rawValue, "setup": setup?.phase.rawValue ?? "off"])
            return
        }
        let speech = startSpeech([u], gain: promptGain)
        currentPrompt = speech.id
        currentPromptName = name
        let end = await waitClip()
        currentPrompt = nil
        currentPromptName = nil
        // Not waited for: a cut prompt's synthesis stops at its next chunk, and the order that
        // cut it is synthesized right after it on the speech thread.
        speech.stream.cancel()
        log.info(end.outcome == .played ? "said" : "prompt cut short", ["prompt": name.rawValue, "text": u.text])
        if name == .updated || name == .updateFailed {
            // Heard in full, or said again after what cut it.
            if end.outcome == .played {
                updateAnnounced(name)
            } else if !stopping && !statusPrompts.contains(name) {
                statusPrompts.append(name)
            }
        }
    }

    /// An order cuts the prompt being said: the prompt fades out in the mixer while the order's
    /// speech starts under it, instead of after the prompt's last queued sample has played.
    func cutPrompt(_ id: UInt64) {
        engine.stop(id: id)
        if currentPrompt == id { clipDone(token: expectedClip ?? 0, ClipEnd(.stopped, heardFrames: 0)) }
    }

    // MARK: Wi-Fi

    func startWifi() {
        guard let w = wifi else { return }
        let path = w.config.controlDir + "/" + w.config.interface
        let (stream, cont) = AsyncStream.makeStream(of: WpaControl.Observation.self)
        let control = WpaControl(path: path) { cont.yield($0) }
        do throws(SystemError) {
            try control.start()
        } catch {
            wifiLog.error("cannot start the Wi-Fi monitor: \(error); the box joins Wi-Fi anyway but cannot say how it goes")
            return
        }
        wpa = control
        Task { for await o in stream { self.handleWifi(o) } }
        var ssids = [w.config.ssid, w.config.backupSSID].compactMap { $0?.text }
        ssids = ssids.map { "\"" + $0 + "\"" }
        wifiLog.info("watching the Wi-Fi supplicant", ["socket": path, "networks": ssids.joined(separator: ","),
                                                       "country": w.config.country ?? "?"])
    }

    func handleWifi(_ o: WpaControl.Observation) {
        guard var w = wifi else { return }
        let now = Self.now()
        switch o {
        case .event(let e, _):
            w.observe(e, now: now)
            switch e {
            case .wrongKey(let ssid):
                // Said at every failed handshake: the log shows the supplicant's retries.
                wifiLog.warning("Wi-Fi password wrong: the WPA handshake failed (WRONG_KEY); check wifi.psk in crier.conf (case matters)",
                                ["ssid": ssid.map { String(decoding: $0, as: UTF8.self) } ?? "?"])
            case .authReject(let type, let transaction, let status):
                if e.isSAEConfirmRejected {
                    wifiLog.warning("Wi-Fi password wrong: the access point refused the WPA3 (SAE) confirm; check wifi.psk in crier.conf (case matters)",
                                    ["status_code": status.map(String.init) ?? "?"])
                } else {
                    wifiLog.info("Wi-Fi authentication refused by the access point", ["auth_type": type.map(String.init) ?? "?",
                                 "transaction": transaction.map(String.init) ?? "?", "status_code": status.map(String.init) ?? "?"])
                }
            case .tempDisabled(let ssid, let reason):
                wifiLog.warning("Wi-Fi network temporarily disabled by the supplicant", ["ssid": ssid.map { String(decoding: $0, as: UTF8.self) } ?? "?", "reason": reason])
            case .disconnected(let reason):
                wifiLog.info("Wi-Fi disconnected", ["reason": reason.map(String.init) ?? "?"])
            case .terminating:
                wifiLog.warning("the Wi-Fi supplicant is exiting")
            case .connected, .networkNotFound, .attempt:
                break
            }
        case .status(let st, let signal):
            w.observe(status: st, signal: signal, now: now)
        case .unreachable(let why):
            w.unreachable(now: now)
            wifiLog.warning("Wi-Fi supplicant not reachable: \(why); retrying every 2 s (is crier-wpa-supplicant.service running? journalctl -u crier-wpa-supplicant)")
        }
        wifi = w
        wifiTick(now: now)
        poke()
    }

    /// State changes go to the log, due prompts to the status prompts (one of each kind waiting).
    func wifiTick(now: Double) {
        guard var w = wifi else { return }
        if let s = w.update(now: now) {
            logWifi(s, w)
            // Wi-Fi back: the server link gets status.link_down_after to reconnect before its
            // failure prompt ("Wi-Fi connected", "server connection failed", "server connected"
            // in a row was heard in the VM test).
            if s == .online {
                linkPrompts.networkReturned(now: now)
                // and "server connection failed" being said right now is cut short
                if currentPromptName == .linkDown, let id = currentPrompt { engine.stop(id: id) }
            }
        }
        // A server prompt waiting from before Wi-Fi knew what is wrong: the Wi-Fi one says more.
        if w.suppressesLinkDown { statusPrompts.removeAll { $0 == .linkDown } }
        // While the setup hotspot is open, its own outcomes are said instead (the monitor sees
        // the setup supplicant's tries too).
        if let p = w.due(now: now), setup?.isOpen != true {
            // A prompt about an earlier state that is still waiting is now wrong.
            statusPrompts.removeAll { $0 != p && [.wifiConnected, .wifiWrongPassword, .wifiNotFound, .wifiNoAddress].contains($0) }
            if p == .wifiConnected { statusPrompts.removeAll { $0 == .linkDown } }
            if !statusPrompts.contains(p) { statusPrompts.append(p) }
            if w.isProblem, w.since < now - 0.001 { logWifi(w.state, w, repeat: true) }
        }
        wifi = w
    }

    func logWifi(_ s: WifiMonitor.State, _ w: WifiMonitor, repeat again: Bool = false) {
        let ssid = w.ssidText ?? w.wrongKeyNetwork ?? w.config.ssid?.text ?? "?"
        var f: [(String, String)] = [("state", s.rawValue)]
        if again { f.append(("for", Format.fixed(Self.now() - w.since, 0) + "s")) }
        switch s {
        case .online:
            wifiLog.hub.emit(.info, wifiLog.component, "Wi-Fi connected", f + [("ssid", ssid), ("network", w.network ?? "?"), ("ip", w.address ?? "?"),
                                                        ("signal_dbm", w.signal.map(String.init) ?? "?")])
        case .wrongPassword:
            wifiLog.hub.emit(.warning, wifiLog.component, "Wi-Fi password wrong; check wifi.psk in crier.conf", f + [("ssid", ssid)])
        case .notFound:
            let names = [w.config.ssid, w.config.backupSSID].compactMap { $0?.text }.joined(separator: ",")
            wifiLog.hub.emit(.warning, wifiLog.component, "Wi-Fi network not found; check wifi.ssid (case and spaces matter), that the router is on and in reach, and wifi.country",
                         f + [("ssid", names), ("after", ConfigValue.fmt(w.config.notFoundAfter) + "s")])
        case .noAddress:
            wifiLog.hub.emit(.warning, wifiLog.component, "Wi-Fi connected but no IP address from DHCP; check the router's DHCP server",
                         f + [("ssid", ssid), ("after", ConfigValue.fmt(w.config.noAddressAfter) + "s")])
        case .noSupplicant:
            wifiLog.hub.emit(.warning, wifiLog.component, "Wi-Fi supplicant not running", f)
        case .searching, .connecting, .starting:
            wifiLog.hub.emit(.info, wifiLog.component, "Wi-Fi \(s.rawValue)", f)
        }
    }

    // MARK: buttons

    func makeLink() -> any OrderLinking {
        let cont = linkEvents
        let l: any OrderLinking
        if config.link.server?.isMQTT == true {
            var options = MQTTLink.Options()
            options.ackStore = ackStore
            options.inbox = inboxStore
            l = MQTTLink(config: config.link, deviceID: config.deviceID, log: hub.logger("link"), options: options) { cont?.yield($0) }
        } else {
            var options = OrderLink.Options()
            options.ackStore = ackStore
            options.software = CrierVersion.string
            l = OrderLink(config: config.link, deviceID: config.deviceID, log: hub.logger("link"), options: options) { cont?.yield($0) }
        }
        // Before the link starts: the first hello / retained status already says it.
        l.deviceChanged(slot: update?.bootedSlot, lastUpdate: lastUpdateSummary)
        l.healthChanged(power.health)
        return l
    }

    /// The link thread's progress mark, for the supervisor (now when there is no link).
    public func linkProgress() -> Double { link?.lastProgress ?? Monotonic.now() }

    /// The supervisor saw the link thread stall: a new link takes over, the old one is
    /// abandoned (a thread stuck in a name lookup cannot be interrupted). Unacked orders are
    /// redelivered by the server; the queue (here) keeps everything already received.
    public func replaceLink() {
        guard let old = link else { return }
        log.error("order link thread stalled; starting a new link (the old thread is abandoned)")
        old.abandon()
        if linkUp { handle(.disconnected(reason: "link thread stalled")) }
        let fresh = makeLink()
        link = fresh
        fresh.start()
    }

    /// Runs the buttons until cancelled (the supervisor's "buttons" component calls this).
    public func runButtons() async {
        let hooks = ButtonService.Hooks(
            historyCount: { await self.historyCount() },
            perform: { await self.perform($0) })
        let service = ButtonService(config: config.buttons, log: hub.logger("buttons"), hooks: hooks, wall: WallClock.now)
        buttons = service
        let t = Task { await service.run() }
        buttonTask = t
        await withTaskCancellationHandler { await t.value } onCancel: { t.cancel() }
    }

    public func stopButtons() { buttonTask?.cancel() }

    /// The supervisor saw the audio thread stall: start a fresh engine and abandon the old one.
    /// What was playing is said again from its start on the new one.
    public func replaceAudioEngine() {
        let old = engine
        let fresh = AudioEngine(config: old.config, log: hub.logger("audio"), music: config.music)
        engineBox.withLock { $0 = fresh }
        log.error("audio thread stalled; starting a new audio engine (the old thread is abandoned)")
        old.abandon()
        fresh.start()
        fresh.attachMusic(music?.buffer)
        applyVolume(gains.alerts)
        clipDone(token: expectedClip ?? 0, ClipEnd(.shutdown, heardFrames: 0))
    }

    func historyCount() -> Int { queue.history.count }

    func perform(_ effect: ControlEffect) {
        switch effect {
        case .click:
            if promptGain > 0 {
                engine.play(Tone.beep(format: engine.config.format, hz: 1200, ms: 35, level: 0.3), gain: promptGain, ducksMusic: false) { _ in }
            }
        case .say(let name):
            buttonPrompts.append(name)
        case .setGain(let g):
            let wasHeld = gains.holdAlerts
            gains = g
            buttonsSetGain = true
            applyVolume(g.alerts)
            if let l = link { Task { if let v = await buttons?.state?.volume { l.presenceChanged(volume: v) } } }
            if wasHeld && !g.holdAlerts { log.info("mute ended; saying held alerts", ["waiting": queue.waitingCount]) }
        case .replay(let back):
            if queue.replay(stepsBack: back) == nil { buttonPrompts.append(.noOrders) }
        case .acknowledge:
            let ids = queue.acknowledge(now: Self.now())
            log.info("acknowledged", ["ids": ids.isEmpty ? "none" : ids.joined(separator: ",")])
            if let cur = current, case .repetition = cur.alert.occasion { engine.stop(id: cur.clip) }
        case .persist:
            break  // the button service writes its own state file
        case .setMusic(let on):
            musicSwitchedOn = on
            applyMusicLevel()
            log.info(on ? "music on (button)" : "music off (button)")
        case .openSetup:
            openSetup(.gesture)
        }
        poke()
    }

    /// Puts the volume on the configured mixer element, or on the engine's software gain when
    /// there is none (or it cannot be opened: logged once, retried on the next change).
    func applyVolume(_ gain: Double) {
        if !config.audio.mixer.isEmpty && hardwareVolume == nil {
            let card = HardwareVolume.card(forDevice: config.audio.device)
            do throws(HardwareVolume.Failure) {
                hardwareVolume = try HardwareVolume(card: card, element: config.audio.mixer)
                log.info("volume on mixer element", ["card": card, "element": config.audio.mixer])
                hardwareVolumeError = nil
            } catch {
                if hardwareVolumeError != error.message {
                    log.error("\(error.message); using software volume until it appears")
                    hardwareVolumeError = error.message
                }
            }
        }
        if let hw = hardwareVolume {
            hw.set(gain: gain)
            engine.setGain(1)
        } else {
            engine.setGain(gain)
        }
        applyMusicLevel()
    }

    // MARK: music

    /// music.level_db relative to the alerts, silenced while muted (the alert floor is for
    /// orders, not for music).
    var buttonsSetGain = false
    var musicLevel: Double {
        config.music.enabled && musicSwitchedOn ? Decibel.gain(config.music.levelDb) * min(1, promptGain) : 0
    }
    var musicSwitchedOn = true

    func applyMusicLevel() { engine.setMusicLevel(musicLevel) }

    func startMusic() {
        guard config.music.enabled else { return }
        let player = MusicPlayer(config: config.music, format: engine.config.format, log: hub.logger("music"))
        musicBox.withLock { $0 = player }
        engine.attachMusic(player.buffer)
        // The level follows the first volume the buttons set (the master gain starts at 1
        // until then): from 0, so the music fades in over 20 ms instead of starting loud.
        if buttonsSetGain { applyMusicLevel() }
        player.start()
        log.info("music starting", ["source": config.music.source.description, "level_db": ConfigValue.fmt(config.music.levelDb),
                                    "duck_db": ConfigValue.fmt(config.music.duckDb)])
    }

    /// The supervisor saw the music thread stall (a decoder stuck in C): a new player takes
    /// over with a fresh buffer; the old thread is left behind and can reach nothing the
    /// alerts use. Silence for the music meanwhile, never for the alerts.
    public func replaceMusic() {
        guard let old = music else { return }
        old.stop()
        engine.attachMusic(nil)
        musicStalls += 1
        // Each abandoned thread keeps what it holds (a thread stuck in C cannot be freed):
        // after a few, music stays off until crier restarts.
        guard musicStalls <= Self.maxMusicStalls else {
            musicBox.withLock { $0 = nil }
            log.error("music thread stalled again (\(musicStalls) times); music is off until crier restarts; alerts are not affected; check music.source",
                      ["source": config.music.source.description])
            return
        }
        log.error("music thread stalled (stuck in a decoder or a file read); starting a new music player, the old thread is abandoned; alerts are not affected",
                  ["stalls": musicStalls, "source": config.music.source.description])
        startMusic()
    }

    var musicStalls = 0
    static let maxMusicStalls = 3

    nonisolated public func musicProgress() -> Double { music?.lastProgress ?? Monotonic.now() }

    func musicStatus() -> MusicStatus? {
        guard let m = music else { return nil }
        let now = m.nowPlaying
        return MusicStatus(kind: now.kind, state: now.state, title: now.title, location: now.location,
                           levelDb: config.music.levelDb, silenced: musicLevel == 0, ducked: engine.stats.musicDucked)
    }

    // MARK: status

    var lastSpoken: [AlertSummary] = []

    func remember(_ ids: [String], lang: Lang, text: String) {
        for id in ids {
            lastSpoken.append(AlertSummary(time: WallClock.now(), id: id, lang: lang.rawValue, text: text, state: "spoken"))
        }
        if lastSpoken.count > 10 { lastSpoken.removeFirst(lastSpoken.count - 10) }
    }

    public func snapshot(components: [ComponentStatus], lastError: LogRecord?) async -> StatusSnapshot {
        let state = await buttons?.state
        let link = LinkStatus(state: config.link.server == nil ? "off" : (linkUp ? "up" : "down"),
                              server: config.link.server?.description,
                              since: linkPrompts.downSince.map { Self.now() - $0 })
        var snap = StatusSnapshot(version: CrierVersion.string, deviceID: config.deviceID, time: WallClock.now(),
                                  uptime: Self.now() - started, components: components, link: link, lastError: lastError,
                                  volume: state?.volume ?? config.buttons.volumeDefault, volumeMax: config.buttons.volumeSteps,
                                  muted: state?.muted ?? false, queueLength: queue.waitingCount, lastAlerts: lastSpoken,
                                  wifi: wifi.map { w in
                                      WifiStatus(state: w.state.rawValue, ssid: w.ssidText, network: w.associated ? w.network : nil,
                                                 signalDbm: w.signal, address: w.address, frequency: w.associated ? w.frequency : nil,
                                                 since: Self.now() - w.since)
                                  })
        snap.music = musicStatus()
        snap.audioThread = engine.threadPolicy
        if let u = update, !u.isEmpty { snap.update = u }
        return snap
    }
}
