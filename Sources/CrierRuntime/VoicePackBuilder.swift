import CrierCore
import CrierLoudness
import CrierMusicFile
import CrierPosix
import CrierSoxr
import Glibc

/// `crier voice build`: a folder of recordings → a pack folder (docs/voice.md, "Building a
/// pack"). The rules are `VoiceBuild`'s; this reads (libsndfile), resamples (libsoxr), measures
/// (libebur128) and writes.
public struct VoicePackBuilder {
    public struct Options: Sendable {
        public var from: String
        public var lang: Lang
        public var output: String
        public var configPath: String?
        public var rate = 24000
        public var name: String?
        public var licence: String?
        /// Where the recordings came from, for the manifest's comment (default: the --from folder).
        public var sourceNote: String?
        public init(from: String, lang: Lang, output: String) {
            self.from = from
            self.lang = lang
            self.output = output
        }
    }

    /// One built clip's figures, for the summary and the tests.
    public struct ClipReport: Sendable {
        public var name: String
        public var sourceLUFS: Double
        public var gainDb: Double
        /// The deepest peak-limiter cut, dB (0: none).
        public var limitedBy: Double
        /// Loudness after the build less the target, LU.
        public var offTarget: Double
        public var seconds: Double
    }

    public struct Outcome: Sendable {
        public var problems: [VoicePackProblem] = []
        public var clips: [ClipReport] = []
    }

    /// Builds the pack into a temporary folder beside `output`, renamed into place only when every
    /// clip built: a failed build leaves no half pack.
    public static func build(_ o: Options, inventory: [VoiceClip], log: (String) -> Void) -> Outcome {
        var out = Outcome()
        func fail(_ p: VoicePackProblem) -> Outcome {
            out.problems.append(p)
            return out
        }
        guard VoicePackManifest.rates.contains(o.rate) else {
            return fail(VoicePackProblem(.manifest, nil, "--rate \(o.rate): a pack's rate is \(VoicePackManifest.rates.lowerBound)-\(VoicePackManifest.rates.upperBound) Hz"))
        }
        if FileIO.exists(o.output) {
            return fail(VoicePackProblem(.notAPack, nil, "\(o.output) already exists; remove it or choose another --output (a build never writes into an existing folder)"))
        }
        let listing: (names: [String], more: Bool)
        do throws(VoicePackProblem) {
            listing = try VoicePackFolder(path: o.from).entries(limit: VoicePackLoader.Limits().maxFiles)
        } catch {
            return fail(VoicePackProblem(error.kind, nil, "--from: \(error.message)"))
        }
        if listing.more {
            return fail(VoicePackProblem(.tooManyFiles, nil, "\(o.from) has more than \(VoicePackLoader.Limits().maxFiles) files; it should hold one recording per clip"))
        }
        let (files, matchProblems) = VoiceBuild.match(files: listing.names, inventory: inventory)
        out.problems = matchProblems
        let tmp = o.output + ".building-\(getpid())"
        guard mkdir(tmp, 0o755) == 0 else {
            return fail(VoicePackProblem(.notAPack, nil, "cannot create \(tmp): \(String(cString: strerror(errno))); check --output's folder"))
        }
        var keep = false
        defer { if !keep { removeTree(tmp) } }
        for clip in inventory {
            guard let file = files[clip.name] else { continue }
            switch buildClip(clip, file: o.from + "/" + file, shown: file, rate: o.rate, into: tmp, warnings: &out.problems) {
            case .success(let r):
                out.clips.append(r)
                log("\(clip.name): \(Format.fixed(r.sourceLUFS, 1)) LUFS, gain \(r.gainDb >= 0 ? "+" : "")\(Format.fixed(r.gainDb, 1)) dB, \(Format.fixed(r.seconds, 2)) s")
            case .failure(let p):
                out.problems.append(p)
            }
        }
        // Warnings (a clip the ceiling held under the target) do not stop a build; errors do.
        guard !out.problems.contains(where: { $0.kind != .level }) else { return out }
        let manifest = VoicePackManifest(language: o.lang, name: o.name ?? "built from \(basename(o.from))",
                                         licence: o.licence ?? "not stated (set licence in the manifest before shipping the pack)", rate: o.rate)
        do {
            try FileIO.write(tmp + "/" + VoicePackManifest.fileName, Array(VoiceBuild.manifest(manifest, source: o.sourceNote ?? "recordings from \(o.from)").utf8))
        } catch {
            return fail(VoicePackProblem(.manifest, nil, "cannot write the manifest: \(error)"))
        }
        guard rename(tmp, o.output) == 0 else {
            return fail(VoicePackProblem(.notAPack, nil, "cannot rename \(tmp) to \(o.output): \(String(cString: strerror(errno)))"))
        }
        keep = true
        return out
    }

    static func basename(_ p: String) -> String {
        let parts = p.split(separator: "/")
        return parts.last.map(String.init) ?? p
    }

