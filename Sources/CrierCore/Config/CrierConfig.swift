/// Languages Crier speaks. Each has its own voice, number words and templates.
public enum Lang: String, Sendable, CaseIterable, Hashable {
    case zh, en
}

/// `tcp://HOST:PORT` or `tls://HOST:PORT` (port 7700 when left out), or an MQTT broker:
/// `mqtt://HOST:PORT` (1883) or `mqtts://HOST:PORT` (TLS, 8883); docs/protocol.md, "MQTT".
public struct ServerAddress: Sendable, Equatable, CustomStringConvertible {
    /// How the box talks to the server, parsed once from the scheme of `server = ...`; every
    /// other place asks this, never the scheme's text.
    public enum Transport: String, Sendable, CaseIterable {
        /// Protocol v1 (NDJSON) over plain TCP.
        case tcp
        /// Protocol v1 over TLS.
        case tls
        /// An MQTT broker, plain.
        case mqtt
        /// An MQTT broker over TLS.
        case mqtts

        /// An MQTT broker (`mqtt://`, `mqtts://`) instead of a v1 order server.
        public var isMQTT: Bool { self == .mqtt || self == .mqtts }
        /// TLS from the first byte: `tls://` or `mqtts://`.
        public var isEncrypted: Bool { self == .tls || self == .mqtts }
        /// The port when the address leaves it out (MQTT's are IANA's).
        public var defaultPort: Int {
            switch self {
            case .tcp, .tls: ServerAddress.defaultPort
            case .mqtt: 1883
            case .mqtts: 8883
            }
        }
    }

    public var transport: Transport
    public var host: String
    public var port: Int

    public static let defaultPort = 7700

    public init(_ transport: Transport = .tcp, host: String, port: Int = defaultPort) {
        self.transport = transport
        self.host = host
        self.port = port
    }

    /// The scheme as written in the config (`tcp`, `tls`, `mqtt`, `mqtts`), for messages.
    public var scheme: String { transport.rawValue }

    public init(parsing s: String) throws(ConfigValueError) {
        guard let sep = s.firstRange(of: "://") else {
            throw ConfigValueError("expected tcp://HOST:PORT, tls://HOST:PORT, mqtt://HOST:PORT or mqtts://HOST:PORT, got \(ConfigValue.shown(s))")
        }
        let scheme = String(s[..<sep.lowerBound]).lowercased()
        guard let transport = Transport(rawValue: scheme) else {
            throw ConfigValueError("unsupported scheme \"\(scheme)\" (tcp://, tls://, mqtt:// or mqtts://), got \(ConfigValue.shown(s))")
        }
        var rest = s[sep.upperBound...]
        if rest.hasSuffix("/") { rest = rest.dropLast() }
        var host: String
        var port = transport.defaultPort
        if rest.hasPrefix("[") {  // [v6]:port
            guard let close = rest.firstIndex(of: "]") else { throw ConfigValueError("unclosed [ in \"\(s)\"") }
            host = String(rest[rest.index(after: rest.startIndex)..<close])
            let after = rest[rest.index(after: close)...]
            if after.hasPrefix(":") {
                port = try Self.port(after.dropFirst(), s)
            } else if !after.isEmpty {
                throw ConfigValueError("expected :PORT after ] in \"\(s)\"")
            }
            guard !host.isEmpty, host.utf8.allSatisfy({ Self.isV6Byte($0) }) else {
                throw ConfigValueError("expected an IPv6 address inside [ ] in \"\(s)\"")
            }
        } else {
            host = String(rest)
            if let colon = rest.firstIndex(of: ":") {
                host = String(rest[..<colon])
                let p = rest[rest.index(after: colon)...]
                // Two colons: an IPv6 address without brackets, where the port cannot be told apart.
                if p.contains(":") {
                    throw ConfigValueError("write an IPv6 address in brackets, tcp://[::1]:7700, got \(ConfigValue.shown(s))")
                }
                port = try Self.port(p, s)
            }
            guard !host.isEmpty, host.utf8.allSatisfy({ Self.isHostByte($0) }) else {
                throw ConfigValueError("expected a host name or address (letters, digits, . - _) in \"\(s)\"")
            }
        }
        self.init(transport, host: host, port: port)
    }

