/// The order link's thread waits for the server at real-time priority, so that an order wakes
/// it at once on a busy box (issue 36: the last ordinary hop before the speech). But that thread
/// reads what a server sends, and a server that floods it must not hold a core at real-time
/// priority: the thread's work between waits is counted, and once it passes `maxBusy` seconds
/// in a `window`, the thread waits as an ordinary thread for the rest of that window and the
/// next one. An order's work is tens of microseconds; 2% of a core is a flood.
public struct RealtimeWaitBudget: Sendable, Equatable {
    public var window: Double
    public var maxBusy: Double
    private var windowStart = -Double.infinity
    private var busy = 0.0
    private var ordinaryUntil = -Double.infinity

    public init(window: Double = 1, maxBusy: Double = 0.02) {
        self.window = window
        self.maxBusy = maxBusy
    }

    /// The thread worked `seconds` (from a wake to its next wait), ending at `now`.
    public mutating func worked(_ seconds: Double, now: Double) {
        if now - windowStart >= window {
            windowStart = now
            busy = 0
        }
        busy += max(0, seconds)
        if busy > maxBusy { ordinaryUntil = windowStart + 2 * window }
    }

    /// May the thread wait at real-time priority now?
    public func allowsRealtime(now: Double) -> Bool { now >= ordinaryUntil }

    /// When an ordinary wait should end to ask again (nil: real-time now), so that a quiet
    /// server does not leave the thread ordinary for a whole wait.
    public func realtimeAgain(now: Double) -> Double? { now >= ordinaryUntil ? nil : ordinaryUntil }
}
