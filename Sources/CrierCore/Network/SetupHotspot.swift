/// The setup hotspot (issue 34 point 3, docs/setup-hotspot.md): when the box has no working network
/// a few minutes after it starts, or when someone holds both volume keys together, it opens
/// its own open access point `Crier-NNNN`, says so at intervals, lets a phone pick the shop's
/// network, tries it, says how it went, and closes. Everything here is pure: facts and `now`
/// come in, effects go out. The radio work is the root unit crier-setup-ap.service (hostapd,
/// dnsmasq, a supplicant for scans and tries), asked through a flag file; the page is
/// CrierHTTP's (it calls `SetupPortal`).

/// `setup.*` in crier.conf.
public struct SetupConfig: Sendable, Equatable {
    public init() {}
    /// `setup.hotspot`: off disables the hotspot entirely (neither the timer nor the gesture).
    public var hotspot = true
    /// Minutes after start without a working network before the hotspot opens by itself
    /// (once per start, and only if the network has not worked since the start). 0: never by
    /// itself (the gesture still opens it).
    public var afterMinutes = 3.0
    /// Minutes without a request from the page before an open hotspot closes.
    public var closeAfterMinutes = 15.0
    /// Seconds between two "connect your phone to Crier NNNN" prompts while open.
    public var repeatEvery = 60.0
    /// 2.4 GHz channel of the access point (1-13; the box's country decides which are legal).
    public var channel = 6
    /// Seconds a "try this network" step may take before it counts as "network not found".
    public var tryTimeout = 30.0
    /// The file crier writes to ask crier-setup-ap.service for a mode (crier's runtime dir).
    public var requestFile = "/run/crier/setup-ap"

    static let keys: [ConfigKey] = [
        ConfigKey("setup.hotspot", section: "setup", default: "on",
                  doc: "The setup hotspot Crier-NNNN (docs/setup-hotspot.md): opened when the box has no working network setup.after_minutes after it starts, or when both volume keys are held together setup.hold_seconds. off: never.",
                  apply: { c, v throws(ConfigValueError) in c.setup.hotspot = try ConfigValue.bool(v) },
                  render: { $0.setup.hotspot ? "on" : "off" }),
        ConfigKey("setup.after_minutes", section: "setup", default: "3",
                  doc: "Minutes after start without a working network (Wi-Fi not online and the order link not up) before the hotspot opens by itself; once per start. 0: only by the button gesture.",
                  apply: { c, v throws(ConfigValueError) in c.setup.afterMinutes = try ConfigValue.number(v, 0...120) },
                  render: { ConfigValue.fmt($0.setup.afterMinutes) }),
        ConfigKey("setup.close_after_minutes", section: "setup", default: "15",
                  doc: "Minutes the hotspot stays open without being used from a phone before it closes by itself.",
                  apply: { c, v throws(ConfigValueError) in c.setup.closeAfterMinutes = try ConfigValue.number(v, 1...120) },
                  render: { ConfigValue.fmt($0.setup.closeAfterMinutes) }),
        ConfigKey("setup.repeat", section: "setup", default: "60",
                  doc: "Seconds between two \"connect your phone to Crier NNNN\" prompts while the hotspot is open.",
                  apply: { c, v throws(ConfigValueError) in c.setup.repeatEvery = try ConfigValue.number(v, 10...3600) },
                  render: { ConfigValue.fmt($0.setup.repeatEvery) }),
        ConfigKey("setup.hold_seconds", section: "setup", default: "5",
                  doc: "Seconds both volume keys must be held together to open the hotspot (0: no gesture). Neither key steps the volume while both are down.",
                  apply: { c, v throws(ConfigValueError) in
                      let s = try ConfigValue.number(v, 0...25)
                      guard s == 0 || s >= 2 else { throw ConfigValueError("expected 0 (off) or 2...25 seconds, got \(ConfigValue.shown(v)): shorter could happen by accident") }
                      c.buttons.setupHoldSeconds = s
                  }, render: { ConfigValue.fmt($0.buttons.setupHoldSeconds) }),
        ConfigKey("setup.channel", section: "setup", default: "6",
                  doc: "2.4 GHz channel of the setup hotspot, 1-13 (12 and 13 only where wifi.country allows them).",
                  apply: { c, v throws(ConfigValueError) in c.setup.channel = try ConfigValue.int(v, 1...13) },
                  render: { String($0.setup.channel) }),
        ConfigKey("setup.request_file", section: "setup", default: "/run/crier/setup-ap",
                  doc: "Where crier asks crier-setup-ap.service (root) for the access point or station mode; the unit's path unit watches it. Change only with the units.",
                  apply: { c, v throws(ConfigValueError) in c.setup.requestFile = try ConfigValue.plainPath(v, maxBytes: 200) },
                  render: { $0.setup.requestFile }),
    ]
}

