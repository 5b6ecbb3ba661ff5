import Testing
@testable import CrierCore

private func net(_ ssid: String = "Shop", _ psk: String = "password1", country: String? = nil, configured: String? = "GB") -> SetupNetwork {
    guard case .success(let n) = SetupNetwork.validate(ssid: ssid, psk: psk, country: country, configuredCountry: configured) else {
        Issue.record("\(ssid) refused")
        fatalError()
    }
    return n
}

private func problem(_ ssid: String, _ psk: String, country: String? = nil, configured: String? = "GB") -> SetupNetwork.Problem? {
    if case .failure(let p) = SetupNetwork.validate(ssid: ssid, psk: psk, country: country, configuredCountry: configured) { return p }
    return nil
}

@Suite("Setup hotspot: submitted networks")
struct SetupNetworkTests {
    @Test("SSID 1-32 bytes, no control characters; psk 8-63 printable, 64 hex or empty (open)")
    func validation() {
        #expect(problem("", "password1")?.code == .ssidEmpty)
        #expect(problem(String(repeating: "a", count: 33), "password1")?.code == .ssidTooLong)
        #expect(problem(String(repeating: "店", count: 11), "password1")?.code == .ssidTooLong)  // 33 bytes
        #expect(problem(String(repeating: "店", count: 10), "password1") == nil)  // 30 bytes
        #expect(problem("Shop\nnetwork={", "password1")?.code == .ssidUnsavable)
        #expect(problem("Shop\t", "password1")?.code == .ssidUnsavable)
        #expect(problem("Shop", "short")?.code == .pskLength)
        #expect(problem("Shop", "open")?.code == .pskLength)  // the word is not a way to say "no password" here
        #expect(problem("Shop", String(repeating: "x", count: 64))?.code == .pskLength)
        #expect(problem("Shop", "pass\nword1")?.code == .pskCharacter)
        #expect(problem("Shop", "pässword1")?.code == .pskCharacter)
        #expect(net("Shop", "").psk == .open)
        #expect(net("Shop", String(repeating: "ab", count: 32)).psk == .key(Array(repeating: 0xAB, count: 32)))
        #expect(problem("Shop", "password1", configured: nil)?.code == .countryNeeded)
        #expect(problem("Shop", "password1", country: "UK", configured: nil)?.code == .country)
        #expect(net("Shop", "password1", country: "de", configured: nil).country == "DE")
    }

    @Test("no message ever holds the password")
    func noSecretInMessages() {
        for psk in ["pass\nword-secret", "pässword-secret", "secret"] {
            let p = problem("Shop", psk)
            #expect(p != nil)
            #expect(!(p?.message.contains("secret") ?? true))
        }
    }

    @Test("supplicant commands carry page input as hex only: quotes, newlines and network={ are digits")
    func commandsAreHex() {
        let hostile = ["x\" network={ ssid=\"evil\"", "\"; DROP", "a b\\c#d", "network={", "Café \"Shop\" 店"]
        for s in hostile {
            for psk in ["pa\"ss #word\\x", "network={ssid}", "", String(repeating: "0f", count: 32)] {
                let n = net(s, psk)
                let cmds = n.supplicantCommands(id: 7)
                #expect(cmds.last == "SELECT_NETWORK 7")
                for c in cmds {
                    // one line, and past "SET_NETWORK 7 name " only hex digits (or the fixed words)
                    #expect(!c.contains("\n") && !c.contains("\r"))
                    let parts = c.split(separator: " ", maxSplits: 3).map(String.init)
                    guard parts[0] == "SET_NETWORK" else { continue }
                    let v = parts[3]
                    switch parts[2] {
                    case "ssid", "psk", "sae_password": #expect(v.allSatisfy { $0.isHexDigit }, "\(c)")
                    case "key_mgmt": #expect(["NONE", "WPA-PSK WPA-PSK-SHA256", "WPA-PSK WPA-PSK-SHA256 SAE"].contains(v))
                    case "ieee80211w", "scan_ssid": #expect(v == "1")
                    case "id_str": #expect(v == "\"setup\"")
                    default: Issue.record("unexpected \(c)")
                    }
                }
                #expect(cmds.contains("SET_NETWORK 7 ssid \(Hex.encode(Array(s.utf8)))"))
            }
        }
        // the PSK is the passphrase's PBKDF2 key (IEEE 802.11 J.4 vector), the SAE password its bytes
        let j4 = net("IEEE", "password").supplicantCommands(id: 0)
        #expect(j4.contains("SET_NETWORK 0 psk f42c6fc52df0ebef9ebb4b90b38a5f902e83fe1b135a70e23aed762e9710a12e"))
        #expect(j4.contains("SET_NETWORK 0 sae_password \(Hex.encode(Array("password".utf8)))"))
        #expect(net("Shop", "").supplicantCommands(id: 1).contains("SET_NETWORK 1 key_mgmt NONE"))
    }

