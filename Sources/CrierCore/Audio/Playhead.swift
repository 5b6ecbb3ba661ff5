/// How much of the audio written to a PCM had left it, and what that means for the clips whose
/// end was still queued when the device was lost (docs/audio.md, "A device lost with a clip's
/// end still queued").
///
/// While it works, a clock-driven device answers how many of the frames written are still queued
/// (`snd_pcm_delay`); once it fails (ENODEV, EIO, EBADFD) it answers nothing more, and whatever
/// was queued then never plays. What had certainly played is the position at its last good
/// answer: frames written then minus its delay then. Frames it may have played after that answer
/// (until it died, at some unknown moment before the call that failed) count as not played: the
/// estimate errs only towards "not heard" (a clip said again), never towards acking what nobody
/// heard, and by at most the frames played between the last good answer and the failure (the
/// engine asks once per period while a clip's end is queued: one period, 20 ms, 960 frames at
/// 48 kHz with the defaults).
public struct Playhead: Sendable, Equatable {
    /// Stream frames known to have left the device. Never goes back: a rewind takes back only
    /// queued frames, and a recovered underrun had played everything.
    public private(set) var played: UInt64 = 0

    public init() {}

    /// The device answered that `delay` of the `written` frames were still queued.
    public mutating func observe(written: UInt64, delay: Int) {
        let queued = UInt64(min(max(0, delay), Int(clamping: written)))
        played = max(played, written - queued)
    }

    /// A self-paced device (null, file) took `written` frames at once; the clock the engine
    /// paces it by had reached `clock` frames: what "played" means there.
    public mutating func observe(written: UInt64, clock: Int64) {
        played = max(played, min(written, UInt64(max(0, clock))))
    }
}

/// A clip whose last frame was written to the device but may still be queued in it. It counts
/// as heard once its last audible frame has played: the silence after that carries no word.
public struct QueuedClipEnd: Sendable, Equatable {
    public var id: UInt64
    /// Stream frame just past the clip's last frame (its fade-out included).
    public var end: UInt64
    /// Stream frame just past the clip's last audible frame (`Mixer.audibleThreshold`): what
    /// follows it to `end` is silence (espeak ends each utterance with ~300 ms of it). Once this
    /// has played every word of the clip was heard. At most `end`; `end` when not known.
    public var audibleEnd: UInt64
    /// Frames of the clip heard once `end` has played: all of it, or up to where a stop's
    /// fade-out began (`Mixer.Rendered.finished`).
    public var heard: Int
    /// Stream frames from where the heard part ends to `end`: a stop's fade-out, 0 for a clip
    /// that played to its own end.
    public var tail: Int
    /// The clip was stopped (cancel, a more urgent order, shutdown): it is not said again.
    public var stopped: Bool

    /// `quiet`: the clip frames before `end` that are silence (`Mixer.Rendered.finished`);
    /// `audibleEnd` is `end` minus those.
    public init(id: UInt64, end: UInt64, quiet: Int = 0, heard: Int, tail: Int = 0, stopped: Bool = false) {
        self.id = id
        self.end = end
        // A streamed clip's gap silence adds stream frames that are no clip frames: counting
        // back clip frames from the end can only land at or after the real audible end.
        self.audibleEnd = end - min(end, UInt64(max(0, quiet)))
        self.heard = heard
        self.tail = tail
        self.stopped = stopped
    }

    /// What becomes of the clip when the device is lost after `played` stream frames had played.
    public enum Fate: Sendable, Equatable {
        /// Its last audible frame had played (only silence, if anything, was lost): it ends
        /// as it would have, `heard` frames heard.
        case ended(heard: Int)
        /// A stopped clip whose audible part had not all played: only `heard` frames were heard.
        case cut(heard: Int)
        /// A clip whose audible part had not all played: kept, and played again from its start when the device
        /// is back, like the clips the mixer had not finished (nothing is acked for it now).
        case again
    }

    public func fate(played: UInt64) -> Fate {
        if audibleEnd <= played { return .ended(heard: heard) }
        guard stopped else { return .again }
        // Stream frames between the heard part's end and what played: each carried at most one
        // frame of the clip (a streamed clip's gap silence carries none), so the clip frames
        // counted off are never fewer than those that did not play.
        let unplayed = Int(clamping: end - played) - tail
        return .cut(heard: max(0, heard - max(0, unplayed)))
    }

    /// Frames of the clip's end that had not played: what counting it heard would have lost.
    public func unplayed(played: UInt64) -> Int { end > played ? Int(clamping: end - played) : 0 }
    /// Of those, the frames up to the audible end: what of its sound had not played.
    public func unplayedSound(played: UInt64) -> Int { audibleEnd > played ? Int(clamping: audibleEnd - played) : 0 }
}
