import Testing
@testable import CrierCore

/// Issue 31: the rules the music thread follows when its source misbehaves (files that are
/// short, empty, text or broken; a radio URL that sends random bytes or trickles). Time is
/// passed in: no sleeps.
@Suite("Music source rules")
struct MusicSourceRulesTests {
    @Test("opens: 10 at once, then 1 a second; a file that plays a second pays for its own open")
    func pacer() {
        var p = MusicOpenPacer()
        var t = 0.0
        var opens: [Double] = []
        // A folder of 1-frame files: open as fast as allowed for 20 s.
        while t < 20 {
            let d = p.delay(now: t)
            if d == 0 { opens.append(t) } else { t += d }
        }
        #expect(opens.prefix(10).allSatisfy { $0 == 0 })
        #expect(opens.count <= 10 + 20 + 1 && opens.count >= 10 + 19, "\(opens.count) opens in 20 s")
        // In any 5 s after the burst, at most 5 (+1) opens.
        for w in stride(from: 1.0, to: 15, by: 0.5) {
            #expect(opens.filter { $0 >= w && $0 < w + 5 }.count <= 6)
        }
        // Real music: a 3-minute song per open never waits.
        var q = MusicOpenPacer()
        for i in 0..<100 { #expect(q.delay(now: Double(i) * 180) == 0) }
        // Files of 1 s each: never wait either (each refunds its own open).
        var r = MusicOpenPacer()
        for i in 0..<100 { #expect(r.delay(now: Double(i) * 1.0) == 0) }
        // A clock that goes back changes nothing (monotonic in practice; never a free burst).
        var b = MusicOpenPacer(burst: 1, perSecond: 1)
        #expect(b.delay(now: 100) == 0)
        #expect(b.delay(now: 50) > 0)
    }

    @Test("a round that played nothing waits 5, 10, 20, 40, 60, 60 s; one that played resets it")
    func roundBackoff() {
        var b = MusicRoundBackoff()
        #expect((0..<6).map { _ in b.roundEnded(played: false) } == [5, 10, 20, 40, 60, 60])
        #expect(b.roundEnded(played: true) == 0)
        #expect(b.roundEnded(played: false) == 5)
    }

    @Test("a broken file is not opened or reported again until it changes; memory is bounded")
    func brokenFiles() {
        var m = BrokenMusicFiles(capacity: 3)
        let s1 = BrokenMusicFiles.Signature(size: 0, modified: 1)
        let first = m.remember("/m/a.mp3", s1)
        #expect(first)
        #expect(m.isKnownBroken("/m/a.mp3", s1))
        let again = m.remember("/m/a.mp3", s1)
        #expect(!again, "reported once")
        let s2 = BrokenMusicFiles.Signature(size: 4000, modified: 2)
        #expect(!m.isKnownBroken("/m/a.mp3", s2), "copied again: tried again")
        let changed = m.remember("/m/a.mp3", s2)
        #expect(changed, "and a new failure is news")
        for i in 0..<10 { m.remember("/m/\(i).mp3", s1) }
        #expect(m.count == 3)
        m.forget("/m/9.mp3")
        #expect(!m.isKnownBroken("/m/9.mp3", s1) && m.count == 2)
    }

    @Test("a file that will not open is described by what it is, not 'possibly a pipe?'")
    func fileProblems() {
        let lib = "File does not exist or is not a regular file (possibly a pipe?)."
        #expect(MusicFileProblem.describe(size: 0, head: [], library: lib) == "the file is empty (0 bytes); copy it again")
        let text = MusicFileProblem.describe(size: 19, head: Array("hello this is text\n".utf8), library: lib)
        #expect(text == "it is text, not audio (it starts with \"hello this is text\")")
        #expect(MusicFileProblem.describe(size: 900, head: Array("<!DOCTYPE html><html>".utf8), library: lib).hasPrefix("it is an HTML page"))
        #expect(MusicFileProblem.describe(size: 900, head: Array("\u{FEFF}店铺音乐\r\n".utf8), library: lib) == "it is text, not audio (it starts with \"店铺音乐\")")
        #expect(MusicFileProblem.describe(size: 9, head: [0x89, 0x50, 0x4E, 0x47, 1, 2], library: lib) == "it is a PNG picture, not audio")
        #expect(MusicFileProblem.describe(size: 9, head: [0xFF, 0xD8, 0xFF, 0xE0], library: lib) == "it is a JPEG picture, not audio")
        // UTF-8 cut at the end of the sample is still text.
        let cut = Array("abc店".utf8).dropLast()
        #expect(MusicFileProblem.describe(size: 512, head: Array(cut), library: lib).hasPrefix("it is text"))
        let bin = MusicFileProblem.describe(size: 5000, head: [0x00, 0x01, 0xAB, 0xCD, 0x7F, 0x10, 0x00, 0x00, 0x55], library: lib)
        #expect(bin.hasPrefix("not a format the decoder knows (WAV, FLAC, Ogg Vorbis, Opus, MP3, AIFF): it starts with bytes 00 01 ab cd 7f 10 00 00"))
        #expect(!bin.contains("pipe"), "libsndfile's misleading guess is not repeated")
        #expect(MusicFileProblem.describe(size: 50, head: [0, 1, 2], library: "Unsupported encoding").contains("the decoder says: Unsupported encoding"))
        #expect(MusicFileProblem.notAFile(.fifo, path: "/srv/m.mp3")
            == "it is a FIFO, not a file; to play raw PCM that a player writes into a FIFO set music.source = fifo:/srv/m.mp3 (and music.fifo_format)")
        #expect(MusicFileProblem.notAFile(.regular, path: "/x") == nil)
        // Known without the decoder: empty, text, pictures; audio headers are left to it.
        #expect(MusicFileProblem.obviouslyNotAudio(size: 0, head: []) != nil)
        #expect(MusicFileProblem.obviouslyNotAudio(size: 30, head: Array("just some words\n".utf8)) != nil)
        for audio in ["RIFF\u{0}\u{1}\u{0}\u{0}WAVEfmt ", "fLaC\u{0}\u{0}\u{0}\u{22}", "OggS\u{0}\u{2}", "ID3\u{3}\u{0}\u{0}", "FORM\u{0}\u{0}\u{1}\u{0}AIFF"] {
            #expect(MusicFileProblem.obviouslyNotAudio(size: 5000, head: Array(audio.utf8)) == nil, "\(audio)")
        }
        #expect(MusicFileProblem.obviouslyNotAudio(size: 5000, head: [0xFF, 0xFB, 0x90, 0x64]) == nil, "an MP3 frame header")
        #expect(MusicFileProblem.notAFile(.device, path: "/x") == "it is a device, not a file")
    }

    @Test("random bytes: given up after junk_kb, even if the decoder finds a spurious frame now and then")
    func streamOfRandomBytes() {
        let limits = StreamWatch.Limits(junkBytes: 64 * 1024, firstAudioSeconds: 15, audioStallSeconds: 10)
        var w = StreamWatch(limits: limits, now: 0)
        var t = 0.0
        var given: StreamWatch.Verdict = .fine
        // 1.3 MB/s in 16 KiB blocks (40 MB in 30 s), one 26 ms "frame" every 100 KB.
        var sinceFrame = 0
        while t < 30 {
            w.received(16384)
            sinceFrame += 16384
            if sinceFrame >= 100_000 { w.decoded(seconds: 0.026, now: t); sinceFrame = 0 }
            t += 16384 / 1_300_000
            given = w.check(now: t)
            if given != .fine { break }
        }
        guard case .undecodable(let bytes, _) = given else { Issue.record("not given up: \(given)"); return }
        #expect(bytes < 64 * 1024 + 16384 + 4000, "\(bytes) bytes before giving up")
        #expect(t < 0.1)
        #expect(StreamWatch.reason(given, contentType: "text/html")!.hasPrefix("the server sent 65 KiB that do not decode as MP3 (Content-Type: text/html)")
            || StreamWatch.reason(given, contentType: "text/html")!.contains("that do not decode as MP3 (Content-Type: text/html)"))
    }

