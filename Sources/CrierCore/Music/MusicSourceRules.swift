/// The rules the music thread follows when its source misbehaves (issue 31): how fast it may
/// open files, how long it waits after a round that played nothing, which broken files it
/// does not open again, what it says about a file that will not play, and when it gives up a
/// radio connection that sends no audio. Pure: every time is passed in (monotonic seconds).

/// At most `burst` files played at once, then `perSecond` a second (a token bucket, asked after
/// each file that played): a folder of hundreds of 10 ms or one-frame files plays 1 a second
/// after the first 10, not as fast as the disk allows (a core at 100 %, a `playing` line
/// each). A file that plays for a second or longer has paid for itself by the time it ends,
/// so real music never waits.
public struct MusicOpenPacer: Sendable, Equatable {
    public let burst: Double
    public let perSecond: Double
    var tokens: Double
    var last: Double?

    public init(burst: Int = 10, perSecond: Double = 1) {
        self.burst = Double(max(1, burst))
        self.perSecond = max(0.01, perSecond)
        tokens = self.burst
    }

    /// Seconds to wait before the next file may be opened; 0: open it now (the open is counted).
    public mutating func delay(now: Double) -> Double {
        if let l = last, now > l { tokens = min(burst, tokens + (now - l) * perSecond) }
        last = max(last ?? now, now)
        if tokens >= 1 {
            tokens -= 1
            return 0
        }
        return (1 - tokens) / perSecond
    }
}

/// The wait after a round (a directory or list read once through) in which no file played:
/// 5 s, then 10, 20, 40 and 60 s at most, back to 5 s once a round plays. A folder where every
/// file is broken costs a directory read and a stat per file once a minute.
public struct MusicRoundBackoff: Sendable, Equatable {
    public static let first = 5.0
    public static let limit = 60.0
    var wait = DoublingWait(first: MusicRoundBackoff.first, limit: MusicRoundBackoff.limit)
    public var next: Double { wait.next }

    public init() {}

    /// The pause after a round; 0 when it played something.
    public mutating func roundEnded(played: Bool) -> Double {
        guard !played else {
            wait.reset()
            return 0
        }
        return wait.take()
    }
}

/// A wait that doubles each time it is taken, from `first` up to `limit`, and starts again at
/// `first` on `reset` (the music's rounds and radio reconnects: each says when to reset).
struct DoublingWait: Sendable, Equatable {
    let first: Double
    let limit: Double
    private(set) var next: Double

    init(first: Double, limit: Double) {
        self.first = first
        self.limit = limit
        next = first
    }

    mutating func reset() { next = first }

    mutating func take() -> Double {
        defer { next = min(limit, next * 2) }
        return next
    }
}

/// Files that failed, by path, with what they were (size, modification time): not opened
/// again, and not reported again, until they change. Bounded: the oldest entry goes first.
public struct BrokenMusicFiles: Sendable, Equatable {
    public struct Signature: Sendable, Equatable, Hashable {
        public var size: Int64
        public var modified: Int64
        public init(size: Int64, modified: Int64) {
            self.size = size
            self.modified = modified
        }
    }
    public let capacity: Int
    var known: [String: Signature] = [:]
    var order: [String] = []

    public init(capacity: Int = 4096) { self.capacity = max(1, capacity) }

    /// True when `path` failed before and has not changed since.
    public func isKnownBroken(_ path: String, _ signature: Signature) -> Bool { known[path] == signature }

    /// Remembers a failure; true when it is news (never seen, or the file changed): log it.
    @discardableResult
    public mutating func remember(_ path: String, _ signature: Signature) -> Bool {
        if let s = known[path] {
            known[path] = signature
            return s != signature
        }
        if known.count >= capacity, !order.isEmpty {
            known[order.removeFirst()] = nil
        }
        known[path] = signature
        order.append(path)
        return true
    }

    /// A file that played (or was fixed): forgotten.
    public mutating func forget(_ path: String) {
        guard known.removeValue(forKey: path) != nil else { return }
        order.removeAll { $0 == path }
    }

    public var count: Int { known.count }
}

/// What is wrong with a music file that would not open, said the way a shop owner can act on
/// it. libsndfile reports every file it cannot identify as "File does not exist or is not a
/// regular file (possibly a pipe?)", which points the wrong way for an empty or a text file.
public enum MusicFileProblem {
    public enum Kind: Sendable, Equatable {
        case regular, fifo, directory, device, socket, other
    }