    /// DNS names and IPv4 addresses. Anything else (spaces, #, quotes, non-ASCII) could not be
    /// resolved anyway and would not survive `crier check-config` output read back.
    private static func isHostByte(_ b: UInt8) -> Bool {
        (b >= 0x30 && b <= 0x39) || (b | 0x20 >= 0x61 && b | 0x20 <= 0x7a) || b == 0x2e || b == 0x2d || b == 0x5f
    }

    /// Hex digits, colons, dots (embedded IPv4) and % with an interface name for link-local.
    private static func isV6Byte(_ b: UInt8) -> Bool {
        isHostByte(b) || b == 0x3a || b == 0x25
    }

    private static func port(_ p: Substring, _ whole: String) throws(ConfigValueError) -> Int {
        guard let v = Int(p), (1...65535).contains(v) else {
            throw ConfigValueError("expected a port 1...65535 in \"\(whole)\"")
        }
        return v
    }

    public var description: String {
        host.contains(":") ? "\(scheme)://[\(host)]:\(port)" : "\(scheme)://\(host):\(port)"
    }

    /// An MQTT broker (`mqtt://`, `mqtts://`) instead of a v1 order server.
    public var isMQTT: Bool { transport.isMQTT }
    /// TLS from the first byte: `tls://` or `mqtts://`.
    public var isEncrypted: Bool { transport.isEncrypted }
}

/// How one language is spoken through espeak-ng.
public struct VoiceConfig: Sendable, Equatable {
    public var voice: String
    /// Words per minute, espeak-ng's 80...450.
    public var rate: Int
    /// 0...100, espeak-ng's pitch (50 is the voice's normal pitch).
    public var pitch: Int
    /// 0...200, espeak-ng's amplitude (100 is normal).
    public var volume: Int
}

public struct AudioConfig: Sendable, Equatable {
    public init() {}
    public var device = "default"
    public var rate = 48000
    public var channels = 2
    public var periodMs = 20
    public var bufferMs = 80
    /// Headroom below full scale for everything the mixer outputs, in dB.
    public var headroomDb = 3.0
    public var fadeMs = 5.0
    public var mixer = ""
    /// SCHED_FIFO priority of the audio thread; 0: ordinary scheduling (docs/audio.md).
    public var realtimePriority = ThreadPolicy.defaultPriority
}

public struct SpeechConfig: Sendable, Equatable {
    public init() {}
    /// SCHED_FIFO of the speech thread until each utterance's first chunk (0: off).
    public var realtimePriority = ThreadPolicy.defaultSpeechPriority
    /// SCHED_FIFO of the daemon's event thread, which turns an order into the start of its
    /// speech (0: Swift's shared pool, ordinary).
    public var startPriority = ThreadPolicy.defaultStartPriority
    public var lang: Lang = .zh
    public var voices: [Lang: VoiceConfig] = [
        // The stock `cmn` voice of espeak-ng 1.51 reads most hanzi as English spellings
        // (docs/speech.md); the pinyin voice reads them correctly.
        .zh: VoiceConfig(voice: "cmn-latn-pinyin", rate: 175, pitch: 40, volume: 100),
        .en: VoiceConfig(voice: "en-us", rate: 165, pitch: 50, volume: 100),
    ]
    public var maxChars = 500
    /// Most seconds of speech in one alert: the rest is not said (a bound on memory too).
    public var maxSeconds = 300
    /// Seconds one synthesis may take before it is cut off (the order is then acked rejected).
    public var deadline = 5.0
    public var dataPath = ""
}

