/// Which music files play, in which order: a directory's music files by name, or an .m3u's
/// entries in list order; shuffled anew each round when asked; looping.
public struct Playlist: Sendable, Equatable {
    public static let extensions: Set<String> = ["mp3", "ogg", "oga", "opus", "flac", "wav", "wave", "aif", "aiff"]

    public static func isMusic(_ name: String) -> Bool {
        guard !name.hasPrefix("."), let dot = name.lastIndex(of: ".") else { return false }
        return extensions.contains(name[name.index(after: dot)...].lowercased())
    }

    public static func isList(_ path: String) -> Bool {
        let l = path.lowercased()
        return l.hasSuffix(".m3u") || l.hasSuffix(".m3u8")
    }

    /// The entries of an .m3u/.m3u8 (comments and `#EXT` lines skipped, relative entries taken
    /// from the list's directory, a BOM and CRLF tolerated). URLs are returned apart: a list of
    /// radio streams is not a list of files.
    public static func parseM3U(_ text: String, directory: String) -> (files: [String], urls: [String]) {
        var files: [String] = [], urls: [String] = []
        var t = Substring(text)
        if t.hasPrefix("\u{FEFF}") { t = t.dropFirst() }
        for raw in t.split(whereSeparator: { $0 == "\n" || $0 == "\r\n" || $0 == "\r" }) {
            let line = raw.trimmed
            if line.isEmpty || line.hasPrefix("#") { continue }
            let l = line.lowercased()
            if l.hasPrefix("http://") || l.hasPrefix("https://") { urls.append(line); continue }
            if l.hasPrefix("file://") { files.append(String(line.dropFirst(7))); continue }
            files.append(line.hasPrefix("/") ? line : (directory.hasSuffix("/") ? directory : directory + "/") + line)
        }
        return (files, urls)
    }

    public var items: [String]
    public let shuffle: Bool
    var rng: UInt64
    public private(set) var index = 0
    public private(set) var round = 0

    public init(items: [String], shuffle: Bool, seed: UInt64) {
        self.items = items
        self.shuffle = shuffle
        rng = seed
        if shuffle { reshuffle() }
    }

    mutating func random() -> UInt64 {
        rng &+= 0x9E37_79B9_7F4A_7C15
        var z = rng
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    mutating func reshuffle() {
        guard items.count > 1 else { return }
        let last = items.last
        for i in stride(from: items.count - 1, to: 0, by: -1) {
            items.swapAt(i, Int(random() % UInt64(i + 1)))
        }
        // The track that ended a round does not start the next one.
        if items.first == last { items.swapAt(0, items.count - 1) }
    }

    /// The next file; nil when the list is empty. After the last, the next round begins.
    public mutating func next() -> String? {
        guard !items.isEmpty else { return nil }
        if index >= items.count {
            index = 0
            round += 1
            if shuffle { reshuffle() }
        }
        defer { index += 1 }
        return items[index]
    }
}

/// Separates ICY (SHOUTcast/Icecast) metadata from the audio bytes of a stream: after every
/// `metaint` audio bytes comes one length byte (×16) and that much metadata, e.g.
/// `StreamTitle='Artist - Song';`. Only audio reaches the decoder, so a title change is no
/// glitch in the sound.
public struct IcyDemux: Sendable {
    public let metaint: Int
    var untilMeta: Int
    var metaLeft = -1
    var meta: [UInt8] = []

    /// `metaint` 0: the server sent no `icy-metaint`, everything is audio.
    public init(metaint: Int) {
        self.metaint = max(0, metaint)
        untilMeta = self.metaint
    }

    /// Feeds received bytes; `audio` gets the audio runs; returns titles that arrived.
    public mutating func feed(_ bytes: UnsafeBufferPointer<UInt8>, audio: (UnsafeBufferPointer<UInt8>) -> Void) -> [String] {
        guard metaint > 0 else {
            audio(bytes)
            return []
        }
        var titles: [String] = []
        var i = 0
        while i < bytes.count {
            if metaLeft < 0 && untilMeta > 0 {
                let n = min(untilMeta, bytes.count - i)
                audio(UnsafeBufferPointer(rebasing: bytes[i..<(i + n)]))
                untilMeta -= n
                i += n
            } else if metaLeft < 0 {
                metaLeft = Int(bytes[i]) * 16
                i += 1
                meta = []
                if metaLeft == 0 { metaLeft = -1; untilMeta = metaint }
            } else {
                let n = min(metaLeft, bytes.count - i)
                meta += bytes[i..<(i + n)]
                metaLeft -= n
                i += n
                if metaLeft == 0 {
                    metaLeft = -1
                    untilMeta = metaint
                    if let t = Self.title(in: meta) { titles.append(t) }
                }
            }
        }
        return titles
    }

    /// `StreamTitle='…';` from a metadata block (NUL padding and invalid UTF-8 tolerated).
    public static func title(in block: [UInt8]) -> String? {
        let text = String(decoding: block.prefix { $0 != 0 }, as: UTF8.self)
        guard let r = text.firstRange(of: "StreamTitle='") else { return nil }
        let rest = text[r.upperBound...]
        let end = rest.firstRange(of: "';")?.lowerBound ?? rest.lastIndex(of: "'") ?? rest.endIndex
        let t = String(rest[..<end]).filter { !$0.isASCII || ($0.asciiValue! >= 0x20 && $0.asciiValue! != 0x7f) }
        return String(t.prefix(200))
    }
}
