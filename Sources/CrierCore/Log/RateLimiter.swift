/// Keeps a repeating error from flooding the journal, the serial console and the SD card.
///
/// Records of a limited level (warning and error by default) that are identical apart from
/// their time (same level, component, message and fields) are suppressed for `window` seconds
/// after the first one; when the window is over, one summary says how many were suppressed:
/// `WARN link: connect failed (repeated 58 times) server=tcp://10.0.0.5:7700`. Fields are part
/// of the identity so that `restarting component=audio` and `restarting component=link` are not
/// merged; a message meant to be limited should not carry a changing field (`after=3.2s`).
///
/// Pure: time comes from the records (and from `flush(now:)`). A record older than the start
/// of its window (the wall clock was set back) ends the window.
public struct RateLimiter: Sendable {
    public let window: Double
    public let levels: Set<LogLevel>
    /// At most this many distinct repeating lines are tracked; beyond that, new lines pass
    /// unlimited instead of growing memory.
    public let maxTracked: Int

    private struct Key: Hashable {
        var level: LogLevel
        var component: String
        var message: String
        var fields: [String]
    }
    private struct Entry {
        var start: WallTime
        var suppressed: Int
        var sample: LogRecord
    }
    private var entries: [Key: Entry] = [:]

    public init(window: Double = 60, levels: Set<LogLevel> = [.error, .warning], maxTracked: Int = 128) {
        self.window = window
        self.levels = levels
        self.maxTracked = maxTracked
    }

    /// The records to emit for `record`, in order: summaries of windows that have ended, then
    /// the record itself unless it is a repeat.
    public mutating func admit(_ record: LogRecord) -> [LogRecord] {
        var out = flush(now: record.time)
        guard levels.contains(record.level) else { return out + [record] }
        let key = Key(level: record.level, component: record.component, message: record.message,
                      fields: record.fields.flatMap { [$0.0, $0.1] })
        if entries[key] != nil {
            entries[key]!.suppressed += 1
            return out
        }
        if entries.count < maxTracked {
            entries[key] = Entry(start: record.time, suppressed: 0, sample: record)
        }
        out.append(record)
        return out
    }

    /// Summaries for every window that has ended by `now`; call now and then (every few
    /// seconds) so a summary appears even when the error stopped repeating.
    public mutating func flush(now: WallTime) -> [LogRecord] {
        let limit = Int64(window * 1000)
        var out: [LogRecord] = []
        for (key, e) in entries {
            let age = now.unixMillis - e.start.unixMillis
            guard age >= limit || age < 0 else { continue }
            entries[key] = nil
            if e.suppressed > 0 {
                out.append(LogRecord(time: now, level: e.sample.level, component: e.sample.component,
                                     message: "\(e.sample.message) (repeated \(e.suppressed) \(e.suppressed == 1 ? "time" : "times"))",
                                     fields: e.sample.fields))
            }
        }
        return out.sorted { $0.formatted() < $1.formatted() }
    }

    /// Lines currently being counted.
    public var tracked: Int { entries.count }
}
