/// The music of the audio still queued in the device, block by block, so that audio taken back
/// from the device (`snd_pcm_rewind`, when speech arrives and the queued silence is replaced)
/// takes its music back whole: the samples go back to the buffer *and* the level, fade-in and
/// duck envelope go back to where they were at the new end of the stream.
///
/// Why both: `engine.requestDuck` comes before the alert's first sample, so the attack is
/// rendered ahead into the queued audio; that audio is then taken back for the speech. Had only
/// the samples gone back, the envelope would already be at the floor and the listener would hear
/// the music drop in one step (2 ms of a 60 ms ramp, measured on hw:Loopback in the VM tier).
/// Owned by the audio thread.
public struct MusicTimeline: Sendable {
    public var mix: MusicMix

    struct Block {
        var frames: Int
        /// Music frames read for it (the rest of the block was music underrun).
        var got: Int
        var duck: Bool
        /// Not mixed at all (no music buffered): the mix only noted it (`MusicMix.starved`).
        var starved: Bool
        var before: MusicMix.Position
    }

    /// Oldest first; covers at least `limit` frames once that much has been rendered.
    var blocks: [Block] = []
    var head = 0
    var loggedFrames = 0
    /// Frames of rendered audio worth remembering: the device buffer.
    public var limit: Int

    public init(_ mix: MusicMix, limit: Int = 0) {
        self.mix = mix
        self.limit = limit
    }

    /// Frames whose music could still be taken back.
    public var rewindableFrames: Int { loggedFrames }

    /// Levels and ducks one block of music in place (see `MusicMix.apply`), remembering where the
    /// mix stood before it.
    public mutating func apply(_ music: UnsafeMutableBufferPointer<Float>, frames: Int, available: Int, duck: Bool) {
        note(Block(frames: frames, got: available, duck: duck, starved: false, before: mix.position))
        mix.apply(music, frames: frames, available: available, duck: duck)
    }

    /// A block rendered with no music at all.
    public mutating func starved(frames: Int) {
        note(Block(frames: frames, got: 0, duck: false, starved: true, before: mix.position))
        mix.starved()
    }

    /// The music source changed: what was rendered before belongs to another buffer.
    public mutating func forget() {
        blocks.removeAll(keepingCapacity: true)
        head = 0
        loggedFrames = 0
    }

    /// The last `frames` rendered frames were taken back from the device: the mix returns to where
    /// it stood after the frames that stay. Returns how many music frames those taken-back frames
    /// had read (to hand back to the buffer, last ones first). `scratch` (≥ one block of
    /// interleaved floats) is overwritten: the mix is re-run over the part of a block that stays.
    public mutating func takeBack(frames: Int, scratch: UnsafeMutableBufferPointer<Float>) -> Int {
        var left = min(frames, loggedFrames)
        var unread = 0
        while left > 0, blocks.count > head {
            let b = blocks.removeLast()
            loggedFrames -= b.frames
            mix.position = b.before
            if b.frames <= left {
                left -= b.frames
                unread += b.got
                continue
            }
            // The cut falls inside this block: replay the part that stays so the mix stands
            // exactly where the listener will be.
            let keep = b.frames - left
            let kept = min(b.got, keep)
            unread += b.got - kept
            left = 0
            if b.starved {
                starved(frames: keep)
            } else {
                let ch = mix.channels
                let n = min(keep * ch, scratch.count)
                for i in 0..<n { scratch[i] = 0 }
                let underruns = mix.underrunFrames
                apply(UnsafeMutableBufferPointer(rebasing: scratch[0..<n]), frames: n / ch, available: min(kept, n / ch), duck: b.duck)
                mix.underrunFrames = underruns
            }
        }
        if blocks.count == head { forget() }
        return unread
    }

    private mutating func note(_ b: Block) {
        blocks.append(b)
        loggedFrames += b.frames
        // Drop what is older than the device buffer (amortized: compact once half is stale).
        while blocks.count > head, loggedFrames - blocks[head].frames >= limit {
            loggedFrames -= blocks[head].frames
            head += 1
        }
        if head > 64 && head * 2 > blocks.count {
            blocks.removeFirst(head)
            head = 0
        }
    }
}
