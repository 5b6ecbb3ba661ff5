import CrierCore
import Foundation

public enum WallClock {
    public static func now() -> WallTime {
        WallTime(unixMillis: Int64((Date().timeIntervalSince1970 * 1000).rounded(.down)))
    }
}
