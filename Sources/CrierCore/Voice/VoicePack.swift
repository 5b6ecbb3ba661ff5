/// A voice pack's `manifest`: `key = value` lines like crier.conf, `#` comments (docs/voice.md).
public struct VoicePackManifest: Sendable, Equatable {
    public var language: Lang
    public var name: String
    public var licence: String
    /// Every clip's sample rate, Hz.
    public var rate: Int

    public static let fileName = "manifest"
    public static let maxBytes = 16 * 1024
    public static let rates = 8000...48000

    public init(language: Lang, name: String, licence: String, rate: Int) {
        self.language = language
        self.name = name
        self.licence = licence
        self.rate = rate
    }

    /// The manifest, or every problem with it (line numbers, what to write instead).
    public static func parse(_ text: String) -> Result<VoicePackManifest, VoicePackProblem> {
        var values: [String: String] = [:]
        var problems: [String] = []
        for (i, raw) in text.split(omittingEmptySubsequences: false, whereSeparator: { $0 == "\n" || $0 == "\r\n" }).enumerated() {
            var line = Substring(raw)
            if line.last == "\r" { line = line.dropLast() }
            let trimmed = String(line).trimmingSpaces
            if trimmed.isEmpty || trimmed.hasPrefix("#") { continue }
            guard let eq = trimmed.firstIndex(of: "=") else {
                problems.append("line \(i + 1): expected `key = value`")
                continue
            }
            let key = String(trimmed[..<eq]).trimmingSpaces
            let value = String(trimmed[trimmed.index(after: eq)...]).trimmingSpaces
            guard ["language", "name", "licence", "rate"].contains(key) else {
                problems.append("line \(i + 1): unknown key \"\(ConfigValue.short(key))\" (keys: language, name, licence, rate)")
                continue
            }
            if values[key] != nil { problems.append("line \(i + 1): \(key) given twice") }
            values[key] = value
        }
        var lang: Lang?
        if let l = values["language"] {
            lang = Lang(rawValue: l)
            if lang == nil { problems.append("language is \"\(ConfigValue.short(l))\"; expected zh or en") }
        } else {
            problems.append("no language (language = zh or en)")
        }
        for k in ["name", "licence"] where (values[k] ?? "").isEmpty {
            problems.append("no \(k) (\(k) = …; the licence says who may ship the recordings)")
        }
        var rate: Int?
        if let r = values["rate"] {
            rate = Int(r)
            if rate == nil || !rates.contains(rate!) {
                problems.append("rate is \"\(ConfigValue.short(r))\"; expected the clips' sample rate in Hz, \(rates.lowerBound)-\(rates.upperBound)")
                rate = nil
            }
        } else {
            problems.append("no rate (rate = the clips' sample rate in Hz, e.g. 24000)")
        }
        guard problems.isEmpty, let lang, let rate else {
            return .failure(VoicePackProblem(.manifest, nil, "manifest: " + problems.joined(separator: "; ")))
        }
        return .success(VoicePackManifest(language: lang, name: values["name"]!, licence: values["licence"]!, rate: rate))
    }
}

/// One finding about a pack, precise enough to act on: which clip, what is wrong, what to do.
public struct VoicePackProblem: Error, Sendable, Equatable, CustomStringConvertible {
    public enum Kind: String, Sendable {
        // The pack cannot be used at all.
        case manifest, notAPack = "not_a_pack", tooManyFiles = "too_many_files", wrongLanguage = "wrong_language"
        // A clip cannot be used (espeak-ng says its words).
        case missing, broken, wrongRate = "wrong_rate", notMono = "not_mono", tooLong = "too_long", empty
        case overBudget = "over_budget", duplicate
        // The clip is used; a recording to look at.
        case clipping, quiet, level, extra
    }

    public var kind: Kind
    public var clip: String?
    public var message: String
    public var description: String { message }

    public init(_ kind: Kind, _ clip: String?, _ message: String) {
        self.kind = kind
        self.clip = clip
        self.message = message
    }

    /// The pack cannot be used at all.
    public var isFatal: Bool { [.manifest, .notAPack, .tooManyFiles, .wrongLanguage].contains(kind) }
    /// A clip the config needs is not in the pack's voice: its words go to espeak-ng.
    public var losesClip: Bool { [.missing, .broken, .wrongRate, .notMono, .tooLong, .empty, .overBudget].contains(kind) }
}

/// What a pack's folder holds, as the loader sees it: the adapter (libsndfile, the file system)
/// implements it; tests use an in-memory one.
public protocol VoicePackSource {
    /// The names of the files in the pack, at most `limit` of them; `more` when there are others.
    func entries(limit: Int) throws(VoicePackProblem) -> (names: [String], more: Bool)
    /// The manifest's text, at most `maxBytes` (longer: a `.manifest` problem).
    func manifest(maxBytes: Int) throws(VoicePackProblem) -> String
    /// A clip file decoded: its rate, channels, and at most `maxFrames` frames of interleaved
    /// samples in -1...1; `totalFrames` is the length the file declares (0: unknown).
    func decode(_ file: String, maxFrames: Int) throws(VoicePackProblem) -> DecodedAudio
}