public struct LinkConfig: Sendable, Equatable {
    public init() {}
    public var server: ServerAddress?
    public var token: String?
    public var heartbeat = 15.0
    /// tls:// only: PEM file of the CA(s) that sign the server's certificate; nil: the system store.
    public var ca: String?
    /// tls:// only: SHA-256 hashes of acceptable SubjectPublicKeyInfo (DER); one must match a
    /// certificate of the verified chain. Empty: no pinning.
    public var pins: [[UInt8]] = []
    /// Shared secret for signed orders (docs/protocol.md); nil: orders are not signed.
    public var key: [UInt8]?
    /// The ack outbox file; nil: `<state.path>.acks`; "": memory only (`off`).
    public var outbox: String?
    /// `mqtt://` and `mqtts://` servers only (docs/protocol.md, "MQTT").
    public var mqtt = MQTTConfig()
}

/// `server.key` and `server.pin` values.
public enum SecretValue {
    /// `hex:…`, `base64:…`, or without a prefix: hex when it is only hex digits (even count),
    /// else base64 (standard or URL-safe). At least 16 bytes (128 bits), at most 1024.
    public static func key(_ s: String) throws(ConfigValueError) -> [UInt8] {
        var body = s
        var bytes: [UInt8]?
        if body.hasPrefix("hex:") {
            body = String(body.dropFirst(4))
            bytes = Hex.decode(body)
        } else if body.hasPrefix("base64:") {
            body = String(body.dropFirst(7))
            bytes = Base64.decode(body)
        } else {
            bytes = Hex.decode(body) ?? Base64.decode(body)
        }
        // The value itself never appears in a message: it is a secret.
        guard let k = bytes else { throw ConfigValueError("expected a shared secret in hex or base64 (e.g. from `openssl rand -hex 32`); the value given is neither") }
        guard k.count >= 16 else { throw ConfigValueError("the shared secret is \(k.count) bytes; use at least 16 (`openssl rand -hex 32` makes a good one)") }
        guard k.count <= 1024 else { throw ConfigValueError("the shared secret is \(k.count) bytes; at most 1024") }
        return k
    }

    /// `sha256/<base64 of 32 bytes>`, several separated by commas (for a key rollover).
    public static func pins(_ s: String) throws(ConfigValueError) -> [[UInt8]] {
        var out: [[UInt8]] = []
        for part in s.split(separator: ",") {
            let p = part.trimmed
            guard p.hasPrefix("sha256/"), let h = Base64.decode(String(p.dropFirst(7))), h.count == 32 else {
                throw ConfigValueError("expected sha256/<base64 of the SHA-256 of the server's public key (SPKI)>, got \(ConfigValue.shown(p)); see docs/security.md for the openssl command that prints it")
            }
            out.append(h)
        }
        guard !out.isEmpty else { throw ConfigValueError("expected at least one sha256/… pin") }
        return out
    }
}

public struct LogConfig: Sendable, Equatable {
    public init() {}
    public var level: LogLevel = .info
    public var serial = ""
    public var serialBaud = 115200
    public var controlSocket = "/run/crier/control.sock"

    /// Speeds `log.serial_baud` accepts (those termios names on Linux).
    public static let serialBaudRates = [9600, 19200, 38400, 57600, 115200, 230400, 460800, 921600]
}

/// The whole effective configuration. Every field has a default; `schema` documents each key.
public struct CrierConfig: Sendable, Equatable {
    public var deviceID = "crier"
    public var link = LinkConfig()
    public var audio = AudioConfig()
    public var speech = SpeechConfig()
    public var templates = Templates()
    public var alerts = AlertConfig()
    public var status = StatusPromptConfig()
    public var buttons = ButtonsConfig()
    public var log = LogConfig()
    public var supervision = SupervisionConfig()
    public var wifi = WifiConfig()
    public var setup = SetupConfig()
    public var music = MusicConfig()
    public var voicePacks = VoicePackConfig()
    public var update = UpdateConfig()
    public var web = WebConfig()

    public init() {}

    public static let defaultPath = "/boot/firmware/crier.conf"

