/// espeak-ng starts some utterances with tens of milliseconds of digital near-silence (39 ms
/// for "九十九号", 12 ms for "四十二号"). Played as is, that silence is latency: the customer
/// hears the first syllable later. Dropping it, down to a few milliseconds below any audible
/// level, makes speech start sooner; the mixer's 5 ms fade-in keeps the edge click-free. The
/// trailing silence stays: it is the pause between two alerts said back to back.
public enum SilenceTrim {
    /// -60 dBFS: far below the quietest consonant onset espeak produces (≈ -40 dBFS).
    public static let threshold = 0.001
    /// Silence kept before the first audible sample.
    public static let keepMs = 3.0

    /// How many samples at the start of `samples` (mono) are silence to drop. All silent: all.
    public static func leadingSilence(_ samples: [Int16], rate: Int,
                                      threshold: Double = threshold, keepMs: Double = keepMs) -> Int {
        let limit = Int32((threshold * 32768).rounded())
        guard let first = samples.firstIndex(where: { abs(Int32($0)) > limit }) else { return samples.count }
        return max(0, first - Int((Double(rate) * keepMs / 1000).rounded()))
    }
}

extension SilenceTrim {
    /// The same trim on samples that arrive in chunks: until the first audible sample it holds
    /// back only the last `keepMs` of silence, then passes everything through. Any split of the
    /// input gives what `leadingSilence` drops from the whole.
    public struct Stream: Sendable {
        let limit: Int32
        let keep: Int
        var found = false
        var held: [Int16] = []

        public init(rate: Int, threshold: Double = SilenceTrim.threshold, keepMs: Double = SilenceTrim.keepMs) {
            limit = Int32((threshold * 32768).rounded())
            keep = Int((Double(rate) * keepMs / 1000).rounded())
        }

        /// True once the first audible sample has gone through.
        public var started: Bool { found }

        public mutating func push(_ chunk: [Int16]) -> [Int16] {
            if found { return chunk }
            let lim = limit
            guard let k = chunk.firstIndex(where: { abs(Int32($0)) > lim }) else {
                held += chunk
                if held.count > keep { held.removeFirst(held.count - keep) }
                return []
            }
            found = true
            // `held` is the silence just before this chunk (at most `keep` samples of it).
            let from = max(0, held.count + k - keep)
            let out = Array((held + chunk)[from...])
            held = []
            return out
        }
    }
}

/// What happens to espeak's samples before they are mixed, chunk by chunk: the leading-silence
/// trim, conversion to float, resampling to the device rate. One per part (each part is trimmed
/// and resampled on its own, as when parts were synthesized whole and joined).
public struct SpeechStreamer: Sendable {
    var trim: SilenceTrim.Stream
    var resample: Resampler.Stream

    /// `resampler` converts from the synthesizer's rate.
    public init(resampler: Resampler) {
        trim = SilenceTrim.Stream(rate: resampler.inputRate)
        resample = Resampler.Stream(resampler)
    }

    public var inputRate: Int { resample.resampler.inputRate }
    public var outputRate: Int { resample.resampler.outputRate }
    /// True once any sample went in (a streamer is only replaced before that).
    public private(set) var hasInput = false

    public mutating func push(_ samples: [Int16]) -> [Float] {
        if !samples.isEmpty { hasInput = true }
        let kept = trim.push(samples)
        if kept.isEmpty { return [] }
        return resample.push(kept.map { Float($0) / 32768 })
    }

    public mutating func finish() -> [Float] { resample.finish() }

    /// The whole-utterance path the streamed one must equal: trim, convert, resample.
    public static func whole(_ samples: [Int16], resampler: Resampler) -> [Float] {
        let drop = SilenceTrim.leadingSilence(samples, rate: resampler.inputRate)
        return resampler.process(samples[drop...].map { Float($0) / 32768 })
    }
}