    @Test("crier.conf lines read back exactly; the edit keeps every other line")
    func confLines() {
        let n = net("  Café \"Shop\" #1 ", "pa'ss #word")
        for (key, line) in n.confLines {
            let v = ConfigParser.value(ofLine: Substring(line))
            switch key {
            case "wifi.ssid": #expect(v == "  Café \"Shop\" #1 ")
            case "wifi.psk": #expect(v == "pa'ss #word")
            case "wifi.hidden": #expect(v == "off")
            default: Issue.record("unexpected \(key)")
            }
        }
        let old = "# my box\r\ndevice.id = counter-1\r\nwifi.country = GB\r\nwifi.ssid = Old\r\n  wifi.psk = oldpassword # typo fixed\r\nwifi.ssid = Older\r\n#wifi.ssid = commented\r\n"
        let edited = n.edited(conf: old)
        #expect(edited.hasPrefix("# my box\r\ndevice.id = counter-1\r\n"))
        #expect(edited.contains("#wifi.ssid = commented\r\n"))
        #expect(!edited.contains("Old") && !edited.contains("oldpassword"), "\(edited)")
        // the file, parsed, gives the new network
        let parsed = ConfigParser().parse(edited, file: "crier.conf")
        #expect(parsed.config.wifi.ssid?.text == "  Café \"Shop\" #1 ")
        #expect(parsed.config.wifi.psk == .passphrase("pa'ss #word"))
    }
}

@Suite("Setup hotspot: scan list, name, try outcome, generated files")
struct SetupPiecesTests {
    @Test("scan results: one entry per SSID (its strongest), hidden dropped, strongest first")
    func scanList() {
        let text = """
            bssid / frequency / signal level / flags / ssid
            02:00:00:00:01:00\t2437\t-70\t[WPA2-PSK-CCMP][ESS]\tShop
            02:00:00:00:02:00\t2412\t-40\t[WPA2-PSK-CCMP][ESS]\tShop
            02:00:00:00:03:00\t2462\t-55\t[ESS]\tFree \\"Cafe\\"
            02:00:00:00:04:00\t2462\t-30\t[WPA2-PSK-CCMP][ESS]\t
            02:00:00:00:05:00\t2462\t-31\t[WPA2-PSK-CCMP][ESS]\t\\x00\\x00\\x00
            02:00:00:00:06:00\t5180\t-60\t[WPA2-EAP-CCMP][ESS]\tCorp
            02:00:00:00:07:00\t2412\t-80\t[SAE-CCMP][ESS]\t\\xe5\\xba\\x97
            garbage line
            02:00:00:00:08:00\tx\t-20\t[ESS]\tBad
            """
        let l = ScannedNetwork.list(fromScanResults: text)
        #expect(l.map(\.text) == ["Shop", "Free \"Cafe\"", "Corp", "店"])
        #expect(l.map(\.signal) == [-40, -55, -60, -80])
        #expect(l.map(\.security) == [.wpa, .open, .enterprise, .wpa])
        #expect(l.map(\.joinable) == [true, true, false, true])
        // seeded garbage never traps and never lists an empty name
        var rng = SplitMix(state: 34)
        for _ in 0..<300 {
            let bytes = (0..<Int.random(in: 0...200, using: &rng)).map { _ in UInt8.random(in: 0...255, using: &rng) }
            for n in ScannedNetwork.list(fromScanResults: String(decoding: bytes, as: UTF8.self) + "\n" + text) {
                #expect(!n.ssid.isEmpty && n.ssid.count <= 32)
            }
        }
    }

