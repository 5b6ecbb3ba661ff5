import Synchronization

/// The music's gain under alerts, one value per output frame: down by `duckDb` over `attack`
/// while ducking is wanted, held there for `hold` after it is no longer wanted, then back up
/// over `release`. Ramps are straight lines in dB (a constant ratio per frame), so there is no
/// step anywhere and the curve sounds even; see docs/music.md for the table.
public struct DuckEnvelope: Sendable, Equatable {
    public let floorGain: Double
    let attackRatio: Double
    let releaseRatio: Double
    let holdFrames: Int
    /// Current linear gain, `floorGain`...1.
    public private(set) var gain: Double = 1
    /// Frames since ducking stopped being wanted while down (counts the hold).
    var sinceWanted = 0

    public init(rate: Int, duckDb: Double, attackMs: Double, holdMs: Double, releaseMs: Double) {
        let floorDb = min(0, duckDb)
        floorGain = Decibel.gain(floorDb)
        let a = max(1, Double(rate) * attackMs / 1000)
        let r = max(1, Double(rate) * releaseMs / 1000)
        attackRatio = Decibel.gain(floorDb / a)
        releaseRatio = Decibel.gain(-floorDb / r)
        holdFrames = Int((Double(rate) * holdMs / 1000).rounded())
    }

    public init(rate: Int, _ c: MusicConfig) {
        self.init(rate: rate, duckDb: c.duckDb, attackMs: c.attackMs, holdMs: c.holdMs, releaseMs: c.releaseMs)
    }

    /// Down, on its way down, or holding / coming back up.
    public var isDucked: Bool { gain < 1 }
    /// At rest at full level or at the floor: the block is one constant.
    var steady: Bool { gain >= 1 || gain <= floorGain }

    /// The gain of the next frame.
    @inline(__always)
    public mutating func next(wanted: Bool) -> Float {
        if wanted {
            sinceWanted = 0
            if gain > floorGain {
                gain *= attackRatio
                if gain <= floorGain * (1 + 1e-9) { gain = floorGain }
            }
        } else if gain < 1 {
            if sinceWanted < holdFrames {
                sinceWanted += 1
            } else {
                gain *= releaseRatio
                if gain >= 1 - 1e-9 { gain = 1 }
            }
        }
        return Float(gain)
    }
}

/// What the audio thread does to the music before the mixer adds it to speech: the music
/// level (ramped, so a level change or mute never clicks), the duck envelope, and a short
/// fade-in whenever music resumes after the buffer ran dry (an underrun plays silence for the
/// music only). Owned by the audio thread.
public struct MusicMix: Sendable {
    public let channels: Int
    public var envelope: DuckEnvelope
    var level: Float
    var targetLevel: Float
    let levelStep: Float
    let resumeFrames: Int
    /// Frames into the fade-in after silence; `resumeFrames` once at full level.
    var resumed: Int
    public internal(set) var underrunFrames: UInt64 = 0

    /// Everything `apply` moves forward frame by frame: what a rewind must put back.
    struct Position: Sendable {
        var envelope: DuckEnvelope
        var level: Float
        var resumed: Int
    }

    var position: Position {
        get { Position(envelope: envelope, level: level, resumed: resumed) }
        // The target level is not part of it: a level change that came in meanwhile still holds.
        set { envelope = newValue.envelope; level = newValue.level; resumed = newValue.resumed }
    }

    public init(rate: Int, channels: Int, config: MusicConfig, level: Double) {
        self.channels = channels
        envelope = DuckEnvelope(rate: rate, config)
        self.level = Float(level)
        targetLevel = Float(level)
        levelStep = 1 / Float(max(1, rate / 50))  // a full swing in 20 ms
        resumeFrames = max(1, rate / 200)         // 5 ms
        resumed = 0
    }

    /// Linear music level (level_db × volume-independent mute), ramped in over 20 ms.
    public mutating func setLevel(_ g: Double) { targetLevel = Float(max(0, min(1, g))) }
    public var currentLevel: Double { Double(targetLevel) }
    /// The level and the envelope are both at rest at zero output: nothing to add.
    public var silentLevel: Bool { level == 0 && targetLevel == 0 }

    /// The buffer had nothing for a block that was not mixed at all: fade in when music returns.
    public mutating func starved() { resumed = 0 }

