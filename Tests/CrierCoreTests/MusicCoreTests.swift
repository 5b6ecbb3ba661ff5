import Testing
@testable import CrierCore

/// Background music rules: the duck envelope, the bounded buffer, the hours, the keys.
@Suite("Music")
struct MusicCoreTests {
    struct SplitMix {
        var s: UInt64
        mutating func next() -> UInt64 {
            s &+= 0x9E37_79B9_7F4A_7C15
            var z = s
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return z ^ (z >> 31)
        }
        mutating func int(_ n: Int) -> Int { Int(next() % UInt64(n)) }
    }

    func dB(_ g: Float) -> Double { 20 * log10(Double(g)) }
    func log10(_ x: Double) -> Double {
        // ln via atanh series, enough for test arithmetic (no Foundation).
        var m = x, e = 0.0
        while m > 2 { m /= 2; e += 1 }
        while m < 1 { m *= 2; e -= 1 }
        let y = (m - 1) / (m + 1)
        var sum = 0.0, p = y
        for k in stride(from: 1, to: 60, by: 2) { sum += p / Double(k); p *= y * y }
        return (2 * sum + e * 0.6931471805599453) / 2.302585092994046
    }

    @Test("attack, hold and release take exactly their configured frames and reach -duck_db")
    func envelopeTiming() {
        let rate = 48000
        var e = DuckEnvelope(rate: rate, duckDb: -18, attackMs: 60, holdMs: 500, releaseMs: 700)
        var t = 0
        var g = e.next(wanted: true)
        while g > Float(e.floorGain) { g = e.next(wanted: true); t += 1 }
        #expect(abs(t - 2880) <= 2, "attack took \(t) frames")
        #expect(abs(dB(g) + 18) < 0.01)
        for _ in 0..<1000 { #expect(e.next(wanted: true) == g) }
        var hold = 0
        while e.next(wanted: false) == g { hold += 1 }
        #expect(abs(hold - 24000) <= 2, "hold took \(hold) frames")
        var rel = 1
        while e.next(wanted: false) < 1 { rel += 1 }
        #expect(abs(rel - 33600) <= 2, "release took \(rel) frames")
        #expect(!e.isDucked)
    }

    @Test("seeded random duck requests: the gain stays in range and never steps faster than the ramps")
    func envelopeInvariants() {
        var rng = SplitMix(s: 17)
        for round in 0..<40 {
            let duck = -Double(rng.int(60) + 1)
            let a = Double(rng.int(100) + 1), h = Double(rng.int(1000)), r = Double(rng.int(2000) + 1)
            var e = DuckEnvelope(rate: 16000, duckDb: duck, attackMs: a, holdMs: h, releaseMs: r)
            var prev: Float = 1
            var wanted = false
            let maxDown = Decibel.gain(duck / (16 * a)) - 1e-6
            let maxUp = Decibel.gain(-duck / (16 * r)) + 1e-6
            for _ in 0..<20000 {
                if rng.int(2000) == 0 { wanted.toggle() }
                let g = e.next(wanted: wanted)
                #expect(Double(g) >= e.floorGain * 0.9999 && g <= 1, "round \(round)")
                let ratio = Double(g) / Double(prev)
                #expect(ratio >= maxDown * 0.9999 && ratio <= maxUp * 1.0001, "round \(round) ratio \(ratio)")
                if wanted { #expect(g <= prev) }
                prev = g
            }
        }
    }

    @Test("music under speech: speech keeps its exact samples' level, music is ducked by duck_db, nothing clips")
    func mixerWithMusic() {
        let format = AudioFormat(rate: 48000, channels: 2)
        var cfg = MusicConfig()
        cfg.attackMs = 10
        let n = 48000
        let speech = Tone.beep(format: format, hz: 440, ms: 1000, level: 0.9)
        func render(music: Bool) -> [Int16] {
            var m = Mixer(format: format)
            var mix = MusicMix(rate: 48000, channels: 2, config: cfg, level: 0.25)
            m.add(id: 1, clip: speech)
            var out = [Int16](repeating: 0, count: n * 2)
            var tone = [Float](repeating: 0, count: n * 2)
            for f in 0..<n { tone[2 * f] = Float(Resampler.sin(2 * Double.pi * 3000 * Double(f) / 48000)); tone[2 * f + 1] = tone[2 * f] }
            tone.withUnsafeMutableBufferPointer { mix.apply($0, frames: n, available: n, duck: true) }
            _ = out.withUnsafeMutableBufferPointer { o in
                tone.withUnsafeBufferPointer { t in m.render(into: o, frames: n, music: music ? t : nil) }
            }
            #expect(m.clampedSamples == 0)
            return out
        }
        let with = render(music: true), without = render(music: false)
        // The difference is the music alone: at 0.25 × -18 dB after the attack.
        var sum = 0.0
        let from = 4800, to = 43200
        for f in from..<to { let d = Double(Int(with[2 * f]) - Int(without[2 * f])); sum += d * d }
        let rms = (sum / Double(to - from)).squareRoot() / 32767
        let expected = 0.25 * Decibel.gain(-18) * Decibel.gain(-3) / 2.0.squareRoot()
        #expect(abs(rms / expected - 1) < 0.02, "music rms \(rms), expected \(expected)")
    }

    @Test("an underrun is silence for the music, and music fades back in over 5 ms")
    func underrunFadesIn() {
        var mix = MusicMix(rate: 48000, channels: 1, config: MusicConfig(), level: 1)
        var a = [Float](repeating: 1, count: 480)
        a.withUnsafeMutableBufferPointer { mix.apply($0, frames: 480, available: 100, duck: false) }
        #expect(a[99] > 0.9 || a[0] == 0)
        #expect(a[100...].allSatisfy { $0 == 0 })
        var b = [Float](repeating: 1, count: 480)
        b.withUnsafeMutableBufferPointer { mix.apply($0, frames: 480, available: 480, duck: false) }
        #expect(b[0] == 0 && b[120] > 0.49 && b[120] < 0.51 && b[300] == 1)
        #expect(mix.underrunFrames == 380)
    }

    @Test("the buffer is a FIFO under seeded random writes, reads and unreads, and never exceeds its bound")
    func bufferModel() {
        var rng = SplitMix(s: 5)
        let buf = MusicBuffer(channels: 2, capacityFrames: 100, reserveFrames: 20)
        var model: [Float] = []
        var next: Float = 0
        for _ in 0..<5000 {
            switch rng.int(3) {
            case 0:
                let k = rng.int(40)
                var s: [Float] = []
                for _ in 0..<k { s += [next, -next]; next += 1 }
                let took = s.withUnsafeBufferPointer { buf.write($0) }
                #expect(took == min(k, max(0, 100 - model.count / 2)))
                model += s.prefix(took * 2)
                next -= Float(k - took)
            case 1:
                let k = rng.int(40)
                var out = [Float](repeating: 9, count: k * 2)
                let got = out.withUnsafeMutableBufferPointer { buf.read(into: $0, frames: k) }
                #expect(got == min(k, model.count / 2))
                #expect(Array(out.prefix(got * 2)) == Array(model.prefix(got * 2)))
                let back = rng.int(got + 1)
                let r = Array(out[(got - back) * 2..<got * 2])
                model.removeFirst(got * 2)
                if back > 0 && model.count / 2 + back <= 120 {
                    r.withUnsafeBufferPointer { buf.unread($0) }
                    model = r + model
                }
            default:
                #expect(buf.filledFrames == model.count / 2)
            }
            #expect(buf.filledFrames <= 120)
        }
    }

    @Test("music keys: sources, hours, FIFO formats, and refusals that say what to write")
    func keys() {
        func parse(_ text: String) -> ConfigParser.Result { ConfigParser().parse(text, file: "crier.conf") }
        var r = parse("music.source = /srv/music\nmusic.hours = 22:00-02:00\nmusic.fifo_format = 48000:f:1\nmusic.duck_db = -24\n")
        #expect(r.diagnostics.isEmpty)
        #expect(r.config.music.source == .files("/srv/music"))
        #expect(r.config.music.hours == DailyHours(start: 1320, end: 120))
        #expect(r.config.music.fifoLayout == .init(rate: 48000, sample: .f32, channels: 1))
        #expect(r.config.music.duckDb == -24)
        r = parse("music.source = http://radio.example:8000/live.mp3\n")
        #expect(r.config.music.source == .stream("http://radio.example:8000/live.mp3"))
        r = parse("music.source = fifo:/run/crier/music.pcm\n")
        #expect(r.config.music.source == .fifo("/run/crier/music.pcm"))
        for bad in ["music.source = music", "music.source = fifo:rel", "music.hours = 9-21", "music.hours = 25:00-01:00",
                    "music.hours = 09:00-09:00", "music.fifo_format = 44100:24:2", "music.duck_db = 6", "music.attack_ms = 500"] {
            let b = parse(bad + "\n")
            #expect(b.diagnostics.count == 1 && b.diagnostics[0].severity == .error, "\(bad)")
            #expect(b.config.music == MusicConfig(), "\(bad) keeps the defaults")
        }
        #expect(parse("music.hours = 9:30-21:00\n").config.music.hours?.description == "09:30-21:00")
    }

    @Test("hours: inside, outside, across midnight; never before the clock is synchronized")
    func hours() throws {
        let day = try DailyHours(parsing: "09:00-21:00")
        #expect(day.contains(minute: 540) && day.contains(minute: 1259) && !day.contains(minute: 1260) && !day.contains(minute: 539))
        let night = try DailyHours(parsing: "22:00-02:00")
        #expect(night.contains(minute: 1380) && night.contains(minute: 60) && !night.contains(minute: 120) && !night.contains(minute: 600))
        #expect(day.secondsToNextChange(minute: 540, second: 0) == 12 * 3600)
        #expect(day.secondsToNextChange(minute: 1439, second: 30) == 9 * 3600 + 30)
        #expect(MusicSchedule.verdict(hours: nil, localMinute: 0, clockSynchronized: false) == .play)
        #expect(MusicSchedule.verdict(hours: day, localMinute: 600, clockSynchronized: false) == .clockNotSynchronized)
        #expect(MusicSchedule.verdict(hours: day, localMinute: 600, clockSynchronized: true) == .play)
        #expect(MusicSchedule.verdict(hours: day, localMinute: 100, clockSynchronized: true) == .outsideHours)
        var rng = SplitMix(s: 9)
        for _ in 0..<500 {
            let a = rng.int(1440), b = rng.int(1440)
            guard a != b else { continue }
            let h = DailyHours(start: a, end: b)
            let m = rng.int(1440)
            let secs = h.secondsToNextChange(minute: m, second: 0)
            let after = (m + (secs / 60)) % 1440
            #expect(h.contains(minute: (after + 1439) % 1440) != h.contains(minute: after), "\(h) at \(m)")
        }
    }

    /// One frame of the stream as the listener gets it: how it was last rendered.
    struct Frame { var duck: Bool; var available: Bool; var starved: Bool; var gain: Float }

    @Test("seeded renders with rewinds: what stays queued sounds as if it had never been taken back (samples and duck envelope)")
    func timelineRewinds() {
        var cfg = MusicConfig()
        cfg.attackMs = 30; cfg.holdMs = 20; cfg.releaseMs = 40
        for seed in 0..<300 {
            var rng = SplitMix(s: UInt64(seed) &* 7919 &+ 1)
            let rate = 8000, ch = 1 + rng.int(2), period = 16 + rng.int(200)
            var tl = MusicTimeline(MusicMix(rate: rate, channels: ch, config: cfg, level: 1), limit: 2 * period + rng.int(600))
            var stream: [Frame] = []
            var scratch = [Float](repeating: 0, count: period * ch)
            var duck = false
            for _ in 0..<300 {
                if rng.int(8) == 0 { duck.toggle() }
                if rng.int(5) == 0 && tl.rewindableFrames > 0 {
                    let k = 1 + rng.int(tl.rewindableFrames)
                    let read = stream.suffix(k).filter { $0.available }.count
                    let unread = scratch.withUnsafeMutableBufferPointer { tl.takeBack(frames: k, scratch: $0) }
                    #expect(unread == read, "seed \(seed): \(unread) music frames handed back for \(read) read")
                    stream.removeLast(k)
                    continue
                }
                let n = 1 + rng.int(period)
                if rng.int(10) == 0 {
                    tl.starved(frames: n)
                    stream += Array(repeating: Frame(duck: false, available: false, starved: true, gain: 0), count: n)
                    continue
                }
                let got = rng.int(6) == 0 ? rng.int(n + 1) : n
                var block = [Float](repeating: 1, count: n * ch)
                block.withUnsafeMutableBufferPointer { tl.apply($0, frames: n, available: got, duck: duck) }
                for f in 0..<n { stream.append(Frame(duck: duck, available: f < got, starved: false, gain: block[f * ch])) }
            }
            // The reference: one fresh mix run frame by frame over the stream that stayed.
            var ref = MusicMix(rate: rate, channels: ch, config: cfg, level: 1)
            var one = [Float](repeating: 1, count: ch)
            var worst: (Int, Float, Float)?
            for (i, f) in stream.enumerated() {
                var g: Float = 0
                if f.starved {
                    ref.starved()
                } else {
                    for c in 0..<ch { one[c] = 1 }
                    one.withUnsafeMutableBufferPointer { ref.apply($0, frames: 1, available: f.available ? 1 : 0, duck: f.duck) }
                    g = one[0]
                }
                if abs(g - f.gain) > 1e-6 && worst == nil { worst = (i, f.gain, g) }
            }
            #expect(worst == nil, "seed \(seed): frame \(worst?.0 ?? 0) of \(stream.count) played at \(worst?.1 ?? 0), not \(worst?.2 ?? 0)")
        }
    }
}

@Suite("Music button")
struct MusicButtonTests {
    @Test("the music button toggles music and clicks; volume and mute are untouched")
    func toggle() {
        var c = Controls(config: ButtonsConfig(), restored: nil, now: 0, wall: WallTime(unixMillis: 0))
        let g = c.gain
        #expect(c.handle(Gesture(.music, .press, at: 1), now: 1, wall: WallTime(unixMillis: 0), historyCount: 0) == [.setMusic(false), .click])
        #expect(c.handle(Gesture(.music, .press, at: 2), now: 2, wall: WallTime(unixMillis: 0), historyCount: 0) == [.setMusic(true), .click])
        #expect(c.gain == g)
        #expect(ButtonsConfig()[.music].line == nil, "not fitted unless configured")
    }
}

@Suite("Music status")
struct MusicStatusTests {
    @Test("status shows what plays, the level and whether it is ducked; no music key without music")
    func lines() {
        var s = StatusSnapshot(version: "1", deviceID: "d", time: WallTime(unixMillis: 0), uptime: 1, components: [],
                               link: LinkStatus(state: "off"), volume: 7, volumeMax: 10, muted: false, queueLength: 0)
        #expect(!StatusFormat.json(s).contains("music"))
        #expect(!StatusFormat.human(s).contains("music"))
        s.music = MusicStatus(kind: "stream", state: "playing", title: "Song \"x\"\n", location: "http://r/live", levelDb: -12,
                              silenced: false, ducked: true)
        #expect(StatusFormat.human(s).contains(#"music: playing "Song "x"\n" (stream http://r/live), level -12 dB, ducked"# + "\n"))
        #expect(StatusFormat.json(s).hasSuffix(#","music":{"kind":"stream","state":"playing","title":"Song \"x\"\n","location":"http://r/live","level_db":-12.0,"muted":false,"ducked":true}}"#))
    }
}
