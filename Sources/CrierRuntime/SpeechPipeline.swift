import CrierAudio
import CrierCore
import CrierPosix
import CrierSpeech
import Glibc
import Synchronization

/// Text → words → samples at the output rate: the path every alert and prompt takes.
public struct SpeechPipeline: Sendable {
    public let config: CrierConfig
    public let speech: SpeechEngine
    let announcer: Announcer
    let log: Logger
    /// espeak-ng's voices all run at 22050 Hz; the table is built once, not per alert.
    let resampler: Resampler
    /// `voice.pack.zh` / `voice.pack.en`: words a pack covers are said from its clips.
    public let voicePacks: LoadedVoicePacks

    public init(config: CrierConfig, speech: SpeechEngine, log: Logger) {
        self.config = config
        self.speech = speech
        self.log = log
        announcer = Announcer(templates: config.templates, maxChars: config.speech.maxChars)
        resampler = Resampler(from: 22050, to: config.audio.rate)
        voicePacks = LoadedVoicePacks.load(config: config, log: log)
    }

    public func words(_ content: AnnouncementContent, lang: Lang? = nil, overrideText: String? = nil) -> Utterance {
        let r = announcer.announce(content, lang: lang ?? config.speech.lang, overrideText: overrideText)
        if r.truncated > 0 {
            log.warning("text cut to speech.max_chars", ["max": config.speech.maxChars, "dropped_chars": r.truncated])
        }
        if r.fellBackToTemplate {
            log.info("order text has nothing to say; saying the template instead")
        }
        if r.replaced > 0 {
            log.info("control characters removed from text", ["count": r.replaced])
        }
        logLeftOut(r.leftOut, lang: r.utterance.lang)
        logBroken(r.brokenWords)
        return r.utterance
    }

    /// The words of an alert, one utterance per order's part (`Announcer.announceParts`).
    public func wordParts(_ content: AnnouncementContent, lang: Lang? = nil, overrideText: String? = nil) -> [Utterance] {
        let rs = announcer.announceParts(content, lang: lang ?? config.speech.lang, overrideText: overrideText)
        let truncated = rs.reduce(0) { $0 + $1.truncated }, replaced = rs.reduce(0) { $0 + $1.replaced }
        logLeftOut(rs.reduce(0) { $0 + $1.leftOut }, lang: lang ?? config.speech.lang)
        logBroken(rs.reduce(0) { $0 + $1.brokenWords })
        if truncated > 0 {
            log.warning("text cut to speech.max_chars", ["max": config.speech.maxChars, "dropped_chars": truncated])
        }
        if replaced > 0 {
            log.info("control characters removed from text", ["count": replaced])
        }
        return rs.map(\.utterance)
    }

    private func logLeftOut(_ n: Int, lang: Lang) {
        guard n > 0 else { return }
        log.info("characters of scripts the \(lang.rawValue) voice does not read left out of the text (Greek, Hebrew, Arabic, Indic, Georgian, Korean; docs/speech.md)",
                 ["count": n])
    }

    private func logBroken(_ n: Int) {
        guard n > 0 else { return }
        log.info("words longer than \(TextSanitizer.maxWordScalars) characters said in pieces (espeak-ng overruns its word buffers; docs/speech.md)",
                 ["count": n])
    }

    /// The parts synthesized one by one and joined; `ends[i]` is the frame just past part i.
    public func clip(parts: [Utterance], rate: Int) async throws(SpeechError) -> (clip: Clip, ends: [Int]) {
        var samples: [Float] = []
        var ends: [Int] = []
        for u in parts {
            let c = try await clip(u, rate: rate)
            samples += c.samples
            ends.append(samples.count)
        }
        return (Clip(samples: samples), ends)
    }

    /// The rejection for an order that has nothing to say, or nil.
    public func nothingToSay(_ order: Order, lang: Lang) -> Ack? {
        announcer.nothingToSay(order, lang: lang)
    }