    @Test("AP name: Crier- and 4 digits from device id and MAC, stable, differs between boxes")
    func name() {
        let a = HotspotName(deviceID: "crier", mac: "b8:27:eb:01:02:03")
        #expect(a == HotspotName(deviceID: "crier", mac: "B8:27:EB:01:02:03"))
        #expect(a.ssid.count == 10 && a.ssid.hasPrefix("Crier-") && a.code.allSatisfy(\.isNumber))
        #expect(a != HotspotName(deviceID: "crier", mac: "b8:27:eb:01:02:04"))
        #expect(HotspotName(deviceID: "crier", mac: nil).code == "4325")  // FNV-1a("crier/") % 10000: documented
        #expect(HotspotName(deviceID: "x", mac: "02:00:00:00:00:00").spokenCode.split(separator: " ").count == 4)
        // spread: 2000 MACs give many distinct codes
        let codes = Set((0..<2000).map { HotspotName(deviceID: "crier", mac: "b8:27:eb:00:\(String($0 / 256, radix: 16)):\(String($0 % 256, radix: 16))").code })
        #expect(codes.count > 1700)
    }

    @Test("a try: connected, wrong key, SAE confirm refused, not found after 3 scans or at the deadline")
    func tryOutcome() {
        var t = SetupTry(now: 0, timeout: 30)
        #expect(t.observe(.attempt) == nil)
        #expect(t.observe(.connected(idStr: "setup")) == .connected)
        t = SetupTry(now: 0, timeout: 30)
        #expect(t.observe(.wrongKey(ssid: nil)) == .wrongPassword)
        t = SetupTry(now: 0, timeout: 30)
        #expect(t.observe(.authReject(authType: 3, transaction: 2, status: 1)) == .wrongPassword)
        t = SetupTry(now: 0, timeout: 30)
        #expect(t.observe(.authReject(authType: 0, transaction: 2, status: 1)) == nil)
        #expect(t.observe(.networkNotFound) == nil)
        #expect(t.observe(.networkNotFound) == nil)
        #expect(t.observe(.networkNotFound) == .notFound)
        #expect(t.observe(.connected(idStr: nil)) == .notFound)  // decided once
        t = SetupTry(now: 0, timeout: 30)
        #expect(t.tick(now: 29.9) == nil)
        #expect(t.tick(now: 30) == .notFound)
    }

