/// The Wi-Fi network(s) the box joins (issue 19). Everything a shop writes on the card:
/// `wifi.ssid`, `wifi.psk`, `wifi.country`, `wifi.hidden`, and a second network (a backup
/// hotspot, e.g. the owner's phone) under `wifi.backup_*`. The supplicant's file is generated
/// from this at every boot (`WpaSupplicantConf`, `crier wifi-config`).
public struct WifiConfig: Sendable, Equatable {
    public init() {}
    public var ssid: WifiSSID?
    public var psk: WifiPSK?
    public var hidden = false
    public var backupSSID: WifiSSID?
    public var backupPSK: WifiPSK?
    public var backupHidden = false
    /// ISO 3166-1 alpha-2, upper case (the regulatory domain: channels and power).
    public var country: String?
    public var interface = "wlan0"
    /// wpa_supplicant's ctrl_interface directory (the socket is DIR/INTERFACE).
    public var controlDir = "/run/wpa_supplicant"
    public var prompts = true
    /// Seconds associated without an IPv4 address before "no IP address" is said.
    public var noAddressAfter = 20.0
    /// Seconds the network must stay unseen before "network not found" is said.
    public var notFoundAfter = 10.0

    /// DIR/INTERFACE (≤ 15) must fit a unix socket address (108 bytes).
    public static let maxControlDirBytes = 80

    /// Whether crier looks after Wi-Fi at all.
    public var enabled: Bool { ssid != nil || backupSSID != nil }

    /// The networks in priority order (the first is preferred).
    public var networks: [WifiNetwork] {
        var out: [WifiNetwork] = []
        if let s = ssid, let k = psk { out.append(WifiNetwork(name: "primary", ssid: s, psk: k, hidden: hidden)) }
        if let s = backupSSID, let k = backupPSK { out.append(WifiNetwork(name: "backup", ssid: s, psk: k, hidden: backupHidden)) }
        return out
    }

