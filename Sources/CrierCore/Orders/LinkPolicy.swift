/// When to try connecting again: exponential backoff with full jitter
/// (delay = uniform(0, min(cap, base · 2^attempt))), reset once a connection stayed up for
/// `healthyAfter` seconds. Pure: the caller passes the time and the random source.
public struct ReconnectBackoff: Sendable, Equatable {
    public var base: Double
    public var cap: Double
    public var healthyAfter: Double
    /// Failed attempts since the last healthy connection.
    public private(set) var attempt = 0
    private var connectedAt: Double?

    public init(base: Double = 0.5, cap: Double = 30, healthyAfter: Double = 10) {
        self.base = base
        self.cap = cap
        self.healthyAfter = healthyAfter
    }

    /// The ceiling of the next delay (before jitter).
    public var currentCeiling: Double {
        // 2^attempt overflows nothing: the exponent is clamped long before Double's range ends.
        min(cap, base * Double(1 << min(attempt, 40)))
    }

    /// Seconds to wait before the next attempt; counts the attempt.
    public mutating func nextDelay(using rng: inout some RandomNumberGenerator) -> Double {
        let ceiling = currentCeiling
        attempt += 1
        return Double.random(in: 0...ceiling, using: &rng)
    }

    /// A connection was established (handshake done).
    public mutating func connected(now: Double) {
        connectedAt = now
    }

    /// The connection ended. It resets the backoff if it was healthy long enough; a connection
    /// that flaps right after coming up keeps backing off.
    public mutating func disconnected(now: Double) {
        if let t = connectedAt, now - t >= healthyAfter { attempt = 0 }
        connectedAt = nil
    }
}

/// Heartbeat of a live connection (docs/protocol.md, "Heartbeat"). Liveness is "I have heard
/// from the peer": only complete messages received count, never what this side sends (acks
/// going out prove nothing about the peer) and never stray bytes (a peer trickling a byte a
/// second is not alive). Ping after `interval` seconds with nothing received (and no ping sent
/// since); dead after 2 × `interval` with nothing received. Pure: the caller reports and asks.
public struct LinkHeartbeat: Sendable, Equatable {
    public enum Action: Sendable, Equatable {
        case none
        case ping
        /// Nothing received for `silentFor` seconds: close and reconnect.
        case dead(silentFor: Double)
    }

    public let interval: Double
    public private(set) var lastPing: Double
    public private(set) var lastReceived: Double

    public init(interval: Double, now: Double) {
        self.interval = interval
        lastPing = now
        lastReceived = now
    }

    /// A ping went out (after `.ping`, or one sent for another reason such as confirming acks).
    public mutating func pinged(now: Double) { lastPing = max(lastPing, now) }
    /// A complete message arrived from the peer.
    public mutating func received(now: Double) { lastReceived = max(lastReceived, now) }

    /// What to do now. After `.ping`, send it and call `pinged(now:)`.
    public func action(now: Double) -> Action {
        // The same sums as `nextDeadline`: waking exactly at it must act (with `now - last >=
        // interval`, rounding could say "not yet" at the deadline and the caller would spin).
        if now >= lastReceived + 2 * interval { return .dead(silentFor: now - lastReceived) }
        if now >= max(lastPing, lastReceived) + interval { return .ping }
        return .none
    }

    /// The next time `action` may change: sleep (poll) until then.
    public var nextDeadline: Double {
        min(max(lastPing, lastReceived) + interval, lastReceived + 2 * interval)
    }
}

/// Splits a byte stream into protocol lines: `\n` terminated, a `\r` before it dropped, empty
/// lines skipped, at most `maxLine` bytes per line (not counting the terminator). Pure.
public struct LineFramer: Sendable {
    public enum Item: Sendable, Equatable {
        case line([UInt8])
        /// More than `maxLine` bytes without a newline: the stream cannot be trusted; close it.
        case tooLong(Int)
    }

    public let maxLine: Int
    private var buffer: [UInt8] = []
    private var scanned = 0
    private var failed = false

    public init(maxLine: Int = ProtocolCodec.maxLineBytes) { self.maxLine = maxLine }

    /// Bytes buffered without a newline yet.
    public var pending: Int { buffer.count }

    /// Adds bytes; returns the complete lines (and at most one `tooLong`, after which nothing
    /// more is returned).
    public mutating func push(_ bytes: some Collection<UInt8>) -> [Item] {
        guard !failed else { return [] }
        buffer.append(contentsOf: bytes)
        var out: [Item] = []
        var start = 0
        var i = scanned
        while i < buffer.count {
            if buffer[i] == 0x0A {
                var end = i
                if end > start, buffer[end - 1] == 0x0D { end -= 1 }
                if end - start > maxLine {
                    failed = true
                    out.append(.tooLong(end - start))
                    buffer = []
                    scanned = 0
                    return out
                }
                if end > start { out.append(.line(Array(buffer[start..<end]))) }
                start = i + 1
            }
            i += 1
        }
        if start > 0 { buffer.removeFirst(start) }
        scanned = buffer.count
        // +1: a `\r` may still be followed by its `\n`.
        if buffer.count > maxLine + 1 {
            failed = true
            out.append(.tooLong(buffer.count))
            buffer = []
            scanned = 0
        }
        return out
    }
}

/// A small seeded generator (SplitMix64) so that jitter and simulated orders are reproducible
/// in tests. Not for anything secret.
public struct SplitMix64: RandomNumberGenerator, Sendable {
    private var state: UInt64
    public init(seed: UInt64) { state = seed }
    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