    static func removeTree(_ dir: String) {
        guard let d = opendir(dir) else { return }
        while let ent = readdir(d) {
            let name = withUnsafeBytes(of: ent.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
            if name != "." && name != ".." { unlink(dir + "/" + name) }
        }
        closedir(d)
        rmdir(dir)
    }

    /// Read, check, trim, resample, measure, gain, write one clip.
    static func buildClip(_ clip: VoiceClip, file: String, shown: String, rate: Int, into dir: String, warnings: inout [VoicePackProblem]) -> Result<ClipReport, VoicePackProblem> {
        let f: SoundFile
        do {
            f = try SoundFile(path: file)
        } catch {
            return .failure(VoicePackProblem(.broken, clip.name, "\(shown): \(error.reason); record \"\(clip.text)\" again or export it as WAV/FLAC"))
        }
        let limit = Int64(VoiceBuild.maxRecordingSeconds * Double(f.rate))
        if let p = VoiceBuild.check(VoiceBuild.Recording(file: shown, rate: f.rate, channels: f.channels, frames: f.frames == 0 ? 1 : f.frames), clip: clip) {
            return .failure(p)
        }
        // Never read past the limit (a header may understate the length).
        var x = [Float](repeating: 0, count: Int(min(f.frames > 0 ? f.frames : limit, limit)) + 1)
        var got = 0
        while got < x.count {
            var failure: SoundFile.Failure?
            let n: Int = x.withUnsafeMutableBufferPointer { buf in
                do throws(SoundFile.Failure) {
                    return try f.read(into: UnsafeMutableBufferPointer(rebasing: buf[got...]), frames: buf.count - got)
                } catch {
                    failure = error
                    return 0
                }
            }
            if let failure {
                return .failure(VoicePackProblem(.broken, clip.name, "\(shown): cannot decode it after \(got) frames (\(failure.reason)); export it again"))
            }
            if n == 0 { break }
            got += n
        }
        x.removeLast(x.count - got)
        if let p = VoiceBuild.check(VoiceBuild.Recording(file: shown, rate: f.rate, channels: 1, frames: Int64(got)), clip: clip) {
            return .failure(p)
        }
        let (range, loudest) = VoiceBuild.trim(x, rate: f.rate)
        if let p = VoiceBuild.checkTrimmed(file: shown, clip: clip, range: range, loudestDb: loudest, rate: f.rate) {
            return .failure(p)
        }
        var y = Array(x[range!])
        // Resampled once, before measuring: the level is the pack's samples' level.
        if f.rate != rate {
            do {
                let r = try SoxrResampler(inRate: f.rate, outRate: rate, channels: 1)
                var z: [Float] = []
                z.reserveCapacity(y.count * rate / f.rate + 64)
                y.withUnsafeBufferPointer { b in r.process(b, frames: b.count) { z.append(contentsOf: $0) } }
                r.process(nil, frames: 0) { z.append(contentsOf: $0) }
                y = z
            } catch {
                return .failure(VoicePackProblem(.broken, clip.name, "\(shown): cannot resample \(f.rate) → \(rate) Hz: \(error)"))
            }
        }
        var failed: LoudnessMeter.Failure?
        let lv = VoiceBuild.level(y, rate: rate) { z in
            do throws(LoudnessMeter.Failure) {
                let m = try LoudnessMeter.measure(z, rate: rate)
                return (m.integrated, m.truePeak)
            } catch {
                failed = error
                return (-.infinity, 0)
            }
        }
        if let failed { return .failure(VoicePackProblem(.broken, clip.name, "\(shown): \(failed)")) }
        guard lv.offTarget.isFinite else {
            return .failure(VoicePackProblem(.quiet, clip.name, "\(shown): below the -70 LUFS gate of EBU R128 (silence only); record \"\(clip.text)\" again"))
        }
        if abs(lv.offTarget) > VoiceBuild.toleranceLU || lv.limitedDb > 6 {
            warnings.append(VoicePackProblem(.level, clip.name, "\(shown): \(Format.fixed(VoiceBuild.targetLUFS + lv.offTarget, 1)) LUFS after the build (target \(Format.fixed(VoiceBuild.targetLUFS, 0))), peaks cut by up to \(Format.fixed(lv.limitedDb, 1)) dB to stay under \(Format.fixed(VoiceBuild.peakCeilingDBTP, 0)) dBTP; a click or a plosive? record it again"))
        }
        let source = lv.sourceLUFS
        y = lv.samples
        do {
            try SoundFile.write(path: dir + "/" + clip.name + ".wav", samples: y, rate: rate, channels: 1, format: .wav16)
        } catch {
            return .failure(VoicePackProblem(.broken, clip.name, "cannot write \(clip.name).wav: \(error.reason)"))
        }
        return .success(ClipReport(name: clip.name, sourceLUFS: source, gainDb: lv.gainDb, limitedBy: lv.limitedDb, offTarget: lv.offTarget, seconds: Double(y.count) / Double(rate)))
    }
}