public struct DecodedAudio: Sendable {
    public var rate: Int
    public var channels: Int
    public var samples: [Float]
    public var totalFrames: Int64
    public init(rate: Int, channels: Int, samples: [Float], totalFrames: Int64) {
        self.rate = rate
        self.channels = channels
        self.samples = samples
        self.totalFrames = totalFrames
    }
}

/// A loaded pack: the clips that passed, as mono 16-bit samples at the manifest's rate.
public struct VoicePack: Sendable {
    public var manifest: VoicePackManifest
    public var clips: [String: [Int16]]
    /// Levels measured at load, for `crier voice check`.
    public var levels: [String: ClipLevel]

    public var bytes: Int { clips.values.reduce(0) { $0 + $1.count * 2 } }
    /// The clips the pack can say, for `SplicePlanner`.
    public func available(from inventory: [VoiceClip]) -> [VoiceClip] { inventory.filter { clips[$0.name] != nil } }
}

public struct ClipLevel: Sendable, Equatable {
    public var seconds: Double
    /// dBFS of the highest sample and of the RMS over the samples above -50 dBFS (the voice, not
    /// the silence around it).
    public var peakDb: Double
    public var rmsDb: Double
    /// Samples at full scale (|x| ≥ 0.999) in runs of 3 or more: the recording clipped.
    public var clippedSamples: Int

    public static func measure(_ x: [Float], rate: Int) -> ClipLevel {
        var peak: Float = 0
        var sum = 0.0
        var n = 0
        var clipped = 0
        var run = 0
        let gate: Float = 0.00316  // -50 dBFS
        for v in x {
            let a = abs(v)
            peak = max(peak, a)
            if a > gate { sum += Double(a) * Double(a); n += 1 }
            if a >= 0.999 { run += 1; if run == 3 { clipped += 3 } else if run > 3 { clipped += 1 } } else { run = 0 }
        }
        func db(_ v: Double) -> Double { v > 0 ? Decibel.of(v) : -120 }
        return ClipLevel(seconds: Double(x.count) / Double(rate), peakDb: db(Double(peak)), rmsDb: n > 0 ? db((sum / Double(n)).squareRoot()) : -120,
                         clippedSamples: clipped)
    }
}

/// The rules of loading a pack (docs/voice.md, "Loading"): bounded in files, clip length and
/// memory; every clip that cannot be used is a problem that names it, and the rest load.
public enum VoicePackLoader {
    public struct Limits: Sendable {
        /// Files read from the folder; more and the pack is refused (a pack holds ~100-300).
        public var maxFiles = 4096
        /// One clip's length: a clip is a word or a phrase.
        public var maxClipSeconds = 10.0
        /// All clips' samples, mono 16-bit: 16 MB (~6 min at 22.05 kHz).
        public var maxBytes = 16 * 1024 * 1024
        public init() {}
    }

    public static let extensions = ["wav", "flac", "ogg"]

    public struct Result: Sendable {
        /// nil: the pack cannot be used (see `problems`).
        public var pack: VoicePack?
        public var problems: [VoicePackProblem]
        /// Inventory clips the pack says.
        public var covered: Int
        public var needed: Int
        /// The pack says everything the config needs, with no clip lost.
        public var canServe: Bool { pack != nil && covered == needed }
    }

