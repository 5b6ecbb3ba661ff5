import Testing
@testable import CrierCore

/// crier.conf as a hurried person, Notepad, TextEdit or a chat paste leaves it: every problem is
/// a diagnostic naming its line, and the effective configuration is what the box will use.
@Suite struct ConfigStrictnessTests {
    let parser = ConfigParser()

    func parse(_ s: String) -> ConfigParser.Result { parser.parse(s, file: "crier.conf") }

    @Test func aDuplicateWhoseLastValueIsInvalidGivesTheDefaultNotTheFirstValue() {
        let r = parse("speech.lang = en\nspeech.lang = klingon\n")
        #expect(r.config.speech.lang == .zh)
        #expect(r.errors.map(\.line) == [2])
        #expect(r.errors.first?.message.contains("using the default (zh)") == true)
        #expect(r.diagnostics.contains { $0.severity == .warning && $0.line == 2 && $0.message.contains("first set on line 1") })
    }

    @Test func anInvalidEarlierValueOverriddenLaterIsOnlyAWarning() {
        let r = parse("audio.rate = fast\naudio.rate = 44100\n")
        #expect(r.config.audio.rate == 44100)
        #expect(r.errors.isEmpty)
        #expect(r.diagnostics.contains { $0.line == 1 && $0.message.contains("line 2 sets it again") })
    }

    @Test func valuesThatDoNotFitTogetherAreErrorsAndNeverSilentlyClamped() {
        let v = parse("# box\nvolume.default = 40\n")
        #expect(v.errors.map(\.description) == ["crier.conf:2: volume.default: 40 is above volume.steps = 10 (the loudest level); using 7"])
        #expect(v.config.buttons.volumeDefault == 7)
        let b = parse("audio.buffer_ms = 10\n")
        #expect(b.errors.map(\.line) == [1])
        #expect(b.errors.first?.message.contains("less than two periods") == true)
        #expect(b.config.audio.bufferMs == 80)
        // Only the other key set: its default no longer fits; a warning on the line that was set.
        let s = parse("volume.steps = 5\n")
        #expect(s.errors.isEmpty)
        #expect(s.diagnostics.map(\.line) == [1])
        #expect(s.config.buttons.volumeDefault == 5 && s.config.buttons.alertFloor == 4)
        let p = parse("audio.period_ms = 60\n")
        #expect(p.config.audio.bufferMs == 120)
        let f = parse("volume.steps = 3\nvolume.alert_floor = 4\n")
        #expect(f.errors.map(\.line) == [2])
        #expect(f.config.buttons.alertFloor == 3)
        let k = parse("supervisor.backoff_max = 0.05\nsupervisor.backoff_initial = 1\n")
        #expect(k.errors.map(\.line) == [2])
        #expect(k.config.supervision.policy.initialBackoff == 0.05)
    }

    @Test func aTemplateThatLostItsPlaceholderIsAWarningNamingTheComment() {
        // The # after a space starts a comment: the template is "Order", no number.
        let r = parse("template.en.new_customer = Order #{number} is ready\ntemplate.zh.payment = 到账\n")
        #expect(r.config.templates[.en, .newCustomer] == "Order")
        #expect(r.errors.isEmpty)
        let w = r.diagnostics.filter { $0.severity == .warning }
        #expect(w.map(\.line) == [1, 2], "\(r.diagnostics)")
        #expect(w.first?.message.contains("has no {number}") == true && w.first?.message.contains("quotes") == true)
        #expect(w.last?.message.contains("has no {amount}") == true)
        let quoted = parse("template.en.new_customer = \"Order #{number} is ready\"\n")
        #expect(quoted.diagnostics.isEmpty, "\(quoted.diagnostics)")
        #expect(quoted.config.templates[.en, .newCustomer] == "Order #{number} is ready")
    }

    /// Issue 31: check-config passed `device.id = shop/1` with an mqtt:// server and only the
    /// running link refused it. One rule (`MQTTConfig.deviceIDProblem`) in both places.
    @Test(arguments: ["shop/1", "a+b", "shop#1", "/lead", "site/box/"])
    func aDeviceIDThatCannotNameMQTTTopicsIsAnErrorWithAnMQTTServer(_ id: String) {
        let r = parse("# box\nserver = mqtt://127.0.0.1\ndevice.id = \(id)\n")
        #expect(r.errors.map(\.line) == [3], "\(r.diagnostics)")
        #expect(r.errors.first?.key == "device.id")
        #expect(r.errors.first?.message.contains("the MQTT link stays off until it is fixed") == true, "\(r.errors)")
        #expect(r.config.link.server == nil, "what check-config prints is what runs: no link")
        #expect(MQTTConfig.deviceIDProblem(id) != nil)
        // The order of the lines does not matter; mqtts:// the same.
        let swapped = parse("device.id = \(id)\nserver = mqtts://broker.example\n")
        #expect(swapped.errors.map(\.line) == [1])
        // A v1 server has no topics: the id is only a name in the hello.
        let v1 = parse("device.id = \(id)\nserver = tcp://127.0.0.1:7700\n")
        #expect(v1.errors.isEmpty && v1.config.link.server != nil)
    }

