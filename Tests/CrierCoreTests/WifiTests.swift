import Testing
@testable import CrierCore

/// Issue 19: wifi.* keys, the wpa_supplicant file they generate, the ctrl_iface parsing and the
/// state-to-prompt rules.
@Suite struct WifiConfigTests {
    func parse(_ text: String) -> ConfigParser.Result { ConfigParser().parse(text, file: "crier.conf") }

    @Test func aPlainNetwork() {
        let r = parse("wifi.ssid = Shop\nwifi.psk = correct horse\nwifi.country = gb\n")
        #expect(r.errors.isEmpty)
        #expect(r.config.wifi.ssid?.text == "Shop")
        #expect(r.config.wifi.country == "GB")
        #expect(r.config.wifi.psk == .passphrase("correct horse"))
        #expect(r.config.wifi.enabled)
    }

    @Test func ssidLengthIsCountedInBytes() {
        #expect(parse("wifi.ssid = \(String(repeating: "a", count: 32))\nwifi.psk=12345678\nwifi.country=DE\n").errors.isEmpty)
        let long = parse("wifi.ssid = \(String(repeating: "a", count: 33))\nwifi.psk=12345678\nwifi.country=DE\n")
        #expect(long.errors.contains { $0.key == "wifi.ssid" && $0.message.contains("32 bytes") })
        // 11 CJK characters are 33 bytes
        let cjk = parse("wifi.ssid = \(String(repeating: "店", count: 11))\nwifi.psk=12345678\nwifi.country=CN\n")
        #expect(cjk.errors.contains { $0.key == "wifi.ssid" && $0.message.contains("33") })
        #expect(parse("wifi.ssid = \(String(repeating: "店", count: 10))\nwifi.psk=12345678\nwifi.country=CN\n").errors.isEmpty)
    }

    @Test func pskRules() throws {
        #expect(throws: ConfigValueError.self) { try WifiPSK(parsing: "1234567") }
        #expect(try WifiPSK(parsing: "12345678") == .passphrase("12345678"))
        #expect(try WifiPSK(parsing: String(repeating: "x", count: 63)).isPassphrase)
        #expect(throws: ConfigValueError.self) { try WifiPSK(parsing: String(repeating: "x", count: 64)) }
        let hex = String(repeating: "aB", count: 32)
        #expect(try WifiPSK(parsing: hex) == .key(Hex.decode(hex)!))
        #expect(throws: ConfigValueError.self) { try WifiPSK(parsing: "pässwörter") }
        #expect(try WifiPSK(parsing: "OPEN") == .open)
    }

    @Test func thePasswordNeverAppearsInMessagesOrOutput() {
        let secrets = ["sekrit", "pässwörter-geheim", String(repeating: "z", count: 64), String(repeating: "q", count: 70)]
        for s in secrets {
            let r = parse("wifi.ssid = Shop\nwifi.psk = \(s)\nwifi.country = GB\nwifi.backup_ssid=Phone\nwifi.backup_psk = \(s)\n")
            #expect(!r.errors.isEmpty)
            for d in r.diagnostics { #expect(!d.description.contains(s), "\(d.description)") }
            #expect(!r.config.rendered().contains(s))
        }
        let ok = parse("wifi.ssid = Shop\nwifi.psk = hunter2hunter2\nwifi.country = GB\n")
        #expect(!ok.config.rendered().contains("hunter2"))
        #expect(ok.config.rendered().contains("wifi.psk = (set)"))
        // the `=` forgotten: the line is shown cut, not with the secret
        let noEq = parse("wifi.psk hunter2hunter2\nwifi.backup_psk: hunter3hunter3\n")
        #expect(noEq.errors.map(\.message) == ["expected \"key = value\", got \"wifi.psk …\"",
                                              "expected \"key = value\", got \"wifi.backup_psk …\" (write wifi.backup_psk = …, with = rather than :)"])
        for d in noEq.diagnostics { #expect(!d.description.contains("hunter"), "\(d.description)") }
    }

