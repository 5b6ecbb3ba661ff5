/// The rules of `crier voice build` (docs/voice.md, "Building a pack"): which recordings make a
/// pack, how silence is trimmed, how each clip's gain is chosen. The file I/O, libebur128 and
/// libsoxr are the adapters'; this holds only the decisions, tested on synthetic signals.
public enum VoiceBuild {
    /// Loudness every clip is brought to: integrated, EBU R128 (ITU-R BS.1770-4).
    public static let targetLUFS = -20.0
    /// No clip's true peak above this after the gain: a clip never clips, even resampled.
    public static let peakCeilingDBTP = -1.0
    /// A built clip within this of the target passes `crier voice check` (the issue's 1 LU).
    public static let toleranceLU = 1.0
    /// A recording longer than this is refused before decoding the rest (a word or phrase with
    /// the silence around it; 10 minutes is a wrong file).
    public static let maxRecordingSeconds = 30.0
    /// Silence trim: 10 ms windows; a window is voice when its RMS is at least this far above
    /// digital silence and within `relativeDb` of the recording's loudest window.
    public static let windowMs = 10.0
    public static let absoluteDb = -55.0
    public static let relativeDb = -40.0
    /// Kept around the voice: before the first voiced window (a soft onset) and after the last
    /// (a consonant's or the room's decay).
    public static let leadMs = 20.0
    public static let tailMs = 40.0
    /// Loudness needs 400 ms gating blocks; a shorter clip (most words are 0.2-0.5 s) is measured
    /// repeated end to end up to this length, which keeps its mean square and its gating.
    public static let measureSeconds = 3.0

    /// 20·log10(v) without Foundation; -infinity for 0.
    public static func db(_ v: Double) -> Double { Decibel.of(v) }

    /// What to keep of a mono recording: the voice and its margins, or nil when no window is
    /// above `absoluteDb` (silence only); `loudestDb` is the loudest window's RMS either way.
    public static func trim(_ x: [Float], rate: Int) -> (range: Range<Int>?, loudestDb: Double) {
        let w = max(1, Int(Double(rate) * windowMs / 1000))
        var rms: [Double] = []
        rms.reserveCapacity(x.count / w + 1)
        var i = 0
        while i < x.count {
            let end = min(x.count, i + w)
            var s = 0.0
            for k in i..<end { s += Double(x[k]) * Double(x[k]) }
            rms.append(db((s / Double(end - i)).squareRoot()))
            i = end
        }
        let loudest = rms.max() ?? -.infinity
        guard loudest >= absoluteDb else { return (nil, loudest) }
        let gate = max(absoluteDb, loudest + relativeDb)
        let first = rms.firstIndex { $0 >= gate }!
        let last = rms.lastIndex { $0 >= gate }!
        let lo = max(0, first * w - Int(Double(rate) * leadMs / 1000))
        let hi = min(x.count, (last + 1) * w + Int(Double(rate) * tailMs / 1000))
        return (lo..<hi, loudest)
    }

    /// The signal whose integrated loudness stands for the clip's: the clip itself when it is at
    /// least `measureSeconds` long, else the clip repeated end to end up to that length.
    public static func measurable(_ x: [Float], rate: Int) -> [Float] {
        let want = Int(measureSeconds * Double(rate))
        guard !x.isEmpty, x.count < want else { return x }
        var out: [Float] = []
        out.reserveCapacity(want + x.count)
        while out.count < want { out += x }
        return out
    }

    /// The gain (dB) that brings a clip measured at `loudness` LUFS with `truePeak` (linear) to
    /// the target, lowered where the true peak would pass the ceiling; `limited` says by how
    /// many dB the ceiling kept it under the target (0: at the target).
    public static func gain(loudness: Double, truePeak: Double) -> (db: Double, limitedBy: Double) {
        guard loudness.isFinite, truePeak > 0 else { return (0, 0) }
        let want = targetLUFS - loudness
        let room = peakCeilingDBTP - db(truePeak)
        return want <= room ? (want, 0) : (room, want - room)
    }

    /// The peak limiter's attack and release: the gain is down 3 ms before a peak and comes back
    /// over 3 ms after it (inaudible on speech; a plain gain cut would leave the whole clip soft).
    public static let limiterMs = 3.0

