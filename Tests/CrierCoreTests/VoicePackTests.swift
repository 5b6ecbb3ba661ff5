import Synchronization
import Testing
@testable import CrierCore

/// A pack in memory: each clip a tone of its own frequency, generated only as far as the loader
/// asks (so a 10-minute clip costs nothing unless the loader reads it all).
final class MemoryPack: VoicePackSource, Sendable {
    enum File: Sendable {
        case tone(rate: Int, channels: Int, frames: Int64, hz: Double, amplitude: Float, phase: Double = 0)
        case broken(String)
    }

    let manifestText: String
    let files: [String: File]
    /// Extra file names beyond `files`, made up on demand (a folder of 100 000 entries).
    let junkCount: Int
    let largestRequest = Mutex(0)
    let listed = Mutex(0)

    init(manifest: String, files: [String: File], junkCount: Int = 0) {
        manifestText = manifest
        self.files = files
        self.junkCount = junkCount
    }

    func entries(limit: Int) throws(VoicePackProblem) -> (names: [String], more: Bool) {
        var names = [VoicePackManifest.fileName]
        for k in files.keys.sorted() where names.count < limit { names.append(k) }
        var j = 0
        while names.count < limit, j < junkCount { names.append("junk\(j).wav"); j += 1 }
        listed.withLock { $0 = names.count }
        return (names, files.count + 1 + junkCount > limit)
    }

    func manifest(maxBytes: Int) throws(VoicePackProblem) -> String { manifestText }

    func decode(_ file: String, maxFrames: Int) throws(VoicePackProblem) -> DecodedAudio {
        largestRequest.withLock { $0 = max($0, maxFrames) }
        switch files[file] {
        case .broken(let why): throw VoicePackProblem(.broken, nil, why)
        case .tone(let rate, let channels, let frames, let hz, let amplitude, let phase):
            let n = Int(min(frames, Int64(maxFrames)))
            var x = [Float](repeating: 0, count: n * channels)
            for i in 0..<n {
                let v = max(-1, min(1, amplitude * Float(VoicePackTests.sine(phase + 2 * Double.pi * hz * Double(i) / Double(rate)))))
                for c in 0..<channels { x[i * channels + c] = v }
            }
            return DecodedAudio(rate: rate, channels: channels, samples: x, totalFrames: frames)
        case nil: throw VoicePackProblem(.broken, nil, "no such file")
        }
    }
}

@Suite struct VoicePackTests {
    static let manifest = "# test pack\nlanguage = zh\nname = Test tones\nlicence = CC0-1.0\nrate = 16000\n"
    static let inventory = VoiceInventory.clips(lang: .zh)

    /// sin without Foundation (Taylor series after range reduction; tests only).
    static func sine(_ x: Double) -> Double {
        var r = x.truncatingRemainder(dividingBy: 2 * Double.pi)
        if r > Double.pi { r -= 2 * Double.pi }
        var term = r, sum = r
        for n in 1..<12 {
            term *= -r * r / Double((2 * n) * (2 * n + 1))
            sum += term
        }
        return sum
    }

    /// Clip k of the inventory: a 0.3 s tone at 200 + 10·k Hz.
    static func tones(_ inventory: [VoiceClip] = inventory, rate: Int = 16000) -> [String: MemoryPack.File] {
        var f: [String: MemoryPack.File] = [:]
        for (k, c) in inventory.enumerated() {
            f[c.name + ".wav"] = .tone(rate: rate, channels: 1, frames: Int64(rate * 3 / 10), hz: 200 + 10 * Double(k), amplitude: 0.5)
        }
        return f
    }

    @Test func aCompletePackLoadsAndServes() {
        let r = VoicePackLoader.load(MemoryPack(manifest: Self.manifest, files: Self.tones()), inventory: Self.inventory, lang: .zh)
        #expect(r.problems.isEmpty, "\(r.problems)")
        #expect(r.canServe && r.covered == Self.inventory.count)
        let pack = r.pack!
        #expect(pack.manifest == VoicePackManifest(language: .zh, name: "Test tones", licence: "CC0-1.0", rate: 16000))
        #expect(pack.clips["four"]!.count == 4800)
        #expect(abs(pack.levels["four"]!.peakDb - -6.02) < 0.1)
        #expect(abs(pack.levels["four"]!.rmsDb - -9.03) < 0.2)
        // Bounded: 92 clips of 0.3 s at 16 kHz.
        #expect(pack.bytes == Self.inventory.count * 9600)
    }