    @Test func countryIsRequiredAndMustBeReal() {
        let missing = parse("wifi.ssid = Shop\nwifi.psk = 12345678\n")
        #expect(missing.errors.contains { $0.key == "wifi.country" && $0.message.contains("missing") && $0.line == 1 })
        #expect(!missing.config.wifi.enabled)  // what runs: no Wi-Fi
        #expect(missing.config.rendered().contains("wifi.ssid = \n") || missing.config.rendered().contains("wifi.ssid =\n"))
        let world = parse("wifi.ssid = Shop\nwifi.psk = 12345678\nwifi.country = 00\n")
        #expect(world.errors.contains { $0.key == "wifi.country" && $0.message.contains("world") })
        #expect(!world.config.wifi.enabled)
        let uk = parse("wifi.country = UK\n")
        #expect(uk.errors.contains { $0.message.contains("GB") })
        #expect(parse("wifi.country = XX\n").errors.count == 1)
        #expect(parse("wifi.country = DEU\n").errors.count == 1)
        for c in ["GB", "de", "Cn", "US", "TW", "HK"] { #expect(parse("wifi.country = \(c)\n").errors.isEmpty) }
    }

    @Test func aBadPasswordNeverMeansAnOpenNetwork() {
        let r = parse("wifi.ssid = Shop\nwifi.psk = short\nwifi.country = GB\n")
        #expect(r.errors.contains { $0.key == "wifi.psk" && $0.message.contains("8-63") })
        #expect(r.errors.contains { $0.key == "wifi.psk" && $0.message.contains("not joined") })
        #expect(WpaSupplicantConf.render(r.config.wifi) == nil)
        let empty = parse("wifi.ssid = Shop\nwifi.country = GB\n")
        #expect(empty.errors.contains { $0.key == "wifi.psk" })
        #expect(WpaSupplicantConf.render(empty.config.wifi) == nil)
        let open = parse("wifi.ssid = Cafe\nwifi.psk = open\nwifi.country = GB\n")
        #expect(open.errors.isEmpty)
        #expect(WpaSupplicantConf.render(open.config.wifi)!.contains("key_mgmt=NONE"))
    }

    @Test func backupNetwork() {
        let r = parse("wifi.ssid = Shop\nwifi.psk = 12345678\nwifi.country = GB\nwifi.backup_ssid = Phone\nwifi.backup_psk = abcdefgh\nwifi.backup_hidden = on\n")
        #expect(r.errors.isEmpty)
        let text = WpaSupplicantConf.render(r.config.wifi)!
        let blocks = text.split(separator: "network={").dropFirst()
        #expect(blocks.count == 2)
        #expect(blocks.first!.contains("ssid=\"Shop\"") && blocks.first!.contains("priority=2") && !blocks.first!.contains("scan_ssid"))
        #expect(blocks.last!.contains("ssid=\"Phone\"") && blocks.last!.contains("priority=1") && blocks.last!.contains("scan_ssid=1"))
        #expect(blocks.last!.contains("id_str=\"backup\""))
    }
}

@Suite struct WpaSupplicantConfTests {
    func wifi(ssid: String, psk: String, hidden: Bool = false) throws -> WifiConfig {
        var w = WifiConfig()
        w.ssid = try WifiSSID(parsing: ssid)
        w.psk = try WifiPSK(parsing: psk)
        w.hidden = hidden
        w.country = "GB"
        return w
    }

    func value(_ key: String, in text: String) -> String? {
        for line in text.split(separator: "\n") {
            let t = line.drop { $0 == "\t" }
            if t.hasPrefix(key + "=") { return String(t.dropFirst(key.count + 1)) }
        }
        return nil
    }

    @Test func plainASCIIIsQuoted() throws {
        let t = WpaSupplicantConf.render(try wifi(ssid: "Shop WiFi 2.4G", psk: "open sesame!"), group: "crier")!
        #expect(value("ssid", in: t) == "\"Shop WiFi 2.4G\"")
        #expect(value("psk", in: t) == "\"open sesame!\"")
        #expect(t.contains("ctrl_interface=DIR=/run/wpa_supplicant GROUP=crier\n"))
        #expect(t.contains("country=GB\n"))
        #expect(value("key_mgmt", in: t) == "WPA-PSK WPA-PSK-SHA256 SAE")
        #expect(value("ieee80211w", in: t) == "1")
    }

