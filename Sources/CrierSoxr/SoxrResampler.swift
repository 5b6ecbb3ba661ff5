import CSoxr

/// Sample-rate conversion of interleaved float music through libsoxr (medium quality: 16-bit
/// precision with a medium roll-off, ample for music mixed to S16 under speech, and cheap
/// enough for a Pi Zero 2 W). Streaming: feed blocks, take what comes out; state carries over.
public final class SoxrResampler {
    public let inRate: Int
    public let outRate: Int
    public let channels: Int
    private var soxr: soxr_t?
    private var out: [Float] = []

    public struct Failure: Error, Sendable, CustomStringConvertible {
        public var description: String
    }

    public init(inRate: Int, outRate: Int, channels: Int) throws(Failure) {
        self.inRate = inRate
        self.outRate = outRate
        self.channels = channels
        var err: soxr_error_t?
        var q = soxr_quality_spec(UInt(SOXR_MQ), 0)
        var io = soxr_io_spec(SOXR_FLOAT32_I, SOXR_FLOAT32_I)
        let s = soxr_create(Double(inRate), Double(outRate), UInt32(channels), &err, &io, &q, nil)
        if let e = err { throw Failure(description: "soxr: " + String(cString: e)) }
        guard let s else { throw Failure(description: "soxr_create failed") }
        soxr = s
    }

    deinit { if let s = soxr { soxr_delete(s) } }

    /// Resamples `frames` frames from `input`; `body` sees the output frames (interleaved).
    /// `input` nil flushes what the filter still holds (end of a track).
    public func process(_ input: UnsafeBufferPointer<Float>?, frames: Int, _ body: (UnsafeBufferPointer<Float>) -> Void) {
        guard let s = soxr else { return }
        let cap = Int(Double(frames) * Double(outRate) / Double(inRate)) + 256
        if out.count < cap * channels { out = [Float](repeating: 0, count: cap * channels) }
        var consumed = 0
        repeat {
            var idone = 0, odone = 0
            let inPtr = input.map { UnsafeRawPointer($0.baseAddress!.advanced(by: consumed * channels)) }
            let remaining = input == nil ? 0 : frames - consumed
            out.withUnsafeMutableBufferPointer { o in
                _ = soxr_process(s, inPtr, remaining, &idone, o.baseAddress, cap, &odone)
            }
            consumed += idone
            if odone > 0 { out.withUnsafeBufferPointer { body(UnsafeBufferPointer(rebasing: $0[0..<(odone * channels)])) } }
            if input == nil && odone == 0 { break }
            if input != nil && idone == 0 && odone == 0 { break }
        } while input == nil || consumed < frames
    }
}