    static let keys: [ConfigKey] = [
        ConfigKey("wifi.ssid", section: "wifi", default: "",
                  doc: "Name (SSID) of the shop's Wi-Fi network, 1-32 bytes; quote it to keep spaces at its ends. Empty: no Wi-Fi (Ethernet only). A cable, when plugged in, is always preferred.",
                  apply: { c, v throws(ConfigValueError) in c.wifi.ssid = v.isEmpty ? nil : try WifiSSID(parsing: v) },
                  render: { $0.wifi.ssid?.text ?? "" }),
        ConfigKey("wifi.psk", section: "wifi", default: "",
                  doc: "Its password: 8-63 characters (ASCII), or the 64-hex-digit key; `open` for a network without a password. Required with wifi.ssid. Never logged, never shown.",
                  apply: { c, v throws(ConfigValueError) in c.wifi.psk = v.isEmpty ? nil : try WifiPSK(parsing: v) },
                  render: { $0.wifi.psk.map { $0 == .open ? "open" : "(set)" } ?? "" }),
        ConfigKey("wifi.country", section: "wifi", default: "",
                  doc: "Country the box is in, two letters (ISO 3166, e.g. GB, DE, CN, US): decides the radio's legal channels and power. Required with wifi.ssid.",
                  apply: { c, v throws(ConfigValueError) in c.wifi.country = v.isEmpty ? nil : try WifiCountry.parse(v) },
                  render: { $0.wifi.country ?? "" }),
        ConfigKey("wifi.hidden", section: "wifi", default: "off",
                  doc: "on: the network does not broadcast its name (probe for it by name).",
                  apply: { c, v throws(ConfigValueError) in c.wifi.hidden = try ConfigValue.bool(v) },
                  render: { $0.wifi.hidden ? "on" : "off" }),
        ConfigKey("wifi.backup_ssid", section: "wifi", default: "",
                  doc: "A second network (a backup hotspot) joined when the first is out of reach; empty: none.",
                  apply: { c, v throws(ConfigValueError) in c.wifi.backupSSID = v.isEmpty ? nil : try WifiSSID(parsing: v) },
                  render: { $0.wifi.backupSSID?.text ?? "" }),
        ConfigKey("wifi.backup_psk", section: "wifi", default: "",
                  doc: "Password of the backup network, as wifi.psk (`open` for none). Never logged, never shown.",
                  apply: { c, v throws(ConfigValueError) in c.wifi.backupPSK = v.isEmpty ? nil : try WifiPSK(parsing: v) },
                  render: { $0.wifi.backupPSK.map { $0 == .open ? "open" : "(set)" } ?? "" }),
        ConfigKey("wifi.backup_hidden", section: "wifi", default: "off",
                  doc: "on: the backup network does not broadcast its name.",
                  apply: { c, v throws(ConfigValueError) in c.wifi.backupHidden = try ConfigValue.bool(v) },
                  render: { $0.wifi.backupHidden ? "on" : "off" }),
        ConfigKey("wifi.prompts", section: "wifi", default: "on",
                  doc: "Say the Wi-Fi state: connected, password wrong, network not found, no IP address (each once, repeated every status.link_down_repeat seconds while it lasts).",
                  apply: { c, v throws(ConfigValueError) in c.wifi.prompts = try ConfigValue.bool(v) },
                  render: { $0.wifi.prompts ? "on" : "off" }),
        ConfigKey("wifi.not_found_after", section: "wifi", default: "10",
                  doc: "Seconds no configured network may stay unseen before \"network not found\" is said.",
                  apply: { c, v throws(ConfigValueError) in c.wifi.notFoundAfter = try ConfigValue.number(v, 0...600) },
                  render: { ConfigValue.fmt($0.wifi.notFoundAfter) }),
        ConfigKey("wifi.no_address_after", section: "wifi", default: "20",
                  doc: "Seconds connected without an IPv4 address (DHCP) before \"no IP address\" is said.",
                  apply: { c, v throws(ConfigValueError) in c.wifi.noAddressAfter = try ConfigValue.number(v, 1...600) },
                  render: { ConfigValue.fmt($0.wifi.noAddressAfter) }),
        ConfigKey("wifi.interface", section: "wifi", default: "wlan0",
                  doc: "Wireless interface the supplicant runs on (the Pi's own radio is wlan0).",
                  apply: { c, v throws(ConfigValueError) in
                      let v = try ConfigValue.nonEmpty(v, what: "an interface name")
                      guard v.utf8.count <= 15, v.utf8.allSatisfy({ ($0 >= 0x30 && $0 <= 0x39) || ($0 | 0x20 >= 0x61 && $0 | 0x20 <= 0x7a) || $0 == 0x2d || $0 == 0x5f || $0 == 0x2e }) else {
                          throw ConfigValueError("expected an interface name such as wlan0 (at most 15 letters, digits, - _ .), got \(ConfigValue.shown(v))")
                      }
                      c.wifi.interface = v
                  }, render: { $0.wifi.interface }),
        ConfigKey("wifi.control_dir", section: "wifi", default: "/run/wpa_supplicant",
                  doc: "wpa_supplicant's control socket directory (ctrl_interface); crier reads the Wi-Fi state from DIR/INTERFACE. Letters, digits and / . _ - only, at most 80 bytes.",
                  apply: { c, v throws(ConfigValueError) in c.wifi.controlDir = try ConfigValue.plainPath(v, maxBytes: WifiConfig.maxControlDirBytes) },
                  render: { $0.wifi.controlDir }),
    ]
}

/// One network of the supplicant's file.
public struct WifiNetwork: Sendable, Equatable {
    /// `primary` or `backup` (the supplicant's id_str, so events say which one).
    public var name: String
    public var ssid: WifiSSID
    public var psk: WifiPSK
    public var hidden: Bool
}

/// An SSID: 1-32 bytes. Kept as bytes (what goes on the air) and the text it was written as.
public struct WifiSSID: Sendable, Equatable {
    public let bytes: [UInt8]
    public var text: String { String(decoding: bytes, as: UTF8.self) }