    @Test func quotesBackslashesAndUTF8UseHex() throws {
        for (ssid, hex) in [("Café", "436166c3a9"), ("Bob's \"Bar\"", "426f622773202242617222"), ("a\\b", "615c62"), ("小店", "e5b08fe5ba97")] {
            let t = WpaSupplicantConf.render(try wifi(ssid: ssid, psk: "12345678"))!
            #expect(value("ssid", in: t) == hex, "\(ssid)")
        }
        // spaces at the ends and a # are fine quoted (they are printable ASCII)
        let t = WpaSupplicantConf.render(try wifi(ssid: " #1 shop ", psk: "12345678"))!
        #expect(value("ssid", in: t) == "\" #1 shop \"")
    }

    @Test func passphrasesTheFileCannotQuoteBecomeTheDerivedKey() throws {
        let t = WpaSupplicantConf.render(try wifi(ssid: "IEEE", psk: "pass\"word #1"))!
        #expect(value("psk", in: t) == Hex.encode(WpaKeyDerivation.psk(passphrase: "pass\"word #1", ssid: Array("IEEE".utf8))))
        #expect(value("sae_password", in: t) == Hex.encode(Array("pass\"word #1".utf8)))
        #expect(!t.contains("word #1"))
    }

    @Test func hexKey() throws {
        let hex = String(repeating: "0f", count: 32)
        let t = WpaSupplicantConf.render(try wifi(ssid: "S", psk: hex, hidden: true))!
        #expect(value("psk", in: t) == hex)
        #expect(value("key_mgmt", in: t) == "WPA-PSK WPA-PSK-SHA256")  // SAE needs the passphrase
        #expect(value("scan_ssid", in: t) == "1")
    }

    /// What wpa_supplicant's reader makes of the file: every line `key=value` (tabs before
    /// the keys of a network block), keys from the set crier writes, each once per block, and
    /// the ctrl_interface line exactly DIR=<dir> [GROUP=<group>].
    func structure(_ t: String) -> (ctrl: String?, keys: [String])? {
        let allowed: Set<String> = ["ctrl_interface", "update_config", "country", "p2p_disabled", "id_str", "ssid", "scan_ssid", "priority",
                                    "key_mgmt", "ieee80211w", "psk", "sae_password"]
        var ctrl: String?
        var keys: [String] = []
        for raw in t.split(separator: "\n", omittingEmptySubsequences: false) {
            let line = raw.drop { $0 == "\t" }
            if line.isEmpty || line.hasPrefix("#") || line == "network={" || line == "}" { continue }
            guard let eq = line.firstIndex(of: "="), allowed.contains(String(line[..<eq])) else { return nil }
            let key = String(line[..<eq])
            if key == "ctrl_interface" { ctrl = String(line[line.index(after: eq)...]) }
            keys.append(key)
        }
        return (ctrl, keys)
    }

    /// Issue 31: `wifi.control_dir = /tmp/x GROUP=0` was copied into `ctrl_interface=`, giving
    /// the control socket to root's group. Every value that reaches the file bare is checked:
    /// at the key (an error on its line, the default kept) and again by the renderer.
    @Test(arguments: ["/tmp/x GROUP=0", "/tmp/x#c", "/tmp/\"x\"", "/tmp/a=b", "/tmp/x\tGROUP=0", "/tmp/ä", "/tmp/x;y", "/tmp/x\\y",
                      "/" + String(repeating: "d", count: 80)])
    func aControlDirThatWouldChangeItsLineIsRefused(_ dir: String) throws {
        let r = ConfigParser().parse("wifi.ssid = Shop\nwifi.psk = 12345678\nwifi.country = GB\nwifi.control_dir = \"\(dir)\"\n", file: "crier.conf")
        #expect(r.diagnostics.map(\.line) == [4], "\(dir): \(r.diagnostics)")
        #expect(r.config.wifi.controlDir == "/run/wpa_supplicant")
        let t = try #require(WpaSupplicantConf.render(r.config.wifi, group: "crier"))
        #expect(structure(t)?.ctrl == "DIR=/run/wpa_supplicant GROUP=crier")
        // The renderer is the last gate: a WifiConfig built by hand with the value is refused.
        var w = try wifi(ssid: "Shop", psk: "12345678")
        w.controlDir = dir
        #expect(WpaSupplicantConf.render(w) == nil)
        #expect(WpaSupplicantConf.problems(w, group: nil).first?.hasPrefix("wifi.control_dir: ") == true)
    }