/// The access point's name, `Crier-NNNN`, and the code said aloud. NNNN is four decimal
/// digits: FNV-1a (32 bit) over `device.id`, a `/` and the radio's MAC address as the
/// kernel prints it (`/sys/class/net/wlan0/address`, lower case), modulo 10000, zero-padded.
/// The MAC makes two boxes with the default `device.id` differ; the device id makes a
/// replaced radio keep a name the owner chose to change. Stable across restarts.
public struct HotspotName: Sendable, Equatable {
    public let code: String
    public var ssid: String { "Crier-" + code }

    public init(deviceID: String, mac: String?) {
        var h: UInt32 = 0x811C_9DC5
        for b in Array((deviceID + "/" + (mac ?? "").lowercased()).utf8) {
            h ^= UInt32(b)
            h = h &* 0x0100_0193
        }
        let n = String(h % 10000)
        code = String(repeating: "0", count: 4 - n.count) + n
    }

    /// The code as the prompt's `{code}`: digit by digit ("1 2 3 4"; the speech text turns
    /// each digit into its word, 一二三四 in Chinese).
    public var spokenCode: String { code.map(String.init).joined(separator: " ") }
}

/// A network the page submitted, validated: what goes to the supplicant (hex only) and what
/// goes into crier.conf (lines that read back exactly).
public struct SetupNetwork: Sendable, Equatable {
    public let ssid: WifiSSID
    public let psk: WifiPSK
    public let hidden: Bool
    /// Set when crier.conf had no `wifi.country` and the page asked for one.
    public let country: String?

    /// Why a submission is refused: `code` for the page to translate, `message` in English.
    public struct Problem: Error, Sendable, Equatable {
        public enum Code: String, Sendable { case ssidEmpty = "ssid_empty", ssidTooLong = "ssid_too_long", ssidUnsavable = "ssid_unsavable"
            case pskCharacter = "psk_character", pskLength = "psk_length", countryNeeded = "country_needed", country }
        public let field: String
        public let code: Code
        public let message: String
    }

