import CrierCore
import Foundation
import Synchronization

/// Log lines to stderr. Under systemd (JOURNAL_STREAM set) each line gets the `<N>` priority
/// prefix so journald keeps the level (SyslogLevelPrefix=true is systemd's default).
public final class StderrSink: LogSink {
    let syslogPrefix: Bool
    private let lock = Mutex(())

    public init(syslogPrefix: Bool = ProcessInfo.processInfo.environment["JOURNAL_STREAM"] != nil) {
        self.syslogPrefix = syslogPrefix
    }

    public func write(_ record: LogRecord) {
        let line = record.formatted(syslogPrefix: syslogPrefix) + "\n"
        lock.withLock { _ in FileHandle.standardError.write(Data(line.utf8)) }
    }
}

public enum WallClock {
    public static func now() -> WallTime {
        WallTime(unixMillis: Int64((Date().timeIntervalSince1970 * 1000).rounded(.down)))
    }
}
