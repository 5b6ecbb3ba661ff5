/// Background music (docs/music.md): where it comes from, how loud, how it ducks under alerts.
public struct MusicConfig: Sendable, Equatable {
    public init() {}

    public enum Source: Sendable, Equatable, CustomStringConvertible {
        case off
        /// A directory of MP3/OGG/FLAC/WAV files, one such file, or an .m3u/.m3u8 playlist.
        case files(String)
        /// Internet radio / Icecast over HTTP(S), MP3.
        case stream(String)
        /// A FIFO an external player writes raw PCM into (`music.fifo_format`).
        case fifo(String)

        public init(parsing s: String) throws(ConfigValueError) {
            let l = s.lowercased()
            if s.isEmpty || l == "off" {
                self = .off
            } else if l.hasPrefix("http://") || l.hasPrefix("https://") {
                guard s.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7f }) else {
                    throw ConfigValueError("expected a URL without spaces or control characters, got \(ConfigValue.shown(s))")
                }
                self = .stream(s)
            } else if l.hasPrefix("fifo:") {
                self = .fifo(try ConfigValue.absolutePath(String(s.dropFirst(5))))
            } else if s.hasPrefix("/") {
                self = .files(s)
            } else {
                throw ConfigValueError("expected off, /DIR, /FILE, /LIST.m3u, http(s)://URL or fifo:/PATH, got \(ConfigValue.shown(s))")
            }
        }

        public var description: String {
            switch self {
            case .off: "off"
            case .files(let p): p
            case .stream(let u): u
            case .fifo(let p): "fifo:" + p
            }
        }

        public var kind: String {
            switch self {
            case .off: "off"
            case .files: "files"
            case .stream: "stream"
            case .fifo: "fifo"
            }
        }
    }

    /// Raw PCM on the FIFO: `RATE:BITS:CHANNELS` as MPD's fifo output writes it (16 or 32 bit
    /// signed little-endian integers, or `f` for 32-bit float).
    public struct PCMLayout: Sendable, Equatable, CustomStringConvertible {
        public enum Sample: String, Sendable, Equatable { case s16 = "16", s32 = "32", f32 = "f" }
        public var rate: Int
        public var sample: Sample
        public var channels: Int

        public init(rate: Int, sample: Sample, channels: Int) {
            self.rate = rate
            self.sample = sample
            self.channels = channels
        }

        public init(parsing s: String) throws(ConfigValueError) {
            let p = s.split(separator: ":", omittingEmptySubsequences: false).map(String.init)
            guard p.count == 3, let r = Int(p[0]), (8000...192000).contains(r),
                  let smp = Sample(rawValue: p[1].lowercased()), let c = Int(p[2]), (1...2).contains(c) else {
                throw ConfigValueError("expected RATE:BITS:CHANNELS like 44100:16:2 (BITS 16, 32 or f; 1 or 2 channels), got \(ConfigValue.shown(s))")
            }
            self.init(rate: r, sample: smp, channels: c)
        }

        public var bytesPerFrame: Int { (sample == .s16 ? 2 : 4) * channels }
        public var description: String { "\(rate):\(sample.rawValue):\(channels)" }
    }

    public var source: Source = .off
    /// Music level relative to the alerts, in dB (≤ 0: below them).
    public var levelDb = -12.0
    /// How far music goes down while alerts play, in dB (negative).
    public var duckDb = -18.0
    public var attackMs = 60.0
    public var holdMs = 500.0
    public var releaseMs = 700.0
    public var shuffle = false
    public var hours: DailyHours?
    public var fifoLayout = PCMLayout(rate: 44100, sample: .s16, channels: 2)
    /// Decoded music kept ahead of the audio thread, in ms.
    public var bufferMs = 1000
    /// Seconds without data before a stream is dropped and reconnected.
    public var stallSeconds = 10.0
    /// Seconds a stream connection may go without decoded audio at its start.
    public var connectSeconds = 15.0
    /// KiB of undecodable stream bytes before the connection is given up.
    public var junkKiB = 1024

    /// The stream rules (`StreamWatch`) from these keys.
    public var streamLimits: StreamWatch.Limits {
        StreamWatch.Limits(junkBytes: junkKiB * 1024, firstAudioSeconds: connectSeconds, audioStallSeconds: stallSeconds)
    }

    public var enabled: Bool { source != .off }

    public static let keys: [ConfigKey] = [
        ConfigKey("music.source", section: "music", default: "off",
                  doc: "Background music: off, a directory or file of MP3/OGG/FLAC/WAV (/srv/music), an .m3u playlist, an http(s):// radio stream (MP3, Icecast/SHOUTcast), or fifo:/PATH with raw PCM from squeezelite, shairport-sync or MPD (docs/music.md).",
                  apply: { c, v throws(ConfigValueError) in c.music.source = try Source(parsing: v) },
                  render: { $0.music.source.description }),
        ConfigKey("music.level_db", section: "music", default: "-12",
                  doc: "Music level relative to the alerts in dB, -60 to 0 (the volume buttons move both; mute silences music).",
                  apply: { c, v throws(ConfigValueError) in c.music.levelDb = try ConfigValue.number(v, -60...0) },
                  render: { ConfigValue.fmt($0.music.levelDb) }),
        ConfigKey("music.duck_db", section: "music", default: "-18",
                  doc: "How far music goes down while alerts and prompts play, in dB, -60 to 0.",
                  apply: { c, v throws(ConfigValueError) in c.music.duckDb = try ConfigValue.number(v, -60...0) },
                  render: { ConfigValue.fmt($0.music.duckDb) }),
        ConfigKey("music.attack_ms", section: "music", default: "60",
                  doc: "Time music takes to go down when an alert is queued, in ms, 1-100.",
                  apply: { c, v throws(ConfigValueError) in c.music.attackMs = try ConfigValue.number(v, 1...100) },
                  render: { ConfigValue.fmt($0.music.attackMs) }),
        ConfigKey("music.hold_ms", section: "music", default: "500",
                  doc: "Time music stays down after the last alert ended, in ms, 0-10000.",
                  apply: { c, v throws(ConfigValueError) in c.music.holdMs = try ConfigValue.number(v, 0...10000) },
                  render: { ConfigValue.fmt($0.music.holdMs) }),
        ConfigKey("music.release_ms", section: "music", default: "700",
                  doc: "Time music takes to come back up after the hold, in ms, 1-10000.",
                  apply: { c, v throws(ConfigValueError) in c.music.releaseMs = try ConfigValue.number(v, 1...10000) },
                  render: { ConfigValue.fmt($0.music.releaseMs) }),
        ConfigKey("music.shuffle", section: "music", default: "off",
                  doc: "Files and playlists: on plays them in a new random order each round, off in name (or list) order; both loop.",
                  apply: { c, v throws(ConfigValueError) in c.music.shuffle = try ConfigValue.bool(v) },
                  render: { $0.music.shuffle ? "on" : "off" }),
        ConfigKey("music.hours", section: "music", default: "",
                  doc: "Local hours music plays, HH:MM-HH:MM (22:00-02:00 crosses midnight); empty: always. No music until the system clock is synchronized.",
                  apply: { c, v throws(ConfigValueError) in c.music.hours = v.isEmpty ? nil : try DailyHours(parsing: v) },
                  render: { $0.music.hours?.description ?? "" }),
        ConfigKey("music.fifo_format", section: "music", default: "44100:16:2",
                  doc: "fifo: sources only: RATE:BITS:CHANNELS of the raw little-endian PCM (BITS 16, 32 or f for float), as in MPD's format setting.",
                  apply: { c, v throws(ConfigValueError) in c.music.fifoLayout = try PCMLayout(parsing: v) },
                  render: { $0.music.fifoLayout.description }),
        ConfigKey("music.buffer_ms", section: "music", default: "1000",
                  doc: "Music decoded ahead of the audio thread, in ms, 200-10000; an empty buffer plays silence for the music, never stalls speech.",
                  apply: { c, v throws(ConfigValueError) in c.music.bufferMs = try ConfigValue.int(v, 200...10000) },
                  render: { String($0.music.bufferMs) }),
        ConfigKey("music.stall_s", section: "music", default: "10",
                  doc: "Streams and FIFOs: seconds without data before the stream is reconnected (FIFO: reopened), 2-120.",
                  apply: { c, v throws(ConfigValueError) in c.music.stallSeconds = try ConfigValue.number(v, 2...120) },
                  render: { ConfigValue.fmt($0.music.stallSeconds) }),
        ConfigKey("music.connect_s", section: "music", default: "15",
                  doc: "Streams: seconds from connecting to the first decoded audio before the connection is given up and tried again (a server that trickles bytes or sends no MP3), 2-120.",
                  apply: { c, v throws(ConfigValueError) in c.music.connectSeconds = try ConfigValue.number(v, 2...120) },
                  render: { ConfigValue.fmt($0.music.connectSeconds) }),
        ConfigKey("music.stream_junk_kb", section: "music", default: "1024",
                  doc: "Streams: KiB received beyond what the decoded audio accounts for (bytes that are not MP3) before the connection is given up and tried again, 16-16384.",
                  apply: { c, v throws(ConfigValueError) in c.music.junkKiB = try ConfigValue.int(v, 16...16384) },
                  render: { String($0.music.junkKiB) }),
    ]
}

