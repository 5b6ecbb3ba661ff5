/// TEST ONLY: `CRIER_TEST_AUDIO_SPEED`, the factor by which a self-paced device's clock (ALSA's
/// null or file plugin: they take samples as fast as they are written) runs faster than real time,
/// so that `scripts/soak.sh` can say a year of orders in an hour (docs/benchmarks.md, "Soak").
/// Read once per engine from the environment, logged loudly when set, refused for a real card
/// (`hw:`/`plughw:`), and never applied to a clock-driven device whatever its name: a sound card
/// plays at its own rate.
public struct AudioTestSpeed: Sendable, Equatable {
    public static let variable = "CRIER_TEST_AUDIO_SPEED"
    public static let range: ClosedRange<Double> = 1...1000

    /// 1 unless the variable was set and accepted.
    public let factor: Double
    /// The line to log (a warning when set, an error when refused); nil when unset.
    public let message: String?
    public let refused: Bool

    /// `value`: the variable's value (nil: unset); `device`: audio.device.
    public init(value: String?, device: String) {
        let raw = TestSpeedValue.trimmed(value)
        guard !raw.isEmpty else {
            factor = 1
            message = nil
            refused = false
            return
        }
        let name = Self.variable
        if device.hasPrefix("hw:") || device.hasPrefix("plughw:") {
            factor = 1
            refused = true
            message = "\(name)=\(raw) is a test-only setting and is refused for the real sound card '\(device)'; "
                + "audio plays in real time; unset it (it belongs to scripts/soak.sh, never to a box)"
            return
        }
        guard let f = TestSpeedValue.factor(raw, in: Self.range) else {
            factor = 1
            refused = true
            message = TestSpeedValue.notAFactor(name: name, raw: raw, range: Self.range, pace: "audio plays in real time")
            return
        }
        factor = f
        refused = false
        message = "TEST ONLY: \(name)=\(raw): a self-paced device (null, file) plays \(Format.fixed(f, 1))x faster than "
            + "real time, so alerts end and are acked \(Format.fixed(f, 1))x sooner; a real card is not affected; "
            + "unset it on a box (it belongs to scripts/soak.sh)"
    }

    /// The log's repeat limiter window under the factor: a compressed minute. A real shop's 300
    /// orders a day never reach the limiter's 100 lines a minute; a year compressed into an hour
    /// would fold every order's lines into "repeated N times" summaries (and the checker could
    /// no longer see each order said), so its window shrinks like the audio clock.
    public func logWindow(_ window: Double) -> Double { window / factor }
}