    /// Every key, in the order docs and `crier check-config` print them.
    public static let schema: [ConfigKey] = generalKeys + audioKeys + speechKeys + Templates.keys + AlertConfig.keys
        + StatusPromptConfig.keys + ButtonsConfig.keys + logKeys + SupervisionConfig.keys + MQTTConfig.keys
        + WifiConfig.keys + SetupConfig.keys + MusicConfig.keys + UpdateConfig.keys + VoicePackConfig.keys + WebConfig.keys

    /// The effective configuration as `key = value` lines, keys in schema order.
    public func rendered(schema: [ConfigKey] = CrierConfig.schema) -> String {
        schema.map { k in
            let v = k.value(in: self)
            // Bare if that reads back the same, else in quotes (spaces at the ends, a `#`, a
            // value that itself starts and ends with `"`); the format has no escapes, so the
            // parser's own reading decides.
            let bare = "\(k.name) = \(v)"
            return ConfigParser.value(ofLine: Substring(bare)) == v ? bare : "\(k.name) = \"\(v)\""
        }.joined(separator: "\n") + "\n"
    }

    /// docs/configuration.md's key table (the file is checked against this by a test).
    public static func markdownTable(schema: [ConfigKey] = CrierConfig.schema) -> String {
        var out = ""
        var section = ""
        for k in schema {
            if k.section != section {
                section = k.section
                out += "\n### \(section)\n\n| key | default | meaning |\n|---|---|---|\n"
            }
            let d = k.defaultText.isEmpty ? "(empty)" : "`\(k.defaultText)`"
            out += "| `\(k.name)` | \(d) | \(k.doc.replacingAll("|", with: "\\|")) |\n"
        }
        return out
    }

    /// A fully commented example: every key with its default and one line of documentation.
    public static func example(schema: [ConfigKey] = CrierConfig.schema) -> String {
        var out = """
            # crier.conf: the one file a shop edits. It lives on the SD card's boot partition
            # (/boot/firmware/crier.conf), readable from any PC. Lines are "key = value";
            # "#" starts a comment. Every key below shows its default; uncomment to change it.
            # `crier check-config FILE` checks a file and prints the effective values.

            """
        var section = ""
        for k in schema {
            if k.section != section {
                section = k.section
                out += "\n# --- \(section) ---\n"
            }
            out += "# \(k.doc)\n"
            out += "#\(k.name) = \(k.defaultText)\n"
        }
        return out
    }
}

