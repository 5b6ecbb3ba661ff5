/// Power and heat of a Raspberry Pi (issue 35 item 2): the firmware's throttled flags and the
/// SoC's temperature, decoded and watched for changes. Pure: `PowerSensors` (CrierSystem) reads
/// the files.
///
/// The flags are the firmware's GET_THROTTLED word, as `vcgencmd get_throttled` prints it and
/// Raspberry Pi's kernel shows it in `/sys/devices/platform/soc/soc:firmware/get_throttled`
/// (hex, no `0x`): bit 0 under-voltage now, 1 ARM frequency capped now, 2 throttled now, 3 soft
/// temperature limit active now; bits 16-19 the same "has occurred". The raspberrypi-hwmon
/// driver polls the word every 2 s asking the firmware to clear the "has occurred" bits, so on
/// such kernels they mean "since the last poll", not "since boot": what was seen since crier
/// started is kept here. Debian's (mainline) kernel has no `get_throttled` file; its hwmon
/// device `rpi_volt` gives only under-voltage (`in0_lcrit_alarm`, bit 16 of the last poll).
public enum PowerCondition: String, Sendable, CaseIterable, Comparable {
    case underVoltage = "under_voltage"
    case frequencyCapped = "frequency_capped"
    case throttled
    case softTemperatureLimit = "soft_temperature_limit"

    /// Bit of "now"; "has occurred" is 16 above.
    public var bit: Int {
        switch self {
        case .underVoltage: 0
        case .frequencyCapped: 1
        case .throttled: 2
        case .softTemperatureLimit: 3
        }
    }

    /// For people: `under-voltage`, `frequency capped`, `throttled`, `soft temperature limit`.
    public var words: String {
        switch self {
        case .underVoltage: "under-voltage"
        case .frequencyCapped: "frequency capped"
        case .throttled: "throttled"
        case .softTemperatureLimit: "soft temperature limit"
        }
    }

    public static func < (a: PowerCondition, b: PowerCondition) -> Bool { a.bit < b.bit }
}

/// The firmware's throttled word.
public struct ThrottledFlags: Sendable, Equatable {
    public var raw: UInt32
    public init(raw: UInt32) { self.raw = raw }

    /// `50005`, `0x50005` (vcgencmd's form), with or without a newline; nil for anything else.
    public static func parse<S: StringProtocol>(_ text: S) -> ThrottledFlags? {
        var t = Substring(text)
        while let c = t.last, c == "\n" || c == " " || c == "\r" || c == "\t" { t.removeLast() }
        while let c = t.first, c == " " || c == "\t" { t.removeFirst() }
        if t.hasPrefix("throttled=") { t = t.dropFirst("throttled=".count) }
        if t.hasPrefix("0x") || t.hasPrefix("0X") { t = t.dropFirst(2) }
        guard !t.isEmpty, t.count <= 8, let v = UInt32(t, radix: 16) else { return nil }
        return ThrottledFlags(raw: v)
    }

    public func isSet(_ bit: Int) -> Bool { raw & (1 << UInt32(bit)) != 0 }
    /// Conditions true now (bits 0-3).
    public var now: [PowerCondition] { PowerCondition.allCases.filter { isSet($0.bit) } }
    /// Conditions that have occurred (bits 16-19; see the type's note on what "since" means).
    public var occurred: [PowerCondition] { PowerCondition.allCases.filter { isSet($0.bit + 16) } }
}

/// One look at the sensors.
public struct PowerReading: Sendable, Equatable {
    /// Where the flags came from.
    public enum Source: String, Sendable {
        /// Raspberry Pi kernel: the whole word.
        case firmware
        /// Mainline kernel's raspberrypi-hwmon: under-voltage only.
        case hwmon
        /// No flags on this machine (not a Pi, no raspberrypi-hwmon driver, or the firmware did
        /// not answer GET_THROTTLED when its driver probed, so no device was registered).
        case none
    }
    public var source: Source
    /// nil with `source == .none`; from hwmon only bits 0 and 16 mean anything.
    public var flags: ThrottledFlags?
    /// SoC temperature in millidegrees Celsius (thermal_zone0), nil when there is none.
    public var milliCelsius: Int?

