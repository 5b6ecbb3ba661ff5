import CrierCore
import CrierPosix
import Glibc

/// Reads crier.conf from disk. A missing or unreadable file is not fatal: the box must come up
/// and speak with defaults, saying clearly in the log why.
public enum ConfigLoader {
    public struct Loaded: Sendable {
        public var config: CrierConfig
        public var path: String
        public var fileFound: Bool
        public var diagnostics: [ConfigDiagnostic]
        public var errors: [ConfigDiagnostic] { diagnostics.filter { $0.severity == .error } }
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

    /// `required`: the user named the file; then a missing file is an error, not a default.
    public static func load(path: String, required: Bool) throws(LoadError) -> Loaded {
        let name = path.split(separator: "/").last.map(String.init) ?? path
        guard FileIO.exists(path) else {
            if required { throw .unreadable(path: path, reason: "no such file") }
            return Loaded(config: CrierConfig(), path: path, fileFound: false, diagnostics: [])
        }
        let data: [UInt8]
        do {
            data = try FileIO.read(path, limit: 1 << 20)
        } catch {
            throw .unreadable(path: path, reason: error.code == EFBIG ? "larger than 1 MiB, not a crier.conf" : errnoText(error.code))
        }
        guard let text = String(validating: data, as: UTF8.self) else { throw .notUTF8(path: path) }
        let r = ConfigParser().parse(text, file: name)
        return Loaded(config: r.config, path: path, fileFound: true, diagnostics: r.diagnostics)
    }
}
