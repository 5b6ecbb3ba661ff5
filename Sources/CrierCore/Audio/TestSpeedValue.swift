/// The parsing both TEST ONLY speed variables share (`AudioTestSpeed`, `LinkTestSpeed`): the
/// value without surrounding blanks, and a factor in range or the line refusing it.
enum TestSpeedValue {
    /// `value` without leading and trailing spaces and tabs ("" when unset).
    static func trimmed(_ value: String?) -> String {
        String((value ?? "").drop { $0 == " " || $0 == "\t" }.reversed().drop { $0 == " " || $0 == "\t" }.reversed())
    }

    /// The factor `raw` names when it is a finite number in `range`; nil otherwise.
    static func factor(_ raw: String, in range: ClosedRange<Double>) -> Double? {
        guard let f = Double(raw), f.isFinite, range.contains(f) else { return nil }
        return f
    }

    /// The error line for a value that is not a factor; `pace` says what runs instead.
    static func notAFactor(name: String, raw: String, range: ClosedRange<Double>, pace: String) -> String {
        "\(name)=\(raw) is not a speed factor from \(Int(range.lowerBound)) to \(Int(range.upperBound)); "
            + "\(pace); unset it (test-only, for scripts/soak.sh)"
    }
}
