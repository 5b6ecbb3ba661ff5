import CrierCore
import CrierLoudness
import CrierMusicFile
import CrierPosix

/// `crier voice …`: the tools for recorded-clip voice packs (docs/voice.md).
public enum VoiceCommand {
    /// `crier voice clips`: the recording script, `NAME<TAB>TEXT` per line, for the templates of
    /// the config (default config when none is given) and every word SpokenText's rules can say.
    public static func clips(configPath: String?, lang: Lang) -> Int32 {
        let loaded: ConfigLoader.Loaded
        do {
            loaded = try ConfigLoader.load(path: configPath ?? CrierConfig.defaultPath, required: configPath != nil)
        } catch {
            FileIO.stderr("crier voice clips: \(error)\n")
            return ExitCode.failure
        }
        for d in loaded.diagnostics {
            FileIO.stderr("crier voice clips: \(d.severity == .error ? "error" : "warning"): \(LogRecord.escape(d.description))\n")
        }
        var out = ""
        for c in VoiceInventory.clips(lang: lang, templates: loaded.config.templates) {
            out += c.name + "\t" + c.text + "\n"
        }
        print(out, terminator: "")
        return ExitCode.ok
    }
}

extension VoiceCommand {
    /// `crier voice check PACK`: the pack against the config's inventory. Prints the manifest,
    /// the coverage, every problem (error: a clip lost or the pack refused; warning: a clip to
    /// look at) and the levels. Exit 1 when the pack cannot serve the config alone.
    public static func check(pack path: String, configPath: String?, lang: Lang?) -> Int32 {
        let loaded: ConfigLoader.Loaded
        do {
            loaded = try ConfigLoader.load(path: configPath ?? CrierConfig.defaultPath, required: configPath != nil)
        } catch {
            FileIO.stderr("crier voice check: \(error)\n")
            return ExitCode.failure
        }
        let folder = VoicePackFolder(path: path)
        // The inventory is per language: the manifest's, unless --lang asks for one.
        var language = lang
        if language == nil, let text = try? folder.manifest(maxBytes: VoicePackManifest.maxBytes),
           case .success(let m) = VoicePackManifest.parse(text) {
            language = m.language
        }
        let inventory = VoiceInventory.clips(lang: language ?? .zh, templates: loaded.config.templates)
        let t0 = Monotonic.now()
        let r = VoicePackLoader.load(folder, inventory: inventory, lang: lang)
        let ms = (Monotonic.now() - t0) * 1000
        var out = ""
        func line(_ s: String) { out += LogRecord.escape(s) + "\n" }
        guard let pack = r.pack else {
            for p in r.problems { line("error: \(p.message)") }
            line("\(path): not a usable voice pack")
            print(out, terminator: "")
            return ExitCode.failure
        }
        let m = pack.manifest
        line("pack: \(path)")
        line("name: \(m.name); language: \(m.language.rawValue); licence: \(m.licence); rate: \(m.rate) Hz")
        line("coverage: \(r.covered) of \(r.needed) clips (`crier voice clips --lang \(m.language.rawValue)`)")
        for p in r.problems where p.losesClip { line("error: \(p.message)") }
        for p in r.problems where !p.losesClip { line("warning: \(p.message)") }
        let levels = pack.levels.values
        if !levels.isEmpty {
            let rms = levels.map(\.rmsDb).sorted()
            let longest = pack.levels.max { $0.value.seconds < $1.value.seconds }!
            line("level: RMS \(Format.fixed(rms.first!, 1))…\(Format.fixed(rms.last!, 1)) dBFS (median \(Format.fixed(rms[rms.count / 2], 1))), "
                + "peak max \(Format.fixed(levels.map(\.peakDb).max()!, 1)) dBFS; longest clip \(longest.key) \(Format.fixed(longest.value.seconds, 2)) s; "
                + "\(Format.fixed(Double(pack.bytes) / 1_048_576, 2)) MB loaded in \(Format.fixed(ms, 0)) ms")
        }
        let clips = measure(pack)
        for c in clips.sorted(by: { $0.name < $1.name }) {
            line("clip \(c.name): \(c.lufs.isFinite ? Format.fixed(c.lufs, 1) : "-inf") LUFS, true peak \(Format.fixed(VoiceBuild.db(c.truePeak), 1)) dBTP, \(Format.fixed(c.seconds, 2)) s")
        }
        for p in VoiceLoudnessCheck.findings(clips) { line("warning: \(p.message)") }
        if let s = VoiceLoudnessCheck.summary(clips) {
            line("loudness: \(Format.fixed(s.minLUFS, 1))…\(Format.fixed(s.maxLUFS, 1)) LUFS (spread \(Format.fixed(s.spread, 1)) LU, median \(Format.fixed(s.medianLUFS, 1))), true peak max \(Format.fixed(s.maxTruePeakDb, 1)) dBTP")
        }
        if r.canServe {
            line("ok: the pack says every clip the config needs")
            print(out, terminator: "")
            return ExitCode.ok
        }
        let lost = r.needed - r.covered
        line("the pack cannot serve alone: \(lost) clip\(lost == 1 ? "" : "s") missing or unusable; espeak-ng would say \(lost == 1 ? "its" : "their") words")
        print(out, terminator: "")
        return ExitCode.failure
    }
}

