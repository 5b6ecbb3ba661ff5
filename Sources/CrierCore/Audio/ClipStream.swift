import Synchronization

/// A clip that grows while it plays: speech is mixed from its first synthesized chunk on, while
/// the rest is still being synthesized (issue 16, docs/audio.md "Streaming speech").
///
/// One writer (the speech thread) appends samples at the output rate and marks where each part
/// (one order of a coalesced alert) ends; one reader (the audio thread) copies samples out. The
/// lock is held only to copy: samples live in fixed-size blocks allocated outside it, so an
/// append never reallocates (and copies) what was already written while the reader waits.
/// Everything written stays until the clip is dropped: a clip cut off by a lost device is played
/// again from its start.
public final class ClipStream: Sendable {
    public static let blockSize = 16384

    struct State {
        var blocks: [[Float]] = []
        var count = 0
        var partEnds: [Int] = []
        var finished = false
        var cancelled = false
        var full = false
        /// Set by the reader when it wanted more than there was: the next append wakes it.
        var readerWaiting = true
        /// The reader has copied samples out at least once (the clip is audible).
        var read = false
        var waker: (@Sendable () -> Void)?
    }

    private let state = Mutex(State())
    /// Most samples the clip takes; the writer is told to stop beyond it (a bound on memory).
    public let capacity: Int

    public init(capacity: Int = 48000 * 240) {
        self.capacity = max(1, capacity)
    }

    // MARK: writer

    /// Appends samples. False when the reader no longer wants any (cancelled) or the clip is
    /// full (what fitted was kept): the writer should stop synthesizing.
    @discardableResult
    public func append(_ samples: [Float]) -> Bool {
        if samples.isEmpty { return !isCancelled }
        // Blocks are allocated here, outside the lock.
        let (count, blocks) = state.withLock { ($0.count, $0.blocks.count) }
        let needBlocks = (min(capacity, count + samples.count) + Self.blockSize - 1) / Self.blockSize
        var fresh: [[Float]] = []
        for _ in blocks..<max(blocks, needBlocks) {
            var b: [Float] = []
            b.reserveCapacity(Self.blockSize)
            fresh.append(b)
        }
        let (ok, wake) = state.withLock { s -> (Bool, (@Sendable () -> Void)?) in
            if s.cancelled { return (false, nil) }
            s.blocks.append(contentsOf: fresh)
            var i = 0
            while i < samples.count && s.count < capacity {
                let b = s.count / Self.blockSize
                let n = min(samples.count - i, Self.blockSize - s.count % Self.blockSize, capacity - s.count)
                s.blocks[b].append(contentsOf: samples[i..<(i + n)])
                s.count += n
                i += n
            }
            if i < samples.count { s.full = true }
            let w = s.readerWaiting ? s.waker : nil
            if w != nil { s.readerWaiting = false }
            return (i == samples.count, w)
        }
        wake?()
        return ok
    }

    /// Marks the end of a part: `partEnds` gains the current length.
    public func endPart() {
        state.withLock { $0.partEnds.append($0.count) }
    }

    /// No more samples will come (the synthesis ended, failed or was cancelled).
    public func finish() {
        let wake = state.withLock { s -> (@Sendable () -> Void)? in
            s.finished = true
            return s.waker
        }
        wake?()
    }

    // MARK: reader

    /// Tells the writer to stop (the clip was stopped or dropped).
    public func cancel() {
        state.withLock { $0.cancelled = true }
    }

    /// Called (outside the lock, on the writer's thread) when samples arrive that the reader was
    /// waiting for, and when the writer finishes: the audio engine pokes its wake pipe.
    public func setWaker(_ w: @escaping @Sendable () -> Void) {
        state.withLock { $0.waker = w }
    }

    public var isCancelled: Bool { state.withLock { $0.cancelled } }
    /// True once the reader has taken samples: the clip's first sound is on its way.
    public var hasBeenRead: Bool { state.withLock { $0.read } }
    public var isFinished: Bool { state.withLock { $0.finished } }
    /// True when samples were dropped because the clip reached `capacity`.
    public var isFull: Bool { state.withLock { $0.full } }
    public var count: Int { state.withLock { $0.count } }
    /// The frame just past each part written so far.
    public var partEnds: [Int] { state.withLock { $0.partEnds } }

    /// Copies up to `out.count` samples starting at frame `from`. `total` is the clip's length
    /// when the writer has finished, nil while it may still grow. When fewer than `out.count`
    /// samples were there and the writer is not finished, the next append wakes the reader.
    public func read(from: Int, into out: UnsafeMutableBufferPointer<Float>) -> (copied: Int, total: Int?) {
        state.withLock { s in
            var n = 0
            var p = from
            while n < out.count && p < s.count {
                let b = p / Self.blockSize, o = p % Self.blockSize
                let k = min(out.count - n, Self.blockSize - o, s.count - p)
                s.blocks[b].withUnsafeBufferPointer { src in
                    for j in 0..<k { out[n + j] = src[o + j] }
                }
                n += k
                p += k
            }
            if n < out.count && !s.finished { s.readerWaiting = true }
            if n > 0 { s.read = true }
            return (n, s.finished ? s.count : nil)
        }
    }

    /// Every sample written so far (tests, and a streamed clip compared with a whole one).
    public var samples: [Float] {
        state.withLock { s in
            var all: [Float] = []
            all.reserveCapacity(s.count)
            for b in s.blocks { all += b }
            return all
        }
    }
}

extension ClipStream {
    /// The samples just before frame `end` that are silence (`Mixer.quietEnd`), at most `limit`.
    /// Frames at or past what was written count as silence: the mixer played them as such.
    public func quietEnd(before end: Int, limit: Int) -> Int {
        state.withLock { s in
            var i = end
            while i > 0 && end - i < limit {
                let p = i - 1
                if p < s.count, abs(s.blocks[p / Self.blockSize][p % Self.blockSize]) > Mixer.audibleThreshold { break }
                i -= 1
            }
            return end - i
        }
    }

    /// True when at least `n` samples are there or the writer has finished; otherwise the next
    /// append wakes the reader.
    public func available(atLeast n: Int) -> Bool {
        state.withLock { s in
            if s.count >= n || s.finished { return true }
            s.readerWaiting = true
            return false
        }
    }

    /// Samples written beyond frame `from`, or nil once the writer has finished (nothing more
    /// to wait for). When fewer than `want` are there, the next append wakes the reader.
    public func lead(from: Int, want: Int) -> Int? {
        state.withLock { s in
            if s.finished { return nil }
            let n = max(0, s.count - from)
            if n < want { s.readerWaiting = true }
            return n
        }
    }
}