    /// Before opening: only regular files are read (a FIFO would block the decoder).
    public static func notAFile(_ kind: Kind, path: String) -> String? {
        switch kind {
        case .regular: nil
        case .fifo: "it is a FIFO, not a file; to play raw PCM that a player writes into a FIFO set music.source = fifo:\(path) (and music.fifo_format)"
        case .directory: "it is a directory inside the music source; only files are played from it (subdirectories are not read)"
        case .device: "it is a device, not a file"
        case .socket: "it is a socket, not a file"
        case .other: "it is not a regular file"
        }
    }

    /// The reason, when a file's size or first bytes already say it is no audio (empty, text,
    /// a document, a picture, an archive: no audio format starts like that), so the decoder is
    /// not even asked (libsndfile's MP3 probe writes its own notes to stderr for each).
    public static func obviouslyNotAudio(size: Int64, head: [UInt8]) -> String? {
        let why = describe(size: size, head: head, library: "")
        return why.hasPrefix("not a format the decoder knows") ? nil : why
    }

    /// The reason for a regular file the library could not open: `size` bytes, `head` its
    /// first bytes (up to 512), `library` the decoder's own message.
    public static func describe(size: Int64, head: [UInt8], library: String) -> String {
        if size == 0 { return "the file is empty (0 bytes); copy it again" }
        let h = head.prefix(512)
        func starts(_ s: [UInt8]) -> Bool { h.starts(with: s) }
        if starts([0x25, 0x50, 0x44, 0x46]) { return "it is a PDF document, not audio" }
        if starts([0x89, 0x50, 0x4E, 0x47]) { return "it is a PNG picture, not audio" }
        if starts([0xFF, 0xD8, 0xFF]) { return "it is a JPEG picture, not audio" }
        if starts(Array("GIF8".utf8)) { return "it is a GIF picture, not audio" }
        if starts([0x50, 0x4B, 0x03, 0x04]) { return "it is a ZIP archive (or an Office document), not audio; unpack it" }
        if let text = textStart(h) {
            let l = text.lowercased()
            let what = l.hasPrefix("<!doctype html") || l.hasPrefix("<html") ? "an HTML page (a download that saved the web page instead of the file?)"
                : l.hasPrefix("#extm3u") ? "a playlist; name it .m3u" : "text"
            return "it is \(what), not audio (it starts with \"\(String(text.prefix(40)))\")"
        }
        let hex = h.prefix(8).map { b -> String in
            let s = String(b, radix: 16)
            return s.count == 1 ? "0" + s : s
        }.joined(separator: " ")
        let lib = library.isEmpty || library.contains("possibly a pipe") ? "" : "; the decoder says: \(library)"
        return "not a format the decoder knows (WAV, FLAC, Ogg Vorbis, Opus, MP3, AIFF): it starts with bytes \(hex)\(lib); the file may be damaged or of another kind"
    }

    /// The file's start as text when it is (printable UTF-8, tabs and line ends; a BOM
    /// skipped): the first line, trimmed. nil for binary data.
    static func textStart(_ h: ArraySlice<UInt8>) -> String? {
        var b = Array(h)
        if b.starts(with: [0xEF, 0xBB, 0xBF]) { b.removeFirst(3) }
        guard !b.isEmpty else { return nil }
        for c in b where (c < 0x20 && c != 0x09 && c != 0x0A && c != 0x0D) || c == 0x7F { return nil }
        // Valid UTF-8, allowing for a character cut off at the end of the sample.
        for cut in 0...min(3, b.count - 1) {
            let s = String(decoding: b[..<(b.count - cut)], as: UTF8.self)
            guard !s.unicodeScalars.contains("\u{FFFD}") else { continue }
            let first = s.split(whereSeparator: { $0.isNewline }).first.map { String($0).trimmed } ?? ""
            return first.isEmpty ? String(s.trimmed) : first
        }
        return nil
    }
}

