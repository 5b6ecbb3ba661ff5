import CrierAudio
import CrierCore
import CrierSpeech

/// Text → words → samples at the output rate: the path every alert and prompt takes.
public struct SpeechPipeline: Sendable {
    public let config: CrierConfig
    public let speech: SpeechEngine
    let announcer: Announcer
    let log: Logger
    /// espeak-ng's voices all run at 22050 Hz; the table is built once, not per alert.
    let resampler: Resampler

    public init(config: CrierConfig, speech: SpeechEngine, log: Logger) {
        self.config = config
        self.speech = speech
        self.log = log
        announcer = Announcer(templates: config.templates, maxChars: config.speech.maxChars)
        resampler = Resampler(from: 22050, to: config.audio.rate)
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
        return r.utterance
    }

    /// The words of an alert, one utterance per order's part (`Announcer.announceParts`).
    public func wordParts(_ content: AnnouncementContent, lang: Lang? = nil, overrideText: String? = nil) -> [Utterance] {
        let rs = announcer.announceParts(content, lang: lang ?? config.speech.lang, overrideText: overrideText)
        let truncated = rs.reduce(0) { $0 + $1.truncated }, replaced = rs.reduce(0) { $0 + $1.replaced }
        if truncated > 0 {
            log.warning("text cut to speech.max_chars", ["max": config.speech.maxChars, "dropped_chars": truncated])
        }
        if replaced > 0 {
            log.info("control characters removed from text", ["count": replaced])
        }
        return rs.map(\.utterance)
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
        let voice = config.speech.voices[u.lang]!
        var audio = try await speech.synthesize(u, voice: voice)
        audio.samples.removeFirst(SilenceTrim.leadingSilence(audio.samples, rate: audio.rate))
        let floats = audio.floats
        let r = audio.rate == resampler.inputRate && rate == resampler.outputRate ? resampler : Resampler(from: audio.rate, to: rate)
        return Clip(samples: r.process(floats))
    }

    public func phonemes(_ u: Utterance) async -> String {
        await speech.phonemes(u, voice: config.speech.voices[u.lang]!)
    }
}
