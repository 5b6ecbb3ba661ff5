/// Mixes clips (speech, tones) into the always-running output stream.
///
/// Rules that keep a cheap amp from popping and speech from clipping:
/// - every clip starts with a fade-in and ends with a fade-out of `fadeFrames`; a clip that is
///   stopped early fades out from where it is;
/// - the master gain moves in a ramp (never a step) so a volume change mid-word does not click;
/// - everything is scaled by the headroom (default −3 dB) and then clamped, counting clamps.
///
/// Owned by the one audio thread; other threads talk to it through the engine's inbox.
public struct Mixer: Sendable {
    public struct Voice: Sendable {
        public let id: UInt64
        let clip: Clip
        var position = 0
        /// Frame within the clip at which a requested stop's fade-out ends.
        var stopAt: Int?
        /// Frame within the clip where that fade-out began: what came before was heard in full.
        var stoppedFrom: Int?
        var gain: Float
        /// A streamed clip is mixed once it has more than a fade of samples (or is complete).
        var ready: Bool
        /// Below 1 while a streamed clip's synthesis is behind playback: fades out over the
        /// samples left, silence until more arrive, fades back in.
        var gapGain: Float = 1
        var inGap = false
        /// Whether background music ducks under it (alerts and prompts do, the volume click not).
        var ducks = true
    }

    public let format: AudioFormat
    public let fadeFrames: Int
    let headroom: Float
    var voices: [Voice] = []
    var gain: Float
    var targetGain: Float
    /// Gain change per frame while ramping: a full 0→1 swing takes `gainRampFrames`.
    let gainStep: Float
    public private(set) var clampedSamples = 0

    public init(format: AudioFormat, fadeMs: Double = 5, headroomDb: Double = 3, gain: Double = 1, gainRampMs: Double = 20) {
        self.format = format
        self.fadeFrames = max(1, format.frames(ms: fadeMs))
        self.headroom = Float(Decibel.gain(-headroomDb))
        self.gain = Float(gain)
        self.targetGain = Float(gain)
        self.gainStep = 1 / Float(max(1, format.frames(ms: gainRampMs)))
    }

    /// Nothing is heard: no voice, or only streamed clips whose first samples have not come yet.
    public var isIdle: Bool { !voices.contains { $0.ready } }
    public var activeIDs: [UInt64] { voices.map(\.id) }

    public mutating func add(id: UInt64, clip: Clip, gain: Double = 1, ducks: Bool = true) {
        voices.append(Voice(id: id, clip: clip, gain: Float(gain), ready: clip.stream == nil, ducks: ducks))
    }

    /// A voice that ducks the music is playing (or waiting for its first streamed samples: the
    /// duck starts before the speech is loud).
    public var wantsDuck: Bool { voices.contains { $0.ducks } }

    /// Marks the streamed clips that now have enough samples to start; true when any did (the
    /// engine then treats them as just added: queued silence is taken back). Called before each
    /// render: a streamed clip is only mixed once this has let it start.
    public mutating func pollStreams() -> Bool {
        var any = false
        for i in voices.indices where !voices[i].ready {
            if let st = voices[i].clip.stream, voices[i].stopAt == nil, st.available(atLeast: fadeFrames + 1) {
                voices[i].ready = true
                any = true
            }
        }
        return any
    }

    /// Frames that can be rendered before a started streamed clip whose synthesis is still
    /// running would run out of samples (where its gap fade-out begins), the least over such
    /// clips; nil when none limits the stream. The engine writes no further ahead than this
    /// while its device is safely fed: gap silence written ahead would be heard, with the rest
    /// of the speech a buffer later, although the synthesis was only microseconds behind.
    /// Asking arms the clips' wakers when they have less than `want` frames in hand.
    public func streamLead(want: Int) -> Int? {
        var lead: Int?
        for v in voices where v.ready && v.stopAt == nil {
            guard let st = v.clip.stream, let n = st.lead(from: v.position, want: want + fadeFrames) else { continue }
            lead = min(lead ?? .max, max(0, n - fadeFrames))
        }
        return lead
    }

    /// Fades the voice out from its current position; it finishes (and is reported) after the fade.
    public mutating func stop(id: UInt64) {
        for i in voices.indices where voices[i].id == id && voices[i].stopAt == nil {
            if let st = voices[i].clip.stream {
                st.cancel()  // the synthesis stops too
                let total = st.isFinished ? st.count : Int.max
                let at = voices[i].ready ? min(total, voices[i].position + fadeFrames) : 0
                voices[i].stopAt = at
                voices[i].stoppedFrom = at == total ? at : voices[i].position
                continue
            }
            voices[i].stopAt = min(voices[i].clip.samples.count, voices[i].position + fadeFrames)
            voices[i].stoppedFrom = voices[i].stopAt == voices[i].clip.samples.count ? voices[i].stopAt : voices[i].position
        }
    }

