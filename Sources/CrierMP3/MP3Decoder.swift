import CMpg123

/// An MP3 stream decoded through libmpg123's feed API: bytes in as they arrive from the
/// network, float frames out. A damaged frame is skipped by the library (resync), never fatal.
public final class MP3Decoder {
    private var handle: OpaquePointer?
    private var pcm = [Int16](repeating: 0, count: 16384)
    private var floats = [Float](repeating: 0, count: 16384)
    public private(set) var rate = 0
    public private(set) var channels = 0

    public struct Failure: Error, Sendable, CustomStringConvertible {
        public var description: String
    }

    private static let initialized: Bool = { mpg123_init(); return true }()

    public init() throws(Failure) {
        _ = Self.initialized
        var err: Int32 = 0
        guard let h = mpg123_new(nil, &err) else { throw Failure(description: "mpg123_new: \(String(cString: mpg123_plain_strerror(err)))") }
        handle = h
        // Signed 16-bit at whatever rate and channel count the stream has; no messages on stderr.
        _ = crier_mpg123_param(h, MPG123_ADD_FLAGS, Int(MPG123_QUIET.rawValue))
        mpg123_format_none(h)
        var rates: UnsafePointer<Int>?
        var n = 0
        mpg123_rates(&rates, &n)
        if let rates {
            for i in 0..<n { mpg123_format(h, rates[i], Int32(MPG123_MONO.rawValue | MPG123_STEREO.rawValue), Int32(MPG123_ENC_SIGNED_16.rawValue)) }
        }
        guard mpg123_open_feed(h) == MPG123_OK.rawValue else {
            mpg123_delete(h)
            handle = nil
            throw Failure(description: "mpg123_open_feed failed")
        }
    }

    deinit { if let h = handle { mpg123_delete(h) } }

    /// Feeds `bytes` and hands every decoded block to `body` (interleaved float, `rate`, `channels`).
    public func decode(_ bytes: UnsafeBufferPointer<UInt8>, _ body: (UnsafeBufferPointer<Float>, Int, Int, Int) -> Void) {
        guard let h = handle else { return }
        if bytes.count > 0 { _ = mpg123_feed(h, bytes.baseAddress, bytes.count) }
        while true {
            var done = 0
            let rc = pcm.withUnsafeMutableBytes { mpg123_read(h, $0.baseAddress, $0.count, &done) }
            if rc == MPG123_NEW_FORMAT.rawValue {
                var r = 0, c: Int32 = 0, e: Int32 = 0
                mpg123_getformat(h, &r, &c, &e)
                rate = r
                channels = Int(c)
                continue
            }
            if done > 0 && channels > 0 {
                let samples = done / 2
                for i in 0..<samples { floats[i] = Float(pcm[i]) / 32768 }
                floats.withUnsafeBufferPointer { body(UnsafeBufferPointer(rebasing: $0[0..<samples]), samples / channels, rate, channels) }
            }
            if rc == MPG123_OK.rawValue && done > 0 { continue }
            // MPG123_NEED_MORE, MPG123_DONE, or an error the library resyncs past on the next feed.
            if rc != MPG123_OK.rawValue || done == 0 { break }
        }
    }
}