    /// `x` with every sample at most `ceiling` (linear): around each sample above it the gain is
    /// lowered to what that sample needs, held over ±`limiterMs` and smoothed over `limiterMs`,
    /// so the gain at each such sample is at most what it needs. `reductionDb` is the deepest cut.
    public static func limit(_ x: [Float], ceiling: Float, rate: Int) -> (samples: [Float], reductionDb: Double) {
        let h = max(1, Int(Double(rate) * limiterMs / 1000))
        var g = [Float](repeating: 1, count: x.count)
        var any = false
        for i in x.indices where abs(x[i]) > ceiling {
            any = true
            let need = ceiling / abs(x[i])
            for j in max(0, i - h)...min(x.count - 1, i + h) where g[j] > need { g[j] = need }
        }
        guard any else { return (x, 0) }
        // Moving average over h+1 samples centred on each: at a sample that needed a cut every
        // sample averaged lies within ±h/2 of it, inside the held cut, so it stays cut enough.
        let half = h / 2
        var prefix = [Double](repeating: 0, count: x.count + 1)
        for i in x.indices { prefix[i + 1] = prefix[i] + Double(g[i]) }
        var out = x
        var deepest: Float = 1
        for i in x.indices {
            let lo = max(0, i - half), hi = min(x.count, i + half + 1)
            let gi = min(g[i], Float((prefix[hi] - prefix[lo]) / Double(hi - lo)))
            deepest = min(deepest, gi)
            out[i] = x[i] * gi
        }
        return (out, -db(Double(deepest)))
    }

    /// A clip brought to `targetLUFS` with its true peak at most `peakCeilingDBTP`: gain, then the
    /// limiter on what passes the ceiling, measured again (`measure`: integrated LUFS and true
    /// peak, libebur128 in the adapter) and corrected, at most 6 rounds. `offTarget` is how far
    /// it ended from the target (LU, + louder), `limitedDb` the deepest limiter cut.
    public static func level(_ x: [Float], rate: Int, measure: ([Float]) -> (lufs: Double, truePeak: Double))
        -> (samples: [Float], sourceLUFS: Double, gainDb: Double, offTarget: Double, limitedDb: Double, truePeakDb: Double) {
        let first = measure(measurable(x, rate: rate))
        guard first.lufs.isFinite else { return (x, first.lufs, 0, .infinity, 0, db(first.truePeak)) }
        var gainDb = targetLUFS - first.lufs
        // Sample ceiling a little under the true-peak ceiling: the peaks between samples.
        var margin = 0.5
        var best: (samples: [Float], sourceLUFS: Double, gainDb: Double, offTarget: Double, limitedDb: Double, truePeakDb: Double)?
        for _ in 0..<6 {
            let k = Float(Decibel.gain(gainDb))
            let (y, cut) = limit(x.map { $0 * k }, ceiling: Float(Decibel.gain(peakCeilingDBTP - margin)), rate: rate)
            let m = measure(measurable(y, rate: rate))
            let tp = db(m.truePeak)
            let r = (y, first.lufs, gainDb, m.lufs - targetLUFS, cut, tp)
            if tp <= peakCeilingDBTP + 0.05 && (best == nil || abs(r.3) < abs(best!.offTarget)) { best = r }
            if tp <= peakCeilingDBTP + 0.05 && abs(m.lufs - targetLUFS) <= 0.1 { break }
            if tp > peakCeilingDBTP + 0.05 { margin += tp - peakCeilingDBTP + 0.1 }
            gainDb += targetLUFS - m.lufs
        }
        if let best { return best }
        // Never over the ceiling: fall back to a plain gain cut.
        let g = gain(loudness: first.lufs, truePeak: first.truePeak)
        let k = Float(Decibel.gain(g.db))
        return (x.map { $0 * k }, first.lufs, g.db, -g.limitedBy, 0, db(first.truePeak) + g.db)
    }

    /// One recording of the input folder, as the adapter found it.
    public struct Recording: Sendable, Equatable {
        public var file: String
        public var rate: Int
        public var channels: Int
        /// Frames the file declares (or decoded).
        public var frames: Int64
        public init(file: String, rate: Int, channels: Int, frames: Int64) {
            self.file = file
            self.rate = rate
            self.channels = channels
            self.frames = frames
        }
    }

