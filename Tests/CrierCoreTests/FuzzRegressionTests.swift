import Testing
@testable import CrierCore

/// Inputs found by the libFuzzer targets (scripts/fuzz.sh, docs/security.md), kept so the bugs
/// they found stay fixed. Each test states the invariant its fuzz target checks.
@Suite("Fuzz regressions")
struct FuzzRegressionTests {
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
}
