import Testing
@testable import CrierCore

/// Inputs found by the libFuzzer targets (scripts/fuzz.sh, docs/security.md), kept so the bugs
/// they found stay fixed. Each test states the invariant its fuzz target checks.
@Suite("Fuzz regressions")
struct FuzzRegressionTests {
    /// What the config target reads back of a printed config (Tests/fuzz/targets/config.swift
    /// does the same): secrets print as (set); a Wi-Fi password stands in for itself (a network
    /// named without one is an error), the other secrets are left out. Callers restore them all.
    static func readBack(_ rendered: String) -> String {
        rendered.split(separator: "\n").compactMap { line -> Substring? in
            guard line.hasSuffix(" = (set)") else { return line }
            return line.hasPrefix("wifi.psk ") || line.hasPrefix("wifi.backup_psk ") ? Substring(line.dropLast(5) + "fuzz-password") : nil
        }.joined(separator: "\n")
    }

    @Test("config: a printed Wi-Fi password, (set), reads back (CI fuzz find of the harness, 2026-12-05: a network with a password printed without one was an error)")
    func configWifiPasswordReadBack() {
        let text = "wifi.country = GB\nwifi.ssid = Shop\nwifi.psk = ope0.0.19999\nwifi.backup_ssid = Phone\nwifi.backup_psk = 12345678\nserver.token = t0k3n\n"
        let r = ConfigParser().parse(text, file: "c.conf")
        #expect(r.diagnostics.isEmpty, "\(r.diagnostics)")
        let back = ConfigParser().parse(Self.readBack(r.config.rendered()), file: "printed.conf")
        #expect(back.diagnostics.isEmpty, "\(back.diagnostics)")
        var again = back.config
        again.link.token = r.config.link.token
        again.wifi.psk = r.config.wifi.psk
        again.wifi.backupPSK = r.config.wifi.backupPSK
        #expect(again == r.config)
    }

    /// config target: the rendered effective config parses back to the same values.
    static func configRoundTrips(_ bytes: [UInt8]) -> (Bool, String) {
        let text = String(decoding: bytes, as: UTF8.self)
        let parser = ConfigParser()
        let r = parser.parse(text, file: "fuzz.conf")
        let rendered = r.config.rendered()
        var back = parser.parse(rendered, file: "rendered.conf").config
        back.link.token = r.config.link.token
        back.link.key = r.config.link.key
        back.link.mqtt.password = r.config.link.mqtt.password
        var diff = ""
        for k in CrierConfig.schema where k.value(in: back) != k.value(in: r.config) {
            diff += "\(k.name): \(k.value(in: r.config).debugDescription) → \(k.value(in: back).debugDescription)\n"
        }
        return (back == r.config, diff)
    }

    @Test("config: a template with control characters and a stray quote survives render → parse")
    func configControlCharacters() {
        let input = Base64.decode("77u/IyBzaG9wIGJveA0KYXVkaW8uZGV2aWNlID0gaHc6MiAgICMAIHRoZSBVU0IgREFDDQpzZXJ2ZXIgPSB0Y3A6Ly8xMC4wLjAuNQ0KdGVtcGxhdGUuemgubmV3X2N1c3RvbWVyID0gIuaWsOUBAAAAAAAATq6i5oi35p2l5LqG77yMe251bWJlcn3lj7cgIyBoYXNoIsUKc3BlZWNoLmxhbmcgPSBlbg0K")!
        let (ok, diff) = Self.configRoundTrips(input)
        #expect(ok, "\(diff)")
    }

    @Test("config: values that would change a generated file's line are refused (corpus regress-generated-file-values, issue 31)")
    func configGeneratedFileValues() throws {
        // `open`: a password renders as (set), which the round trip cannot read back.
        let text = "wifi.ssid = Shop\nwifi.psk = open\nwifi.country = GB\nwifi.control_dir = \"/tmp/x GROUP=0\"\n"
            + "wifi.control_dir = /tmp/x#y\nwifi.interface = wlan0 x\nserver = mqtt://127.0.0.1\ndevice.id = shop/1\n"
        let (ok, diff) = Self.configRoundTrips(Array(text.utf8))
        #expect(ok, "\(diff)")
        let r = ConfigParser().parse(text, file: "c.conf")
        #expect(r.errors.map(\.line) == [5, 6, 8], "\(r.errors)")
        #expect(r.diagnostics.contains { $0.line == 4 && $0.message.contains("a space") })
        let wpa = try #require(WpaSupplicantConf.render(r.config.wifi, group: "crier"))
        #expect(wpa.split(separator: "\n").filter { $0.hasPrefix("ctrl_interface=") } == ["ctrl_interface=DIR=/run/wpa_supplicant GROUP=crier"])
    }

    @Test("config: an IPv6 server without brackets is refused, not half-read (CI fuzz find, 2026-11-30)")
    func configUnbracketedIPv6() {
        let input = Base64.decode("YXVvbnNlbmRpby5yYXRlID0gZmFzdApub25zZW5zZQphdWRpby5ydGUgPSAxCnNlcnZlciA9IGh0dHA6Ly94CnNlcnZlciA9IHRjcDovLzo6MV06NzcwMQpzcGVlY2gubWF4X2NoYXJzID0gOTk5OTkK")!
        let (ok, diff) = Self.configRoundTrips(input)
        #expect(ok, "\(diff)")
        let r = ConfigParser().parse(String(decoding: input, as: UTF8.self), file: "c.conf")
        #expect(r.errors.contains { $0.line == 5 && $0.message.contains("in brackets") }, "\(r.errors)")
    }

    @Test("config: long unknown keys do not make the did-you-mean search quadratic (12 s under ASan before the fix)")
    func configLongUnknownKeys() {
        let text = String(repeating: String(repeating: "a", count: 2000) + " = 1\n", count: 4) + "audio.rte = 1\n"
        let clock = ContinuousClock()
        var r: ConfigParser.Result?
        let took = clock.measure { r = ConfigParser().parse(text, file: "c.conf") }
        #expect(r?.diagnostics.count == 5)
        #expect(r?.diagnostics.last?.message == "unknown key, ignored (did you mean audio.rate?)")
        #expect(took < .seconds(1), "\(took)")
    }

    @Test("speech: the text that made espeak-ng 1.51 free its translator in use never reaches the Mandarin voice (CI fuzz find, 2026-12-05: heap-use-after-free in espeak_Synth with \"Ϩϛ\")")
    func speechEspeakTranslatorUseAfterFree() {
        let announcer = Announcer(templates: Templates(), maxChars: 500)
        let r = announcer.announce(.text("Ϩϛ"), lang: .zh)
        #expect(r.utterance.text == "" && !r.speakable && r.leftOut == 2)
        let order = Order(id: "o-1", kind: .newCustomer(number: 42), text: "Ϩϛ ϐϗ")
        #expect(announcer.nothingToSay(order, lang: .zh) == nil)  // its template is said instead
        #expect(!announcer.announce(order, lang: .zh).utterance.text.unicodeScalars.contains { TextSanitizer.leftOut($0, lang: .zh) })
        let textOrder = Order(id: "o-2", kind: .text("Ϩϛ"))
        #expect(announcer.nothingToSay(textOrder, lang: .zh)?.reason == Ack.Reason.nothingToSay)
        #expect(announcer.nothingToSay(textOrder, lang: .en) == nil)
    }
}