    public init(source: Source, flags: ThrottledFlags? = nil, milliCelsius: Int? = nil) {
        self.source = source
        self.flags = flags
        self.milliCelsius = milliCelsius
    }

    /// Conditions this reading says are (or just were) true: "now" bits, plus "has occurred"
    /// bits (set since the previous firmware poll, so at most a few seconds old).
    public var active: Set<PowerCondition> { Set(flags?.now ?? []) }
    public var occurred: Set<PowerCondition> { Set((flags?.now ?? []) + (flags?.occurred ?? [])) }

    /// `thermal_zone0/temp`: millidegrees as a decimal integer (negative is possible).
    public static func parseTemperature<S: StringProtocol>(_ text: S) -> Int? {
        var t = Substring(text)
        while let c = t.last, c == "\n" || c == " " || c == "\r" { t.removeLast() }
        guard let v = Int(t), v > -100_000, v < 250_000 else { return nil }
        return v
    }
}

/// What a change of the sensors means for the log.
public enum PowerEvent: Sendable, Equatable {
    /// The sensors answered for the first time (or after being unreadable).
    case first(PowerReading)
    case began(PowerCondition)
    case ended(PowerCondition)
    /// A "has occurred" bit for a condition never seen "now": it came and went between polls.
    case occurredBetweenPolls(PowerCondition)
    /// The temperature entered another band (`PowerWatch.bands`).
    case temperature(band: Int, milliCelsius: Int, rising: Bool)
}

/// The change detector: fed every reading, it says what changed (for the log) and keeps what
/// `crier status` shows.
public struct PowerWatch: Sendable {
    /// Temperature bands (°C): a change of band is logged. The Pi's firmware starts capping at
    /// its soft limit (60 °C on a 3B+ by default) and throttles at 80 °C, hard at 85 °C.
    public static let bands = [60, 70, 80, 85]
    /// A band is left only this far (m°C) below its edge, so a temperature sitting on an edge
    /// is not logged at every poll.
    public static let hysteresis = 2000

    public private(set) var last: PowerReading?
    /// Conditions seen (now or occurred) since crier started.
    public private(set) var seen: Set<PowerCondition> = []
    public private(set) var maxMilliCelsius: Int?
    private var band = 0

    public init() {}

    public static func band(of milli: Int) -> Int { bands.filter { milli >= $0 * 1000 }.count }

    public mutating func observe(_ r: PowerReading) -> [PowerEvent] {
        var out: [PowerEvent] = []
        let before = last
        last = r
        if let m = r.milliCelsius { maxMilliCelsius = max(maxMilliCelsius ?? m, m) }
        guard let prev = before, prev.source == r.source else {
            out.append(.first(r))
            for c in r.occurred.sorted() where !r.active.contains(c) && !seen.contains(c) { out.append(.occurredBetweenPolls(c)) }
            seen.formUnion(r.occurred)
            band = r.milliCelsius.map(Self.band(of:)) ?? 0
            return out
        }
        for c in PowerCondition.allCases {
            let was = prev.active.contains(c), isNow = r.active.contains(c)
            if isNow && !was { out.append(.began(c)) }
            if was && !isNow { out.append(.ended(c)) }
            if !isNow && !was && r.occurred.contains(c) && !seen.contains(c) { out.append(.occurredBetweenPolls(c)) }
        }
        seen.formUnion(r.occurred)
        if let m = r.milliCelsius {
            let up = Self.band(of: m)
            let down = Self.band(of: m + Self.hysteresis)
            if up > band {
                band = up
                out.append(.temperature(band: band, milliCelsius: m, rising: true))
            } else if down < band {
                band = down
                out.append(.temperature(band: band, milliCelsius: m, rising: false))
            }
        }
        return out
    }