extension CrierConfig {
    static let generalKeys: [ConfigKey] = [
        ConfigKey("device.id", section: "general", default: "crier",
                  doc: "Name this box gives the order server in its hello (1-64 characters).",
                  apply: { c, v throws(ConfigValueError) in
                      let v = try ConfigValue.nonEmpty(v, what: "a device name")
                      guard v.count <= 64 else { throw ConfigValueError("expected at most 64 characters, got \(v.count)") }
                      c.deviceID = v
                  }, render: { $0.deviceID }),
        ConfigKey("server", section: "general", default: "",
                  doc: "Order server, tcp://HOST:PORT or tls://HOST:PORT (port 7700 if left out; an IPv6 address in brackets, tcp://[fd00::5]:7700), or an MQTT broker, mqtt://HOST:PORT (1883) or mqtts://HOST:PORT (TLS, 8883; see mqtt.*). Empty: no server, the box only speaks local prompts.",
                  apply: { c, v throws(ConfigValueError) in
                      c.link.server = v.isEmpty ? nil : try ServerAddress(parsing: v)
                  }, render: { $0.link.server?.description ?? "" }),
        ConfigKey("server.token", section: "general", default: "",
                  doc: "Shared token sent in the hello so the server knows this box. Never logged.",
                  apply: { c, v in c.link.token = v.isEmpty ? nil : v },
                  render: { $0.link.token == nil ? "" : "(set)" }),
        ConfigKey("server.ca", section: "general", default: "",
                  doc: "tls:// and mqtts:// only: PEM file with the CA certificate(s) that sign the order server's (or broker's) certificate. Empty: the system's CA store.",
                  apply: { c, v throws(ConfigValueError) in c.link.ca = v.isEmpty ? nil : try ConfigValue.absolutePath(v) },
                  render: { $0.link.ca ?? "" }),
        ConfigKey("server.pin", section: "general", default: "",
                  doc: "tls:// and mqtts:// only: sha256/<base64 SPKI hash> of the server's public key (or a CA's in its chain); several separated by commas. Empty: no pinning.",
                  apply: { c, v throws(ConfigValueError) in c.link.pins = v.isEmpty ? [] : try SecretValue.pins(v) },
                  render: { $0.link.pins.map { "sha256/" + Base64.encode($0) }.joined(separator: ",") }),
        ConfigKey("server.key", section: "general", default: "",
                  doc: "Shared secret (hex or base64, at least 16 bytes) for signed orders: unsigned, forged, stale or replayed orders are rejected, never spoken. Never logged.",
                  apply: { c, v throws(ConfigValueError) in c.link.key = v.isEmpty ? nil : try SecretValue.key(v) },
                  render: { $0.link.key == nil ? "" : "(set)" }),
        ConfigKey("link.heartbeat", section: "general", default: "15",
                  doc: "Seconds with nothing received from the server before the box pings (whatever it sends itself); 2x this with nothing received means the link is dead.",
                  apply: { c, v throws(ConfigValueError) in c.link.heartbeat = try ConfigValue.number(v, 1...600) },
                  render: { ConfigValue.fmt($0.link.heartbeat) }),
        ConfigKey("link.outbox", section: "general", default: "",
                  doc: "File (on the data partition) keeping acks the server may not have yet across restarts; empty: state.path + \".acks\"; off: memory only.",
                  apply: { c, v throws(ConfigValueError) in
                      guard v.isEmpty || v == "off" || v.hasPrefix("/") else { throw ConfigValueError("expected an absolute path or off, got \"\(v)\"") }
                      c.link.outbox = v.isEmpty ? nil : (v == "off" ? "" : v)
                  }, render: { c in c.link.outbox.map { $0.isEmpty ? "off" : $0 } ?? "" }),
    ]

    static let audioKeys: [ConfigKey] = [
        ConfigKey("audio.device", section: "audio", default: "default",
                  doc: "ALSA PCM that is kept open with silence from start to shutdown (e.g. default, hw:1, plughw:CARD=Headphones).",
                  apply: { c, v throws(ConfigValueError) in c.audio.device = try ConfigValue.nonEmpty(v, what: "an ALSA device name") },
                  render: { $0.audio.device }),
        ConfigKey("audio.rate", section: "audio", default: "48000",
                  doc: "Sample rate of the output stream in Hz; speech is resampled to it.",
                  apply: { c, v throws(ConfigValueError) in c.audio.rate = try ConfigValue.int(v, 8000...192000) },
                  render: { String($0.audio.rate) }),
        ConfigKey("audio.channels", section: "audio", default: "2",
                  doc: "Output channels (1 or 2); speech goes to every channel.",
                  apply: { c, v throws(ConfigValueError) in c.audio.channels = try ConfigValue.int(v, 1...2) },
                  render: { String($0.audio.channels) }),
        ConfigKey("audio.period_ms", section: "audio", default: "20",
                  doc: "How often the audio thread wakes when idle, in ms. Larger saves CPU; speech never waits for it.",
                  apply: { c, v throws(ConfigValueError) in c.audio.periodMs = try ConfigValue.int(v, 5...100) },
                  render: { String($0.audio.periodMs) }),
        ConfigKey("audio.buffer_ms", section: "audio", default: "80",
                  doc: "ALSA buffer in ms (at least 2 periods). Larger survives a busy CPU better.",
                  apply: { c, v throws(ConfigValueError) in c.audio.bufferMs = try ConfigValue.int(v, 10...1000) },
                  render: { String($0.audio.bufferMs) }),
        ConfigKey("audio.headroom_db", section: "audio", default: "3",
                  doc: "Headroom below full scale kept by the mixer, in dB, so speech never clips.",
                  apply: { c, v throws(ConfigValueError) in c.audio.headroomDb = try ConfigValue.number(v, 0...24) },
                  render: { ConfigValue.fmt($0.audio.headroomDb) }),
        ConfigKey("audio.mixer", section: "audio", default: "",
                  doc: "ALSA mixer element the volume buttons move (e.g. PCM, Digital, Speaker); empty: Crier's own software gain.",
                  apply: { c, v in c.audio.mixer = v }, render: { $0.audio.mixer }),
        ConfigKey("audio.fade_ms", section: "audio", default: "5",
                  doc: "Fade-in/out at every edge of speech and tones, in ms, so nothing clicks.",
                  apply: { c, v throws(ConfigValueError) in c.audio.fadeMs = try ConfigValue.number(v, 0...100) },
                  render: { ConfigValue.fmt($0.audio.fadeMs) }),
        ConfigKey("audio.realtime_priority", section: "audio", default: String(ThreadPolicy.defaultPriority),
                  doc: "SCHED_FIFO priority of the audio thread alone (1-99; keep it below 50, the kernel's interrupt threads); 0: ordinary scheduling. Needs LimitRTPRIO= in the unit; refused, it is logged once and audio runs as before.",
                  apply: { c, v throws(ConfigValueError) in c.audio.realtimePriority = try ConfigValue.int(v, 0...99) },
                  render: { String($0.audio.realtimePriority) }),
    ]