    @Test("hostapd and dnsmasq files: open AP named Crier-NNNN; every probe name and any name answered with the box")
    func generated() {
        let h = HotspotConf.hostapd(ssid: "Crier-0042", interface: "wlan0", country: "GB", channel: 6, dir: "/run/crier-setup-ap")
        let hl = h.split(separator: "\n").map(String.init)
        #expect(hl.contains("ssid=Crier-0042") && hl.contains("interface=wlan0") && hl.contains("channel=6") && hl.contains("country_code=GB"))
        #expect(!h.contains("wpa="))  // open: the pairing code gates every change (docs/security.md)
        #expect(!HotspotConf.hostapd(ssid: "Crier-0042", interface: "wlan0", country: nil, channel: 1, dir: "/x").contains("country_code"))
        let d = HotspotConf.dnsmasq(interface: "wlan0", dir: "/run/crier-setup-ap")
        let dl = d.split(separator: "\n").map(String.init)
        #expect(dl.contains("address=/#/10.42.0.1"))
        for n in ["connectivitycheck.gstatic.com", "captive.apple.com", "www.msftconnecttest.com"] { #expect(dl.contains("address=/\(n)/10.42.0.1")) }
        #expect(dl.contains("no-resolv") && dl.contains("dhcp-range=10.42.0.10,10.42.0.99,255.255.255.0,10m"))
        #expect(dl.contains("dhcp-option=114,http://10.42.0.1/"))
        // root, keeping its group: otherwise dnsmasq calls setgroups()/setgid("dip"), which
        // crier-setup-ap.service's SystemCallFilter= (~@privileged) kills with SIGSYS
        #expect(dl.contains("user=root") && dl.contains("group="))
        let s = HotspotConf.supplicant(controlDir: "/run/wpa_supplicant", group: "crier", country: "GB")
        #expect(s.contains("ctrl_interface=DIR=/run/wpa_supplicant GROUP=crier\n") && !s.contains("network={"))
    }

    @Test("setup.* keys: defaults, ranges, the gesture's hold")
    func keys() {
        let c = ConfigParser().parse("setup.after_minutes = 0\nsetup.hold_seconds = 8\nsetup.channel = 11\n", file: "f")
        #expect(c.diagnostics.isEmpty)
        #expect(c.config.setup.afterMinutes == 0 && c.config.buttons.setupHoldSeconds == 8 && c.config.setup.channel == 11)
        for bad in ["setup.hold_seconds = 1", "setup.channel = 14", "setup.close_after_minutes = 0", "setup.request_file = /run/x y"] {
            #expect(!ConfigParser().parse(bad, file: "f").diagnostics.isEmpty, "\(bad)")
        }
        #expect(CrierConfig().setup.afterMinutes == 3 && CrierConfig().setup.closeAfterMinutes == 15 && CrierConfig().buttons.setupHoldSeconds == 5)
    }
}

@Suite("Setup hotspot: when it opens, what it says, when it closes")
struct SetupModeTests {
    let name = HotspotName(deviceID: "crier", mac: "02:00:00:00:00:01")

    func mode(_ edit: (inout SetupConfig) -> Void = { _ in }) -> SetupMode {
        var c = SetupConfig()
        edit(&c)
        return SetupMode(config: c, name: name, now: 100)
    }

    @Test("opens by itself once, after_minutes after start without a working network")
    func autoOpen() {
        var m = mode()
        #expect(m.nextDeadline == Double(100 + 180))
        #expect(m.tick(now: 279.9).isEmpty)
        #expect(m.tick(now: 280) == [.station, .scan])
        #expect(m.openedBy == .noNetwork && m.phase == .scanning)
        #expect(m.scanned([], now: 285) == [.startAP, .say(.setupHotspot)])
        #expect(m.close(.idle) == [.stop])
        // not again this start
        #expect(m.nextDeadline == nil)
        #expect(m.tick(now: 10_000).isEmpty)
    }

    @Test("a network that worked once since start keeps the hotspot shut (the box rejoins instead)")
    func workedOnce() {
        var m = mode()
        _ = m.network(working: true, now: 150)
        _ = m.network(working: false, now: 160)
        #expect(m.tick(now: 10_000).isEmpty && m.nextDeadline == nil)
        // the gesture still opens it
        #expect(m.open(.gesture, now: 10_001) == [.station, .scan])
    }

    @Test("after_minutes = 0 and hotspot = off")
    func off() {
        var m = mode { $0.afterMinutes = 0 }
        #expect(m.nextDeadline == nil && m.tick(now: 1e6).isEmpty)
        var o = mode { $0.hotspot = false }
        #expect(o.open(.gesture, now: 200).isEmpty && o.tick(now: 1e6).isEmpty)
    }

    @Test("says the prompt at once and every repeat seconds; closes after close_after_minutes unused")
    func promptsAndIdle() {
        var m = mode()
        _ = m.open(.gesture, now: 200)
        _ = m.scanned([], now: 203)
        var said: [Double] = [203]
        var t = 203.0
        var closed: Double?
        while t < 2000, closed == nil {
            guard let d = m.nextDeadline else { break }
            t = d
            let out = m.tick(now: t)
            if out.contains(.say(.setupHotspot)) { said.append(t) }
            if out == [.stop] { closed = t }
        }
        #expect(closed == Double(200 + 15 * 60))
        #expect(said.count == 15)  // 203, 263, ..., 1043
        #expect(zip(said, said.dropFirst()).allSatisfy { $1 - $0 == 60 })
        // use from the page pushes the close back
        var u = mode()
        _ = u.open(.page, now: 0)
        _ = u.scanned([], now: 1)
        u.used(now: 800)
        let at900 = u.tick(now: 900)
        #expect(at900.isEmpty || at900 == [.say(.setupHotspot)])
        #expect(u.phase == .open)
        #expect(u.tick(now: 1700) == [.stop])
    }