    @Test func aGroupThatWouldChangeTheLineIsRefused() throws {
        let w = try wifi(ssid: "Shop", psk: "12345678")
        for g in ["crier", "netdev", "0", "_wifi", "shop-1"] {
            let t = try #require(WpaSupplicantConf.render(w, group: g), "\(g)")
            #expect(structure(t)?.ctrl == "DIR=/run/wpa_supplicant GROUP=\(g)")
        }
        for g in ["crier GROUP=0", "a\nb", "", "-x", "x#", "a=b", "\"q\"", String(repeating: "g", count: 33)] {
            #expect(WpaSupplicantConf.render(w, group: g) == nil, "\(g)")
            #expect(WpaSupplicantConf.groupProblem(g) != nil)
        }
    }

    /// Seeded: any control_dir and group the checks let through give a file of the same shape
    /// (the same keys, the ctrl_interface line exactly DIR=<dir> GROUP=<group>).
    @Test func seededControlDirsAndGroupsNeverChangeTheFilesShape() throws {
        var rng = WifiRNG(seed: 31)
        let base = try wifi(ssid: "Shop", psk: String(repeating: "0f", count: 32))  // a raw key: no PBKDF2 per case
        let reference = try #require(structure(WpaSupplicantConf.render(base, group: "crier")!))
        let bad = Array(" =#\"'\\\t\n\r;:,+@é".unicodeScalars)
        func pick(_ good: String) -> Unicode.Scalar {
            let g = Array(good.unicodeScalars)
            return rng.next() % 30 == 0 ? bad[Int(rng.next() % UInt64(bad.count))] : g[Int(rng.next() % UInt64(g.count))]
        }
        var accepted = 0
        for _ in 0..<400 {
            let n = Int(rng.next() % 24) + 1
            var dir = "/"
            for _ in 0..<n { dir.unicodeScalars.append(pick("abcXYZ019/._-")) }
            var group = ""
            for _ in 0..<(Int(rng.next() % 6) + 1) { group.unicodeScalars.append(pick("abcXYZ019_-")) }
            var w = base
            w.controlDir = dir
            guard let t = WpaSupplicantConf.render(w, group: group) else { continue }
            accepted += 1
            let s = try #require(structure(t), "\(dir) \(group)")
            #expect(s.keys == reference.keys)
            #expect(s.ctrl == "DIR=\(dir) GROUP=\(group)")
            #expect(!dir.contains(" ") && !group.contains(" "))
        }
        #expect(accepted > 100 && accepted < 400, "\(accepted) of 400 accepted")
    }

    @Test func noWifiNoFile() {
        #expect(WpaSupplicantConf.render(WifiConfig()) == nil)
    }

    /// Seeded: for any printable-ASCII SSID/passphrase pair, every value line reads back (as
    /// wpa_supplicant's reader would: first-to-last quote, or hex) to the exact bytes.
    @Test func seededRoundTrip() throws {
        var rng = WifiRNG(seed: 19)
        // 24 cases: a derivation costs ~0.3 s in a debug build
        for _ in 0..<24 {
            let ssidLen = Int(rng.next() % 32) + 1
            let ssidBytes = (0..<ssidLen).map { _ in UInt8(0x20 + rng.next() % 95) }
            let pskLen = Int(rng.next() % 56) + 8
            let pskBytes = (0..<pskLen).map { _ in UInt8(0x20 + rng.next() % 95) }
            let ssid = String(decoding: ssidBytes, as: UTF8.self), psk = String(decoding: pskBytes, as: UTF8.self)
            guard let w = try? wifi(ssid: ssid, psk: psk) else { continue }
            let t = WpaSupplicantConf.render(w)!
            let sv = value("ssid", in: t)!
            let readSSID = sv.hasPrefix("\"") ? Array(sv.utf8.dropFirst().dropLast()) : Hex.decode(sv)!
            #expect(readSSID == ssidBytes)
            let pv = value("psk", in: t)!
            if pv.hasPrefix("\"") {
                #expect(Array(pv.utf8.dropFirst().dropLast()) == pskBytes)
                #expect(!psk.contains("#") && !psk.contains("\""))
            } else {
                #expect(Hex.decode(pv)! == WpaKeyDerivation.psk(passphrase: psk, ssid: ssidBytes))
                #expect(Hex.decode(value("sae_password", in: t)!)! == pskBytes)
            }
            // no line the reader would cut at a comment: a # only inside a single quoted value
            for line in t.split(separator: "\n") where !line.hasPrefix("#") && line.contains("#") {
                #expect(line.filter { $0 == "\"" }.count == 2, "\(line)")
            }
        }
    }
}

struct WifiRNG {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E3779B97F4A7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58476D1CE4E5B9
        z = (z ^ (z >> 27)) &* 0x94D049BB133111EB
        return z ^ (z >> 31)
    }
}