    /// What `crier status` shows.
    public var status: PowerStatus? {
        guard let r = last else { return nil }
        return PowerStatus(source: r.source.rawValue, now: r.active.sorted().map(\.rawValue),
                           seen: seen.sorted().map(\.rawValue),
                           celsius: r.milliCelsius.map { Double($0) / 1000 }, maxCelsius: maxMilliCelsius.map { Double($0) / 1000 })
    }

    /// The log line for an event: (level, message, fields).
    public static func line(_ e: PowerEvent) -> (LogLevel, String, [(String, String)]) {
        func temp(_ m: Int) -> String { Format.fixed(Double(m) / 1000, 1) }
        switch e {
        case .first(let r):
            var f: [(String, String)] = [("source", r.source.rawValue)]
            if let fl = r.flags { f.append(("throttled", "0x" + String(fl.raw, radix: 16))) }
            f.append(("now", r.active.isEmpty ? "ok" : r.active.sorted().map(\.rawValue).joined(separator: ",")))
            if let m = r.milliCelsius { f.append(("temp_c", temp(m))) }
            let bad = !r.occurred.isEmpty
            return (bad ? .warning : .info,
                    r.source == .none ? "under-voltage cannot be read: no firmware get_throttled and no rpi_volt hwmon (not a Raspberry Pi, or its kernel lacks raspberrypi-hwmon); temperature only"
                        : bad ? "the firmware reports " + r.occurred.sorted().map(\.words).joined(separator: ", ") + Self.advice(r.occurred)
                        : "supply and temperature fine", f)
        case .began(let c):
            return (.warning, "\(c.words) now" + Self.advice([c]), [("condition", c.rawValue)])
        case .ended(let c):
            return (.notice, "\(c.words) over", [("condition", c.rawValue)])
        case .occurredBetweenPolls(let c):
            return (.warning, "\(c.words) occurred between two polls" + Self.advice([c]), [("condition", c.rawValue)])
        case .temperature(let band, let m, let rising):
            let edge = band == 0 ? "below \(bands[0]) °C" : "at or above \(bands[band - 1]) °C"
            return (rising && band >= 3 ? .warning : rising ? .notice : .info,
                    "temperature \(rising ? "up" : "down"): \(edge)" + (rising && band >= 3 ? "; the SoC throttles here: give the box air, keep it out of the sun" : ""),
                    [("temp_c", temp(m))])
        }
    }

    static func advice(_ cs: Set<PowerCondition>) -> String {
        if cs.contains(.underVoltage) {
            return "; the power supply sags below 4.63 V: use a 5.1 V supply of at least 2.5 A (3 A for a Pi 4) and a short, thick cable (under-voltage corrupts SD cards and makes the audio crackle)"
        }
        if !cs.isDisjoint(with: [.throttled, .frequencyCapped, .softTemperatureLimit]) {
            return "; the SoC slows down to cool (or for power): give the box air, keep it out of the sun"
        }
        return ""
    }
}

/// The power part of `crier status`.
public struct PowerStatus: Sendable, Equatable {
    /// `firmware`, `hwmon` or `none`.
    public var source: String
    /// Conditions now (`PowerCondition` raw values).
    public var now: [String]
    /// Conditions seen since crier started.
    public var seen: [String]
    public var celsius: Double?
    public var maxCelsius: Double?

    public init(source: String, now: [String], seen: [String], celsius: Double?, maxCelsius: Double?) {
        self.source = source
        self.now = now
        self.seen = seen
        self.celsius = celsius
        self.maxCelsius = maxCelsius
    }

    /// The word a server sees (hello, MQTT status): `ok`, or what is true now joined by `,`,
    /// or `unknown` without flags.
    public var summary: String { source == "none" ? "unknown" : now.isEmpty ? "ok" : now.joined(separator: ",") }

    private static func words(_ raw: [String]) -> String {
        raw.map { PowerCondition(rawValue: $0)?.words ?? $0 }.joined(separator: ", ")
    }

