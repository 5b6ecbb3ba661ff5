/// Keeps a repeating event from flooding the journal, the serial console and the SD card,
/// whoever causes it (a hostile server sending 100 000 orders to a full queue, 300 000 cancels
/// for unknown ids, a device that keeps failing).
///
/// Records are grouped by their *reason*: level, component, message and the fields that say
/// why (`reason=queue_full`, `component=audio`, `server=…`), but not the per-item fields
/// (`id`, `ids`, `line`, `text`: see `itemFields`) that make every order's line different.
/// In one `window` (60 s by default, starting at the group's first record) the first
/// `burst(level)` records of a group are written; the rest are counted, and when the window is
/// over one summary carries the count and the last suppressed record's item fields:
/// `WARN alert: order rejected (repeated 99990 times) reason=queue_full sample_id=A-99999`.
/// Every record is either written or counted in exactly one summary.
///
/// - Warnings and errors have a burst of 1 (the first of a kind is always written, so an
///   error's first occurrence is never suppressed); notice and info lines, which are the box's
///   normal per-order activity, get 100 per minute, far above what speech can produce, so only
///   floods are cut. Debug is not limited.
/// - Memory is bounded: at most `maxTracked` groups; a new group beyond that evicts the one
///   whose window started first, writing its summary early. No record ever passes uncounted.
///
/// Pure: time comes from the records (and from `flush(now:)`). A record older than the start
/// of its window (the wall clock was set back) ends the window.
public struct RateLimiter: Sendable {
    public let window: Double
    /// Records of a group written per window, by level; a level not listed is not limited.
    public let bursts: [LogLevel: Int]
    public let maxTracked: Int
    /// This limiter's item fields (`itemFields` unless given: the music thread adds `file`, so
    /// a folder of short files is one reason, not one per file).
    public let perItemFields: Set<String>

    /// Fields that name the item a line is about rather than why it was logged.
    public static let itemFields: Set<String> = ["id", "ids", "line", "text"]

    public static let defaultBursts: [LogLevel: Int] = [.error: 1, .warning: 1, .notice: 100, .info: 100]

    private struct Key: Hashable {
        var level: LogLevel
        var component: String
        var message: String
        var fields: [String]
    }
    private struct Entry {
        var start: WallTime
        var passed: Int
        var suppressed: Int
        /// The last suppressed record (its item fields go into the summary).
        var sample: LogRecord
    }
    private var entries: [Key: Entry] = [:]
    /// Earliest window start among `entries` (nil: none), so `flush` is a comparison, not a scan,
    /// on almost every record.
    private var earliest: WallTime?
    private var latest: WallTime?

    public init(window: Double = 60, bursts: [LogLevel: Int] = RateLimiter.defaultBursts, maxTracked: Int = 128,
                itemFields: Set<String> = RateLimiter.itemFields) {
        self.window = window
        self.bursts = bursts
        self.maxTracked = max(1, maxTracked)
        perItemFields = itemFields
    }

    /// Only warnings and errors limited, `burst` each (the limiter before per-reason keys).
    public init(window: Double, levels: Set<LogLevel>, burst: Int = 1, maxTracked: Int = 128) {
        var b: [LogLevel: Int] = [:]
        for l in levels { b[l] = burst }
        self.init(window: window, bursts: b, maxTracked: maxTracked)
    }

    /// The records to emit for `record`, in order: summaries of windows that have ended, then
    /// the record itself unless it is over its group's burst.
    public mutating func admit(_ record: LogRecord) -> [LogRecord] {
        var out = flush(now: record.time)
        guard let burst = bursts[record.level] else { return out + [record] }
        let key = Key(level: record.level, component: record.component, message: record.message,
                      fields: record.fields.filter { !perItemFields.contains($0.0) }.flatMap { [$0.0, $0.1] })
        if var e = entries[key] {
            if e.passed < burst {
                e.passed += 1
                out.append(record)
            } else {
                e.suppressed += 1
                e.sample = record
            }
            entries[key] = e
            return out
        }
        if entries.count >= maxTracked, let oldest = entries.min(by: { $0.value.start < $1.value.start }) {
            entries[oldest.key] = nil
            if let s = Self.summary(oldest.value, now: record.time, items: perItemFields) { out.append(s) }
            earliest = entries.values.map(\.start).min()
            latest = entries.values.map(\.start).max()
        }
        entries[key] = Entry(start: record.time, passed: burst > 0 ? 1 : 0, suppressed: burst > 0 ? 0 : 1, sample: record)
        earliest = earliest.map { Swift.min($0, record.time) } ?? record.time
        latest = latest.map { Swift.max($0, record.time) } ?? record.time
        if burst > 0 { out.append(record) }
        return out
    }

    /// Summaries for every window that has ended by `now`; call now and then (every few
    /// seconds) so a summary appears even when the flood stopped.
    public mutating func flush(now: WallTime) -> [LogRecord] {
        let limit = Int64(window * 1000)
        // A scan only when some window may have ended: the oldest is old enough, or the clock
        // went back before the newest start.
        guard let first = earliest, let last = latest,
              now.unixMillis - first.unixMillis >= limit || now < last else { return [] }
        var out: [LogRecord] = []
        for (key, e) in entries {
            let age = now.unixMillis - e.start.unixMillis
            guard age >= limit || age < 0 else { continue }
            entries[key] = nil
            if let s = Self.summary(e, now: now, items: perItemFields) { out.append(s) }
        }
        earliest = entries.values.map(\.start).min()
        latest = entries.values.map(\.start).max()
        return out.sorted { $0.formatted() < $1.formatted() }
    }

    /// Every pending summary, window over or not (at shutdown: a count is never lost).
    public mutating func drain(now: WallTime) -> [LogRecord] {
        let items = perItemFields
        let out = entries.values.compactMap { Self.summary($0, now: now, items: items) }
        entries.removeAll()
        earliest = nil
        latest = nil
        return out.sorted { $0.formatted() < $1.formatted() }
    }

    private static func summary(_ e: Entry, now: WallTime, items: Set<String>) -> LogRecord? {
        guard e.suppressed > 0 else { return nil }
        var fields = e.sample.fields.filter { !items.contains($0.0) }
        fields += e.sample.fields.filter { items.contains($0.0) }.map { ("sample_" + $0.0, $0.1) }
        return LogRecord(time: now, level: e.sample.level, component: e.sample.component,
                         message: "\(e.sample.message) (repeated \(e.suppressed) \(e.suppressed == 1 ? "time" : "times"))",
                         fields: fields)
    }

    /// Groups currently being counted.
    public var tracked: Int { entries.count }
}
