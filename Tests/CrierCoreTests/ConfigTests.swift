import Testing
@testable import CrierCore

@Suite struct ConfigParserTests {
    let parser = ConfigParser()

    @Test func defaultsWhenEmpty() {
        let r = parser.parse("", file: "crier.conf")
        #expect(r.config == CrierConfig())
        #expect(r.diagnostics.isEmpty)
    }

    @Test func readsValuesCommentsQuotesCRLFAndBOM() {
        let text = "\u{FEFF}# shop box\r\naudio.device = hw:1   # the USB DAC\r\nserver = tcp://10.0.0.5\r\n"
            + "template.zh.new_customer = \"{number}号 #1\"\r\nspeech.lang=en\r\n"
        let r = parser.parse(text, file: "crier.conf")
        #expect(r.diagnostics.isEmpty)
        #expect(r.config.audio.device == "hw:1")
        #expect(r.config.link.server == ServerAddress(host: "10.0.0.5", port: 7700))
        #expect(r.config.templates[.zh, .newCustomer] == "{number}号 #1")
        #expect(r.config.speech.lang == .en)
        #expect(r.setKeys == ["audio.device", "server", "template.zh.new_customer", "speech.lang"])
    }

    @Test func badValueNamesFileLineKeyAndKeepsDefault() {
        let r = parser.parse("\n\n\n\n\n\n\n\n\n\n\naudio.rate = fast\n", file: "crier.conf")
        #expect(r.errors.map(\.description) == [
            "crier.conf:12: audio.rate: expected an integer 8000...192000, got \"fast\"; using the default (48000)",
        ])
        #expect(r.config.audio.rate == 48000)
    }

    @Test func unknownKeyIsAWarningWithASuggestion() {
        let r = parser.parse("audio.devcie = hw:0\n", file: "c.conf")
        #expect(r.errors.isEmpty)
        #expect(r.diagnostics.map(\.description) == ["c.conf:1: audio.devcie: unknown key, ignored (did you mean audio.device?)"])
    }

    @Test func lineWithoutEqualsAndDuplicates() {
        let r = parser.parse("just words\nspeech.lang = zh\nspeech.lang = en\n", file: "c.conf")
        #expect(r.diagnostics.map(\.description) == [
            "c.conf:1: expected \"key = value\", got \"just words\"",
            "c.conf:3: speech.lang: set again (first set on line 2); the last value wins",
        ])
        #expect(r.config.speech.lang == .en)
    }

    @Test(arguments: [
        ("server = http://x", "unsupported scheme"), ("server = tcp://:99", "expected a host"),
        ("server = tcp://h:0", "expected a port"), ("status.on_start = maybe", "expected on or off"),
        ("template.zh.payment = 收{number}", "unknown placeholder {number}"),
        ("speech.zh.voice = ", "expected a voice name"), ("link.heartbeat = nan", "expected a number"),
        ("server = tcp://::1]:7701", "in brackets"), ("server = tcp://[::1]]:7701", "expected :PORT after ]"),
        ("server = tcp://[]:7701", "IPv6 address inside"), ("server = tcp://shop pc:7700", "expected a host name"),
        ("server = tcp://订单:7700", "expected a host name"),
    ])
    func rejects(_ line: String, _ fragment: String) {
        let r = parser.parse(line, file: "c.conf")
        #expect(r.errors.count == 1)
        #expect(r.errors.first?.message.contains(fragment) == true, "\(r.errors)")
    }

    @Test func ipv6Server() throws {
        let r = parser.parse("server = tcp://[::1]:7701", file: "c.conf")
        #expect(r.config.link.server == ServerAddress(host: "::1", port: 7701))
        #expect(r.config.link.server?.description == "tcp://[::1]:7701")
    }

    @Test func renderedConfigParsesBackToItself() {
        var c = CrierConfig()
        c.audio.device = "plughw:CARD=Headphones"
        c.link.server = ServerAddress(host: "orders.local", port: 9000)
        c.templates.table[.en]![.payment] = "Paid #{amount}"
        let r = parser.parse(c.rendered(), file: "x")
        #expect(r.diagnostics.isEmpty)
        #expect(r.config == c)
    }

    @Test func exampleDocumentsEveryKeyAndParsesClean() {
        let ex = CrierConfig.example()
        for k in CrierConfig.schema { #expect(ex.contains("#\(k.name) = "), "\(k.name) missing from example") }
        // Uncommenting every line gives back the defaults.
        let uncommented = ex.split(separator: "\n").filter { $0.hasPrefix("#") && $0.contains(" = ") && !$0.hasPrefix("# ") }
            .map { String($0.dropFirst()) }.joined(separator: "\n")
        let r = parser.parse(uncommented, file: "ex")
        #expect(r.errors.isEmpty, "\(r.errors)")
        #expect(r.config == CrierConfig())
    }

    @Test func tokenIsNeverPrinted() {
        var c = CrierConfig()
        c.link.token = "s3cret"
        #expect(!c.rendered().contains("s3cret"))
    }
}