    @Test func aGoodDeviceIDWithAnMQTTServerPasses() {
        for id in ["kiosk-1", "shop_2", "店铺3", "crier"] {
            let r = parse("server = mqtt://127.0.0.1\ndevice.id = \(id)\n")
            #expect(r.diagnostics.isEmpty, "\(id): \(r.diagnostics)")
            #expect(MQTTConfig.deviceIDProblem(id) == nil)
        }
    }

    @Test func twoButtonsOnOneLine() {
        let r = parse("button.mute = GPIO5\nbutton.replay = GPIO5\n")
        #expect(r.errors.map(\.line) == [2])
        #expect(r.config.buttons[.mute].line == .name("GPIO5"))
        #expect(r.config.buttons[.replay].line == nil)
        // Moved onto another button's default line: that button is not fitted, with a warning.
        let d = parse("button.mute = GPIO17\n")
        #expect(d.errors.isEmpty && d.diagnostics.map(\.line) == [1])
        #expect(d.config.buttons[.mute].line == .name("GPIO17") && d.config.buttons[.volumeUp].line == nil)
    }

    @Test func bareCRLineEndsAreLineEnds() {
        let r = parse("speech.lang = en\raudio.device = hw:1\r\raudio.rate = fast\r")
        #expect(r.config.speech.lang == .en)
        #expect(r.config.audio.device == "hw:1")
        #expect(r.errors.map(\.line) == [4])
    }

    @Test func mixedLineEnds() {
        let r = parse("speech.lang = en\r\naudio.device = hw:1\raudio.channels = 1\naudio.rate = fast")
        #expect(r.config.speech.lang == .en && r.config.audio.device == "hw:1" && r.config.audio.channels == 1)
        #expect(r.errors.map(\.line) == [4])
    }

    @Test(arguments: [
        ("device.id = shop\u{0}1", "control character (U+0000) at column 5"),
        ("device.id = \"shop 1", "unterminated quote"),
        ("template.en.payment = Say \"hi {amount}", "unterminated quote"),
        ("device.id = \"shop\" 1", "text after the closing quote"),
        ("device.id = shop\u{1b}[2J", "control character (U+001B)"),
        ("device.id = shop\u{85}1", "control character (U+0085)"),
        ("device.id = \u{202E}1pohs", "invisible character (U+202E"),
        ("audio.device = hw:1\u{200B}", "invisible character (U+200B"),
        ("template.en.payment = Paid\u{2028}{amount}", "invisible character (U+2028"),
        ("link.heartbeat = 15s", "without a unit"),
        ("audio.buffer_ms = 80 ms", "without a unit"),
        ("alert.repeat_every = 0,5", "use a dot"),
        ("audio.rate = 44100.0", "a whole number"),
        ("audio.rate =", "the value is empty"),
        ("server.ca = ca.pem", "expected an absolute path"),
        ("speech.data_path = espeak", "expected an absolute path"),
    ])
    func refusedValuesNameTheLineAndKeepTheDefault(_ line: String, _ fragment: String) {
        let r = parse("# first\n" + line + "\n")
        #expect(r.errors.count == 1, "\(r.diagnostics)")
        #expect(r.errors.first?.line == 2)
        #expect(r.errors.first?.message.contains(fragment) == true, "\(r.errors)")
        #expect(r.config == CrierConfig())
    }