    static let speechKeys: [ConfigKey] = {
        var keys: [ConfigKey] = [
            ConfigKey("speech.lang", section: "speech", default: "zh",
                      doc: "Language of announcements when an order does not say: zh or en.",
                      apply: { c, v throws(ConfigValueError) in c.speech.lang = Lang(rawValue: try ConfigValue.choice(v, Lang.allCases.map(\.rawValue)))! },
                      render: { $0.speech.lang.rawValue }),
            ConfigKey("speech.max_chars", section: "speech", default: "500",
                      doc: "Longest text spoken for one alert; longer text is cut (and the cut is logged).",
                      apply: { c, v throws(ConfigValueError) in c.speech.maxChars = try ConfigValue.int(v, 20...2000) },
                      render: { String($0.speech.maxChars) }),
            ConfigKey("speech.max_seconds", section: "speech", default: "300",
                      doc: "Most seconds of speech for one alert; speech past it is cut there (logged), and the orders whose words were said are acked spoken.",
                      apply: { c, v throws(ConfigValueError) in c.speech.maxSeconds = try ConfigValue.int(v, 5...300) },
                      render: { String($0.speech.maxSeconds) }),
            ConfigKey("speech.deadline", section: "speech", default: "5",
                      doc: "Seconds one synthesis may take; past it espeak-ng is stopped, the order acked rejected (speech_failed) and the box carries on.",
                      apply: { c, v throws(ConfigValueError) in c.speech.deadline = try ConfigValue.number(v, 0.001...60) },
                      render: { ConfigValue.fmt($0.speech.deadline) }),
            ConfigKey("speech.realtime_priority", section: "speech", default: String(ThreadPolicy.defaultSpeechPriority),
                      doc: "SCHED_FIFO priority of the speech thread while it waits for an utterance and makes its first chunk (the rest is synthesized at ordinary priority); below audio.realtime_priority; 0: ordinary scheduling. Needs LimitRTPRIO= in the unit; refused, it is logged once.",
                      apply: { c, v throws(ConfigValueError) in c.speech.realtimePriority = try ConfigValue.int(v, 0...99) },
                      render: { String($0.speech.realtimePriority) }),
            ConfigKey("speech.start_priority", section: "speech", default: String(ThreadPolicy.defaultStartPriority),
                      doc: "SCHED_FIFO priority of crier's event thread, which turns an order (a button, a timer) into the start of its speech; below speech.realtime_priority; 0: ordinary scheduling. Needs LimitRTPRIO= in the unit; refused, it is logged once.",
                      apply: { c, v throws(ConfigValueError) in c.speech.startPriority = try ConfigValue.int(v, 0...99) },
                      render: { String($0.speech.startPriority) }),
            ConfigKey("speech.data_path", section: "speech", default: "",
                      doc: "Directory that contains espeak-ng-data/; empty uses the system's (/usr/lib/*/espeak-ng-data).",
                      apply: { c, v throws(ConfigValueError) in c.speech.dataPath = v.isEmpty ? "" : try ConfigValue.absolutePath(v) },
                      render: { $0.speech.dataPath }),
        ]
        let defaults = SpeechConfig().voices
        for lang in Lang.allCases {
            let d = defaults[lang]!
            let l = lang
            keys += [
                ConfigKey("speech.\(l.rawValue).voice", section: "speech", default: d.voice,
                          doc: "espeak-ng voice for \(l.rawValue) (see `espeak-ng --voices`).",
                          apply: { c, v throws(ConfigValueError) in c.speech.voices[l]!.voice = try ConfigValue.nonEmpty(v, what: "a voice name") },
                          render: { $0.speech.voices[l]!.voice }),
                ConfigKey("speech.\(l.rawValue).rate", section: "speech", default: String(d.rate),
                          doc: "Speaking rate for \(l.rawValue) in words per minute (80-450).",
                          apply: { c, v throws(ConfigValueError) in c.speech.voices[l]!.rate = try ConfigValue.int(v, 80...450) },
                          render: { String($0.speech.voices[l]!.rate) }),
                ConfigKey("speech.\(l.rawValue).pitch", section: "speech", default: String(d.pitch),
                          doc: "Pitch for \(l.rawValue), 0-100 (50 is the voice's own).",
                          apply: { c, v throws(ConfigValueError) in c.speech.voices[l]!.pitch = try ConfigValue.int(v, 0...100) },
                          render: { String($0.speech.voices[l]!.pitch) }),
                ConfigKey("speech.\(l.rawValue).volume", section: "speech", default: String(d.volume),
                          doc: "Loudness of the \(l.rawValue) voice before the mixer, 10-200 (100 is normal).",
                          apply: { c, v throws(ConfigValueError) in c.speech.voices[l]!.volume = try ConfigValue.int(v, 10...200) },
                          render: { String($0.speech.voices[l]!.volume) }),
            ]
        }
        return keys
    }()