@Suite struct WpaKeyDerivationTests {
    /// IEEE 802.11-2020 J.4.2 test vectors, and the extremes checked against wpa_passphrase.
    @Test func ieeeVectors() {
        #expect(Hex.encode(WpaKeyDerivation.psk(passphrase: "password", ssid: Array("IEEE".utf8)))
                == "f42c6fc52df0ebef9ebb4b90b38a5f902e83fe1b135a70e23aed762e9710a12e")
        #expect(Hex.encode(WpaKeyDerivation.psk(passphrase: "ThisIsAPassword", ssid: Array("ThisIsASSID".utf8)))
                == "0dc0d6eb90555ed6419756b9a15ec3e3209b63df707dd508d14581f8982721af")
        // the longest passphrase and SSID (value from hostap's wpa_passphrase)
        #expect(Hex.encode(WpaKeyDerivation.psk(passphrase: String(repeating: "a", count: 63),
                                                ssid: Array(String(repeating: "Z", count: 32).utf8)))
                == "2d43d0dabfdd635377172efa1fc4b4b87dbfc4219193909ded9a7cfb89a3097b")
    }

    @Test func sha1() {
        #expect(Hex.encode(SHA1.hash(Array("abc".utf8))) == "a9993e364706816aba3e25717850c26c9cd0d89d")
        #expect(Hex.encode(SHA1.hash([])) == "da39a3ee5e6b4b0d3255bfef95601890afd80709")
        #expect(Hex.encode(SHA1.hash(Array("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq".utf8))) == "84983e441c3bd26ebaae4aa1f95129e5e54670f1")
    }
}