    /// `psk` empty: an open network. `configuredCountry`: crier.conf's `wifi.country` (nil:
    /// the page must send `country`). Never puts the password into a message.
    public static func validate(ssid: String, psk: String, hidden: Bool = false, country: String? = nil,
                                configuredCountry: String?) -> Result<SetupNetwork, Problem> {
        let sb = Array(ssid.utf8)
        guard !sb.isEmpty else { return .failure(Problem(field: "ssid", code: .ssidEmpty, message: "enter the network's name")) }
        guard sb.count <= 32 else {
            return .failure(Problem(field: "ssid", code: .ssidTooLong, message: "a Wi-Fi network name is at most 32 bytes; this one is \(sb.count) (non-English letters take 2-4 bytes each)"))
        }
        // crier.conf has no escapes: a name with a line break or another control character
        // could not be written there (and no router lets one be typed).
        if sb.contains(where: { $0 < 0x20 || $0 == 0x7F }) {
            return .failure(Problem(field: "ssid", code: .ssidUnsavable, message: "the network name has a control character (a line break, a tab…); rename the network on the router"))
        }
        let id: WifiSSID
        do throws(ConfigValueError) { id = try WifiSSID(parsing: ssid) } catch {
            return .failure(Problem(field: "ssid", code: .ssidTooLong, message: error.message))
        }
        guard confLine("wifi.ssid", ssid) != nil else {
            return .failure(Problem(field: "ssid", code: .ssidUnsavable, message: "this network name cannot be written into crier.conf (it starts or ends with a space and has both kinds of quotes); rename the network on the router"))
        }
        let key: WifiPSK
        if psk.isEmpty {
            key = .open
        } else {
            let b = Array(psk.utf8)
            if let bad = b.firstIndex(where: { $0 < 0x20 || $0 > 0x7E }) {
                let col = String(decoding: b[..<bad], as: UTF8.self).count + 1
                return .failure(Problem(field: "psk", code: .pskCharacter, message: "the password has a character WPA does not allow at position \(col) (only English letters, digits, spaces and ASCII punctuation)"))
            }
            let isHexKey = b.count == 64 && Hex.decode(psk) != nil
            guard isHexKey || (8...63).contains(b.count) else {
                return .failure(Problem(field: "psk", code: .pskLength, message: "a WPA password has 8-63 characters; this one has \(b.count)"))
            }
            key = isHexKey ? .key(Hex.decode(psk)!) : .passphrase(psk)
        }
        var c: String?
        if let given = country, !given.isEmpty {
            do throws(ConfigValueError) { c = try WifiCountry.parse(given) } catch {
                return .failure(Problem(field: "country", code: .country, message: error.message))
            }
        } else if configuredCountry == nil {
            return .failure(Problem(field: "country", code: .countryNeeded, message: "choose the country the box is in (it sets the radio's legal channels)"))
        }
        return .success(SetupNetwork(ssid: id, psk: key, hidden: hidden, country: c))
    }

    /// The crier.conf lines that record this network (`wifi.ssid`, `wifi.psk`, `wifi.hidden`,
    /// and `wifi.country` when the page gave one), each reading back exactly. For the conf
    /// editor: it writes these in place of the old keys. Holds the password: never log it.
    public var confLines: [(key: String, line: String)] {
        var out: [(String, String)] = []
        if let l = Self.confLine("wifi.ssid", ssid.text) { out.append(("wifi.ssid", l)) }
        let p: String
        switch psk {
        case .open: p = "open"
        case .key(let k): p = Hex.encode(k)
        case .passphrase(let s): p = s
        }
        if let l = Self.confLine("wifi.psk", p) { out.append(("wifi.psk", l)) }
        out.append(("wifi.hidden", "wifi.hidden = " + (hidden ? "on" : "off")))
        if let c = country { out.append(("wifi.country", "wifi.country = " + c)) }
        return out
    }

    /// crier.conf's text with this network's keys set: the first line of each key replaced in
    /// place, its later lines (the parser takes the last) removed, a missing key appended;
    /// every other line, comment and line ending kept. Interim: the page's conf editor
    /// (issue 34 point 1) replaces this with the general one.
    public func edited(conf text: String) -> String {
        // bytes, not Characters: "\r\n" is one Character and would not split on "\n"
        var lines = Array(text.utf8).split(separator: 0x0A, omittingEmptySubsequences: false).map { String(decoding: $0, as: UTF8.self) }
        var append: [String] = []
        for (key, line) in confLines {
            let hits = lines.indices.filter { i in
                let l = lines[i].drop { $0 == " " || $0 == "\t" }
                guard !l.hasPrefix("#"), let eq = l.firstIndex(of: "=") else { return false }
                return String(l[..<eq]).trimmed == key
            }
            guard let first = hits.first else { append.append(line); continue }
            let cr = lines[first].utf8.last == 0x0D ? "\r" : ""
            lines[first] = line + cr
            for i in hits.dropFirst().reversed() { lines.remove(at: i) }
        }
        if !append.isEmpty {
            if let last = lines.last, last.isEmpty { lines.removeLast() }
            let cr = lines.first?.utf8.last == 0x0D ? "\r" : ""
            lines += (["# Wi-Fi set up from a phone (the setup hotspot)"] + append).map { $0 + cr } + [""]
        }
        return lines.joined(separator: "\n")
    }

