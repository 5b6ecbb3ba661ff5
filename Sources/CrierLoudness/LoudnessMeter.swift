import CEbur128

/// EBU R128 loudness of a buffer through libebur128 (docs/voice.md, "Building a pack"): the
/// integrated loudness (gated, LUFS), the sample peak and the true peak (4x oversampled, as
/// ITU-R BS.1770-4 asks). Thin: which signal to measure and what to do with the figures are
/// `LoudnessRules`' (CrierCore).
public enum LoudnessMeter {
    public struct Measurement: Sendable, Equatable {
        /// Integrated loudness, LUFS; -infinity for silence or a signal shorter than one 400 ms
        /// gating block.
        public var integrated: Double
        /// Highest |sample| over all channels, linear (1 = full scale).
        public var samplePeak: Double
        /// Highest reconstructed (inter-sample) level, linear.
        public var truePeak: Double
    }

    public struct Failure: Error, Sendable, CustomStringConvertible {
        public var description: String
    }

    /// Measures `samples` (interleaved, -1...1) at `rate` Hz.
    public static func measure(_ samples: [Float], rate: Int, channels: Int = 1) throws(Failure) -> Measurement {
        guard channels >= 1, channels <= 8, rate >= 8000, rate <= 384_000 else {
            throw Failure(description: "libebur128: unsupported layout (\(channels) channels at \(rate) Hz)")
        }
        let mode = Int32(EBUR128_MODE_I.rawValue | EBUR128_MODE_TRUE_PEAK.rawValue | EBUR128_MODE_SAMPLE_PEAK.rawValue)
        guard let st = ebur128_init(UInt32(channels), UInt(rate), mode) else {
            throw Failure(description: "libebur128: ebur128_init failed (out of memory)")
        }
        defer {
            var p: UnsafeMutablePointer<ebur128_state>? = st
            ebur128_destroy(&p)
        }
        let frames = samples.count / channels
        // In blocks: one call per second of audio keeps libebur128's internal buffers small.
        var done = 0
        let block = max(rate, 1)
        while done < frames {
            let n = min(block, frames - done)
            let rc = samples.withUnsafeBufferPointer { ebur128_add_frames_float(st, $0.baseAddress! + done * channels, n) }
            guard rc == Int32(EBUR128_SUCCESS.rawValue) else { throw Failure(description: "libebur128: add_frames failed (\(rc))") }
            done += n
        }
        var integrated = -Double.infinity
        if frames > 0 { _ = ebur128_loudness_global(st, &integrated) }
        var sp = 0.0, tp = 0.0
        for c in 0..<channels {
            var s = 0.0, t = 0.0
            _ = ebur128_sample_peak(st, UInt32(c), &s)
            _ = ebur128_true_peak(st, UInt32(c), &t)
            sp = max(sp, s)
            tp = max(tp, t)
        }
        // libebur128 gives -HUGE_VAL (which is -infinity) below the absolute gate.
        if !integrated.isFinite { integrated = -.infinity }
        return Measurement(integrated: integrated, samplePeak: sp, truePeak: max(tp, sp))
    }

    /// libebur128's version, for the log.
    public static var version: String {
        var a: Int32 = 0, b: Int32 = 0, c: Int32 = 0
        ebur128_get_version(&a, &b, &c)
        return "\(a).\(b).\(c)"
    }
}