    public static func load(_ source: some VoicePackSource, inventory: [VoiceClip], lang: Lang? = nil, limits: Limits = Limits()) -> Result {
        var problems: [VoicePackProblem] = []
        func refused(_ p: VoicePackProblem) -> Result { Result(pack: nil, problems: [p], covered: 0, needed: inventory.count) }
        let manifest: VoicePackManifest
        do throws(VoicePackProblem) {
            switch VoicePackManifest.parse(try source.manifest(maxBytes: VoicePackManifest.maxBytes)) {
            case .success(let m): manifest = m
            case .failure(let p): return refused(p)
            }
        } catch {
            return refused(error)
        }
        if let lang, manifest.language != lang {
            return refused(VoicePackProblem(.wrongLanguage, nil, "the pack's language is \(manifest.language.rawValue), not \(lang.rawValue); use it for voice.pack.\(manifest.language.rawValue)"))
        }
        let listing: (names: [String], more: Bool)
        do throws(VoicePackProblem) {
            listing = try source.entries(limit: limits.maxFiles)
        } catch {
            return refused(error)
        }
        if listing.more {
            return refused(VoicePackProblem(.tooManyFiles, nil, "the pack has more than \(limits.maxFiles) files; a pack holds one file per clip (`crier voice clips` lists them, a few hundred); refused without reading further"))
        }
        // Clip name → its files, in the order wav, flac, ogg.
        var files: [String: [String]] = [:]
        for f in listing.names {
            guard let dot = f.lastIndex(of: "."), case let ext = f[f.index(after: dot)...].lowercased(), extensions.contains(ext) else { continue }
            files[String(f[..<dot]), default: []].append(f)
        }
        let needed = Set(inventory.map(\.name))
        for name in files.keys.sorted() where !needed.contains(name) {
            problems.append(VoicePackProblem(.extra, name, "\(files[name]![0]): no clip of that name is needed (a misspelt name, or a template the config no longer has); not loaded"))
        }
        var pack = VoicePack(manifest: manifest, clips: [:], levels: [:])
        let maxFrames = Int(limits.maxClipSeconds * Double(manifest.rate))
        var bytes = 0
        for clip in inventory {
            guard var list = files[clip.name] else {
                problems.append(VoicePackProblem(.missing, clip.name, "\(clip.name): missing (no \(clip.name).wav, .flac or .ogg); record \"\(clip.text)\"; espeak-ng says it meanwhile"))
                continue
            }
            list.sort { rank($0) < rank($1) }
            if list.count > 1 {
                problems.append(VoicePackProblem(.duplicate, clip.name, "\(clip.name): \(list.count) recordings (\(list.joined(separator: ", "))); using \(list[0]), remove the others"))
            }
            let file = list[0]
            let audio: DecodedAudio
            do throws(VoicePackProblem) {
                audio = try source.decode(file, maxFrames: maxFrames + 1)
            } catch {
                problems.append(VoicePackProblem(.broken, clip.name, "\(file): \(error.message); espeak-ng says \"\(clip.text)\""))
                continue
            }
            let frames = audio.channels > 0 ? audio.samples.count / audio.channels : 0
            let declared = max(Int64(frames), audio.totalFrames)
            if audio.rate != manifest.rate {
                problems.append(VoicePackProblem(.wrongRate, clip.name, "\(file): \(audio.rate) Hz, the manifest says \(manifest.rate) Hz; resample it (every clip at one rate); espeak-ng says \"\(clip.text)\""))
                continue
            }
            if audio.channels != 1 {
                problems.append(VoicePackProblem(.notMono, clip.name, "\(file): \(audio.channels) channels; a clip is mono; espeak-ng says \"\(clip.text)\""))
                continue
            }
            if declared > Int64(maxFrames) {
                let s = Double(declared) / Double(audio.rate)
                problems.append(VoicePackProblem(.tooLong, clip.name, "\(file): \(s < 60 ? Format.fixed(s, 1) + " s" : Format.fixed(s / 60, 1) + " min") long, a clip is at most \(ConfigValue.fmt(limits.maxClipSeconds)) s (one word or phrase); not loaded; espeak-ng says \"\(clip.text)\""))
                continue
            }
            if frames == 0 {
                problems.append(VoicePackProblem(.empty, clip.name, "\(file): no audio in it; espeak-ng says \"\(clip.text)\""))
                continue
            }
            if bytes + frames * 2 > limits.maxBytes {
                problems.append(VoicePackProblem(.overBudget, clip.name, "\(file): the pack's clips exceed \(limits.maxBytes / (1024 * 1024)) MB of audio (16-bit mono at \(manifest.rate) Hz); not loaded; trim silence or lower the rate"))
                continue
            }
            bytes += frames * 2
            let level = ClipLevel.measure(audio.samples, rate: audio.rate)
            if level.clippedSamples > 0 {
                problems.append(VoicePackProblem(.clipping, clip.name, "\(file): \(level.clippedSamples) samples at full scale (the recording clipped); record it again lower"))
            }
            if level.peakDb < -30 {
                problems.append(VoicePackProblem(.quiet, clip.name, "\(file): peak \(Format.fixed(level.peakDb, 1)) dBFS, nearly silent; is it the right file?"))
            }
            pack.levels[clip.name] = level
            pack.clips[clip.name] = audio.samples.map { Int16(max(-32767, min(32767, ($0 * 32767).rounded()))) }
        }
        // Level: a clip far louder or softer than the pack's median jumps out in a sentence.
        let rms = pack.levels.values.filter { $0.peakDb >= -30 }.map(\.rmsDb).sorted()
        if rms.count >= 3 {
            let median = rms[rms.count / 2]
            for (name, l) in pack.levels.sorted(by: { $0.key < $1.key }) where l.peakDb >= -30 && abs(l.rmsDb - median) > 6 {
                problems.append(VoicePackProblem(.level, name, "\(name): level \(Format.fixed(l.rmsDb, 1)) dBFS RMS, \(Format.fixed(abs(l.rmsDb - median), 1)) dB \(l.rmsDb > median ? "louder" : "softer") than the pack's median \(Format.fixed(median, 1)) dBFS; match it"))
            }
        }
        return Result(pack: pack, problems: problems, covered: pack.clips.count, needed: inventory.count)
    }

    static func rank(_ file: String) -> Int {
        let ext = file.split(separator: ".").last.map { $0.lowercased() } ?? ""
        return extensions.firstIndex(of: ext) ?? extensions.count
    }
}