    /// `key = value`, bare or quoted, whichever crier.conf's parser reads back as `value`;
    /// nil when neither does.
    static func confLine(_ key: String, _ value: String) -> String? {
        for l in ["\(key) = \(value)", "\(key) = \"\(value)\"", "\(key) = '\(value)'"] where ConfigParser.value(ofLine: Substring(l)) == value {
            return l
        }
        return nil
    }

    /// The supplicant's ctrl_iface commands that add this network as network `id` (after
    /// ADD_NETWORK returned it), then select it. Every value that came from the page is hex
    /// (the SSID's bytes, the 256-bit PSK derived from the passphrase, the SAE password's
    /// bytes): a quote, a line break or `network={` reaches the supplicant as hex digits,
    /// never as syntax.
    public func supplicantCommands(id: Int) -> [String] {
        var c = ["SET_NETWORK \(id) ssid \(Hex.encode(ssid.bytes))"]
        if hidden { c.append("SET_NETWORK \(id) scan_ssid 1") }
        switch psk {
        case .open:
            c.append("SET_NETWORK \(id) key_mgmt NONE")
        case .key(let k):
            c.append("SET_NETWORK \(id) key_mgmt WPA-PSK WPA-PSK-SHA256")
            c.append("SET_NETWORK \(id) ieee80211w 1")
            c.append("SET_NETWORK \(id) psk \(Hex.encode(k))")
        case .passphrase(let p):
            c.append("SET_NETWORK \(id) key_mgmt WPA-PSK WPA-PSK-SHA256 SAE")
            c.append("SET_NETWORK \(id) ieee80211w 1")
            c.append("SET_NETWORK \(id) psk \(Hex.encode(WpaKeyDerivation.psk(passphrase: p, ssid: ssid.bytes)))")
            c.append("SET_NETWORK \(id) sae_password \(Hex.encode(Array(p.utf8)))")
        }
        c.append("SET_NETWORK \(id) id_str \"setup\"")
        c.append("SELECT_NETWORK \(id)")
        return c
    }
}

/// One network the box can see, for the page's list.
public struct ScannedNetwork: Sendable, Equatable {
    public var ssid: [UInt8]
    public var signal: Int
    public var frequency: Int
    public enum Security: String, Sendable { case open, wpa, wep, enterprise }
    public var security: Security
    public var text: String { String(decoding: ssid, as: UTF8.self) }
    /// WEP and 802.1X networks are listed but cannot be joined by this box.
    public var joinable: Bool { security == .open || security == .wpa }

    /// SCAN_RESULTS (`bssid / frequency / signal level / flags / ssid` then one tab-separated
    /// line per BSS, the SSID printf-encoded): one entry per SSID (its strongest BSS), hidden
    /// networks (empty or all-zero SSIDs) dropped, strongest first, at most `limit`.
    public static func list(fromScanResults text: String, limit: Int = 40) -> [ScannedNetwork] {
        var best: [[UInt8]: ScannedNetwork] = [:]
        for line in text.split(whereSeparator: { $0 == "\n" || $0 == "\r" }) {
            let f = line.split(separator: "\t", maxSplits: 4, omittingEmptySubsequences: false)
            guard f.count == 5, let freq = Int(f[1]), let sig = Int(f[2]), (-150...20).contains(sig) else { continue }
            let ssid = WpaText.decode(Array(f[4].utf8))
            guard !ssid.isEmpty, ssid.count <= 32, ssid.contains(where: { $0 != 0 }) else { continue }
            let flags = f[3]
            let sec: Security = flags.contains("EAP") ? .enterprise : (flags.contains("PSK") || flags.contains("SAE")) ? .wpa : flags.contains("WEP") ? .wep : .open
            let n = ScannedNetwork(ssid: ssid, signal: sig, frequency: freq, security: sec)
            if let old = best[ssid], old.signal >= sig { continue }
            best[ssid] = n
        }
        let sorted = best.values.sorted { a, b in a.signal != b.signal ? a.signal > b.signal : a.ssid.lexicographicallyPrecedes(b.ssid) }
        return Array(sorted.prefix(limit))
    }
}

