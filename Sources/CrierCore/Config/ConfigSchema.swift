/// A problem found in a config file, worded for a shop owner editing it on a PC:
/// `crier.conf:12: audio.rate: expected an integer 8000...192000, got "fast"`.
public struct ConfigDiagnostic: Sendable, Equatable, CustomStringConvertible {
    public enum Severity: Sendable { case error, warning }
    public var file: String
    public var line: Int
    public var key: String?
    public var message: String
    public var severity: Severity

    public var description: String {
        "\(file):\(line): " + (key.map { "\($0): " } ?? "") + message
    }
}

/// Why a value was refused; the parser adds file, line and key.
public struct ConfigValueError: Error, Sendable {
    public var message: String
    public init(_ message: String) { self.message = message }
}

/// One documented key: its name, default, a line of documentation, how to read it into a
/// `CrierConfig` and how to print its effective value.
public struct ConfigKey: Sendable {
    public let name: String
    public let defaultText: String
    public let doc: String
    public let section: String
    let apply: @Sendable (inout CrierConfig, String) throws(ConfigValueError) -> Void
    let render: @Sendable (CrierConfig) -> String

    public init(
        _ name: String, section: String, default defaultText: String, doc: String,
        apply: @escaping @Sendable (inout CrierConfig, String) throws(ConfigValueError) -> Void,
        render: @escaping @Sendable (CrierConfig) -> String
    ) {
        self.name = name
        self.section = section
        self.defaultText = defaultText
        self.doc = doc
        self.apply = apply
        self.render = render
    }

    public func value(in config: CrierConfig) -> String { render(config) }
}

/// Value readers shared by every key, so every key words its errors the same way.
public enum ConfigValue {
    public static func int(_ s: String, _ range: ClosedRange<Int>) throws(ConfigValueError) -> Int {
        guard let v = Int(s), range.contains(v) else {
            throw ConfigValueError("expected an integer \(range.lowerBound)...\(range.upperBound), got \"\(s)\"")
        }
        return v
    }

    public static func number(_ s: String, _ range: ClosedRange<Double>) throws(ConfigValueError) -> Double {
        guard let v = Double(s), v.isFinite, range.contains(v) else {
            throw ConfigValueError("expected a number \(fmt(range.lowerBound))...\(fmt(range.upperBound)), got \"\(s)\"")
        }
        return v
    }

    public static func bool(_ s: String) throws(ConfigValueError) -> Bool {
        switch s.lowercased() {
        case "on", "yes", "true", "1": return true
        case "off", "no", "false", "0": return false
        default: throw ConfigValueError("expected on or off, got \"\(s)\"")
        }
    }

    public static func choice(_ s: String, _ options: [String]) throws(ConfigValueError) -> String {
        guard options.contains(s) else {
            throw ConfigValueError("expected one of \(options.joined(separator: ", ")), got \"\(s)\"")
        }
        return s
    }

    public static func nonEmpty(_ s: String, what: String) throws(ConfigValueError) -> String {
        guard !s.isEmpty else { throw ConfigValueError("expected \(what), got an empty value") }
        return s
    }

    public static func fmt(_ d: Double) -> String {
        d == d.rounded() && abs(d) < 1e15 ? String(Int(d)) : String(d)
    }
}
