import Synchronization

/// Where formatted records go (stderr, serial port, a test's buffer).
public protocol LogSink: Sendable {
    func write(_ record: LogRecord)
}

/// The process-wide fan-out point. Components hold a `Logger` (a component name plus this hub).
public final class LogHub: Sendable {
    private struct State {
        var sinks: [any LogSink] = []
        var minimum: LogLevel = .info
        var limiter: RateLimiter?
        var steps: ClockStepDetector?
        var monotonic: (@Sendable () -> Double)?
    }
    private let state = Mutex(State())
    private let clock: @Sendable () -> WallTime

    public init(clock: @escaping @Sendable () -> WallTime) {
        self.clock = clock
    }

    public func add(_ sink: any LogSink) { state.withLock { $0.sinks.append(sink) } }
    public func setMinimum(_ level: LogLevel) { state.withLock { $0.minimum = level } }

    /// Suppresses identical repeated warnings and errors (see `RateLimiter`); off until called.
    public func limitRepeats(_ limiter: RateLimiter = RateLimiter()) { state.withLock { $0.limiter = limiter } }

    /// Writes one `ClockStepDetector.note` line before the first record after the wall clock
    /// stepped (checked at every record and every `flushRepeats`, so an idle box notes it
    /// within the flush period too); off until called.
    public func noteClockSteps(monotonic: @escaping @Sendable () -> Double, threshold: Double = 2) {
        let wall = clock()
        state.withLock { s in
            var d = ClockStepDetector(threshold: threshold)
            _ = d.observe(wall: wall, monotonic: monotonic())
            s.steps = d
            s.monotonic = monotonic
        }
    }

    /// The step note, if the clock stepped since the last look (call with the lock held).
    private func stepNote(_ s: inout State, wall: WallTime) -> LogRecord? {
        guard s.steps != nil, let mono = s.monotonic, let step = s.steps!.observe(wall: wall, monotonic: mono()) else { return nil }
        return ClockStepDetector.note(step: step, at: wall)
    }

    public func emit(_ level: LogLevel, _ component: String, _ message: String, _ fields: [(String, String)]) {
        // LogLevel orders by severity (debug < info < ... < error): keep what is at least as
        // severe as the minimum.
        let out: ([any LogSink], [LogRecord])? = state.withLock { s in
            let now = clock()
            let note = stepNote(&s, wall: now).map { [$0] } ?? []
            guard level >= s.minimum else { return note.isEmpty ? nil : (s.sinks, note) }
            let record = LogRecord(time: now, level: level, component: component, message: message, fields: fields)
            guard s.limiter != nil else { return (s.sinks, note + [record]) }
            return (s.sinks, note + s.limiter!.admit(record))
        }
        guard let (sinks, records) = out else { return }
        for record in records {
            for sink in sinks { sink.write(record) }
        }
    }

    /// Emits the "repeated N times" summaries whose window is over; the runtime calls this
    /// every few seconds, and with `final` at shutdown, so every pending count is written.
    public func flushRepeats(final: Bool = false) {
        let out: ([any LogSink], [LogRecord])? = state.withLock { s in
            let now = clock()
            let note = stepNote(&s, wall: now).map { [$0] } ?? []
            guard s.limiter != nil else { return note.isEmpty ? nil : (s.sinks, note) }
            return (s.sinks, note + (final ? s.limiter!.drain(now: now) : s.limiter!.flush(now: now)))
        }
        guard let (sinks, records) = out else { return }
        for record in records {
            for sink in sinks { sink.write(record) }
        }
    }

    public func logger(_ component: String) -> Logger { Logger(component: component, hub: self) }
}

/// A component's handle on the log: `log.info("connected", ["server": url])`.
public struct Logger: Sendable {
    public let component: String
    public let hub: LogHub

    public init(component: String, hub: LogHub) {
        self.component = component
        self.hub = hub
    }

    public func error(_ m: String, _ f: KeyValuePairs<String, any CustomStringConvertible> = [:]) { hub.emit(.error, component, m, Logger.flat(f)) }
    public func warning(_ m: String, _ f: KeyValuePairs<String, any CustomStringConvertible> = [:]) { hub.emit(.warning, component, m, Logger.flat(f)) }
    public func notice(_ m: String, _ f: KeyValuePairs<String, any CustomStringConvertible> = [:]) { hub.emit(.notice, component, m, Logger.flat(f)) }
    public func info(_ m: String, _ f: KeyValuePairs<String, any CustomStringConvertible> = [:]) { hub.emit(.info, component, m, Logger.flat(f)) }
    public func debug(_ m: String, _ f: KeyValuePairs<String, any CustomStringConvertible> = [:]) { hub.emit(.debug, component, m, Logger.flat(f)) }

    static func flat(_ f: KeyValuePairs<String, any CustomStringConvertible>) -> [(String, String)] {
        f.map { ($0.key, $0.value.description) }
    }
}

/// Collects records in memory; tests assert on what the log said.
public final class MemoryLogSink: LogSink {
    private let records = Mutex<[LogRecord]>([])
    public init() {}
    public func write(_ record: LogRecord) { records.withLock { $0.append(record) } }
    public var all: [LogRecord] { records.withLock { $0 } }
    public var lines: [String] { all.map { $0.formatted() } }
}

/// Remembers the last error-level record, for `crier status`.
public final class LastErrorSink: LogSink {
    private let last = Mutex<LogRecord?>(nil)
    public init() {}
    public func write(_ record: LogRecord) {
        if record.level == .error { last.withLock { $0 = record } }
    }
    public var lastError: LogRecord? { last.withLock { $0 } }
}
