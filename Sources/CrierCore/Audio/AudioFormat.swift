/// The output stream's shape: signed 16-bit little-endian, interleaved.
public struct AudioFormat: Sendable, Equatable {
    public var rate: Int
    public var channels: Int
    public init(rate: Int, channels: Int) {
        self.rate = rate
        self.channels = channels
    }
    public func frames(ms: Double) -> Int { Int((Double(rate) * ms / 1000).rounded()) }
}

/// Mono float samples at the output rate, ready to mix: a resampled utterance or a tone.
/// Samples are in -1...1 before the master gain and headroom.
public struct Clip: Sendable {
    public var samples: [Float]
    /// Set for speech that is still being synthesized: the mixer reads `stream` as it grows and
    /// `samples` is unused (docs/audio.md, "Streaming speech").
    public var stream: ClipStream?
    public init(samples: [Float]) { self.samples = samples }
    public init(stream: ClipStream) {
        samples = []
        self.stream = stream
    }
    public var isEmpty: Bool { stream == nil && samples.isEmpty }
}

public enum Decibel {
    public static func gain(_ db: Double) -> Double { pow10(db / 20) }

    /// 10^x without Foundation: exp(x·ln 10) by range reduction and a Taylor series; accurate to
    /// ~1e-12 over the range audio gains use.
    static func pow10(_ x: Double) -> Double { exp(x * 2.302585092994046) }

    static func exp(_ x: Double) -> Double {
        let k = (x / 0.6931471805599453).rounded()
        let r = x - k * 0.6931471805599453
        var term = 1.0, sum = 1.0
        for n in 1..<20 {
            term *= r / Double(n)
            sum += term
        }
        var result = sum
        if k > 0 { for _ in 0..<Int(k) { result *= 2 } } else if k < 0 { for _ in 0..<Int(-k) { result /= 2 } }
        return result
    }
}