/// How a "try this network" step ended.
public enum SetupTryOutcome: String, Sendable, Equatable {
    case connected
    case wrongPassword = "wrong_password"
    case notFound = "not_found"
    /// The supplicant could not be asked (no control socket, a command refused).
    case failed

    /// What the box says (the Wi-Fi prompts it already has).
    public var prompt: Templates.Name {
        switch self {
        case .connected: .wifiConnected
        case .wrongPassword: .wifiWrongPassword
        case .notFound, .failed: .wifiNotFound
        }
    }
}

/// Watches the supplicant's events during one try and says when it is decided: connected at
/// CTRL-EVENT-CONNECTED (the handshake worked: the name and password are right), wrong
/// password at WRONG_KEY or a refused SAE confirm, not found after `notFoundScans` scans
/// without the network or at the deadline.
public struct SetupTry: Sendable, Equatable {
    public let deadline: Double
    public let notFoundScans: Int
    var misses = 0
    public private(set) var outcome: SetupTryOutcome?

    public init(now: Double, timeout: Double, notFoundScans: Int = 3) {
        deadline = now + timeout
        self.notFoundScans = notFoundScans
    }

    public mutating func observe(_ e: WpaEvent) -> SetupTryOutcome? {
        guard outcome == nil else { return outcome }
        switch e {
        case .connected: outcome = .connected
        case .wrongKey: outcome = .wrongPassword
        case .authReject where e.isSAEConfirmRejected: outcome = .wrongPassword
        case .networkNotFound:
            misses += 1
            if misses >= notFoundScans { outcome = .notFound }
        default: break
        }
        return outcome
    }

    public mutating func tick(now: Double) -> SetupTryOutcome? {
        if outcome == nil, now >= deadline { outcome = .notFound }
        return outcome
    }
}

/// What the runtime must do for the setup hotspot.
public enum SetupEffect: Sendable, Equatable {
    /// Ask the root unit for the access point (station off).
    case startAP
    /// Ask the root unit for station mode (AP off) to scan or try a network.
    case station
    /// Scan (in station mode), then `scanned`.
    case scan
    /// Try this network (in station mode), then `tried`.
    case tryNetwork(SetupNetwork)
    /// Give the radio back: remove the request (the root unit stops; the box's own
    /// supplicant runs again from crier.conf).
    case stop
    /// Write the network into crier.conf (the conf editor's job).
    case save(SetupNetwork)
    /// Say a prompt (`setupHotspot` is filled with `HotspotName.spokenCode`).
    case say(Templates.Name)
}

/// Why the hotspot opened or closed (the log, the page).
public enum SetupReason: String, Sendable, Equatable {
    case noNetwork = "no_network", gesture, page, idle, joined, network, disabled
}

/// The setup hotspot's rules.
/// - Opens by itself once per start: `afterMinutes` after start, if the network (Wi-Fi
///   online or the order link up) has not worked at all since the start. A box whose router
///   is just slower to boot than the Pi gets 3 minutes; a box that was online and lost its
///   network keeps trying to rejoin instead (the AP would stop its station).
/// - Opens by the gesture (both volume keys held together) or the page at any time.
/// - While open: scans once (station mode), then the access point; "connect your phone to
///   Crier NNNN to set up the network" at once and every `repeatEvery` seconds (not while a
///   try is under way).
/// - A try: station mode, the network added through the control interface; its outcome is
///   said ("Wi-Fi password wrong", "Wi-Fi network not found"). Connected: saved to crier.conf,
///   closed, and the Wi-Fi monitor says "Wi-Fi connected" once the box has its address.
///   Otherwise: the access point again.
/// - Closes `closeAfterMinutes` after the last request from the page (or the opening), when
///   the page says so, or when the network starts working by itself (not during a try).
public struct SetupMode: Sendable, Equatable {
    public enum Phase: String, Sendable, Equatable { case closed, scanning, open, trying }