    public static let extensions = ["wav", "flac"]

    /// Which file records which clip, and every problem with the folder as a whole: missing
    /// clips, names no clip has (a misspelling), two recordings of one clip.
    public static func match(files: [String], inventory: [VoiceClip]) -> (files: [String: String], problems: [VoicePackProblem]) {
        var byName: [String: [String]] = [:]
        for f in files {
            guard let dot = f.lastIndex(of: "."), case let ext = f[f.index(after: dot)...].lowercased(), extensions.contains(ext) else { continue }
            byName[String(f[..<dot]), default: []].append(f)
        }
        var problems: [VoicePackProblem] = []
        let needed = Set(inventory.map(\.name))
        for name in byName.keys.sorted() where !needed.contains(name) {
            problems.append(VoicePackProblem(.extra, name, "\(byName[name]![0]): no clip is called \(name) (`crier voice clips` lists the names); rename or remove it"))
        }
        var out: [String: String] = [:]
        for clip in inventory {
            guard let list = byName[clip.name]?.sorted() else {
                problems.append(VoicePackProblem(.missing, clip.name, "\(clip.name): no recording (\(clip.name).wav or .flac); record \"\(clip.text)\""))
                continue
            }
            if list.count > 1 {
                problems.append(VoicePackProblem(.duplicate, clip.name, "\(clip.name): \(list.count) recordings (\(list.joined(separator: ", "))); keep one"))
                continue
            }
            out[clip.name] = list[0]
        }
        return (out, problems)
    }

    /// What is wrong with one recording before its samples are used, or nil.
    public static func check(_ r: Recording, clip: VoiceClip) -> VoicePackProblem? {
        if r.channels != 1 {
            return VoicePackProblem(.notMono, clip.name, "\(r.file): \(r.channels) channels; record mono (or export one channel)")
        }
        let s = Double(r.frames) / Double(r.rate)
        if s > maxRecordingSeconds {
            return VoicePackProblem(.tooLong, clip.name, "\(r.file): \(s < 60 ? Format.fixed(s, 1) + " s" : Format.fixed(s / 60, 1) + " min") long; a recording is one word or phrase (\"\(clip.text)\"), at most \(Int(maxRecordingSeconds)) s with its silence")
        }
        if r.frames == 0 {
            return VoicePackProblem(.empty, clip.name, "\(r.file): no audio in it; record \"\(clip.text)\"")
        }
        return nil
    }

    /// What is wrong with a trimmed recording, or nil: silence only, or more than the loader's
    /// 10 s once trimmed.
    public static func checkTrimmed(file: String, clip: VoiceClip, range: Range<Int>?, loudestDb: Double, rate: Int) -> VoicePackProblem? {
        guard let range else {
            return VoicePackProblem(.quiet, clip.name, "\(file): silence only (loudest 10 ms at \(loudestDb.isFinite ? Format.fixed(loudestDb, 1) + " dBFS" : "digital silence"), voice starts at \(Int(absoluteDb)) dBFS); is it the right file, was the microphone on?")
        }
        let s = Double(range.count) / Double(rate)
        if s > VoicePackLoader.Limits().maxClipSeconds {
            return VoicePackProblem(.tooLong, clip.name, "\(file): \(Format.fixed(s, 1)) s of voice after trimming; a clip is at most \(ConfigValue.fmt(VoicePackLoader.Limits().maxClipSeconds)) s (one word or phrase: \"\(clip.text)\")")
        }
        return nil
    }

    /// The manifest `crier voice build` writes.
    public static func manifest(_ m: VoicePackManifest, source: String) -> String {
        "# Built by `crier voice build`: \(source.replacingNewlines)\n"
            + "# every clip trimmed, at \(Format.fixed(targetLUFS, 0)) LUFS (true peak at most \(Format.fixed(peakCeilingDBTP, 0)) dBTP), \(m.rate) Hz mono\n"
            + "language = \(m.language.rawValue)\nname = \(m.name.replacingNewlines)\nlicence = \(m.licence.replacingNewlines)\nrate = \(m.rate)\n"
    }
}