    @Test("a real stream (up to 320 kbit/s, ICY stripped) is never given up, whatever the chunking")
    func realStreamsPass() {
        var rng = SplitMix64(seed: 31)
        for kbps in [32, 64, 128, 192, 256, 320] {
            var w = StreamWatch(limits: StreamWatch.Limits(junkBytes: 16 * 1024, firstAudioSeconds: 2, audioStallSeconds: 2), now: 0)
            let bytesPerFrame = Double(kbps) * 1000 / 8 * 1152 / 44100
            var t = 0.0, pending = 0.0
            // 0.5 s burst at the start, then paced; random chunk sizes.
            while t < 60 {
                let chunk = Int(rng.next() % 4096) + 1
                w.received(chunk)
                pending += Double(chunk)
                while pending >= bytesPerFrame {
                    pending -= bytesPerFrame
                    w.decoded(seconds: 1152.0 / 44100, now: t)
                }
                t += Double(chunk) / (Double(kbps) * 125) * (t < 0.5 ? 0.1 : 1)
                #expect(w.check(now: t) == .fine, "\(kbps) kbit/s at \(t) s")
            }
        }
    }

    @Test("a trickle: no audio within connect_s, or audio that stops while bytes still come")
    func trickle() {
        let limits = StreamWatch.Limits(junkBytes: 1 << 20, firstAudioSeconds: 3, audioStallSeconds: 2)
        var w = StreamWatch(limits: limits, now: 100)
        for s in 1...2 {
            w.received(1)
            #expect(w.check(now: 100 + Double(s)) == .fine)
        }
        w.received(1)
        #expect(w.check(now: 103) == .noAudio(seconds: 3, bytes: 3))
        #expect(StreamWatch.reason(.noAudio(seconds: 3, bytes: 3), contentType: "audio/mpeg") == "no audio 3 s after connecting (3 bytes received (Content-Type: audio/mpeg): too slow or not MP3)")
        #expect(StreamWatch.reason(.noAudio(seconds: 15, bytes: 0), contentType: nil) == "no audio 15 s after connecting (the server sent nothing)")
        // Audio, then a trickle that decodes to nothing.
        var p = StreamWatch(limits: limits, now: 0)
        p.received(4000)
        p.decoded(seconds: 0.5, now: 0.2)
        #expect(p.playing)
        p.received(1)
        #expect(p.check(now: 2.1) == .fine)
        p.received(1)
        #expect(p.check(now: 2.2) == .audioStopped(seconds: 2.0000000000000004, bytes: 2) || p.check(now: 2.2) == .audioStopped(seconds: 2, bytes: 2))
    }

