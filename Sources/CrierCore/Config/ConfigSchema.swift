/// A problem found in a config file, worded for a shop owner editing it on a PC:
/// `crier.conf:12: audio.rate: expected an integer 8000...192000, got "fast"`.
public struct ConfigDiagnostic: Sendable, Equatable, CustomStringConvertible {
    public enum Severity: Sendable { case error, warning }
    public var file: String
    public var line: Int
    public var key: String?
    public var message: String
    public var severity: Severity

    /// Line 0: about the whole file (it could not be read).
    public var description: String {
        "\(file):" + (line > 0 ? "\(line): " : " ") + (key.map { "\(ConfigValue.short($0)): " } ?? "") + message
    }

    public init(file: String, line: Int, key: String?, message: String, severity: Severity) {
        self.file = file
        self.line = line
        self.key = key
        self.message = message
        self.severity = severity
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
            throw ConfigValueError("expected an integer \(range.lowerBound)...\(range.upperBound), got \(shown(s))" + hint(s, integer: true))
        }
        return v
    }

    public static func number(_ s: String, _ range: ClosedRange<Double>) throws(ConfigValueError) -> Double {
        guard let v = Double(s), v.isFinite, range.contains(v) else {
            throw ConfigValueError("expected a number \(fmt(range.lowerBound))...\(fmt(range.upperBound)), got \(shown(s))" + hint(s, integer: false))
        }
        return v
    }

    /// What a hurried person most likely meant, for the error message.
    static func hint(_ s: String, integer: Bool) -> String {
        if s.isEmpty { return " (the value is empty)" }
        let digits = s.prefix { $0.isASCII && ($0.isNumber || $0 == "." || $0 == "-" || $0 == "+") }
        if !digits.isEmpty && digits.count < s.count && Double(digits) != nil,
           s.dropFirst(digits.count).trimmed.allSatisfy({ $0.isLetter }) {
            return " (write the number without a unit)"
        }
        if s.contains(","), Double(s.replacingAll(",", with: ".")) != nil { return " (use a dot for decimals)" }
        if integer, Int(s) == nil, let d = Double(s), d.isFinite { return " (a whole number)" }
        return ""
    }

    public static func bool(_ s: String) throws(ConfigValueError) -> Bool {
        switch s.lowercased() {
        case "on", "yes", "true", "1": return true
        case "off", "no", "false", "0": return false
        default: throw ConfigValueError("expected on or off, got \(shown(s))")
        }
    }

    /// One of `options`, whatever the case (`ZH`, `Floor`); returns the option as listed.
    public static func choice(_ s: String, _ options: [String]) throws(ConfigValueError) -> String {
        let l = s.lowercased()
        guard let o = options.first(where: { $0.lowercased() == l }) else {
            throw ConfigValueError("expected one of \(options.joined(separator: ", ")), got \(shown(s))")
        }
        return o
    }

    public static func nonEmpty(_ s: String, what: String) throws(ConfigValueError) -> String {
        guard !s.isEmpty else { throw ConfigValueError("expected \(what), got an empty value") }
        return s
    }

    /// A file or directory the daemon opens: relative paths would depend on its working
    /// directory (`/` under systemd, anything by hand).
    public static func absolutePath(_ s: String) throws(ConfigValueError) -> String {
        guard s.hasPrefix("/") else { throw ConfigValueError("expected an absolute path (starting with /), got \(shown(s))") }
        return s
    }

    /// An absolute path that goes into a generated file unquoted (wpa_supplicant's
    /// `ctrl_interface=DIR=…`): letters, digits and `/ . _ -` only, at most `maxBytes`. A space,
    /// `=`, `#`, a quote or a line break would let the value add to or cut the line it lands
    /// in (`/tmp/x GROUP=0` gave the socket to root's group).
    public static func plainPath(_ s: String, maxBytes: Int) throws(ConfigValueError) -> String {
        let p = try absolutePath(s)
        if let bad = p.unicodeScalars.first(where: { !($0.isASCII && ($0.properties.isAlphabetic || ("0"..."9").contains($0) || "/._-".unicodeScalars.contains($0))) }) {
            throw ConfigValueError("expected a path of letters, digits and / . _ - only (it is written unquoted into a generated file), got \(shown(s)) with \(bad == " " ? "a space" : "\"\(bad.escaped(asASCII: true))\"")")
        }
        guard p.utf8.count <= maxBytes else { throw ConfigValueError("expected a path of at most \(maxBytes) bytes, got \(p.utf8.count)") }
        return p
    }

    public static func fmt(_ d: Double) -> String {
        d == d.rounded() && abs(d) < 1e15 ? String(Int(d)) : String(d)
    }

    /// A value as error messages quote it: at most 60 characters (a 16 KiB line must not
    /// become a 16 KiB log line). Escaping is the log's job (`LogRecord.escape`).
    public static func shown(_ s: String) -> String {
        s.count <= 60 ? "\"\(s)\"" : "\"\(short(s))\" (\(s.count) characters)"
    }

    public static func short(_ s: String) -> String {
        s.count <= 60 ? s : String(s.prefix(57)) + "…"
    }
}

/// Recorded-clip voice packs per language (docs/voice.md, "Where packs live"). Default `auto`.
public struct VoicePackConfig: Sendable, Equatable {
    public init() {}
    /// Every language `auto` unless set (a language missing from the table is `auto` too).
    public var setting: [Lang: VoicePackSetting] = Dictionary(uniqueKeysWithValues: Lang.allCases.map { ($0, .auto) })

    public func setting(_ lang: Lang) -> VoicePackSetting { setting[lang] ?? .auto }

    static let keys: [ConfigKey] = Lang.allCases.map { l in
        ConfigKey("voice.pack.\(l.rawValue)", section: "voice packs", default: "auto",
                  doc: "Recorded-clip voice pack for \(l.rawValue) (docs/voice.md). auto: the folder \(VoicePackPlaces.shopBase)/\(l.rawValue) on the boot partition "
                      + "(a shop copies it from a PC), else the image's \(VoicePackPlaces.imageBase)/\(l.rawValue) (built in with scripts/build-image.sh --voice-pack, "
                      + "updated over the air with the system), else espeak-ng; off or empty: espeak-ng only; an absolute path: that folder only. "
                      + "Read at start; an alert with a word the pack lacks is said by espeak-ng whole.",
                  apply: { c, v throws(ConfigValueError) in c.voicePacks.setting[l] = try VoicePackSetting.parse(v) },
                  render: { $0.voicePacks.setting(l).rendered })
    }
}