/// When a radio connection is given up (issue 31: a URL that streams random bytes downloaded
/// 40 MB in 30 s in state `connecting`, silent; a server trickling a byte a second stayed
/// `connecting` for ever). Counted over the audio bytes handed to the decoder (ICY metadata
/// already stripped):
///
/// - **undecodable**: the bytes received exceed what the decoded audio accounts for (48 KB a
///   second of audio: 320 kbit/s MP3 with room to spare) by more than `junkBytes`;
/// - **no audio**: nothing decoded within `firstAudioSeconds` of connecting;
/// - **audio stopped**: nothing decoded for `audioStallSeconds` after audio had started (bytes
///   may still trickle in: the byte-level stall check alone does not see it).
public struct StreamWatch: Sendable, Equatable {
    public struct Limits: Sendable, Equatable {
        public var junkBytes: Int
        public var firstAudioSeconds: Double
        public var audioStallSeconds: Double
        /// Bytes one second of decoded audio accounts for.
        public var bytesPerAudioSecond: Double

        public init(junkBytes: Int = 1 << 20, firstAudioSeconds: Double = 15, audioStallSeconds: Double = 10, bytesPerAudioSecond: Double = 48_000) {
            self.junkBytes = junkBytes
            self.firstAudioSeconds = firstAudioSeconds
            self.audioStallSeconds = audioStallSeconds
            self.bytesPerAudioSecond = bytesPerAudioSecond
        }
    }

    public enum Verdict: Sendable, Equatable {
        case fine
        /// `bytes` received in all, `audio` seconds decoded from them.
        case undecodable(bytes: Int, audio: Double)
        case noAudio(seconds: Double, bytes: Int)
        case audioStopped(seconds: Double, bytes: Int)
    }

    public let limits: Limits
    public let connectedAt: Double
    public private(set) var bytes = 0
    public private(set) var audioSeconds = 0.0
    public private(set) var lastAudio: Double?
    var debt = 0.0
    var bytesAtLastAudio = 0

    public init(limits: Limits, now: Double) {
        self.limits = limits
        connectedAt = now
    }

    public var playing: Bool { lastAudio != nil }

    public mutating func received(_ n: Int) {
        bytes += n
        debt += Double(n)
    }

    public mutating func decoded(seconds: Double, now: Double) {
        guard seconds > 0 else { return }
        audioSeconds += seconds
        debt = max(0, debt - seconds * limits.bytesPerAudioSecond)
        lastAudio = now
        bytesAtLastAudio = bytes
    }

    public func check(now: Double) -> Verdict {
        if debt > Double(limits.junkBytes) { return .undecodable(bytes: bytes, audio: audioSeconds) }
        if let l = lastAudio {
            if now - l >= limits.audioStallSeconds { return .audioStopped(seconds: now - l, bytes: bytes - bytesAtLastAudio) }
        } else if now - connectedAt >= limits.firstAudioSeconds {
            return .noAudio(seconds: now - connectedAt, bytes: bytes)
        }
        return .fine
    }

    /// The log's wording for a verdict (`contentType`: the server's, when it sent one).
    public static func reason(_ v: Verdict, contentType: String?) -> String? {
        let ct = contentType.map { " (Content-Type: \($0))" } ?? ""
        switch v {
        case .fine:
            return nil
        case .undecodable(let b, let a):
            return "the server sent \(kib(b)) that do not decode as MP3\(ct)\(a > 0 ? " (\(Format.fixed(a, 1)) s of audio among them)" : ""); is the URL an MP3 stream?"
        case .noAudio(let s, let b):
            return b == 0 ? "no audio \(Int(s.rounded())) s after connecting (the server sent nothing)"
                : "no audio \(Int(s.rounded())) s after connecting (\(kib(b)) received\(ct): too slow or not MP3)"
        case .audioStopped(let s, let b):
            return "no audio for \(Int(s.rounded())) s (\(kib(b)) received meanwhile: the stream trickles or stopped being MP3)"
        }
    }

    static func kib(_ b: Int) -> String { b < 1024 ? "\(b) bytes" : "\(b / 1024) KiB" }
}

/// Waits between radio connections: 1, 2, 4 … 30 s, back to 1 s once a connection has played
/// audio for 30 s.
public struct StreamBackoff: Sendable, Equatable {
    public static let first = 1.0
    public static let limit = 30.0
    public static let resetAfter = 30.0
    var wait = DoublingWait(first: StreamBackoff.first, limit: StreamBackoff.limit)
    public var next: Double { wait.next }

    public init() {}

    /// The wait after a connection that played audio for `played` seconds.
    public mutating func failed(played: Double) -> Double {
        if played >= Self.resetAfter { wait.reset() }
        return wait.take()
    }
}
