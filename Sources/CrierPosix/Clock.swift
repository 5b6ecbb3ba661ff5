// CrierPosix: the few libc facilities every adapter needs (clocks, threads, a wake-up pipe,
// errors, whole-file and stderr I/O), written once. Glibc only: no Foundation, so the binary
// does not carry ICU (see docs/architecture.md, "Why no Foundation").
import CrierCore
import Glibc

/// CLOCK_MONOTONIC in seconds: the clock every timing rule uses on the device.
public enum Monotonic {
    public static func now() -> Double {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return Double(ts.tv_sec) + Double(ts.tv_nsec) / 1e9
    }

    /// Milliseconds for poll() until `deadline` (monotonic seconds): at least 0, -1 for none.
    /// Rounded up: waking a little late is corrected by the caller's schedule; early would spin.
    public static func pollTimeout(until deadline: Double?) -> Int32 {
        guard let deadline else { return -1 }
        let ms = (deadline - now()) * 1000
        return ms <= 0 ? 0 : Int32(min(ms.rounded(.up), 3_600_000))
    }
}

/// The wall clock for log stamps (CLOCK_REALTIME, ms).
public enum WallClock {
    public static func now() -> WallTime {
        var ts = timespec()
        clock_gettime(CLOCK_REALTIME, &ts)
        return WallTime(unixMillis: Int64(ts.tv_sec) * 1000 + Int64(ts.tv_nsec) / 1_000_000)
    }
}

/// Whether the wall clock is synchronized (NTP): systemd-timesyncd creates its flag file once it
/// has set the clock from a server, and the file is gone again at the next boot (/run). A Pi
/// has no RTC: until then its clock holds the last saved time (the image's build time on a
/// first boot). Not adjtimex(2)'s STA_UNSYNC: crier.service filters @clock (ProtectClock=),
/// which denies even a read-only adjtimex. `CRIER_TIMESYNC_FLAG` names another file (tests only).
public enum ClockSync {
    public static let defaultFlag = "/run/systemd/timesync/synchronized"
    public static let flagPath: String = FileIO.env("CRIER_TIMESYNC_FLAG").flatMap { $0.isEmpty ? nil : $0 } ?? defaultFlag

    public static func isSynchronized() -> Bool { access(flagPath, F_OK) == 0 }
}
