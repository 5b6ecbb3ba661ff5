/// Joins a pack's clips into one utterance (docs/voice.md, "Splicing"): clips said one after the
/// other overlap by a 5 ms linear crossfade, so no join clicks; a pause at punctuation is
/// silence, with a 5 ms fade out before it and in after it; the utterance fades in and out over
/// 5 ms. The result is mono at the pack's rate, like espeak-ng's output before the pipeline
/// resamples it.
public enum VoiceSplicer {
    public static let crossfadeMs = 5

    /// The spliced samples and where each clip starts in them, or nil when the plan has a gap
    /// (words no clip covers) or names a clip the pack lacks: such an alert is said by espeak-ng
    /// whole in this version (docs/voice.md, "Partial coverage").
    public static func splice(_ plan: SplicePlan, pack: VoicePack) -> (samples: [Float], starts: [Int])? {
        guard plan.covered else { return nil }
        let n = max(1, pack.manifest.rate * crossfadeMs / 1000)
        var out: [Float] = []
        var starts: [Int] = []
        // Whether the last thing appended was a clip the next one joins (no pause between).
        var joinable = false
        var pending = 0
        for step in plan.steps {
            switch step {
            case .gap:
                return nil
            case .pause(let ms, _):
                if ms > 0, !out.isEmpty {
                    if joinable { fadeOut(&out, n) }
                    pending += pack.manifest.rate * ms / 1000
                    joinable = false
                }
            case .clip(let name, _):
                guard let pcm = pack.clips[name], !pcm.isEmpty else { return nil }
                var s = pcm.map { Float($0) / 32767 }
                if pending > 0 {
                    out += [Float](repeating: 0, count: pending)
                    pending = 0
                }
                if joinable {
                    // Crossfade: the tail of what is there fades out while the clip fades in.
                    let k = min(n, out.count, s.count)
                    let base = out.count - k
                    starts.append(base)
                    for i in 0..<k {
                        let w = Float(i + 1) / Float(k + 1)
                        out[base + i] = out[base + i] * (1 - w) + s[i] * w
                    }
                    out += s[k...]
                } else {
                    fadeIn(&s, n)
                    starts.append(out.count)
                    out += s
                }
                joinable = true
            }
        }
        if joinable { fadeOut(&out, n) }
        // A pause at the end is kept: it is the rest before the next alert, as espeak-ng keeps it.
        out += [Float](repeating: 0, count: pending)
        return (out, starts)
    }

    /// The first `count` samples of `splice(plan, pack:)` without splicing the rest: they are
    /// the first clip faded in, since everything after only touches the last crossfade's worth
    /// of what is there. nil when the first clip is too short for that (then splice it all).
    /// The first sound of a long alert goes out without waiting for the whole part's splice.
    public static func head(_ plan: SplicePlan, pack: VoicePack, count: Int) -> [Float]? {
        guard plan.covered else { return nil }
        let n = max(1, pack.manifest.rate * crossfadeMs / 1000)
        for step in plan.steps {
            switch step {
            case .gap: return nil
            case .pause: continue  // a pause before the first clip is dropped
            case .clip(let name, _):
                guard let pcm = pack.clips[name], pcm.count - n >= count else { return nil }
                var s = pcm[0..<count].map { Float($0) / 32767 }
                // The same fade-in as `splice` (over min(n, clip) samples), cut to `count`.
                let k = min(n, pcm.count)
                for i in 0..<min(k, count) { s[i] *= Float(i + 1) / Float(k + 1) }
                return s
            }
        }
        return nil
    }

    static func fadeIn(_ x: inout [Float], _ n: Int) {
        let k = min(n, x.count)
        for i in 0..<k { x[i] *= Float(i + 1) / Float(k + 1) }
    }

    static func fadeOut(_ x: inout [Float], _ n: Int) {
        let k = min(n, x.count)
        let base = x.count - k
        for i in 0..<k { x[base + i] *= Float(k - i) / Float(k + 1) }
    }
}