    static let logKeys: [ConfigKey] = [
        ConfigKey("log.level", section: "log", default: "info",
                  doc: "Least severe level logged: error, warning, notice, info or debug.",
                  apply: { c, v throws(ConfigValueError) in
                      c.log.level = LogLevel(name: try ConfigValue.choice(v.lowercased(), ["error", "warning", "warn", "notice", "info", "debug"]))!
                  }, render: { $0.log.level.label.lowercased() == "warn" ? "warning" : $0.log.level.label.lowercased() }),
        ConfigKey("control.socket", section: "log", default: "/run/crier/control.sock",
                  doc: "Unix socket `crier status` and `crier say` use to reach the running daemon; empty: none.",
                  apply: { c, v in c.log.controlSocket = v }, render: { $0.log.controlSocket }),
        ConfigKey("log.serial", section: "log", default: "",
                  doc: "Also write every log line to this serial port (e.g. /dev/serial0), 8N1, never blocking: lines are dropped and counted if it cannot keep up. Empty: off.",
                  apply: { c, v throws(ConfigValueError) in
                      guard v.isEmpty || v.hasPrefix("/dev/") else {
                          throw ConfigValueError("expected a device path such as /dev/serial0, got \(ConfigValue.shown(v))")
                      }
                      c.log.serial = v
                  }, render: { $0.log.serial }),
        ConfigKey("log.serial_baud", section: "log", default: "115200",
                  doc: "Speed of log.serial in baud: 9600, 19200, 38400, 57600, 115200, 230400, 460800 or 921600.",
                  apply: { c, v throws(ConfigValueError) in
                      let rates = LogConfig.serialBaudRates.map(String.init)
                      c.log.serialBaud = Int(try ConfigValue.choice(v, rates))!
                  }, render: { String($0.log.serialBaud) }),
    ]
}