    @Test("reconnect backoff: 1, 2, 4 … 30 s; back to 1 s after a connection that played 30 s")
    func streamBackoff() {
        var b = StreamBackoff()
        #expect((0..<7).map { _ in b.failed(played: 0) } == [1, 2, 4, 8, 16, 30, 30])
        #expect(b.failed(played: 29) == 30)
        #expect(b.failed(played: 30) == 1)
        #expect(b.failed(played: 0) == 2)
    }

    @Test("the music's log: a folder of short files is one reason, not one line per file")
    func perFileLinesAreOneReason() {
        var l = RateLimiter(window: 60, bursts: [.info: 10, .warning: 5], itemFields: RateLimiter.itemFields.union(["file"]))
        var written: [LogRecord] = []
        // 100 files a second for 3 s.
        for i in 0..<300 {
            let t = WallTime(unixMillis: Int64(i) * 10)
            written += l.admit(LogRecord(time: t, level: .info, component: "music", message: "playing",
                                         fields: [("file", "/m/\(i).wav"), ("rate", "44100"), ("channels", "2")]))
        }
        #expect(written.count == 10)
        let summary = l.flush(now: WallTime(unixMillis: 61_000))
        #expect(summary.count == 1)
        #expect(summary.first?.formatted().contains("playing (repeated 290 times) rate=44100 channels=2 sample_file=/m/299.wav") == true, "\(summary)")
        // The daemon's own limiter is unchanged: file names a reason there.
        #expect(!RateLimiter().perItemFields.contains("file"))
    }
}