@Suite struct WpaControlParsingTests {
    @Test func events() {
        #expect(WpaEvent.parse("<3>CTRL-EVENT-CONNECTED - Connection to 02:00:00:00:01:00 completed [id=0 id_str=primary]") == .connected(idStr: "primary"))
        #expect(WpaEvent.parse("<3>CTRL-EVENT-CONNECTED - Connection to 02:00:00:00:01:00 completed [id=1 id_str=]") == .connected(idStr: ""))
        #expect(WpaEvent.parse("<3>CTRL-EVENT-SSID-TEMP-DISABLED id=0 ssid=\"Bob's \\\"Bar\\\" caf\\xc3\\xa9\" auth_failures=1 duration=10 reason=WRONG_KEY")
                == .wrongKey(ssid: Array("Bob's \"Bar\" café".utf8)))
        #expect(WpaEvent.parse("<3>CTRL-EVENT-SSID-TEMP-DISABLED id=0 ssid=\"reason=WRONG_KEY\" auth_failures=1 duration=10 reason=CONN_FAILED")
                == .tempDisabled(ssid: Array("reason=WRONG_KEY".utf8), reason: "CONN_FAILED"))
        #expect(WpaEvent.parse("<3>CTRL-EVENT-NETWORK-NOT-FOUND") == .networkNotFound)
        // what wpa_supplicant 2.10 said in the VM for a wrong WPA3-SAE password (8-wifi, SAE)
        let sae = WpaEvent.parse("<3>CTRL-EVENT-AUTH-REJECT 02:00:00:00:01:00 auth_type=3 auth_transaction=2 status_code=1")
        #expect(sae == .authReject(authType: 3, transaction: 2, status: 1))
        #expect(sae?.isSAEConfirmRejected == true)
        #expect(WpaEvent.parse("<3>CTRL-EVENT-AUTH-REJECT 02:00:00:00:01:00 auth_type=3 auth_transaction=1 status_code=77")?.isSAEConfirmRejected == false)
        #expect(WpaEvent.parse("<3>CTRL-EVENT-AUTH-REJECT 02:00:00:00:01:00 auth_type=0 auth_transaction=2 status_code=1")?.isSAEConfirmRejected == false)
        #expect(WpaEvent.parse("<3>CTRL-EVENT-DISCONNECTED bssid=02:00:00:00:01:00 reason=3 locally_generated=1") == .disconnected(reason: 3))
        #expect(WpaEvent.parse("<3>SME: Trying to authenticate with 02:00:00:00:01:00 (SSID='x' freq=2412 MHz)") == .attempt)
        #expect(WpaEvent.parse("<3>CTRL-EVENT-TERMINATING") == .terminating)
        #expect(WpaEvent.parse("<3>CTRL-EVENT-SCAN-RESULTS ") == nil)
        #expect(WpaEvent.parse("") == nil)
        #expect(WpaEvent.parse("<3") == nil)
    }

    @Test func status() {
        let s = WpaStatus.parse("bssid=02:00:00:00:01:00\nfreq=2412\nssid=Caf\\xc3\\xa9 \\\"1\\\"\nid=0\nid_str=backup\nmode=station\npairwise_cipher=CCMP\nkey_mgmt=WPA2-PSK\nwpa_state=COMPLETED\nip_address=192.168.50.10\naddress=02:00:00:00:00:00\n")
        #expect(s.completed)
        #expect(s.ssid == Array("Café \"1\"".utf8))
        #expect(s.idStr == "backup")
        #expect(s.ipAddress == "192.168.50.10")
        #expect(s.frequency == 2412)
        let scanning = WpaStatus.parse("wpa_state=SCANNING\naddress=02:00:00:00:00:00\n")
        #expect(!scanning.completed && !scanning.attempting && scanning.ipAddress == nil)
        #expect(WpaStatus.parse("wpa_state=4WAY_HANDSHAKE\n").attempting)
        #expect(WpaStatus.rssi(fromSignalPoll: "RSSI=-52\nLINKSPEED=54\nNOISE=9999\nFREQUENCY=2412\n") == -52)
        #expect(WpaStatus.rssi(fromSignalPoll: "FAIL\n") == nil)
        #expect(WpaStatus.rssi(fromSignalPoll: "RSSI=9999\n") == nil)
    }

    /// Whatever bytes arrive, parsing neither crashes nor hangs.
    @Test func seededGarbage() {
        var rng = WifiRNG(seed: 7)
        let pieces = ["<3>", "CTRL-EVENT-", "SSID-TEMP-DISABLED", " ssid=\"", "\\", "\\x", "\"", " reason=", "WRONG_KEY", "=", "\n", "é", "["]
        for _ in 0..<2000 {
            var s = ""
            for _ in 0..<Int(rng.next() % 12) { s += pieces[Int(rng.next() % UInt64(pieces.count))] }
            _ = WpaEvent.parse(s)
            _ = WpaStatus.parse(s)
            _ = WpaText.decode(Array(s.utf8))
        }
    }
}

@Suite struct WifiMonitorTests {
    func monitor(_ edit: (inout WifiConfig) -> Void = { _ in }) -> WifiMonitor {
        var c = WifiConfig()
        c.ssid = try? WifiSSID(parsing: "Shop")
        c.psk = .passphrase("12345678")
        c.country = "GB"
        edit(&c)
        return WifiMonitor(config: c, repeatEvery: 60, now: 0)
    }

    func online(_ ip: String? = "10.0.0.5") -> WpaStatus {
        var s = WpaStatus()
        s.wpaState = "COMPLETED"
        s.ssid = Array("Shop".utf8)
        s.idStr = "primary"
        s.ipAddress = ip
        return s
    }

    @Test func connectedIsSaidOnceWithAnAddress() {
        var m = monitor()
        #expect(m.due(now: 0) == nil)
        m.observe(.connected(idStr: "primary"), now: 1)
        #expect(m.due(now: 1) == nil)  // no address yet
        #expect(m.state == .connecting)
        m.observe(status: online(), signal: -40, now: 2)
        #expect(m.due(now: 2) == .wifiConnected)
        #expect(m.state == .online && m.signal == -40 && m.address == "10.0.0.5")
        #expect(m.due(now: 100) == nil)
        #expect(m.nextDeadline(now: 100) == nil)
    }

