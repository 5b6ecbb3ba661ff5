/// What survives a power cut: volume and mute. Mute keeps the wall time it began so the
/// `mute.max_minutes` limit still holds across a restart.
public struct ControlState: Sendable, Equatable, CustomStringConvertible {
    public var volume: Int
    public var muted: Bool
    /// When mute began (wall clock); nil when not muted.
    public var mutedSince: WallTime?

    public init(volume: Int, muted: Bool = false, mutedSince: WallTime? = nil) {
        self.volume = volume
        self.muted = muted
        self.mutedSince = muted ? mutedSince : nil
    }

    public var description: String {
        "volume=\(volume) muted=\(muted)" + (mutedSince.map { " since=\($0.iso8601)" } ?? "")
    }
}

/// Why a state file was not usable. Every case means "use the defaults"; the text says why.
public enum ControlStateError: Error, Sendable, Equatable, CustomStringConvertible {
    case empty
    case notAStateFile
    case unsupportedVersion(String)
    /// No checksum line at the end: the write was cut short.
    case truncated
    case checksumMismatch(stored: String, computed: String)
    case missingField(String)
    case badField(String, String)

    public var description: String {
        switch self {
        case .empty: "the file is empty"
        case .notAStateFile: "not a crier state file (first line is not \"crier-state VERSION\")"
        case .unsupportedVersion(let v): "unsupported state version \"\(v)\" (this build reads 1)"
        case .truncated: "the file is truncated (no checksum line)"
        case .checksumMismatch(let s, let c): "checksum mismatch (stored \(s), computed \(c)): the file is damaged"
        case .missingField(let f): "field \(f) is missing"
        case .badField(let f, let v): "field \(f) has a bad value \"\(v)\""
        }
    }
}

/// The state file's text format, version 1:
///
///     crier-state 1
///     volume=7
///     muted=1
///     muted_since=1764489600000
///     crc32=e4e55d65
///
/// `crc32` is the CRC-32 (IEEE) of every byte before the `crc32=` line, in lowercase hex. A
/// file cut anywhere loses (or breaks) that last line, so a partial write is always detected.
public enum ControlStateCodec {
    public static let version = 1

    public static func encode(_ s: ControlState) -> String {
        var body = "crier-state \(version)\n"
        body += "volume=\(s.volume)\n"
        body += "muted=\(s.muted ? 1 : 0)\n"
        if s.muted, let since = s.mutedSince { body += "muted_since=\(since.unixMillis)\n" }
        return body + "crc32=\(hex(crc32(Array(body.utf8))))\n"
    }

    public static func decode(_ bytes: [UInt8]) throws(ControlStateError) -> ControlState {
        if bytes.isEmpty { throw .empty }
        guard let text = String(validating: bytes, as: UTF8.self) else { throw .notAStateFile }
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false)
        guard let first = lines.first, first.hasPrefix("crier-state ") else { throw .notAStateFile }
        let v = String(first.dropFirst("crier-state ".count))
        guard v == String(version) else { throw .unsupportedVersion(v) }
        // The checksum line must be the last, complete line.
        guard text.hasSuffix("\n"), lines.count >= 3, lines[lines.count - 2].hasPrefix("crc32=") else { throw .truncated }
        let crcLine = lines[lines.count - 2]
        let bodyLen = bytes.count - crcLine.utf8.count - 1
        let stored = String(crcLine.dropFirst("crc32=".count))
        let computed = hex(crc32(Array(bytes[..<bodyLen])))
        guard stored == computed else { throw .checksumMismatch(stored: stored, computed: computed) }

        var fields: [String: String] = [:]
        for l in lines.dropFirst().dropLast(2) {
            guard let eq = l.firstIndex(of: "=") else { throw .badField(String(l), "") }
            fields[String(l[..<eq])] = String(l[l.index(after: eq)...])
        }
        guard let vs = fields["volume"] else { throw .missingField("volume") }
        guard let volume = Int(vs), volume >= 0 else { throw .badField("volume", vs) }
        guard let ms = fields["muted"] else { throw .missingField("muted") }
        guard ms == "0" || ms == "1" else { throw .badField("muted", ms) }
        var since: WallTime?
        if let ss = fields["muted_since"] {
            guard let m = Int64(ss) else { throw .badField("muted_since", ss) }
            since = WallTime(unixMillis: m)
        }
        return ControlState(volume: volume, muted: ms == "1", mutedSince: since)
    }

    static func hex(_ v: UInt32) -> String {
        let s = String(v, radix: 16)
        return String(repeating: "0", count: 8 - s.count) + s
    }

    /// CRC-32/IEEE (as zlib), bitwise: the file is a few dozen bytes.
    public static func crc32(_ bytes: [UInt8]) -> UInt32 {
        var c: UInt32 = 0xFFFF_FFFF
        for b in bytes {
            c ^= UInt32(b)
            for _ in 0..<8 { c = (c & 1) != 0 ? (c >> 1) ^ 0xEDB8_8320 : c >> 1 }
        }
        return ~c
    }
}
