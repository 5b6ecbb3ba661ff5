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