    @Test func wrongPasswordAtOnceThenAtTheCadence() {
        var m = monitor()
        m.observe(status: WpaStatus.parse("wpa_state=SCANNING\n"), signal: nil, now: 0)
        m.observe(.wrongKey(ssid: Array("Shop".utf8)), now: 5)
        #expect(m.due(now: 5) == .wifiWrongPassword)
        #expect(m.suppressesLinkDown)
        // the supplicant retries: more WRONG_KEY and not-found events change nothing
        m.observe(.networkNotFound, now: 20)
        m.observe(.wrongKey(ssid: nil), now: 30)
        #expect(m.due(now: 64.9) == nil)
        #expect(m.nextDeadline(now: 30) == 65)
        #expect(m.due(now: 65) == .wifiWrongPassword)
        #expect(m.due(now: 66) == nil)
        #expect(m.due(now: 125) == .wifiWrongPassword)
        // fixed (or the backup network joined): connected
        m.observe(.connected(idStr: "backup"), now: 130)
        m.observe(status: online(), signal: -60, now: 131)
        #expect(m.due(now: 131) == .wifiConnected)
        #expect(!m.suppressesLinkDown)
        #expect(m.due(now: 300) == nil)
    }

    @Test func wpa3WrongPasswordIsTheRefusedSAEConfirm() {
        var m = monitor()
        m.observe(status: WpaStatus.parse("wpa_state=SCANNING\n"), signal: nil, now: 0)
        m.observe(.attempt, now: 1)
        m.observe(.authReject(authType: 3, transaction: 1, status: 77), now: 2)  // group not supported: not the password
        #expect(m.due(now: 2) == nil)
        m.observe(.authReject(authType: 3, transaction: 2, status: 1), now: 3)
        #expect(m.due(now: 3) == .wifiWrongPassword)
        m.observe(.tempDisabled(ssid: nil, reason: "CONN_FAILED"), now: 4)
        #expect(m.state == .wrongPassword)
    }

    @Test func notFoundAfterItsGraceAndNotForABlip() {
        var m = monitor()
        m.observe(.networkNotFound, now: 0)
        #expect(m.due(now: 9.9) == nil)
        m.observe(.attempt, now: 9.95)  // it was found after all
        #expect(m.due(now: 10) == nil)
        m.observe(.networkNotFound, now: 20)
        #expect(m.nextDeadline(now: 20) == 30)
        #expect(m.due(now: 30) == .wifiNotFound)
        #expect(m.due(now: 89) == nil)
        #expect(m.due(now: 90) == .wifiNotFound)
        m.observe(status: online(), signal: nil, now: 95)
        #expect(m.due(now: 95) == .wifiConnected)
    }

    @Test func noAddressAfterItsGrace() {
        var m = monitor()
        m.observe(status: online(nil), signal: -50, now: 0)
        #expect(m.due(now: 19) == nil)
        #expect(m.nextDeadline(now: 19) == 20)
        #expect(m.due(now: 20) == .wifiNoAddress)
        m.observe(status: online("10.1.1.1"), signal: -50, now: 25)
        #expect(m.due(now: 25) == .wifiConnected)
    }

    @Test func aDropShorterThanTheGracesSaysNothing() {
        var m = monitor()
        m.observe(status: online(), signal: nil, now: 0)
        #expect(m.due(now: 0) == .wifiConnected)
        m.observe(.disconnected(reason: 4), now: 10)
        m.observe(.networkNotFound, now: 11)
        #expect(m.due(now: 15) == nil)
        m.observe(.connected(idStr: "primary"), now: 16)
        m.observe(status: online(), signal: nil, now: 17)
        #expect(m.due(now: 17) == nil)  // "connected" was the last thing said
    }

    @Test func apGoneAndBack() {
        var m = monitor()
        m.observe(status: online(), signal: nil, now: 0)
        _ = m.due(now: 0)
        m.observe(.disconnected(reason: 4), now: 100)
        m.observe(.networkNotFound, now: 101)
        #expect(m.due(now: 111) == .wifiNotFound)
        m.observe(.connected(idStr: "primary"), now: 150)
        m.observe(status: online(), signal: nil, now: 151)
        #expect(m.due(now: 151) == .wifiConnected)
    }