    /// Starts every voice again from its beginning (after the device was lost mid-clip).
    public mutating func rewindAll() {
        for i in voices.indices {
            voices[i].position = 0; voices[i].stopAt = nil; voices[i].stoppedFrom = nil
            voices[i].gapGain = 1; voices[i].inGap = false
        }
    }

    public mutating func setGain(_ g: Double) { targetGain = Float(max(0, min(4, g))) }
    public var currentGain: Double { Double(targetGain) }

    public struct Rendered: Sendable, Equatable {
        /// Voices that started in this block (first sample written).
        public var started: [UInt64] = []
        /// Voices whose last sample is in this block, with the frame offset just past it, how
        /// many frames of the clip were heard in full (all of it, or up to where a stop's fade
        /// began), and the frames of a stop's fade-out that follow those (0 for a clip that
        /// played to its own end): what a device lost before the end played takes back
        /// (`QueuedClipEnd`); and `quiet`, the clip frames just before its end (its own or a
        /// stop's) that are silence (`Mixer.quietEnd`): once the frame before those has played,
        /// every word of it was heard.
        public var finished: [(id: UInt64, endFrame: Int, heard: Int, tail: Int, quiet: Int)] = []
        /// True when every sample of the block is silence from the mixer's point of view.
        public var silent = true
        /// Streamed clips that ran out of samples in this block (synthesis behind playback).
        public var gaps: [UInt64] = []
        /// Frames of silence played in such gaps in this block.
        public var gapFrames = 0

        public static func == (a: Rendered, b: Rendered) -> Bool {
            a.started == b.started && a.silent == b.silent && a.gaps == b.gaps && a.gapFrames == b.gapFrames
                && a.finished.elementsEqual(b.finished, by: { $0.id == $1.id && $0.endFrame == $1.endFrame && $0.heard == $1.heard && $0.tail == $1.tail
                    && $0.quiet == $1.quiet })
        }
    }

    /// Renders the music block alone, the clips waiting where they are: the self-paced
    /// device's catch-up to "now" before a new clip starts.
    public mutating func renderMusicOnly(into out: UnsafeMutableBufferPointer<Int16>, frames: Int, music: UnsafeBufferPointer<Float>) -> Rendered {
        let waiting = voices
        voices = []
        let r = render(into: out, frames: frames, music: music)
        voices = waiting
        return r
    }

    /// Renders `frames` frames of interleaved S16 into `out` (count ≥ frames × channels).
    /// `music`: interleaved music frames at this format, already levelled and ducked
    /// (`MusicMix`), added to the speech before the master gain and the headroom.
    public mutating func render(into out: UnsafeMutableBufferPointer<Int16>, frames: Int,
                                music: UnsafeBufferPointer<Float>? = nil) -> Rendered {
        var result = Rendered()
        let ch = format.channels
        if voices.isEmpty && gain == targetGain && music == nil {
            for i in 0..<(frames * ch) { out[i] = 0 }
            return result
        }
        result.silent = isIdle
        var acc = [Float](repeating: 0, count: frames)
        var remaining: [Voice] = []
        remaining.reserveCapacity(voices.count)
        for var v in voices {
            if let st = v.clip.stream {
                if renderStream(&v, st, into: &acc, frames: frames, &result) { remaining.append(v) }
                continue
            }
            if v.position == 0 { result.started.append(v.id) }
            let end = v.stopAt ?? v.clip.samples.count
            let n = min(frames, max(0, end - v.position))
            let total = v.clip.samples.count
            v.clip.samples.withUnsafeBufferPointer { s in
                for f in 0..<n {
                    let p = v.position + f
                    var env: Float = 1
                    if p < fadeFrames { env = Float(p) / Float(fadeFrames) }
                    let toEnd = end - p
                    if toEnd <= fadeFrames {
                        // A stop or the clip's own end: fade to zero at `end`.
                        let fadeLen = v.stopAt != nil ? fadeFrames : min(fadeFrames, total)
                        env = min(env, Float(toEnd - 1) / Float(max(1, fadeLen)))
                    }
                    acc[f] += s[p] * env * v.gain
                }
            }
            v.position += n
            if v.position >= end {
                result.finished.append((v.id, n, v.stoppedFrom ?? v.clip.samples.count, v.stoppedFrom.map { end - $0 } ?? 0,
                                        Self.quietEnd(v.clip.samples, before: end, limit: quietScanLimit)))
            } else {
                remaining.append(v)
            }
        }
        voices = remaining
        var g = gain
        let scale = headroom * 32767
        var clamped = 0
        for f in 0..<frames {
            if g != targetGain {
                g = g < targetGain ? min(targetGain, g + gainStep) : max(targetGain, g - gainStep)
            }
            if let m = music {
                for c in 0..<ch {
                    var x = (acc[f] + m[f * ch + c]) * g * scale
                    if x > 32767 { x = 32767; clamped += 1 } else if x < -32768 { x = -32768; clamped += 1 }
                    out[f * ch + c] = Int16(x.rounded())
                }
                continue
            }
            var x = acc[f] * g * scale
            if x > 32767 { x = 32767; clamped += 1 } else if x < -32768 { x = -32768; clamped += 1 }
            let sample = Int16(x.rounded())
            for c in 0..<ch { out[f * ch + c] = sample }
        }
        gain = g
        clampedSamples += clamped
        return result
    }
}

