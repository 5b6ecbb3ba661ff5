/// Wall-clock time as Unix milliseconds; only for log stamps and the protocol's `ts`.
/// Rules about timing use `Seconds` from a monotonic clock instead.
public struct WallTime: Sendable, Equatable, Comparable {
    public var unixMillis: Int64
    public init(unixMillis: Int64) { self.unixMillis = unixMillis }
    public static func < (a: WallTime, b: WallTime) -> Bool { a.unixMillis < b.unixMillis }

    /// `2026-11-30T07:00:00.123Z`, computed without Foundation (civil-from-days).
    public var iso8601: String {
        let ms = Int(((unixMillis % 1000) + 1000) % 1000)
        var secs = unixMillis / 1000
        if unixMillis < 0 && ms != 0 { secs -= 1 }
        var days = secs / 86400
        var rem = secs % 86400
        if rem < 0 { rem += 86400; days -= 1 }
        let (y, m, d) = WallTime.civil(fromDays: days)
        return "\(pad(y, 4))-\(pad(m, 2))-\(pad(d, 2))T\(pad(rem / 3600, 2)):\(pad(rem % 3600 / 60, 2)):\(pad(rem % 60, 2)).\(pad(Int64(ms), 3))Z"
    }

    static func civil(fromDays z0: Int64) -> (Int64, Int64, Int64) {
        let z = z0 + 719468
        let era = (z >= 0 ? z : z - 146096) / 146097
        let doe = z - era * 146097
        let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365
        let y = yoe + era * 400
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100)
        let mp = (5 * doy + 2) / 153
        let d = doy - (153 * mp + 2) / 5 + 1
        let m = mp < 10 ? mp + 3 : mp - 9
        return (m <= 2 ? y + 1 : y, m, d)
    }
}

private func pad(_ v: Int64, _ width: Int) -> String {
    let s = String(v)
    return s.count >= width ? s : String(repeating: "0", count: width - s.count) + s
}