    public let config: SetupConfig
    public let name: HotspotName
    public let startedAt: Double
    public private(set) var phase: Phase = .closed
    public private(set) var openedAt: Double?
    public private(set) var openedBy: SetupReason?
    public private(set) var closedBy: SetupReason?
    public private(set) var lastUsed = 0.0
    public private(set) var nextPrompt: Double?
    public private(set) var networks: [ScannedNetwork] = []
    public private(set) var trying: SetupNetwork?
    public private(set) var lastOutcome: (ssid: String, outcome: SetupTryOutcome)?
    /// The network has worked at least once since the start.
    public private(set) var everWorked = false
    var autoOpened = false
    /// The network was seen not working since the opening.
    var sawDown = false

    public static func == (a: SetupMode, b: SetupMode) -> Bool {
        a.phase == b.phase && a.openedAt == b.openedAt && a.nextPrompt == b.nextPrompt && a.trying == b.trying && a.networks == b.networks
            && a.lastOutcome?.ssid == b.lastOutcome?.ssid && a.lastOutcome?.outcome == b.lastOutcome?.outcome && a.everWorked == b.everWorked
    }

    public init(config: SetupConfig, name: HotspotName, now: Double) {
        self.config = config
        self.name = name
        startedAt = now
    }

    public var isOpen: Bool { phase != .closed }

    /// The network's state: Wi-Fi online or the order link up.
    public mutating func network(working: Bool, now: Double) -> [SetupEffect] {
        guard working else {
            if isOpen { sawDown = true }
            return []
        }
        everWorked = true
        // Came back by itself (a cable, a router that was slow to start): closes. Still up
        // from before the opening (the gesture on a box that works, to change its network:
        // the link takes a while to notice the station is gone) is not coming back. A try's
        // own success is `tried`.
        if (phase == .open || phase == .scanning) && sawDown { return close(.network) }
        return []
    }

    public mutating func open(_ why: SetupReason, now: Double) -> [SetupEffect] {
        guard config.hotspot else { return [] }
        lastUsed = now
        guard phase == .closed else { return [] }
        phase = .scanning
        openedAt = now
        openedBy = why
        sawDown = false
        closedBy = nil
        lastOutcome = nil
        nextPrompt = nil
        return [.station, .scan]
    }

    /// The scan's result (empty when it failed): the access point comes up and is announced.
    public mutating func scanned(_ list: [ScannedNetwork], now: Double) -> [SetupEffect] {
        guard phase == .scanning else { return [] }
        networks = list
        phase = .open
        nextPrompt = now + config.repeatEvery
        return [.startAP, .say(.setupHotspot)]
    }

    /// The page was used (any request): the idle timer starts again.
    public mutating func used(now: Double) { if isOpen { lastUsed = now } }

    /// The page asked for a fresh list of networks.
    public mutating func rescan(now: Double) -> [SetupEffect] {
        guard phase == .open else { return [] }
        lastUsed = now
        phase = .scanning
        return [.station, .scan]
    }

    /// The page submitted a validated network.
    public mutating func submit(_ n: SetupNetwork, now: Double) -> [SetupEffect] {
        guard phase == .open else { return [] }
        lastUsed = now
        phase = .trying
        trying = n
        return [.station, .tryNetwork(n)]
    }

    /// The try's outcome.
    public mutating func tried(_ outcome: SetupTryOutcome, now: Double) -> [SetupEffect] {
        guard phase == .trying, let n = trying else { return [] }
        trying = nil
        lastUsed = now
        lastOutcome = (n.ssid.text, outcome)
        if outcome == .connected {
            // "Wi-Fi connected" is the Wi-Fi monitor's, once the box has an address on the
            // network (the handshake alone is not the network working): not said twice.
            everWorked = true
            phase = .closed
            closedBy = .joined
            nextPrompt = nil
            return [.save(n), .stop]
        }
        phase = .open
        nextPrompt = now + config.repeatEvery
        return [.say(outcome.prompt), .startAP]
    }