extension String {
    var replacingNewlines: String { String(map { $0 == "\n" || $0 == "\r" ? " " : $0 }) }
}

/// `crier voice check`'s loudness findings (docs/voice.md, "Checking a pack"): each clip's
/// EBU R128 loudness (measured as `VoiceBuild.measurable` says), its true peak and its silent
/// margins, against the pack's median.
public enum VoiceLoudnessCheck {
    public struct Clip: Sendable, Equatable {
        public var name: String
        public var lufs: Double
        public var truePeak: Double
        public var seconds: Double
        /// Silence before and after the voice (`VoiceBuild.trim`'s rule), seconds.
        public var leadSeconds: Double
        public var tailSeconds: Double
        public init(name: String, lufs: Double, truePeak: Double, seconds: Double, leadSeconds: Double, tailSeconds: Double) {
            self.name = name
            self.lufs = lufs
            self.truePeak = truePeak
            self.seconds = seconds
            self.leadSeconds = leadSeconds
            self.tailSeconds = tailSeconds
        }
    }

    /// A clip this far from the pack's median jumps out of a sentence.
    public static let maxFromMedianLU = 3.0
    /// Silence a clip may keep around its voice (the splicer adds the pauses).
    public static let maxLeadSeconds = 0.15
    public static let maxTailSeconds = 0.25
    /// Longer than this is rarely one word or phrase: worth a look (10 s is refused at load).
    public static let longSeconds = 4.0

    public struct Summary: Sendable, Equatable {
        public var minLUFS: Double
        public var maxLUFS: Double
        public var medianLUFS: Double
        public var spread: Double { maxLUFS - minLUFS }
        public var maxTruePeakDb: Double
    }

    public static func summary(_ clips: [Clip]) -> Summary? {
        let l = clips.map(\.lufs).filter(\.isFinite).sorted()
        guard !l.isEmpty else { return nil }
        return Summary(minLUFS: l.first!, maxLUFS: l.last!, medianLUFS: l[l.count / 2],
                       maxTruePeakDb: VoiceBuild.db(clips.map(\.truePeak).max() ?? 0))
    }

    public static func findings(_ clips: [Clip]) -> [VoicePackProblem] {
        var out: [VoicePackProblem] = []
        let median = summary(clips)?.medianLUFS
        for c in clips.sorted(by: { $0.name < $1.name }) {
            if let median, c.lufs.isFinite, abs(c.lufs - median) > maxFromMedianLU {
                out.append(VoicePackProblem(.level, c.name, "\(c.name): \(Format.fixed(c.lufs, 1)) LUFS, \(Format.fixed(abs(c.lufs - median), 1)) LU \(c.lufs > median ? "louder" : "softer") than the pack's median \(Format.fixed(median, 1)) LUFS; match it (crier voice build brings every clip to \(Format.fixed(VoiceBuild.targetLUFS, 0)) LUFS)"))
            }
            if VoiceBuild.db(c.truePeak) > 0 {
                out.append(VoicePackProblem(.clipping, c.name, "\(c.name): true peak \(Format.fixed(VoiceBuild.db(c.truePeak), 1)) dBTP, over full scale: it clips once resampled; lower it (crier voice build keeps peaks under \(Format.fixed(VoiceBuild.peakCeilingDBTP, 0)) dBTP)"))
            }
            if c.leadSeconds > maxLeadSeconds || c.tailSeconds > maxTailSeconds {
                out.append(VoicePackProblem(.level, c.name, "\(c.name): \(Format.fixed(c.leadSeconds, 2)) s of silence before the voice and \(Format.fixed(c.tailSeconds, 2)) s after; trim it (at most \(Format.fixed(maxLeadSeconds, 2)) / \(Format.fixed(maxTailSeconds, 2)) s: the splicer adds the pauses)"))
            }
            if c.seconds > longSeconds {
                out.append(VoicePackProblem(.level, c.name, "\(c.name): \(Format.fixed(c.seconds, 1)) s long; a clip is one word or phrase (more than \(Format.fixed(longSeconds, 0)) s is worth a look; 10 s is refused)"))
            }
        }
        return out
    }
}
