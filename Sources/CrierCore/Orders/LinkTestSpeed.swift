/// TEST ONLY: `CRIER_TEST_LINK_SPEED`, the factor by which the reconnect backoff's times (its
/// base, cap and the 10 s a connection must stay up to reset it) are divided, so that
/// `scripts/soak.sh` can put a year's ~2 000 link drops and server restarts into an hour
/// (docs/benchmarks.md, "Soak"). At real pace the backoff resets only after 10 s up, so link
/// events closer than ~12 s are a link flapping for good, not a year of drops hours apart; with
/// the factor each event still goes through the whole path (loss seen, backoff, connect,
/// handshake, redelivery, acks sent again), only the waits are shorter. Read once per link from
/// the environment, logged loudly when set, and refused unless the order server or broker is on
/// loopback (a box's never is): the heartbeat, ttl and every other timer are not affected.
public struct LinkTestSpeed: Sendable, Equatable {
    public static let variable = "CRIER_TEST_LINK_SPEED"
    public static let range: ClosedRange<Double> = 1...100

    /// 1 unless the variable was set and accepted.
    public let factor: Double
    /// The line to log (a warning when set, an error when refused); nil when unset.
    public let message: String?
    public let refused: Bool

    /// `value`: the variable's value (nil: unset); `server`: the configured server (nil: none).
    public init(value: String?, server: ServerAddress?) {
        let raw = TestSpeedValue.trimmed(value)
        guard !raw.isEmpty else {
            factor = 1
            message = nil
            refused = false
            return
        }
        let name = Self.variable
        guard let server, Self.isLoopback(server.host) else {
            factor = 1
            refused = true
            message = "\(name)=\(raw) is a test-only setting and is refused for a server that is not on loopback ("
                + "\(server.map { "'\($0.host)'" } ?? "none configured")); the reconnect backoff runs at its real pace; "
                + "unset it (it belongs to scripts/soak.sh, never to a box)"
            return
        }
        guard let f = TestSpeedValue.factor(raw, in: Self.range) else {
            factor = 1
            refused = true
            message = TestSpeedValue.notAFactor(name: name, raw: raw, range: Self.range, pace: "the reconnect backoff runs at its real pace")
            return
        }
        factor = f
        refused = false
        let b = Self.compressed(ReconnectBackoff(), f)
        message = "TEST ONLY: \(name)=\(raw): the reconnect backoff runs \(Format.fixed(f, 1))x faster (first retry within "
            + "\(Format.fixed(b.base, 3)) s, at most \(Format.fixed(b.cap, 2)) s, reset after \(Format.fixed(b.healthyAfter, 2)) s up); "
            + "unset it on a box (it belongs to scripts/soak.sh)"
    }

    /// `backoff` with its times divided by the factor (unchanged when 1).
    public func backoff(_ backoff: ReconnectBackoff = ReconnectBackoff()) -> ReconnectBackoff {
        Self.compressed(backoff, factor)
    }

    private static func compressed(_ b: ReconnectBackoff, _ f: Double) -> ReconnectBackoff {
        ReconnectBackoff(base: b.base / f, cap: b.cap / f, healthyAfter: b.healthyAfter / f)
    }

    /// 127.0.0.0/8, ::1 and localhost: where only a test's server lives.
    static func isLoopback(_ host: String) -> Bool {
        let h = host.lowercased()
        if h == "localhost" || h == "::1" || h == "0:0:0:0:0:0:0:1" { return true }
        let parts = h.split(separator: ".", omittingEmptySubsequences: false)
        return parts.count == 4 && parts[0] == "127" && parts.allSatisfy { p in UInt8(p) != nil }
    }
}