/// `music.hours`: a daily window of local time, possibly crossing midnight.
public struct DailyHours: Sendable, Equatable, CustomStringConvertible {
    /// Minutes after local midnight, start inclusive, end exclusive.
    public var start: Int
    public var end: Int

    public init(start: Int, end: Int) {
        self.start = start
        self.end = end
    }

    public init(parsing s: String) throws(ConfigValueError) {
        let parts = s.split(separator: "-", omittingEmptySubsequences: false)
        guard parts.count == 2, let a = Self.minute(parts[0].trimmed), let b = Self.minute(parts[1].trimmed), a != b else {
            throw ConfigValueError("expected HH:MM-HH:MM like 09:00-21:00 (two different times, 24-hour clock), got \(ConfigValue.shown(s))")
        }
        self.init(start: a, end: b)
    }

    static func minute(_ s: String) -> Int? {
        let p = s.split(separator: ":", omittingEmptySubsequences: false)
        guard p.count == 2, (1...2).contains(p[0].count), p[1].count == 2,
              let h = Int(p[0]), let m = Int(p[1]), (0...24).contains(h), (0...59).contains(m), h * 60 + m <= 1440 else { return nil }
        return h * 60 + m
    }

    /// Whether `minute` (0..<1440, local) lies in the window.
    public func contains(minute: Int) -> Bool {
        start < end ? (minute >= start && minute < end) : (minute >= start || minute < end)
    }

    /// Seconds from `minute`+`second` until the window's state next changes (for the scheduler).
    public func secondsToNextChange(minute: Int, second: Int) -> Int {
        let now = minute * 60 + second
        let edges = [start * 60, end * 60].map { e in (e - now + 86400) % 86400 }.map { $0 == 0 ? 86400 : $0 }
        return edges.min()!
    }

    public var description: String {
        func f(_ m: Int) -> String {
            let h = m / 60, mm = m % 60
            return (h < 10 ? "0" : "") + "\(h):" + (mm < 10 ? "0" : "") + "\(mm)"
        }
        return f(start) + "-" + f(end)
    }
}

/// Whether music may play now: the hours rule and the clock rule together.
public enum MusicSchedule {
    public enum Verdict: Sendable, Equatable {
        case play
        case outsideHours
        case clockNotSynchronized
    }

    public static func verdict(hours: DailyHours?, localMinute: Int, clockSynchronized: Bool) -> Verdict {
        guard let hours else { return .play }
        guard clockSynchronized else { return .clockNotSynchronized }
        return hours.contains(minute: localMinute) ? .play : .outsideHours
    }
}
