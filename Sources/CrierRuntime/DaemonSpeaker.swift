import CrierAudio
import CrierCore
import CrierPosix
import CrierSpeech

/// The interpreter: events go to the speaker policy, its effects are performed here. Nothing
/// here decides what is said; it starts clips and speech, sends acks, writes log lines and runs
/// the one timer the policy asks for.
extension Daemon {
    /// Feeds one event to the policy and performs what it returns.
    func feed(_ event: SpeakerEvent) {
        perform(policy.handle(event, now: Self.now()))
    }

    func perform(_ effects: [SpeakerEffect]) {
        for effect in effects {
            switch effect {
            case .startAlert(let clip, let alert):
                let parts = pipeline.wordParts(alert.content, lang: alert.lang, overrideText: alert.overrideText)
                startSpeech(clip, parts, gain: 1)
                feed(.clipStarted(clip, parts: parts))
            case .startPrompt(let clip, let name, let gain):
                let u = updateWords(name) ?? setupWords(name) ?? pipeline.words(.prompt(name), lang: config.speech.lang)
                startSpeech(clip, [u], gain: gain)
                feed(.clipStarted(clip, parts: [u]))
            case .startRequest(let clip, let u):
                startSpeech(clip, [u], gain: 1)
                feed(.clipStarted(clip, parts: [u]))
            case .stopClip(let clip):
                if let c = clips[clip.token] { engine.stop(id: c.id) }
            case .release(let clip):
                clips.removeValue(forKey: clip.token)?.stream.cancel()
            case .click(let gain):
                engine.play(Tone.beep(format: engine.config.format, hz: 1200, ms: 35, level: 0.3), gain: gain, ducksMusic: false) { _ in }
            case .duck(let on):
                engine.requestDuck(on)
            case .setVolume(let gain):
                applyVolume(gain)
            case .setMusicLevel(let level):
                engine.setMusicLevel(level)
            case .volumeChanged:
                if let l = link { Task { if let v = await buttons?.state?.volume { l.presenceChanged(volume: v) } } }
            case .ack(let ack, let again, let reply, let fields):
                let sent = link?.send(ack, reply: reply)
                emit(SpeakerRecord.ack(ack, again: again, extra: fields, sent: sent))
            case .log(let r):
                emit(r)
            case .spoken(let ids, let lang, let text):
                remember(ids, lang: lang, text: text)
            case .updateAnnounced(let name):
                updateAnnounced(name)
            case .updateTurn(let quietSince):
                lastSaid = quietSince
                updateWake = updateTurn(now: Self.now())
            case .powerPromptQueued:
                power.onPromptSaid?()
            case .setup(let e):
                performSetup(e)
            case .armGrace(let seconds):
                graceTask = Task {
                    try? await Task.sleep(for: .seconds(seconds))
                    guard !Task.isCancelled else { return }
                    self.feed(.abandon(deviceOpen: self.engine.stats.deviceOpen))
                }
            case .finished:
                speakerFinished = true
                speakerDone?.resume()
                speakerDone = nil
            case .wake(let at):
                arm(at.map { min($0, updateWake ?? $0) } ?? updateWake)
                updateWake = nil
            }
        }
    }

    func emit(_ r: SpeakerRecord) {
        hub.emit(r.level, r.component, r.message, r.fields)
    }

    // MARK: clips and speech

    /// Starts `parts` as a clip that plays while it is synthesized: the clip is handed to the
    /// engine at once, its samples follow as espeak makes them (issue 16). The clip's end and
    /// the synthesis's end go back to the policy.
    func startSpeech(_ clip: SpeakerClip, _ parts: [Utterance], gain: Double) {
        let rate = engine.config.format.rate
        // speech.max_seconds: a bound on memory whatever the text and voice settings.
        let stream = ClipStream(capacity: rate * config.speech.maxSeconds)
        let p = pipeline
        let id = engine.play(Clip(stream: stream), gain: gain, onEnd: { end in Task { await self.clipEnded(clip, end) } })
        clips[clip.token] = (id, stream)
        // The first part goes to the speech thread from here, in this turn; a task only waits
        // for its end and makes the rest.
        let run = p.startStream(parts: parts, rate: rate, into: stream)
        Task.detached {
            let r = await p.finish(run)
            await self.synthesisEnded(clip, stream, r)
        }
    }

    func clipEnded(_ clip: SpeakerClip, _ e: ClipEnd) {
        let outcome: SpeakerClipEnd.Outcome = switch e.outcome {
        case .played: .played
        case .stopped: .stopped
        case .shutdown: .shutdown
        }
        feed(.clipEnded(clip, SpeakerClipEnd(outcome, heardFrames: e.heardFrames)))
    }

    func synthesisEnded(_ clip: SpeakerClip, _ stream: ClipStream, _ r: Result<SpeechPipeline.StreamReport, SpeechError>) {
        let outcome: SynthesisEnd.Outcome = switch r {
        case .success(let rep): .done(synthSeconds: rep.total, firstSamples: rep.firstSamples)
        case .failure(.cancelled): .cancelled
        case .failure(let e): .failed(e.description)
        }
        let frames = if case .success(let rep) = r { rep.frames } else { stream.count }
        feed(.synthesisEnded(clip, SynthesisEnd(outcome, partEnds: stream.partEnds, full: stream.isFull, frames: frames)))
    }

    // MARK: the timer

    /// Runs the one timer the policy asked for (nil: none).
    func arm(_ deadline: Double?) {
        switch wake.beginWait(until: deadline, now: Self.now()) {
        case .proceed:
            Task { self.feed(.tick) }
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
        }
    }

    func timerFired(_ generation: UInt64) {
        if wake.timerFired(generation: generation) { feed(.tick) }
    }

    /// `crier say` through the running daemon: the device is never opened twice.
    public func request(_ lang: Lang, _ text: String) -> String {
        let r = SpeakerPolicy.request(pipeline.words(.text(text), lang: lang))
        if let u = r.queued { feed(.say(u)) }
        return r.reply
    }

    /// The local page's pairing code: said like `request`, its text never logged.
    public func requestSecret(_ lang: Lang, _ text: String) {
        var u = pipeline.words(.text(text), lang: lang)
        u.secret = true
        feed(.say(u))
    }
}