    @Test func aPromptChosenEarlierIsCheckedAgainBeforeItPlays() {
        var m = monitor()
        m.observe(.networkNotFound, now: 0)
        #expect(m.due(now: 10) == .wifiNotFound)
        #expect(m.stillTrue(.wifiNotFound, linkUp: false, linkDownAfter: 30, now: 10))
        #expect(!m.stillTrue(.linkDown, linkUp: false, linkDownAfter: 30, now: 10))  // replaced
        m.observe(status: online(), signal: nil, now: 12)
        _ = m.update(now: 12)
        #expect(!m.stillTrue(.wifiNotFound, linkUp: false, linkDownAfter: 30, now: 12))
        #expect(m.stillTrue(.wifiConnected, linkUp: false, linkDownAfter: 30, now: 12))
        // Wi-Fi just came back: the link is still reconnecting
        #expect(!m.stillTrue(.linkDown, linkUp: false, linkDownAfter: 30, now: 12))
        #expect(!m.stillTrue(.linkDown, linkUp: false, linkDownAfter: 30, now: 41.9))
        #expect(m.stillTrue(.linkDown, linkUp: false, linkDownAfter: 30, now: 42))
        #expect(!m.stillTrue(.linkDown, linkUp: true, linkDownAfter: 30, now: 100))
        // a flap: connected said, then searching again before it plays
        m.observe(.disconnected(reason: 15), now: 13)
        _ = m.update(now: 13)
        #expect(!m.stillTrue(.wifiConnected, linkUp: false, linkDownAfter: 30, now: 13))
        #expect(m.stillTrue(.linkDown, linkUp: false, linkDownAfter: 30, now: 13))
        #expect(m.stillTrue(.volumeMax, linkUp: false, linkDownAfter: 30, now: 13))
    }

    @Test func promptsOff() {
        var m = monitor { $0.prompts = false }
        m.observe(.wrongKey(ssid: nil), now: 1)
        #expect(m.due(now: 1) == nil)
        #expect(m.state == .wrongPassword)
        #expect(!m.suppressesLinkDown)
        #expect(m.due(now: 1000) == nil)
    }

    @Test func supplicantGone() {
        var m = monitor()
        m.observe(status: online(), signal: nil, now: 0)
        _ = m.due(now: 0)
        m.unreachable(now: 5)
        #expect(m.update(now: 5) == .noSupplicant)
        #expect(m.due(now: 1000) == nil)
        #expect(m.address == nil)
    }

    /// Seeded invariants over random event streams: prompts only in their state, never more
    /// often than the cadence for a problem, "connected" never twice in a row, and a due
    /// deadline is never in the past for long (no busy loop).
    @Test func seededInvariants() {
        for seed in UInt64(1)...40 {
            var rng = WifiRNG(seed: seed)
            var m = monitor()
            var now = 0.0
            var lastSaid: Templates.Name?
            var lastProblemPrompt: (Templates.Name, Double)?
            for _ in 0..<400 {
                now += Double(rng.next() % 4000) / 100
                switch rng.next() % 8 {
                case 0: m.observe(.connected(idStr: "primary"), now: now)
                case 1: m.observe(.disconnected(reason: 3), now: now)
                case 2: m.observe(rng.next() % 2 == 0 ? .wrongKey(ssid: nil) : .authReject(authType: 3, transaction: 2, status: 1), now: now)
                case 3: m.observe(.networkNotFound, now: now)
                case 4: m.observe(.attempt, now: now)
                case 5: m.observe(status: online(rng.next() % 2 == 0 ? nil : "10.0.0.9"), signal: -50, now: now)
                case 6: m.observe(status: WpaStatus.parse("wpa_state=SCANNING\n"), signal: nil, now: now)
                default: m.unreachable(now: now)
                }
                if let p = m.due(now: now) {
                    #expect(WifiMonitor.prompt(for: m.state) == p)
                    if p == .wifiConnected { #expect(lastSaid != .wifiConnected) }
                    if p != .wifiConnected, let (lp, t) = lastProblemPrompt, lp == p, lastSaid == p {
                        #expect(now - t >= 60 - 1e-9 || m.since == now)
                    }
                    if p != .wifiConnected { lastProblemPrompt = (p, now) }
                    lastSaid = p
                }
                if let d = m.nextDeadline(now: now) { #expect(d >= now - 1e-9) }
            }
        }
    }
}
