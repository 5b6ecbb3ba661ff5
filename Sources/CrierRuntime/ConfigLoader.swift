import CrierCore
import CrierPosix
import Glibc

/// Reads crier.conf from disk. A missing or unreadable file is not fatal: the box must come up
/// and speak with defaults, saying clearly in the log why.
///
/// `effective` is the one path from a file name to the configuration that runs: the daemon
/// starts with it, `crier check-config` prints it, and a reload validates with it, so what
/// check-config shows is exactly what the box uses.
public enum ConfigLoader {
    public struct Loaded: Sendable {
        public var config: CrierConfig
        public var path: String
        public var fileFound: Bool
        public var diagnostics: [ConfigDiagnostic]
        public var errors: [ConfigDiagnostic] { diagnostics.filter { $0.severity == .error } }
        public var warnings: [ConfigDiagnostic] { diagnostics.filter { $0.severity == .warning } }
        /// Names the effective configuration (secrets excluded: they render as `(set)`); the
        /// daemon logs it at start and check-config prints it, so the two can be compared.
        public var digest: String { ConfigLoader.digest(config) }
    }

    public enum LoadError: Error, CustomStringConvertible {
        case unreadable(path: String, reason: String)
        case notUTF8(path: String)
        public var description: String {
            switch self {
            case .unreadable(let p, let r): "cannot read \(p): \(r)"
            case .notUTF8(let p): "\(p) is not UTF-8 text; save it as UTF-8 (any editor offers it)"
            }
        }
    }

    /// Anything larger is not a crier.conf (a disk image or a log dropped on the card by mistake).
    public static let maxBytes = 1 << 20

    /// `required`: the user named the file; then a missing file is an error, not a default.
    /// Lines that are not UTF-8 are diagnostics of their own (the rest of the file still
    /// counts); what throws is a file that cannot be read at all.
    public static func load(path: String, required: Bool) throws(LoadError) -> Loaded {
        let name = path.split(separator: "/").last.map(String.init) ?? path
        var st = stat()
        guard stat(path, &st) == 0 else {
            let e = errno
            if e == ENOENT && !required { return Loaded(config: CrierConfig(), path: path, fileFound: false, diagnostics: []) }
            throw .unreadable(path: path, reason: e == ENOENT ? "no such file" : errnoText(e))
        }
        // Checked before open(): opening a FIFO with no writer would block the daemon forever.
        switch st.st_mode & S_IFMT {
        case S_IFREG: break
        case S_IFDIR: throw .unreadable(path: path, reason: "it is a directory, not a file")
        default: throw .unreadable(path: path, reason: "it is not a regular file (a FIFO, socket or device); crier.conf must be a plain text file")
        }
        guard Int(st.st_size) <= maxBytes else {
            throw .unreadable(path: path, reason: "it is \(st.st_size) bytes; a crier.conf is a few KiB (at most \(maxBytes) bytes are read)")
        }
        let data: [UInt8]
        do {
            data = try FileIO.read(path, limit: maxBytes)
        } catch {
            throw .unreadable(path: path, reason: error.code == EFBIG ? "larger than \(maxBytes) bytes, not a crier.conf" : errnoText(error.code))
        }
        let r = ConfigParser().parse(bytes: data, file: name)
        return Loaded(config: r.config, path: path, fileFound: true, diagnostics: r.diagnostics)
    }

    /// What runs: `load`, or, when the file cannot be read at all, the defaults with one error
    /// (line 0: the whole file) saying why. Never fails.
    public static func effective(path: String, required: Bool) -> Loaded {
        do {
            return try load(path: path, required: required)
        } catch {
            let name = path.split(separator: "/").last.map(String.init) ?? path
            return Loaded(config: CrierConfig(), path: path, fileFound: false, diagnostics: [
                ConfigDiagnostic(file: name, line: 0, key: nil, message: "\(error); using the defaults for every key", severity: .error),
            ])
        }
    }

    /// FNV-1a (64 bit) of the rendered configuration, as 16 hex digits.
    public static func digest(_ config: CrierConfig) -> String {
        var h: UInt64 = 0xcbf2_9ce4_8422_2325
        for b in config.rendered().utf8 {
            h ^= UInt64(b)
            h = h &* 0x0000_0100_0000_01b3
        }
        var s = String(h, radix: 16)
        while s.utf8.count < 16 { s = "0" + s }
        return s
    }
}
