import CrierCore
import CrierMusicFile
import CrierPosix
import Glibc
import Testing

/// The pack folder adapter: WAV, FLAC and Ogg clips through libsndfile, and its failures.
@Suite struct VoicePackFolderTests {
    static func tone(_ seconds: Double, rate: Int, channels: Int = 1, hz: Double = 440) -> [Float] {
        let n = Int(seconds * Double(rate))
        var x = [Float](repeating: 0, count: n * channels)
        // A triangle wave: no libm needed, and its level is known (peak 0.5).
        let period = Double(rate) / hz
        for i in 0..<n {
            let ph = (Double(i) / period).truncatingRemainder(dividingBy: 1)
            let v = Float(0.5 * (ph < 0.5 ? 4 * ph - 1 : 3 - 4 * ph))
            for c in 0..<channels { x[i * channels + c] = v }
        }
        return x
    }

    @Test func clipsOfEveryFormatLoadAndBadOnesAreNamed() throws {
        let dir = FileIO.temporaryDirectory() + "/crier-voice-\(getpid())-\(Int.random(in: 0..<1_000_000))"
        #expect(mkdir(dir, 0o755) == 0)
        defer { _ = system("rm -rf '\(dir)'") }
        try FileIO.write(dir + "/manifest", Array("language = zh\nname = t\nlicence = CC0-1.0\nrate = 16000\n".utf8))
        try SoundFile.write(path: dir + "/two.wav", samples: Self.tone(0.3, rate: 16000), rate: 16000, channels: 1, format: .wav16)
        try SoundFile.write(path: dir + "/four.flac", samples: Self.tone(0.3, rate: 16000), rate: 16000, channels: 1, format: .flac)
        try SoundFile.write(path: dir + "/ten.ogg", samples: Self.tone(0.3, rate: 16000), rate: 16000, channels: 1, format: .ogg)
        try SoundFile.write(path: dir + "/number.flac", samples: Self.tone(0.3, rate: 16000, channels: 2), rate: 16000, channels: 2, format: .flac)
        try SoundFile.write(path: dir + "/yuan.wav", samples: Self.tone(0.3, rate: 22050), rate: 22050, channels: 1, format: .wav16)
        try SoundFile.write(path: dir + "/seven.wav", samples: Self.tone(600, rate: 16000), rate: 16000, channels: 1, format: .wav16)
        try FileIO.write(dir + "/five.ogg", Array("OggS but not really".utf8))
        let inventory = ["two", "four", "ten", "number", "yuan", "seven", "five", "six"].map { VoiceClip(name: $0, text: $0, kind: .number) }
        let t0 = Monotonic.now()
        let r = VoicePackLoader.load(VoicePackFolder(path: dir), inventory: inventory, lang: .zh)
        #expect(Monotonic.now() - t0 < 2, "a 10-minute clip is not decoded")
        let pack = try #require(r.pack)
        #expect(Set(pack.clips.keys) == ["two", "four", "ten"])
        for name in ["two", "four", "ten"] {
            #expect(abs(pack.clips[name]!.count - 4800) <= 64, "\(name): \(pack.clips[name]!.count) samples")
            #expect(abs(pack.levels[name]!.peakDb - -6.0) < 0.6, "\(name): peak \(pack.levels[name]!.peakDb)")
        }
        let by = Dictionary(r.problems.map { ($0.clip ?? "", $0) }, uniquingKeysWith: { a, _ in a })
        #expect(by["number"]?.kind == .notMono)
        #expect(by["yuan"]?.message.hasPrefix("yuan.wav: 22050 Hz, the manifest says 16000 Hz") == true)
        #expect(by["seven"]?.message.hasPrefix("seven.wav: 10.0 min long") == true)
        #expect(by["five"]?.kind == .broken && by["five"]?.message.hasPrefix("five.ogg: ") == true)
        #expect(by["six"]?.kind == .missing)
        #expect(r.covered == 3 && !r.canServe)
    }

    @Test func aFolderThatIsNoPackIsRefused() {
        let r = VoicePackLoader.load(VoicePackFolder(path: "/nonexistent/voice"), inventory: [])
        #expect(r.pack == nil && r.problems.first?.message == "/nonexistent/voice does not exist")
        let r2 = VoicePackLoader.load(VoicePackFolder(path: "/etc/hostname"), inventory: [])
        #expect(r2.pack == nil && r2.problems.first?.message == "/etc/hostname is not a folder")
    }
}
