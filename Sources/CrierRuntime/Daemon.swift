import CrierAudio
import CrierCore
import CrierGPIO
import CrierLink
import CrierPosix
import CrierSpeech
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
    let pipeline: SpeechPipeline
    var link: OrderLink?
    /// Acks the server may not have yet, kept on the data partition across restarts.
    var ackStore: AckStore?
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
    var gains = OutputGain(prompts: 1, alerts: 1, holdAlerts: false)
    /// `audio.mixer`: the volume goes to this ALSA element instead of the software gain.
    var hardwareVolume: HardwareVolume?
    var hardwareVolumeError: String?

    var linkPrompts: LinkPromptSchedule
    var linkUp: Bool { linkPrompts.up }

    var stopping = false
    var waiter: CheckedContinuation<Void, Never>?
    var poked = false
    var speakerDone: CheckedContinuation<Void, Never>?
    var speakerFinished = false
    let started = Monotonic.now()

    public init(config: CrierConfig, hub: LogHub) {
        self.config = config
        self.hub = hub
        log = hub.logger("runtime")
        alertLog = hub.logger("alert")
        engineBox = Mutex(AudioEngine(config: AudioEngineConfig(config.audio), log: hub.logger("audio")))
        let speech = SpeechEngine(dataPath: config.speech.dataPath, deadline: config.speech.deadline, log: hub.logger("speech"))
        pipeline = SpeechPipeline(config: config, speech: speech, log: hub.logger("speech"))
        queue = AlertQueue(config: config.alerts, defaultLang: config.speech.lang)
        var status = config.status
        if config.link.server == nil { status.onLinkDown = false }
        linkPrompts = LinkPromptSchedule(config: status, startedAt: Monotonic.now())
    }

    static func now() -> Double { Monotonic.now() }

    // MARK: lifecycle

    /// Starts every part; returns once the box is up (the audio device open or being retried).
    public func start() async {
        engine.start()
        if config.status.onStart { statusPrompts.append(.started) }
        if let server = config.link.server {
            let (stream, cont) = AsyncStream.makeStream(of: LinkEvent.self)
            linkEvents = cont
            let store = AckStore(path: config.ackOutboxPath, log: hub.logger("link"))
            queue.restore(store.restored)  // said before the restart: acked again, not said again
            ackStore = store
            link = makeLink()
            Task { for await e in stream { self.handle(e) } }
            link?.start()
            log.info("order link starting", ["server": server.description, "device": config.deviceID])
        } else {
            log.warning("no order server configured; set `server = tcp://HOST:PORT` in crier.conf to receive orders")
        }
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
            let deadline = Task {
                try? await Task.sleep(for: .seconds(grace))
                self.abandonCurrent()
            }
            await withCheckedContinuation { speakerDone = $0 }
            deadline.cancel()
        }
        buttonTask?.cancel()
        _ = await buttonTask?.value
        link?.stop()  // flushes what it can of the acks already sent
        ackStore?.close()  // the undelivered ones wait in the file for the next start
        engine.stop()
        log.info("stopped")
    }

    func abandonCurrent() {
        if let c = current {
            log.warning("current alert still playing at the end of the grace period; cutting it", ["ids": c.alert.orderIDs.joined(separator: ",")])
            engine.stop(id: c.clip)
        }
    }

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
            let admission = queue.add(o, now: now)
            switch admission {
            case .queued:
                alertLog.info("queued", ["id": o.id, "kind": o.kind.name, "waiting": queue.waitingCount])
                if let p = currentPrompt, !gains.holdAlerts { engine.stop(id: p) }
            case .alreadyQueued:
                alertLog.info("duplicate ignored (already queued or playing)", ["id": o.id])
            case .alreadyDone(let ack):
                alertLog.info("redelivered order already handled; acking again", ["id": o.id, "status": ack.status.rawValue])
            case .rejected(let ack):
                alertLog.warning("order rejected", ["id": o.id, "reason": ack.reason ?? ""])
            }
            if let ack = admission.ack { link?.send(ack) }
        case .cancel(let id):
            let c = queue.cancel(id: id, now: now)
            alertLog.info("cancelled by server", ["id": id, "was_playing": c.wasPlaying, "stopped_repeats": c.stoppedRepeats])
            link?.send(c.ack)
            if c.wasPlaying, let cur = current, cur.alert.orderIDs == [id] { engine.stop(id: cur.clip) }
        }
        poke()
    }

    // MARK: the speaker loop

    func poke() {
        if let w = waiter {
            waiter = nil
            w.resume()
        } else {
            poked = true
        }
    }

    func sleep(until deadline: Double?) async {
        if poked { poked = false; return }
        var timer: Task<Void, Never>?
        if let d = deadline {
            let wait = max(0, d - Self.now())
            timer = Task {
                try? await Task.sleep(for: .milliseconds(Int((wait * 1000).rounded(.up))))
                self.poke()
            }
        }
        await withCheckedContinuation { waiter = $0 }
        timer?.cancel()
    }

    func speakerLoop() async {
        while true {
            let now = Self.now()
            if stopping { break }
            if let p = linkPrompts.due(now: now) {
                if !statusPrompts.contains(p) { statusPrompts.append(p) }
                log.warning("order server unreachable", ["for": Format.fixed(now - (linkPrompts.downSince ?? now), 0) + "s"])
            }
            for ack in queue.expire(now: now) { send(ack, note: "expired before it could be said") }
            let held = gains.holdAlerts
            var alert: Alert?
            if !held {
                let n = queue.next(now: now)
                for ack in n.expired { send(ack, note: "expired before it could be said") }
                alert = n.alert
            }
            if let alert {
                await say(alert)
            } else if !buttonPrompts.isEmpty {
                await sayPrompt(buttonPrompts.removeFirst())
            } else if !requests.isEmpty {
                await sayUtterance(requests.removeFirst())
            } else if !statusPrompts.isEmpty {
                await sayPrompt(statusPrompts.removeFirst())
            } else {
                var wake = held ? nil : queue.nextWakeup(now: now)
                if let p = linkPrompts.nextDownPrompt { wake = min(wake ?? p, p) }
                await sleep(until: wake)
            }
        }
        speakerFinished = true
        speakerDone?.resume()
        speakerDone = nil
    }

    func send(_ ack: Ack, note: String? = nil) {
        link?.send(ack)
        if ack.status != .spoken {
            alertLog.info(note ?? "acked", ["id": ack.id, "status": ack.status.rawValue])
        }
    }

    func say(_ alert: Alert) async {
        let u = pipeline.words(alert.content, lang: alert.lang, overrideText: alert.overrideText)
        let t0 = Self.now()
        let clip: Clip
        do {
            clip = try await pipeline.clip(u, rate: engine.config.format.rate)
        } catch {
            alertLog.error("could not synthesize; rejecting", ["ids": alert.orderIDs.joined(separator: ","), "error": error.description])
            for ack in queue.finished(alert, now: Self.now()) where alert.occasion == .first {
                send(Ack(id: ack.id, status: .rejected, reason: "speech_failed", message: error.description))
            }
            return
        }
        let synthMs = (Self.now() - t0) * 1000
        let id = startClip(clip, gain: 1)
        alertLog.info("saying", ["ids": alert.orderIDs.joined(separator: ","), "seconds": Format.fixed(Double(clip.samples.count) / Double(engine.config.format.rate), 1),
                                 "synth_ms": Format.fixed(synthMs, 1)])
        current = (alert, id)
        let outcome = await waitClip()
        current = nil
        switch outcome {
        case .played, .stopped:
            let acks = queue.finished(alert, now: Self.now())
            for ack in acks { send(ack) }
            if alert.occasion == .first {
                remember(alert, text: u.text)
                for oid in alert.orderIDs {
                    alertLog.info("spoken", ["id": oid, "text": u.text])
                }
            } else {
                alertLog.info("said again", ["ids": alert.orderIDs.joined(separator: ","), "occasion": alert.description])
            }
        case .shutdown:
            queue.interrupted(alert, now: Self.now())
        }
    }

    var clipWaiter: CheckedContinuation<ClipOutcome, Never>?
    var clipOutcome: ClipOutcome?
    /// The clip the speaker loop waits for; outcomes of any other (a replaced engine's late
    /// callback) are ignored.
    var expectedClip: UInt64?
    var clipTokens: UInt64 = 0

    /// Prompts and clicks relative to the master gain (which carries the alert volume): 0 while muted.
    var promptGain: Double { gains.alerts > 0 ? gains.prompts / gains.alerts : 0 }

    /// Plays `clip` as the one the speaker loop waits for (`waitClip`); returns the engine's id.
    @discardableResult
    func startClip(_ clip: Clip, gain: Double) -> UInt64 {
        let token = newClipToken()
        return engine.play(clip, gain: gain) { outcome in Task { await self.clipDone(token: token, outcome) } }
    }

    func newClipToken() -> UInt64 {
        clipTokens += 1
        expectedClip = clipTokens
        clipOutcome = nil
        return clipTokens
    }

    func clipDone(token: UInt64, _ o: ClipOutcome) {
        guard token == expectedClip else { return }
        expectedClip = nil
        if let w = clipWaiter { clipWaiter = nil; w.resume(returning: o) } else { clipOutcome = o }
    }

    func waitClip() async -> ClipOutcome {
        if let o = clipOutcome { clipOutcome = nil; return o }
        return await withCheckedContinuation { clipWaiter = $0 }
    }

    /// `crier say` through the running daemon: the device is never opened twice.
    public func request(_ lang: Lang, _ text: String) -> String {
        let u = pipeline.words(.text(text), lang: lang)
        requests.append(u)
        poke()
        return "queued: \(u.text)"
    }

    func sayUtterance(_ u: Utterance) async {
        guard let clip = try? await pipeline.clip(u, rate: engine.config.format.rate) else { return }
        startClip(clip, gain: 1)
        _ = await waitClip()
        log.info("said on request", ["text": u.text])
    }

    func sayPrompt(_ name: Templates.Name) async {
        let u = pipeline.words(.prompt(name), lang: config.speech.lang)
        guard let clip = try? await pipeline.clip(u, rate: engine.config.format.rate) else { return }
        guard promptGain > 0 else { return }  // muted: prompts are silent
        currentPrompt = startClip(clip, gain: promptGain)
        let outcome = await waitClip()
        currentPrompt = nil
        log.info(outcome == .played ? "said" : "prompt cut short", ["prompt": name.rawValue, "text": u.text])
    }

    // MARK: buttons

    func makeLink() -> OrderLink {
        let cont = linkEvents
        var options = OrderLink.Options()
        options.ackStore = ackStore
        return OrderLink(config: config.link, deviceID: config.deviceID, log: hub.logger("link"), options: options) { cont?.yield($0) }
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
        let fresh = AudioEngine(config: old.config, log: hub.logger("audio"))
        engineBox.withLock { $0 = fresh }
        log.error("audio thread stalled; starting a new audio engine (the old thread is abandoned)")
        old.abandon()
        fresh.start()
        applyVolume(gains.alerts)
        clipDone(token: expectedClip ?? 0, .shutdown)
    }

    func historyCount() -> Int { queue.history.count }

    func perform(_ effect: ControlEffect) {
        switch effect {
        case .click:
            if promptGain > 0 { engine.play(Tone.beep(format: engine.config.format, hz: 1200, ms: 35, level: 0.3), gain: promptGain) }
        case .say(let name):
            buttonPrompts.append(name)
        case .setGain(let g):
            let wasHeld = gains.holdAlerts
            gains = g
            applyVolume(g.alerts)
            if wasHeld && !g.holdAlerts { log.info("mute ended; saying held alerts", ["waiting": queue.waitingCount]) }
        case .replay(let back):
            if queue.replay(stepsBack: back) == nil { buttonPrompts.append(.noOrders) }
        case .acknowledge:
            let ids = queue.acknowledge(now: Self.now())
            log.info("acknowledged", ["ids": ids.isEmpty ? "none" : ids.joined(separator: ",")])
            if let cur = current, case .repetition = cur.alert.occasion { engine.stop(id: cur.clip) }
        case .persist:
            break  // the button service writes its own state file
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
    }

    // MARK: status

    var lastSpoken: [AlertSummary] = []

    func remember(_ alert: Alert, text: String) {
        for id in alert.orderIDs {
            lastSpoken.append(AlertSummary(time: WallClock.now(), id: id, lang: alert.lang.rawValue, text: text, state: "spoken"))
        }
        if lastSpoken.count > 10 { lastSpoken.removeFirst(lastSpoken.count - 10) }
    }

    public func snapshot(components: [ComponentStatus], lastError: LogRecord?) async -> StatusSnapshot {
        let state = await buttons?.state
        let link = LinkStatus(state: config.link.server == nil ? "off" : (linkUp ? "up" : "down"),
                              server: config.link.server?.description,
                              since: linkPrompts.downSince.map { Self.now() - $0 })
        return StatusSnapshot(version: CrierVersion.string, deviceID: config.deviceID, time: WallClock.now(),
                              uptime: Self.now() - started, components: components, link: link, lastError: lastError,
                              volume: state?.volume ?? config.buttons.volumeDefault, volumeMax: config.buttons.volumeSteps,
                              muted: state?.muted ?? false, queueLength: queue.waitingCount, lastAlerts: lastSpoken)
    }
}