extension Mixer {
    /// Mixes a streamed clip's next `frames` into `acc`; false when the clip has finished.
    /// Same envelope as a whole clip (fade in, fade out at its end or at a stop); while the
    /// synthesis is behind, the clip fades out over the samples it has, plays silence (reported
    /// in `gaps`) and fades back in when samples arrive, so the audio thread never waits.
    mutating func renderStream(_ v: inout Voice, _ st: ClipStream, into acc: inout [Float], frames: Int,
                               _ result: inout Rendered) -> Bool {
        if !v.ready {
            if v.stopAt != nil {
                result.finished.append((v.id, 0, 0, 0, 0))
                return false
            }
            return true  // `pollStreams` says when it can start
        }
        if v.position == 0 { result.started.append(v.id) }
        let want = frames + fadeFrames + 1
        var scratch = [Float](repeating: 0, count: want)
        let (n, total) = scratch.withUnsafeMutableBufferPointer { st.read(from: v.position, into: $0) }
        let start = v.position
        let fade = Float(fadeFrames)
        var endAt: Int?
        for f in 0..<frames {
            let p = v.position
            let local = p - start
            let end = v.stopAt ?? total
            if let end, p >= end {
                endAt = f
                break
            }
            if end == nil && n - local <= fadeFrames {
                // Synthesis is behind playback: fade out over what is left, then silence.
                v.gapGain = max(0, v.gapGain - 1 / fade)
                if v.gapGain <= 0 || local >= n {
                    v.gapGain = 0
                    if !v.inGap {
                        v.inGap = true
                        result.gaps.append(v.id)
                    }
                    result.gapFrames += 1
                    continue
                }
            } else if v.gapGain < 1 {
                v.gapGain = min(1, v.gapGain + 1 / fade)
                v.inGap = false
            }
            let x = local < n ? scratch[local] : 0
            var env: Float = 1
            if p < fadeFrames { env = Float(p) / fade }
            if let end, end - p <= fadeFrames {
                let fadeLen = v.stopAt != nil ? fadeFrames : min(fadeFrames, total ?? fadeFrames)
                env = min(env, Float(end - p - 1) / Float(max(1, fadeLen)))
            }
            acc[f] += x * env * v.gain * v.gapGain
            v.position += 1
        }
        if endAt == nil, let end = v.stopAt ?? total, v.position >= end { endAt = frames }
        if let e = endAt {
            result.finished.append((v.id, e, v.stoppedFrom ?? (total ?? v.position), v.stoppedFrom.map { (v.stopAt ?? $0) - $0 } ?? 0,
                                    st.quietEnd(before: v.position, limit: quietScanLimit)))
            return false
        }
        return true
    }
}

extension Mixer {
    /// A clip sample at or below this magnitude (full scale 1) is silence: -60 dBFS, the level
    /// `SilenceTrim` drops before speech starts, so speech ends by the same measure it starts.
    /// What follows espeak's last word is ~300 ms of digital silence (docs/audio.md).
    public static let audibleThreshold = Float(SilenceTrim.threshold)

    /// How far back from a clip's end `quietEnd` looks (4 s at the mixer's rate): beyond that
    /// it stops and counts what it did not look at as sound, which only ever makes a clip count
    /// as heard later. Bounds the audio thread's work for a clip that is silence throughout.
    var quietScanLimit: Int { format.rate * 4 }

    /// The frames just before `end` that are silence (|sample| ≤ `audibleThreshold`), at most
    /// `limit`: the clip's audible end is `end` minus these.
    public static func quietEnd(_ samples: [Float], before end: Int, limit: Int) -> Int {
        let end = min(end, samples.count)
        var i = end
        while i > 0 && end - i < limit && abs(samples[i - 1]) <= audibleThreshold { i -= 1 }
        return end - i
    }
}

/// Short tones mixed into the stream: the volume click.
public enum Tone {
    /// A sine burst of `ms` milliseconds at `hz`, peak `level` (0...1); the mixer adds the fades.
    public static func beep(format: AudioFormat, hz: Double = 1000, ms: Double = 40, level: Double = 0.5) -> Clip {
        let n = format.frames(ms: ms)
        var s = [Float](repeating: 0, count: n)
        let w = 2 * Double.pi * hz / Double(format.rate)
        for i in 0..<n { s[i] = Float(level * Resampler.sin(w * Double(i))) }
        return Clip(samples: s)
    }
}
