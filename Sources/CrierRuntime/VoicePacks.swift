import CrierCore
import CrierMusicFile
import CrierPosix
import Glibc

/// The voice packs of `voice.pack.zh` / `voice.pack.en`, loaded once (docs/voice.md): what the
/// speech pipeline says from clips instead of espeak-ng.
public struct LoadedVoicePacks: Sendable {
    struct Entry: Sendable {
        var path: String
        var pack: VoicePack
        var planner: SplicePlanner
        /// From the pack's rate to the device's, built once.
        var resampler: Resampler
    }

    var byLang: [Lang: Entry] = [:]
    let log: Logger

    public var isEmpty: Bool { byLang.isEmpty }

    /// Loads each language's pack from where `voice.pack.<lang>` says (`VoicePackPlaces`: auto
    /// looks on the boot partition, then in the image); one log line per language says which
    /// folder and why, each load problem is one more line, and the rest of a pack is used.
    public static func load(config: CrierConfig, log: Logger) -> LoadedVoicePacks {
        var out = LoadedVoicePacks(log: log)
        let bases = VoicePackPlaces.bases(environment: getenv(VoicePackPlaces.testBasesVariable).map { String(cString: $0) })
        for lang in Lang.allCases {
            let setting = config.voicePacks.setting(lang)
            let inventory = VoiceInventory.clips(lang: lang, templates: config.templates)
            let r = VoicePackPlaces.resolve(setting, lang: lang, bases: bases) { path -> VoicePackPlaces.Probe<VoicePack> in
                // auto: a folder that is not there is no problem to log.
                if setting == .auto, access(path, F_OK) != 0, errno == ENOENT { return .absent }
                let t0 = Monotonic.now()
                let r = VoicePackLoader.load(VoicePackFolder(path: path), inventory: inventory, lang: lang)
                let ms = (Monotonic.now() - t0) * 1000
                for p in r.problems {
                    if p.isFatal || p.losesClip { log.error("voice pack \(path): \(p.message)") } else { log.warning("voice pack \(path): \(p.message)") }
                }
                guard let pack = r.pack else { return .refused(r.problems.first { $0.isFatal }?.message ?? "not a pack") }
                log.info("voice pack loaded", ["pack": path, "name": pack.manifest.name, "lang": lang.rawValue, "clips": r.covered, "needed": r.needed,
                                               "mb": Format.fixed(Double(pack.bytes) / 1_048_576, 2), "ms": Format.fixed(ms, 0)])
                return .loaded(pack, covered: r.covered, needed: r.needed)
            }
            guard let path = r.path, let pack = r.pack else {
                if r.isProblem {
                    log.warning("voice pack not used; espeak-ng says everything in \(lang.rawValue); check voice.pack.\(lang.rawValue) in crier.conf", ["why": r.why])
                } else if setting == .auto {
                    log.info("no voice pack", ["lang": lang.rawValue, "why": r.why])
                }
                continue
            }
            log.info("voice pack chosen", ["lang": lang.rawValue, "pack": path, "why": r.why])
            out.byLang[lang] = Entry(path: path, pack: pack, planner: SplicePlanner(lang: lang, clips: pack.available(from: inventory)),
                                     resampler: Resampler(from: pack.manifest.rate, to: config.audio.rate))
        }
        // Decoding went through float buffers four times the size of the clips kept: hand the
        // freed heap back, so the daemon's RSS grows by about the clips' samples.
        if !out.byLang.isEmpty { trimHeap() }
        return out
    }