extension VoiceCommand {
    /// Each loaded clip's EBU R128 loudness, true peak and silent margins (libebur128).
    static func measure(_ pack: VoicePack) -> [VoiceLoudnessCheck.Clip] {
        let rate = pack.manifest.rate
        return pack.clips.map { name, samples in
            let x = samples.map { Float($0) / 32767 }
            let m = try? LoudnessMeter.measure(VoiceBuild.measurable(x, rate: rate), rate: rate)
            let range = VoiceBuild.trim(x, rate: rate).range
            // The trim keeps margins of its own; silence is what lies beyond the voice's window.
            let lead = range.map { Double(max(0, $0.lowerBound + Int(VoiceBuild.leadMs * Double(rate) / 1000) - Int(VoiceBuild.windowMs * Double(rate) / 1000))) } ?? 0
            let tail = range.map { Double(max(0, x.count - $0.upperBound + Int(VoiceBuild.tailMs * Double(rate) / 1000) - Int(VoiceBuild.windowMs * Double(rate) / 1000))) } ?? 0
            return VoiceLoudnessCheck.Clip(name: name, lufs: m?.integrated ?? -.infinity, truePeak: m?.truePeak ?? 0, seconds: Double(x.count) / Double(rate),
                                           leadSeconds: lead / Double(rate), tailSeconds: tail / Double(rate))
        }
    }

    /// `crier voice build`: recordings → a pack, then the pack checked as `crier voice check` does.
    public static func build(_ o: VoicePackBuilder.Options) -> Int32 {
        let loaded: ConfigLoader.Loaded
        do {
            loaded = try ConfigLoader.load(path: o.configPath ?? CrierConfig.defaultPath, required: o.configPath != nil)
        } catch {
            FileIO.stderr("crier voice build: \(error)\n")
            return ExitCode.failure
        }
        let inventory = VoiceInventory.clips(lang: o.lang, templates: loaded.config.templates)
        let t0 = Monotonic.now()
        let r = VoicePackBuilder.build(o, inventory: inventory) { _ in }
        let errors = r.problems.filter { $0.kind != .level }
        for p in r.problems { FileIO.stderr("crier voice build: \(p.kind == .level ? "warning" : "error"): \(LogRecord.escape(p.message))\n") }
        guard errors.isEmpty else {
            FileIO.stderr("crier voice build: \(errors.count) problem\(errors.count == 1 ? "" : "s") in \(o.from); nothing written to \(o.output)\n")
            return ExitCode.failure
        }
        let src = r.clips.map(\.sourceLUFS).sorted()
        let limited = r.clips.filter { $0.limitedBy > 0 }
        print("built \(o.output): \(r.clips.count) clips, \(o.rate) Hz, in \(Format.fixed(Monotonic.now() - t0, 1)) s; recordings at "
            + (src.isEmpty ? "-" : "\(Format.fixed(src.first!, 1))…\(Format.fixed(src.last!, 1)) LUFS (spread \(Format.fixed(src.last! - src.first!, 1)) LU)")
            + ", brought to \(Format.fixed(VoiceBuild.targetLUFS, 0)) LUFS"
            + (limited.isEmpty ? "" : "; peaks of \(limited.count) limited to \(Format.fixed(VoiceBuild.peakCeilingDBTP, 0)) dBTP (deepest cut \(Format.fixed(limited.map(\.limitedBy).max()!, 1)) dB)"))
        return check(pack: o.output, configPath: o.configPath, lang: o.lang)
    }
}
