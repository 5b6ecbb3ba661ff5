import CrierCore
import CrierMusicFile
import CrierPosix

/// The voice packs of `voice.pack.zh` / `voice.pack.en`, loaded once (docs/voice.md): what the
/// speech pipeline says from clips instead of espeak-ng.
public struct LoadedVoicePacks: Sendable {
    struct Entry: Sendable {
        var path: String
        var pack: VoicePack
        var planner: SplicePlanner
    }

    var byLang: [Lang: Entry] = [:]
    let log: Logger

    public var isEmpty: Bool { byLang.isEmpty }

    /// Loads every configured pack; each problem is one log line and the rest of the pack is used.
    public static func load(config: CrierConfig, log: Logger) -> LoadedVoicePacks {
        var out = LoadedVoicePacks(log: log)
        for lang in Lang.allCases {
            guard let path = config.voicePacks.path[lang] else { continue }
            let inventory = VoiceInventory.clips(lang: lang, templates: config.templates)
            let t0 = Monotonic.now()
            let r = VoicePackLoader.load(VoicePackFolder(path: path), inventory: inventory, lang: lang)
            let ms = (Monotonic.now() - t0) * 1000
            for p in r.problems {
                if p.isFatal || p.losesClip { log.error("voice pack \(path): \(p.message)") } else { log.warning("voice pack \(path): \(p.message)") }
            }
            guard let pack = r.pack else {
                log.warning("voice pack not used; espeak-ng says everything in \(lang.rawValue); check voice.pack.\(lang.rawValue) in crier.conf", ["pack": path])
                continue
            }
            log.info("voice pack loaded", ["pack": path, "name": pack.manifest.name, "lang": lang.rawValue, "clips": r.covered, "needed": r.needed,
                                           "mb": Format.fixed(Double(pack.bytes) / 1_048_576, 2), "ms": Format.fixed(ms, 0)])
            out.byLang[lang] = Entry(path: path, pack: pack, planner: SplicePlanner(lang: lang, clips: pack.available(from: inventory)))
        }
        return out
    }

    /// One part's clips: what `render` turns into samples.
    public struct PartPlan: Sendable {
        let entry: Entry
        let plan: SplicePlan
    }

    /// Every part's plan, or nil when a part's language has no pack or a part has words no clip
    /// covers: then espeak-ng says the whole alert (docs/voice.md, "Partial coverage"). Cheap
    /// (text only), so the choice is made before any sound.
    public func plans(_ parts: [Utterance]) -> [PartPlan]? {
        guard !byLang.isEmpty, !parts.isEmpty else { return nil }
        var out: [PartPlan] = []
        for u in parts {
            guard let e = byLang[u.lang] else { return nil }
            let plan = e.planner.plan(u.text)
            guard plan.covered else {
                log.info("the voice pack has no clip for some words; espeak-ng says the whole text", ["missing": plan.gaps.joined(separator: " | ")])
                return nil
            }
            out.append(PartPlan(entry: e, plan: plan))
        }
        log.info("said from voice pack clips", ["clips": out.reduce(0) { $0 + $1.plan.clipNames.count }])
        return out
    }

    /// One part's samples at `rate` (empty if the pack lost a clip since: not expected).
    public func render(_ p: PartPlan, rate: Int) -> [Float] {
        guard let (x, _) = VoiceSplicer.splice(p.plan, pack: p.entry.pack) else { return [] }
        return Resampler(from: p.entry.pack.manifest.rate, to: rate).process(x)
    }

    /// Each part spliced and resampled to `rate`, or nil (see `plans`).
    public func splice(_ parts: [Utterance], rate: Int) -> [[Float]]? {
        plans(parts).map { $0.map { render($0, rate: rate) } }
    }
}