    /// glibc's malloc_trim(0), which Swift's Glibc module does not declare: found with dlsym
    /// (RTLD_DEFAULT is a null handle); skipped where the C library has none.
    static func trimHeap() {
        typealias Trim = @convention(c) (Int) -> Int32
        guard let sym = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "malloc_trim") else { return }
        _ = unsafeBitCast(sym, to: Trim.self)(0)
    }

    /// One part's clips: what `render` turns into samples.
    public struct PartPlan: Sendable {
        let entry: Entry
        let plan: SplicePlan
    }

    /// Every part's plan, or nil when a part's language has no pack or a part has words no clip
    /// covers: then espeak-ng says the whole alert (docs/voice.md, "Partial coverage"). Cheap
    /// (text only), so the choice is made before any sound. Logs the choice.
    public func plans(_ parts: [Utterance]) -> [PartPlan]? {
        let c = choose(parts)
        logChoice(c)
        return c.plans
    }

    /// The choice `plans` makes, not logged yet: the speech pipeline starts the sound first
    /// (espeak-ng or the first clip) and logs after, off the path to the first sample.
    public struct Choice: Sendable {
        public var plans: [PartPlan]?
        /// The part with words no clip covers, when a pack was asked and cannot say the alert.
        var missing: Utterance?
    }

    public func choose(_ parts: [Utterance]) -> Choice {
        guard !byLang.isEmpty, !parts.isEmpty else { return Choice() }
        var out: [PartPlan] = []
        for u in parts {
            guard let e = byLang[u.lang] else { return Choice() }
            // Stops at the first uncovered word; the whole list is made for the log, later.
            guard e.planner.covers(u.text) else { return Choice(plans: nil, missing: u) }
            out.append(PartPlan(entry: e, plan: e.planner.plan(u.text)))
        }
        return Choice(plans: out)
    }

    public func logChoice(_ c: Choice) {
        if let u = c.missing, let e = byLang[u.lang] {
            log.info("the voice pack has no clip for some words; espeak-ng says the whole text", ["missing": e.planner.plan(u.text).gaps.joined(separator: " | ")])
        } else if let plans = c.plans {
            log.info("said from voice pack clips", ["clips": plans.reduce(0) { $0 + $1.plan.clipNames.count }])
        }
    }

    func resampler(_ e: Entry, rate: Int) -> Resampler {
        e.resampler.outputRate == rate ? e.resampler : Resampler(from: e.pack.manifest.rate, to: rate)
    }

    /// One part's samples at `rate` (empty if the pack lost a clip since: not expected).
    public func render(_ p: PartPlan, rate: Int) -> [Float] {
        guard let (x, _) = VoiceSplicer.splice(p.plan, pack: p.entry.pack) else { return [] }
        return resampler(p.entry, rate: rate).process(x)
    }

    /// A part whose first 20 ms are resampled and the rest not yet spliced: the first sound goes
    /// into the clip before the whole part is spliced and resampled (`VoiceSplicer.head`: the
    /// first clip alone gives those 20 ms).
    public struct PartTail: Sendable {
        var stream: Resampler.Stream
        var part: PartPlan
        /// Samples of the spliced part already pushed (the head).
        var done: Int
    }

    public func start(_ p: PartPlan, rate: Int) -> (head: [Float], tail: PartTail) {
        var stream = Resampler.Stream(resampler(p.entry, rate: rate))
        let want = p.entry.pack.manifest.rate / 50
        let first = VoiceSplicer.head(p.plan, pack: p.entry.pack, count: want)
            ?? Array((VoiceSplicer.splice(p.plan, pack: p.entry.pack)?.samples ?? []).prefix(want))
        let head = stream.push(first)
        return (head, PartTail(stream: stream, part: p, done: first.count))
    }

    /// The rest of a part `start` began: with the head, exactly `render`'s samples.
    public func finish(_ t: inout PartTail) -> [Float] {
        let x = VoiceSplicer.splice(t.part.plan, pack: t.part.entry.pack)?.samples ?? []
        let out = t.stream.push(Array(x[min(t.done, x.count)...])) + t.stream.finish()
        t.done = x.count
        return out
    }

    /// Each part spliced and resampled to `rate`, or nil (see `plans`).
    public func splice(_ parts: [Utterance], rate: Int) -> [[Float]]? {
        plans(parts).map { $0.map { render($0, rate: rate) } }
    }
}
