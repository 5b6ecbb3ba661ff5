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

    /// 20·log10(v), the inverse of `gain`; -infinity for 0 (and below).
    public static func of(_ v: Double) -> Double { v > 0 ? 20 * log10(v) : -.infinity }

    /// log10 without Foundation: v = s·2^e with s in [1, 2); ln s = 2·atanh((s-1)/(s+1)).
    public static func log10(_ v: Double) -> Double {
        let s = v.significand
        let y = (s - 1) / (s + 1)
        var term = y, sum = 0.0
        for k in stride(from: 1, through: 39, by: 2) {
            sum += term / Double(k)
            term *= y * y
        }
        return (Double(v.exponent) * 0.6931471805599453 + 2 * sum) / 2.302585092994046
    }

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