    /// Scales `music` in place: `available` frames of interleaved music (the rest of `frames`
    /// is what the buffer could not give: silence). `duck`: an alert is queued or playing.
    public mutating func apply(_ music: UnsafeMutableBufferPointer<Float>, frames: Int, available: Int, duck: Bool) {
        let ch = channels
        // At rest (no ramp, no fade-in, all frames there): one gain for the block, the common case.
        if available == frames && level == targetLevel && resumed >= resumeFrames
            && ((duck && envelope.gain <= envelope.floorGain) || (!duck && envelope.gain >= 1)) {
            if duck { _ = envelope.next(wanted: true) }
            let g = Float(envelope.gain) * level
            if g != 1 { for i in 0..<(frames * ch) { music[i] *= g } }
            return
        }
        for f in 0..<frames {
            let e = envelope.next(wanted: duck)
            if level != targetLevel {
                level = level < targetLevel ? min(targetLevel, level + levelStep) : max(targetLevel, level - levelStep)
            }
            if f >= available {
                resumed = 0
                for c in 0..<ch { music[f * ch + c] = 0 }
                continue
            }
            var g = e * level
            if resumed < resumeFrames {
                g *= Float(resumed) / Float(resumeFrames)
                resumed += 1
            }
            for c in 0..<ch { music[f * ch + c] *= g }
        }
        if available < frames { underrunFrames += UInt64(frames - available) }
    }
}

/// The bounded buffer between the music thread (decoding, resampling) and the audio thread:
/// interleaved float frames at the output rate and channel count. The audio thread only copies
/// out under a short lock; when it is empty the music part is silence (never a stall).
public final class MusicBuffer: Sendable {
    public let channels: Int
    public let capacityFrames: Int
    /// Room kept free by `write` for frames the audio thread hands back (`unread`) when it takes
    /// queued audio back from the device so speech starts at once.
    public let reserveFrames: Int

    struct Ring {
        var data: [Float]
        var read = 0
        var count = 0
        var underruns: UInt64 = 0
        var wasStarved = true
    }

    private let ring: Mutex<Ring>

    public init(channels: Int, capacityFrames: Int, reserveFrames: Int = 0) {
        self.channels = max(1, channels)
        self.reserveFrames = max(0, reserveFrames)
        self.capacityFrames = max(1, capacityFrames) + self.reserveFrames
        ring = Mutex(Ring(data: [Float](repeating: 0, count: self.capacityFrames * self.channels)))
    }

    public var filledFrames: Int { ring.withLock { $0.count } }
    /// Frames `write` would still take.
    public var freeFrames: Int { max(0, capacityFrames - reserveFrames - filledFrames) }
    /// Times the audio thread found it empty while it had been playing.
    public var underruns: UInt64 { ring.withLock { $0.underruns } }

    /// Appends whole frames from `samples` (interleaved); returns the frames taken (as many as fit).
    @discardableResult
    public func write(_ samples: UnsafeBufferPointer<Float>) -> Int {
        let ch = channels
        let cap = capacityFrames
        let limit = cap - reserveFrames
        return ring.withLock { r in
            let n = max(0, min(samples.count / ch, limit - r.count))
            var w = (r.read + r.count) % cap
            var i = 0
            r.data.withUnsafeMutableBufferPointer { d in
                while i < n {
                    let run = min(n - i, cap - w)
                    (d.baseAddress! + w * ch).update(from: samples.baseAddress! + i * ch, count: run * ch)
                    i += run
                    w = (w + run) % cap
                }
            }
            r.count += n
            return n
        }
    }

    /// Copies up to `frames` frames into `out`; returns how many there were.
    public func read(into out: UnsafeMutableBufferPointer<Float>, frames: Int) -> Int {
        let ch = channels
        let cap = capacityFrames
        return ring.withLock { r in
            let n = min(frames, r.count)
            var i = 0
            r.data.withUnsafeBufferPointer { d in
                while i < n {
                    let run = min(n - i, cap - r.read)
                    (out.baseAddress! + i * ch).update(from: d.baseAddress! + r.read * ch, count: run * ch)
                    i += run
                    r.read = (r.read + run) % cap
                }
            }
            r.count -= n
            if n < frames {
                if !r.wasStarved { r.underruns += 1 }
                r.wasStarved = true
            } else {
                r.wasStarved = false
            }
            return n
        }
    }

    /// Puts frames the audio thread had taken back in front of the buffer, in order (the last
    /// frame of `samples` is read next-but-none, i.e. `samples` is read again first to last).
    /// Frames that do not fit are dropped from the front of `samples`.
    public func unread(_ samples: UnsafeBufferPointer<Float>) {
        let ch = channels
        let cap = capacityFrames
        ring.withLock { r in
            let all = samples.count / ch
            let n = min(all, cap - r.count)
            let skip = all - n
            r.read = (r.read - n % cap + cap) % cap
            for i in 0..<n {
                let dst = (r.read + i) % cap
                for c in 0..<ch { r.data[dst * ch + c] = samples[(skip + i) * ch + c] }
            }
            r.count += n
        }
    }

    public func clear() {
        ring.withLock { r in r.count = 0; r.read = 0 }
    }
}