    @Test func whatEditorsAndHurriedPeopleWriteIsRead() {
        let text = "\u{FEFF}# shop\r\n"
            + "\tAudio.Device\t=\thw:1   \r\n"         // tabs, case, trailing spaces
            + "speech.lang=EN\r\n"                     // no spaces, choice in capitals
            + "status.on_start = Off # quiet mornings\r\n"
            + "device.id = 'shop 1'\r\n"               // single quotes
            + "template.en.payment = \"Paid #{amount} \"\r\n"
            + "template.en.new_customer = it's {number}\r\n"
            + "; an INI-style comment\r\n"
            + "mute.alerts = Queue\r\n"
            + "input = GPIO\r\n"
            + "audio.mixer =\r\n"                      // empty where empty means something
            + "\u{A0}volume.steps\u{A0}=\u{A0}12\u{A0}\r\n"  // no-break spaces pasted from a web page
        let r = parse(text)
        #expect(r.diagnostics.isEmpty, "\(r.diagnostics)")
        #expect(r.config.audio.device == "hw:1")
        #expect(r.config.speech.lang == .en)
        #expect(r.config.status.onStart == false)
        #expect(r.config.deviceID == "shop 1")
        #expect(r.config.templates[.en, .payment] == "Paid #{amount} ")
        #expect(r.config.templates[.en, .newCustomer] == "it's {number}")
        #expect(r.config.buttons.muteAlerts == .queue)
        #expect(r.config.buttons.input == .gpio)
        #expect(r.config.buttons.volumeSteps == 12)
    }

    @Test func sectionsAreAWarningWithTheFullKeySuggested() {
        let r = parse("[audio]\ndevice = hw:1\n[audio]\n")
        #expect(r.errors.isEmpty)
        #expect(r.diagnostics.map(\.line) == [1, 2, 3])
        #expect(r.diagnostics.dropFirst().first?.message.contains("did you mean audio.device?") == true)
    }

    @Test func colonInsteadOfEquals() {
        let r = parse("audio.device: hw:1\nserver.key: 00112233445566778899aabbccddeeff\n")
        #expect(r.errors.map(\.line) == [1, 2])
        #expect(r.errors.first?.message.contains("with = rather than :") == true)
        #expect(r.diagnostics.allSatisfy { !$0.description.contains("445566") })
    }

    @Test func secretsAreNeverEchoedWhateverIsWrongWithTheLine() {
        let secret = "00112233445566778899aabbccddeeff"
        for line in ["server.key = \"\(secret)", "server.token = \(secret)\u{0}", "server.key = \(secret)\u{202E}",
                     "server.token = \"\(secret)\" x", "server.key \(secret)", "server.key = \(secret)" + String(repeating: "f", count: 20_000)] {
            let r = parse(line)
            #expect(!r.errors.isEmpty, "\(line.prefix(40))")
            for d in r.diagnostics { #expect(!d.description.contains("33445566"), "\(d)") }
        }
    }

    @Test func aVeryLongLineIsRefusedAndNotEchoed() {
        let r = parse("template.en.payment = " + String(repeating: "x", count: 20_000) + "\nspeech.lang = en\n")
        #expect(r.errors.map(\.line) == [1])
        #expect((r.errors.first?.description.utf8.count ?? 0) < 300)
        #expect(r.config.speech.lang == .en)
        let junk = parse(String(repeating: "y", count: 20_000) + "\n")
        #expect(junk.errors.map(\.line) == [1] && (junk.errors.first?.description.utf8.count ?? 0) < 300)
    }

    @Test func bytesThatAreNotUTF8SpoilOnlyTheirLine() {
        var bytes = Array("speech.lang = en\ntemplate.zh.payment = ".utf8)
        bytes += [0xCA, 0xD5, 0xBF, 0xEE]  // 收款 in GBK, as a Chinese Windows saves it
        bytes += Array("{amount}\naudio.device = hw:1\n".utf8)
        let r = parser.parse(bytes: bytes, file: "crier.conf")
        #expect(r.errors.map(\.line) == [2])
        #expect(r.errors.first?.key == "template.zh.payment")
        #expect(r.errors.first?.message.contains("not UTF-8") == true)
        #expect(r.config.speech.lang == .en && r.config.audio.device == "hw:1")
        #expect(r.config.templates[.zh, .payment] == CrierConfig().templates[.zh, .payment])
    }

    @Test func aUTF16FileIsRefusedWholeWithAHint() {
        var bytes: [UInt8] = [0xFF, 0xFE]
        for u in "speech.lang = en\r\n".utf16 { bytes += [UInt8(u & 0xFF), UInt8(u >> 8)] }
        let r = parser.parse(bytes: bytes, file: "crier.conf")
        #expect(r.errors.count == 1 && r.errors.first?.line == 1 && r.errors.first?.message.contains("UTF-16") == true)
        #expect(r.config == CrierConfig())
    }

    @Test func theRenderedConfigNeedsNoQuotingTricks() {
        var c = CrierConfig()
        c.deviceID = "'quoted'"
        c.templates.table[.en]![.payment] = "a \"b\" c #1 {amount}"
        c.templates.table[.en]![.newCustomer] = " padded {number} "
        let r = parser.parse(c.rendered(), file: "x")
        #expect(r.diagnostics.isEmpty, "\(r.diagnostics)")
        #expect(r.config == c)
    }
}

/// Seeded, fuzz-style: random mutations of the example config (every key set) never crash,
/// every diagnostic names a line of the file, and the effective configuration, printed as
/// check-config prints it, reads back as itself without a single diagnostic.
@Suite struct ConfigMutationTests {
    static let example: [UInt8] = Array(CrierConfig.example().split(separator: "\n", omittingEmptySubsequences: false)
        .map { $0.hasPrefix("#") && $0.contains(" = ") && !$0.hasPrefix("# ") ? String($0.dropFirst()) : String($0) }
        .joined(separator: "\n").utf8)