    @Test func manifestProblemsAreNamedWithTheirLine() {
        func problem(_ text: String) -> String {
            if case .failure(let p) = VoicePackManifest.parse(text) { return p.message }
            return "parsed"
        }
        #expect(problem(Self.manifest) == "parsed")
        #expect(problem("language = zh\r\nname = x\r\nlicence = y\r\nrate = 22050\r\n") == "parsed")
        #expect(problem("language = fr\nname = x\nlicence = y\nrate = 16000") == "manifest: language is \"fr\"; expected zh or en")
        #expect(problem("language = zh\nname = x\nlicence = y\nrate = 44.1k").contains("rate is \"44.1k\""))
        #expect(problem("language = zh\nname = x\nrate = 4000").contains("no licence"))
        #expect(problem("language = zh\nname = x\nrate = 4000").contains("rate is \"4000\""))
        #expect(problem("language = zh\nname = x\nlicence = y\nrate = 16000\nvoice = Anna").contains("line 5: unknown key \"voice\""))
        #expect(problem("language zh").contains("line 1: expected `key = value`"))
        #expect(problem("").contains("no language"))
        let r = VoicePackLoader.load(MemoryPack(manifest: "rate = 16000\n", files: Self.tones()), inventory: Self.inventory)
        #expect(r.pack == nil && r.problems.map(\.kind) == [.manifest] && !r.canServe)
    }

    @Test func everyBadClipIsNamedAndTheRestLoad() {
        var files = Self.tones()
        files["four.wav"] = .broken("libsndfile: File contains data in an unknown format.")
        files["five.wav"] = nil
        files["six.wav"] = .tone(rate: 44100, channels: 1, frames: 44100 / 2, hz: 440, amplitude: 0.5)
        files["seven.wav"] = .tone(rate: 16000, channels: 1, frames: 16000 * 600, hz: 440, amplitude: 0.5)  // 10 minutes
        files["eight.wav"] = .tone(rate: 16000, channels: 2, frames: 8000, hz: 440, amplitude: 0.5)
        files["nine.wav"] = .tone(rate: 16000, channels: 1, frames: 0, hz: 440, amplitude: 0.5)
        files["ten.flac"] = .tone(rate: 16000, channels: 1, frames: 8000, hz: 440, amplitude: 0.5)  // and ten.wav
        files["yuan.wav"] = .tone(rate: 16000, channels: 1, frames: 8000, hz: 440, amplitude: 2.0)  // clips
        files["wan.wav"] = .tone(rate: 16000, channels: 1, frames: 8000, hz: 440, amplitude: 0.01)  // nearly silent
        files["misspelt_nien.wav"] = .tone(rate: 16000, channels: 1, frames: 8000, hz: 440, amplitude: 0.5)
        files["README.txt"] = .broken("not audio")
        let source = MemoryPack(manifest: Self.manifest, files: files)
        let r = VoicePackLoader.load(source, inventory: Self.inventory, lang: .zh)
        let byClip = Dictionary(r.problems.map { ($0.clip ?? "", $0) }, uniquingKeysWith: { a, _ in a })
        #expect(byClip["four"]?.kind == .broken)
        #expect(byClip["four"]?.message == "four.wav: libsndfile: File contains data in an unknown format.; espeak-ng says \"四\"")
        #expect(byClip["five"]?.message == "five: missing (no five.wav, .flac or .ogg); record \"五\"; espeak-ng says it meanwhile")
        #expect(byClip["six"]?.message == "six.wav: 44100 Hz, the manifest says 16000 Hz; resample it (every clip at one rate); espeak-ng says \"六\"")
        #expect(byClip["seven"]?.message == "seven.wav: 10.0 min long, a clip is at most 10 s (one word or phrase); not loaded; espeak-ng says \"七\"")
        #expect(byClip["eight"]?.kind == .notMono)
        #expect(byClip["nine"]?.kind == .empty)
        #expect(byClip["ten"]?.message == "ten: 2 recordings (ten.wav, ten.flac); using ten.wav, remove the others")
        #expect(byClip["yuan"]?.kind == .clipping)
        #expect(byClip["wan"]?.kind == .quiet)
        #expect(byClip["misspelt_nien"]?.kind == .extra)
        #expect(byClip["README"] == nil, "files that are not audio are not clips")
        // The 10-minute clip was never read past the limit.
        #expect(source.largestRequest.withLock { $0 } == 16000 * 10 + 1)
        // The rest load; a clip lost means the pack does not serve alone.
        #expect(r.pack != nil && r.covered == Self.inventory.count - 6 && !r.canServe)
        #expect(r.pack!.clips["ten"] != nil && r.pack!.clips["yuan"] != nil && r.pack!.clips["seven"] == nil)
        #expect(Set(r.problems.filter(\.losesClip).compactMap(\.clip)) == ["four", "five", "six", "seven", "eight", "nine"])
        // A planner over what the pack has leaves the lost clips' words as gaps.
        let planner = SplicePlanner(lang: .zh, clips: r.pack!.available(from: Self.inventory))
        #expect(planner.plan("新客户来了，四十五号").gaps == ["四", "五"])
    }

