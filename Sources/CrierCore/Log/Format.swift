/// Numbers for log fields and messages, without Foundation's String(format:).
public enum Format {
    /// `d` rounded to `decimals` places (0...9): `fixed(3.14159, 2)` is "3.14". Values too
    /// large for that (or not finite) print as Swift prints them, never trap.
    public static func fixed(_ d: Double, _ decimals: Int) -> String {
        let decimals = min(max(decimals, 0), 9)
        var scale = 1
        for _ in 0..<decimals { scale *= 10 }
        let scaled = (d * Double(scale)).rounded()
        guard scaled.isFinite, abs(scaled) < 9e18 else { return String(d) }
        let v = Int(scaled)
        if decimals == 0 { return String(v) }
        let a = v.magnitude
        let frac = String(a % UInt(scale))
        return "\(v < 0 ? "-" : "")\(a / UInt(scale)).\(String(repeating: "0", count: decimals - frac.count))\(frac)"
    }
}