    /// Synthesizes, drops espeak's leading silence (SilenceTrim) and resamples to `rate` (the
    /// device's rate).
    public func clip(_ u: Utterance, rate: Int) async throws(SpeechError) -> Clip {
        if let spliced = voicePacks.splice([u], rate: rate) { return Clip(samples: spliced[0]) }
        let voice = config.speech.voices[u.lang]!
        let audio = try await speech.synthesize(u, voice: voice)
        return Clip(samples: SpeechStreamer.whole(audio.samples, resampler: resampler(from: audio.rate, to: rate)))
    }

    func resampler(from: Int, to rate: Int) -> Resampler {
        from == resampler.inputRate && rate == resampler.outputRate ? resampler : Resampler(from: from, to: rate)
    }

    /// How a streamed synthesis went, for the log.
    public struct StreamReport: Sendable {
        /// Seconds from the call to the first samples in the clip, and to the end.
        public var firstSamples: Double?
        public var total: Double
        public var frames: Int
    }

    /// Synthesizes `parts` into `clip` as espeak hands out its chunks, each part trimmed and
    /// resampled on its own (the state carried across chunks: `SpeechStreamer`), its end
    /// recorded in `clip.partEnds`. The clip can be playing meanwhile. Finishes the clip in
    /// every case; stops early (`.cancelled`) when the clip is cancelled or full.
    public func stream(parts: [Utterance], rate: Int, into clip: ClipStream) async -> Result<StreamReport, SpeechError> {
        await finish(startStream(parts: parts, rate: rate, into: clip))
    }

    /// A streamed synthesis whose first part is already on the speech thread's queue.
    public struct StreamRun: Sendable {
        let parts: [Utterance]
        let rate: Int
        let clip: ClipStream
        let t0: Double
        let first: (job: SynthesisJob, sink: StreamSink)?
        /// Said from a voice pack: the parts' plans (the first is in the clip already) and the
        /// seconds to the first samples.
        var packed: [LoadedVoicePacks.PartPlan]?
        var packedFirst: Double?
        var packedTail: LoadedVoicePacks.PartTail?
    }

    /// `stream`'s first step, synchronous: the first part is handed to the speech thread by the
    /// caller (the daemon's actor, in the same turn that started the clip), so espeak starts
    /// without waiting for a task to be scheduled. `finish` does the rest.
    public func startStream(parts: [Utterance], rate: Int, into clip: ClipStream) -> StreamRun {
        let t0 = Monotonic.now()
        // The pack's choice is logged once the sound has started (the log line is a write).
        let choice = clip.isCancelled ? LoadedVoicePacks.Choice() : voicePacks.choose(parts)
        defer { voicePacks.logChoice(choice) }
        if let plans = choice.plans {
            // From clips: the first 20 ms go in now (first sound), the rest in `finish`; each
            // part's end is marked for partial acks, as espeak's are.
            let (head, tail) = voicePacks.start(plans[0], rate: rate)
            _ = clip.append(head)
            return StreamRun(parts: parts, rate: rate, clip: clip, t0: t0, first: nil, packed: plans, packedFirst: Monotonic.now() - t0,
                             packedTail: tail)
        }
        var first: (job: SynthesisJob, sink: StreamSink)?
        if let u = parts.first, !clip.isCancelled {
            let sink = StreamSink(clip: clip, resampler: resampler(from: 22050, to: rate), rate: rate, start: t0, yieldToReader: true)
            first = (speech.start(u, voice: config.speech.voices[u.lang]!, into: sink), sink)
        }
        return StreamRun(parts: parts, rate: rate, clip: clip, t0: t0, first: first)
    }