    @Test("a try: station, then the outcome said; connected saves and closes, otherwise the AP again")
    func tries() {
        var m = mode()
        _ = m.open(.gesture, now: 0)
        _ = m.scanned([], now: 2)
        let n = net()
        #expect(m.submit(n, now: 10) == [.station, .tryNetwork(n)])
        #expect(m.nextDeadline == nil)  // no prompt during a try
        #expect(m.submit(n, now: 11).isEmpty)  // one try at a time
        #expect(m.tried(.wrongPassword, now: 20) == [.say(.wifiWrongPassword), .startAP])
        #expect(m.phase == .open && m.lastOutcome?.outcome == .wrongPassword)
        _ = m.submit(n, now: 30)
        #expect(m.tried(.notFound, now: 60) == [.say(.wifiNotFound), .startAP])
        _ = m.submit(n, now: 70)
        // the network "working" during a try is the try itself: no close from that
        #expect(m.network(working: true, now: 75).isEmpty)
        #expect(m.tried(.connected, now: 80) == [.save(n), .stop])  // "Wi-Fi connected": the monitor's, with the address
        #expect(m.phase == .closed && m.closedBy == .joined)
    }

    @Test("the network coming back by itself closes an open hotspot; one still up from before does not")
    func networkBack() {
        var m = mode()
        _ = m.open(.gesture, now: 0)
        _ = m.scanned([], now: 2)
        #expect(m.network(working: false, now: 5).isEmpty)
        #expect(m.network(working: true, now: 6) == [.stop])
        #expect(m.closedBy == .network)
        // the gesture on a box that works (to change its network): the link is still up for a
        // while after the station stopped; that is not the network coming back
        var w = mode()
        _ = w.network(working: true, now: 1)
        #expect(w.open(.gesture, now: 10) == [.station, .scan])
        #expect(w.network(working: true, now: 11).isEmpty)
        _ = w.scanned([], now: 12)
        #expect(w.network(working: true, now: 13).isEmpty && w.phase == .open)
        #expect(w.network(working: false, now: 40).isEmpty)
        #expect(w.network(working: true, now: 50) == [.stop])
    }

    @Test("seeded event streams: never two tries at once, nothing said while closed, always closes")
    func invariants() {
        for seed in 0..<200 {
            var rng = SplitMix(state: UInt64(seed))
            var m = mode { $0.afterMinutes = Double(Int.random(in: 0...3, using: &rng)) }
            var t = 100.0
            var pendingScan = false, pendingTry = false
            for _ in 0..<80 {
                t += Double.random(in: 0...120, using: &rng)
                var out: [SetupEffect] = []
                switch Int.random(in: 0..<8, using: &rng) {
                case 0: out = m.open(.gesture, now: t)
                case 1: out = m.network(working: Bool.random(using: &rng), now: t)
                case 2: if pendingScan { pendingScan = false; out = m.scanned([], now: t) }
                case 3: if pendingTry { pendingTry = false; out = m.tried([.connected, .wrongPassword, .notFound, .failed].randomElement(using: &rng)!, now: t) }
                case 4: out = m.submit(net(), now: t)
                case 5: out = m.close(.page)
                case 6: out = m.rescan(now: t)
                default: out = m.tick(now: t)
                }
                let wasPendingTry = pendingTry
                for e in out {
                    if e == .scan { pendingScan = true }
                    if case .tryNetwork = e { #expect(!wasPendingTry, "seed \(seed)"); pendingTry = true }
                    if case .say(let p) = e, p == .setupHotspot { #expect(m.phase == .open, "seed \(seed)") }
                }
                if m.phase == .closed { pendingScan = false; pendingTry = false }
                if m.phase == .open { #expect(m.nextDeadline != nil && m.nextDeadline! <= m.lastUsed + 15 * 60, "seed \(seed)") }
            }
        }
    }
}