    public init(parsing s: String) throws(ConfigValueError) {
        let b = Array(s.utf8)
        guard !b.isEmpty else { throw ConfigValueError("expected a network name, got an empty value") }
        guard b.count <= 32 else {
            throw ConfigValueError("a Wi-Fi network name is at most 32 bytes; \(ConfigValue.shown(s)) is \(b.count) (non-English letters take 2-4 bytes each)")
        }
        bytes = b
    }
}

/// `wifi.psk`: a WPA passphrase (8-63 printable ASCII characters), the 256-bit key as 64
/// hex digits, or `open` (no password: too short to be a passphrase, so never ambiguous; an
/// empty or mistyped value is an error, never an open network). The value never appears in a
/// message or a log line.
public enum WifiPSK: Sendable, Equatable {
    case passphrase(String)
    case key([UInt8])
    case open

    public init(parsing s: String) throws(ConfigValueError) {
        if s.lowercased() == "open" {
            self = .open
            return
        }
        let b = Array(s.utf8)
        if b.count == 64, let k = Hex.decode(s) {
            self = .key(k)
            return
        }
        if let bad = b.firstIndex(where: { $0 < 0x20 || $0 > 0x7E }) {
            let col = String(decoding: b[..<bad], as: UTF8.self).count + 1
            throw ConfigValueError("the Wi-Fi password has a character WPA does not allow at position \(col) (only English letters, digits, spaces and ASCII punctuation); check the password on the router's label")
        }
        guard b.count >= 8 else { throw ConfigValueError("a WPA password has 8-63 characters; this one has \(b.count)") }
        guard b.count <= 63 else {
            throw ConfigValueError(b.count == 64 ? "64 characters: a raw key must be 64 hex digits (0-9, a-f) and this one is not; a password has 8-63 characters"
                                   : "a WPA password has 8-63 characters; this one has \(b.count)")
        }
        self = .passphrase(s)
    }

    public var isPassphrase: Bool { if case .passphrase = self { return true } else { return false } }
}

public enum WifiCountry {
    /// ISO 3166-1 alpha-2 codes (from tzdata's iso3166.tab).
    public static let codes: Set<String> = Set("AD AE AF AG AI AL AM AO AQ AR AS AT AU AW AX AZ BA BB BD BE BF BG BH BI BJ BL BM BN BO BQ BR BS BT BV BW BY BZ CA CC CD CF CG CH CI CK CL CM CN CO CR CU CV CW CX CY CZ DE DJ DK DM DO DZ EC EE EG EH ER ES ET FI FJ FK FM FO FR GA GB GD GE GF GG GH GI GL GM GN GP GQ GR GS GT GU GW GY HK HM HN HR HT HU ID IE IL IM IN IO IQ IR IS IT JE JM JO JP KE KG KH KI KM KN KP KR KW KY KZ LA LB LC LI LK LR LS LT LU LV LY MA MC MD ME MF MG MH MK ML MM MN MO MP MQ MR MS MT MU MV MW MX MY MZ NA NC NE NF NG NI NL NO NP NR NU NZ OM PA PE PF PG PH PK PL PM PN PR PS PT PW PY QA RE RO RS RU RW SA SB SC SD SE SG SH SI SJ SK SL SM SN SO SR SS ST SV SX SY SZ TC TD TF TG TH TJ TK TL TM TN TO TR TT TV TW TZ UA UG UM US UY UZ VA VC VE VG VI VN VU WF WS YE YT ZA ZM ZW ".split(separator: " ").map(String.init))

    public static func parse(_ s: String) throws(ConfigValueError) -> String {
        let u = s.uppercased()
        if u == "00" {
            throw ConfigValueError("\"00\" is the \"world\" setting (fewest channels, lowest power, and some routers' channels unusable); write the two letters of the country the box is in, e.g. GB, DE, CN, US")
        }
        guard u.utf8.count == 2, codes.contains(u) else {
            throw ConfigValueError("expected the two-letter code of a country (ISO 3166, e.g. GB, DE, CN, US), got \(ConfigValue.shown(s))"
                + (u == "UK" ? " (the United Kingdom is GB)" : ""))
        }
        return u
    }
}