    static let pieces: [[UInt8]] = ["\r", "\n", "\r\n", "\0", "\t", " ", "\"", "'", "#", "=", ";", "[audio]", "\u{FEFF}",
                                    "\u{202E}", "\u{85}", "\u{A0}", "\u{2028}", "40", "-1", "on", "ZH", "hw:1", "GPIO17",
                                    "volume.default", "audio.buffer_ms = 10", "\u{1b}[2J"].map { Array($0.utf8) }
        + [[0xFF], [0xC3], [0xE4, 0xB8], [0xCA, 0xD5], [0xFF, 0xFE], [0x80]]

    static func mutate(_ input: [UInt8], _ rng: inout SplitMix64) -> [UInt8] {
        var b = input
        for _ in 0..<Int.random(in: 1...12, using: &rng) {
            let at = b.isEmpty ? 0 : Int.random(in: 0...b.count, using: &rng)
            switch Int.random(in: 0..<7, using: &rng) {
            case 0: b.insert(contentsOf: pieces.randomElement(using: &rng)!, at: at)
            case 1: if at < b.count { b.removeSubrange(at..<min(b.count, at + Int.random(in: 1...8, using: &rng))) }
            case 2: if at < b.count { b[at] = UInt8.random(in: 0...255, using: &rng) }
            case 3:  // duplicate a line somewhere else
                let lines = b.split(separator: 0x0A, omittingEmptySubsequences: false)
                if let l = lines.randomElement(using: &rng) { b.insert(contentsOf: Array(l) + [0x0A], at: at) }
            case 4: b = b.map { $0 == 0x0A && Bool.random(using: &rng) ? 0x0D : $0 }  // some line ends become bare CR
            case 5: if at < b.count, (0x61...0x7A).contains(b[at]) { b[at] -= 0x20 }  // Key case
            default: b.insert(contentsOf: [UInt8](repeating: UInt8(ascii: "x"), count: Int.random(in: 1...20_000, using: &rng)), at: at)
            }
        }
        return b
    }

    @Test(arguments: [UInt64(1), 2, 3, 4, 5, 13, 2026])
    func mutatedExamplesAreReadSafelyAndWhatIsPrintedIsWhatRuns(seed: UInt64) {
        var rng = SplitMix64(seed: seed)
        let parser = ConfigParser()
        for _ in 0..<30 {
            let bytes = Self.mutate(Self.example, &rng)
            let lineCount = ConfigParser.lines(bytes).count
            let r = parser.parse(bytes: bytes, file: "m.conf")
            for d in r.diagnostics {
                #expect((1...max(1, lineCount)).contains(d.line), "\(d)")
                #expect(d.description.utf8.count < 600, "\(d.description.prefix(100))")
            }
            let printed = FuzzRegressionTests.readBack(r.config.rendered())
            let back = parser.parse(printed, file: "printed.conf")
            // Only a template that lost its placeholder warns again, as it did for the input.
            #expect(back.diagnostics.allSatisfy { d in d.severity == .warning && r.diagnostics.contains { $0.key == d.key && $0.message == d.message } },
                    "\(back.diagnostics)")
            var again = back.config
            again.link.token = r.config.link.token
            again.link.key = r.config.link.key
            again.link.mqtt.password = r.config.link.mqtt.password
            again.wifi.psk = r.config.wifi.psk
            again.wifi.backupPSK = r.config.wifi.backupPSK
            #expect(again == r.config, "\(printed)")
            // Rules that consumers would otherwise enforce by clamping hold in what is printed.
            let c = r.config
            #expect(c.buttons.volumeDefault <= c.buttons.volumeSteps && c.buttons.alertFloor <= c.buttons.volumeSteps)
            #expect(c.audio.bufferMs >= 2 * c.audio.periodMs)
            #expect(c.supervision.policy.initialBackoff <= c.supervision.policy.maxBackoff)
            let lines = c.buttons.fitted.compactMap(\.1.line)
            #expect(Set(lines).count == lines.count)
        }
    }
}
