/// Notices a step of the wall clock (NTP's first sync on a Pi without an RTC, `date -s`): the
/// difference between the wall clock and the monotonic clock stays put while both run, and
/// moves by the size of the step when the wall clock is set. Slewing (timesyncd's small
/// corrections, at most 0.5 ms/s) stays far below the threshold.
public struct ClockStepDetector: Sendable {
    /// Seconds the offset must move to count as a step.
    public let threshold: Double
    private var offset: Double?

    public init(threshold: Double = 2) {
        self.threshold = threshold
    }

    /// Seconds the wall clock stepped since the last call (+ forward, − back), or nil.
    public mutating func observe(wall: WallTime, monotonic: Double) -> Double? {
        let o = Double(wall.unixMillis) / 1000 - monotonic
        defer { offset = o }
        guard let before = offset, (o - before).magnitude > threshold else { return nil }
        return o - before
    }

    /// The log line that says so, stamped on the new clock: what a reader of the log needs
    /// to line up the times before and after it.
    public static func note(step: Double, at wall: WallTime) -> LogRecord {
        let before = WallTime(unixMillis: wall.unixMillis - Int64((step * 1000).rounded()))
        return LogRecord(time: wall, level: .notice, component: "clock",
                         message: "wall clock stepped by \(step >= 0 ? "+" : "")\(Format.fixed(step, 1)) s (NTP or date -s): log times before this line are on the old clock; "
                            + "timers, ttl, heartbeats and backoffs run on the monotonic clock and are not affected",
                         fields: [("step_s", (step >= 0 ? "+" : "") + Format.fixed(step, 1)), ("was", before.iso8601), ("now", wall.iso8601)])
    }
}