    public func finish(_ run: StreamRun) async -> Result<StreamReport, SpeechError> {
        let clip = run.clip
        var firstSamples: Double?
        defer { clip.finish() }
        if let plans = run.packed, var tail = run.packedTail {
            guard !clip.isCancelled, clip.append(voicePacks.finish(&tail)) else { return .failure(.cancelled) }
            clip.endPart()
            for p in plans.dropFirst() {
                guard !clip.isCancelled, clip.append(voicePacks.render(p, rate: run.rate)) else { return .failure(.cancelled) }
                clip.endPart()
            }
            return .success(StreamReport(firstSamples: run.packedFirst, total: Monotonic.now() - run.t0, frames: clip.count))
        }
        for (i, u) in run.parts.enumerated() {
            let sink: StreamSink
            do throws(SpeechError) {
                if i == 0 {
                    guard let (job, s) = run.first else { return .failure(.cancelled) }
                    sink = s
                    _ = try await job.samples()
                } else {
                    if clip.isCancelled { return .failure(.cancelled) }
                    sink = StreamSink(clip: clip, resampler: resampler(from: 22050, to: run.rate), rate: run.rate, start: run.t0,
                                      yieldToReader: firstSamples == nil)
                    try await speech.synthesize(u, voice: config.speech.voices[u.lang]!, into: sink)
                }
            } catch {
                return .failure(error)
            }
            guard sink.end() else { return .failure(.cancelled) }
            clip.endPart()
            if let f = sink.firstAt, firstSamples == nil { firstSamples = f }
        }
        return .success(StreamReport(firstSamples: firstSamples, total: Monotonic.now() - run.t0, frames: clip.count))
    }
}

/// One part's samples on their way into a streamed clip. Called only on the speech thread; the
/// Mutex makes the class Sendable (uncontended, so it costs a few ns per chunk).
public final class StreamSink: SpeechChunkSink {
    let clip: ClipStream
    let start: Double
    /// Once the clip holds 50 ms, pause the synthesis until the audio thread has taken
    /// them (at most `yieldLimit`): on a busy CPU the rest of a long text, synthesized at full
    /// speed on the other thread, would otherwise compete with the audio thread for the core
    /// just when it is about to write the first sound. The synthesis is 100-500× faster than
    /// playback; a pause of a millisecond costs nothing audible.
    let yieldToReader: Bool
    static let yieldLimit = 0.02
    /// Samples in the clip before that pause: 50 ms, far more than the mixer needs to start (a fade).
    let yieldAfter: Int
    private let streamer: Mutex<(SpeechStreamer, first: Double?, yielded: Bool)>

    init(clip: ClipStream, resampler: Resampler, rate: Int, start: Double, yieldToReader: Bool) {
        self.clip = clip
        self.start = start
        self.yieldToReader = yieldToReader
        yieldAfter = rate / 20
        streamer = Mutex((SpeechStreamer(resampler: resampler), nil, !yieldToReader))
    }

    /// Seconds from the start of the synthesis to this part's first samples in the clip.
    var firstAt: Double? { streamer.withLock { $0.first } }

    public func speechChunk(_ samples: UnsafeBufferPointer<Int16>, rate: Int) -> Bool {
        let (out, first) = streamer.withLock { s -> ([Float], Double?) in
            if rate != s.0.inputRate && !s.0.hasInput {
                // espeak's voices all run at 22050 Hz; should one not, follow it.
                s.0 = SpeechStreamer(resampler: Resampler(from: rate, to: s.0.outputRate))
            }
            let o = s.0.push(Array(samples))
            if !o.isEmpty && s.first == nil { s.first = Monotonic.now() - start }
            return (o, s.first)
        }
        let ok = clip.append(out)
        if ok && first != nil && !streamer.withLock({ $0.yielded }) && clip.count >= yieldAfter {
            streamer.withLock { $0.yielded = true }
            let until = Monotonic.now() + Self.yieldLimit
            var pause = timespec(tv_sec: 0, tv_nsec: 100_000)
            while !clip.hasBeenRead && !clip.isCancelled && Monotonic.now() < until { nanosleep(&pause, nil) }
        }
        return ok
    }

    /// The part is complete: the resampler's tail goes in. False when the clip no longer takes samples.
    func end() -> Bool {
        clip.append(streamer.withLock { $0.0.finish() })
    }
}

extension SpeechPipeline {
    public func phonemes(_ u: Utterance) async -> String {
        await speech.phonemes(u, voice: config.speech.voices[u.lang]!)
    }
}