    /// The page closed setup (or the config turned the hotspot off).
    public mutating func close(_ why: SetupReason) -> [SetupEffect] {
        guard phase != .closed else { return [] }
        phase = .closed
        closedBy = why
        trying = nil
        nextPrompt = nil
        return [.stop]
    }

    /// Timers: opening after `afterMinutes`, closing after `closeAfterMinutes` unused, the
    /// repeated prompt.
    public mutating func tick(now: Double) -> [SetupEffect] {
        switch phase {
        case .closed:
            if config.hotspot, !autoOpened, !everWorked, config.afterMinutes > 0, now - startedAt >= config.afterMinutes * 60 {
                autoOpened = true
                return open(.noNetwork, now: now)
            }
            return []
        case .scanning, .trying:
            return []  // a scan or a try always ends (their own timeouts)
        case .open:
            if now - lastUsed >= config.closeAfterMinutes * 60 { return close(.idle) }
            if let p = nextPrompt, now >= p {
                nextPrompt = now + config.repeatEvery
                return [.say(.setupHotspot)]
            }
            return []
        }
    }

    /// When `tick` must run next; nil when only an event can change anything.
    public var nextDeadline: Double? {
        switch phase {
        case .closed:
            guard config.hotspot, !autoOpened, !everWorked, config.afterMinutes > 0 else { return nil }
            return startedAt + config.afterMinutes * 60
        case .scanning, .trying: return nil
        case .open:
            let idle = lastUsed + config.closeAfterMinutes * 60
            return nextPrompt.map { min($0, idle) } ?? idle
        }
    }

    /// Whether a setup prompt chosen earlier is still worth saying (checked before it plays).
    public var promptStillTrue: Bool { phase == .open }
}

/// What the page shows and calls (CrierHTTP's portal handlers; pure).
public enum SetupPortal {
    /// The page's view of the hotspot: `{"phase":…,"ap":"Crier-1234","networks":[…],
    /// "last":{"ssid":…,"outcome":…},"closes_in_s":…}`.
    public struct State: Sendable, Equatable {
        public var phase: SetupMode.Phase
        public var apName: String
        public var networks: [ScannedNetwork]
        public var lastSSID: String?
        public var lastOutcome: SetupTryOutcome?
        public var closesIn: Double?
        public var needsCountry: Bool
    }

    public static func state(_ m: SetupMode, configuredCountry: String?, now: Double) -> State {
        State(phase: m.phase, apName: m.name.ssid, networks: m.networks, lastSSID: m.lastOutcome?.ssid, lastOutcome: m.lastOutcome?.outcome,
              closesIn: m.phase == .open ? max(0, m.lastUsed + m.config.closeAfterMinutes * 60 - now) : nil,
              needsCountry: configuredCountry == nil)
    }

    public static func json(_ s: State) -> String {
        func q(_ t: String) -> String { String(decoding: JSON.write(.string(t)), as: UTF8.self) }
        let nets = s.networks.map { n in
            "{\"ssid\":\(q(n.text)),\"signal_dbm\":\(n.signal),\"security\":\"\(n.security.rawValue)\",\"joinable\":\(n.joinable)}"
        }.joined(separator: ",")
        let last = s.lastOutcome.map { "{\"ssid\":\(q(s.lastSSID ?? "")),\"outcome\":\"\($0.rawValue)\"}" } ?? "null"
        return "{\"phase\":\"\(s.phase.rawValue)\",\"ap\":\(q(s.apName)),\"networks\":[\(nets)],\"last\":\(last),"
            + "\"closes_in_s\":\(s.closesIn.map { String(Int($0.rounded())) } ?? "null"),\"needs_country\":\(s.needsCountry)}"
    }
}
