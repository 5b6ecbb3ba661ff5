import CrierCore
import CrierPosix
import Glibc
import Synchronization

/// Log lines to stderr, one write per line. Under systemd (stderr is the journal stream named
/// by `$JOURNAL_STREAM`) each line starts with `<N>`, the syslog priority, which journald's
/// SyslogLevelPrefix turns into the entry's level.
public final class StderrSink: LogSink {
    private let lock = Mutex(())
    public let syslogPrefix: Bool
    private let fd: Int32

    public init(syslogPrefix: Bool, fd: Int32 = STDERR_FILENO) {
        self.syslogPrefix = syslogPrefix
        self.fd = fd
    }

    /// Decides the prefix the way systemd documents it: `$JOURNAL_STREAM` is `DEV:INODE` of
    /// the journal socket, and only counts if stderr is still that socket.
    public convenience init() {
        self.init(syslogPrefix: StderrSink.stderrIsJournal(journalStream: FileIO.env("JOURNAL_STREAM")))
    }

    public static func stderrIsJournal(journalStream: String?, fd: Int32 = STDERR_FILENO) -> Bool {
        guard let v = journalStream else { return false }
        let parts = v.split(separator: ":")
        guard parts.count == 2, let dev = UInt64(parts[0]), let ino = UInt64(parts[1]) else { return false }
        var st = stat()
        guard fstat(fd, &st) == 0 else { return false }
        return UInt64(st.st_dev) == dev && UInt64(st.st_ino) == ino
    }

    public func write(_ record: LogRecord) {
        let line = Array((record.formatted(syslogPrefix: syslogPrefix) + "\n").utf8)
        lock.withLock { _ in _ = FileIO.writeAll(fd, line) }
    }
}