    @Test func aClipFarFromThePacksLevelIsReported() {
        var files = Self.tones()
        // -20 dB (-28.8 dBFS RMS: the gate at -50 dBFS leaves out the sine's zero crossings).
        files["four.wav"] = .tone(rate: 16000, channels: 1, frames: 4800, hz: 440, amplitude: 0.05)
        let r = VoicePackLoader.load(MemoryPack(manifest: Self.manifest, files: files), inventory: Self.inventory)
        #expect(r.problems.map(\.kind) == [.level])
        #expect(r.problems.first?.message.hasPrefix("four: level -28.8 dBFS RMS, 19.8 dB softer than the pack's median -9.0 dBFS") == true)
        #expect(r.canServe, "a level warning does not lose the clip")
    }

    @Test func aPackOfOneHundredThousandFilesIsRefusedWithoutReadingThemAll() {
        let source = MemoryPack(manifest: Self.manifest, files: Self.tones(), junkCount: 100_000)
        let t0 = ContinuousClock.now
        let r = VoicePackLoader.load(source, inventory: Self.inventory)
        #expect(ContinuousClock.now - t0 < .seconds(1))
        #expect(r.pack == nil && r.problems.map(\.kind) == [.tooManyFiles])
        #expect(r.problems[0].message.hasPrefix("the pack has more than 4096 files"))
        #expect(source.listed.withLock { $0 } == 4096, "the listing stops at the limit")
        // Under the limit, thousands of extra files load in bounded time: each an `extra` line.
        // (Just under: the inventory grows with every new prompt, the limit counts all files.)
        let junk = 4096 - Self.inventory.count - 1
        let many = MemoryPack(manifest: Self.manifest, files: Self.tones(), junkCount: junk)
        let r2 = VoicePackLoader.load(many, inventory: Self.inventory)
        #expect(r2.canServe && r2.problems.filter { $0.kind == .extra }.count == junk)
    }

    @Test func memoryIsBoundedByTheBudget() {
        var limits = VoicePackLoader.Limits()
        limits.maxBytes = 50 * 9600  // room for 50 of the 0.3 s clips
        let r = VoicePackLoader.load(MemoryPack(manifest: Self.manifest, files: Self.tones()), inventory: Self.inventory, limits: limits)
        #expect(r.pack!.bytes <= limits.maxBytes && r.covered == 50)
        #expect(r.problems.filter { $0.kind == .overBudget }.count == Self.inventory.count - 50)
    }

    @Test func aPackInTheWrongLanguageIsRefused() {
        let r = VoicePackLoader.load(MemoryPack(manifest: Self.manifest, files: Self.tones()), inventory: Self.inventory, lang: .en)
        #expect(r.pack == nil && r.problems.first?.message == "the pack's language is zh, not en; use it for voice.pack.zh")
    }
}