    /// `power: under-voltage now; seen since start: under-voltage, throttled; 61.2 °C (max 70.3 °C)`.
    public var line: String {
        var parts: [String] = []
        switch source {
        case "none": parts.append("under-voltage unknown (no get_throttled, no rpi_volt hwmon)")
        default:
            parts.append(now.isEmpty ? "ok" : Self.words(now) + " now")
            if !seen.isEmpty { parts.append("seen since start: " + Self.words(seen)) }
            if source == "hwmon" { parts.append("under-voltage only (hwmon)") }
        }
        if let c = celsius {
            parts.append(Format.fixed(c, 1) + " °C" + (maxCelsius.map { " (max " + Format.fixed($0, 1) + " °C)" } ?? ""))
        }
        return parts.joined(separator: "; ")
    }
}

/// "The power supply is too weak", said once per boot at a quiet moment (issue 35 item 2):
/// under-voltage is what makes a Pi appliance crackle and corrupt its card, and a shop only
/// fixes what it hears about.
public struct UnderVoltagePrompt: Sendable {
    /// Seconds with nothing said before the prompt may be said.
    public static let quietSeconds = 5.0
    /// Off: `status.on_under_voltage = off`.
    public var enabled: Bool
    /// Said (or queued) in this boot already, by this process or one before it.
    public private(set) var said: Bool
    /// Under-voltage was seen and the prompt waits for a quiet moment.
    public private(set) var pending = false

    public init(enabled: Bool = true, saidThisBoot: Bool = false) {
        self.enabled = enabled
        said = saidThisBoot
    }

    /// A reading arrived; true when the prompt became pending (poke the speaker loop).
    public mutating func observe(_ r: PowerReading) -> Bool {
        guard enabled, !said, !pending, r.occurred.contains(.underVoltage) else { return false }
        pending = true
        return true
    }

    /// The speaker loop asks with what it knows: `busy` (anything waiting or being said, or
    /// prompts silenced), `lastSaid` (monotonic s, when the speaker last finished).
    /// Returns the prompt once, when pending, not busy and quiet for `quietSeconds`.
    public mutating func due(now: Double, lastSaid: Double, busy: Bool) -> Templates.Name? {
        guard pending, !busy, now - lastSaid >= Self.quietSeconds else { return nil }
        pending = false
        said = true
        return .powerWeak
    }

    /// When the loop should look again: the end of the quiet time, while the prompt waits for
    /// it; nil otherwise. Not a time already past: a prompt held by something else (mute, a
    /// full data partition) waits for the poke that ends that, not for a timer (a past
    /// deadline would wake the loop over and over).
    public func nextCheck(lastSaid: Double, now: Double) -> Double? {
        let t = lastSaid + Self.quietSeconds
        return pending && t > now ? t : nil
    }
}

/// What the box tells its server about its health (v1 hello, MQTT retained status): extra
/// fields an older server ignores. Sent when a power condition begins or ends, the temperature
/// changes band, and at start; `crier status` has the live values.
public struct DeviceHealth: Sendable, Equatable {
    /// `PowerStatus.summary`: `ok`, `unknown`, or what is true now (`under_voltage,throttled`).
    public var power: String?
    /// SoC temperature in whole °C when this was sent.
    public var tempC: Int?
    /// `LastStart` raw value.
    public var lastStart: String?

    public init(power: String? = nil, tempC: Int? = nil, lastStart: String? = nil) {
        self.power = power
        self.tempC = tempC
        self.lastStart = lastStart
    }

    public init(_ s: PowerStatus?, lastStart: LastStart?) {
        power = s?.summary
        tempC = s?.celsius.flatMap { $0.isFinite ? Int($0.rounded()) : nil }
        self.lastStart = lastStart?.rawValue
    }

    /// Adds the fields present to a hello or status object.
    public func add(to o: inout JSONObject) {
        if let p = power { o["power"] = .string(p) }
        if let t = tempC { o["temp_c"] = .number(JSONNumber(t)) }
        if let l = lastStart { o["last_start"] = .string(l) }
    }
}
