import CrierCore
import CrierPosix
import Glibc

/// A failed state-file operation, with the file and the system's reason.
public struct StateFileError: Error, Sendable, Equatable, CustomStringConvertible {
    public var operation: String
    public var path: String
    public var errno: Int32

    public var description: String { "\(operation) \(path): \(errnoText(errno))" }
}

/// `state.path`: volume and mute across power loss.
///
/// Save is atomic: write `PATH.tmp`, fsync it, rename it over `PATH`, fsync the directory. A
/// power cut at any moment leaves either the old file or the new one (plus maybe a stale
/// `.tmp`, ignored and replaced next time). Load never fails the box: a missing file means
/// first start, a damaged one is logged, kept as `PATH.bad` for inspection, and the defaults
/// are used.
public struct StateFile: Sendable {
    public let path: String
    public var tempPath: String { path + ".tmp" }
    public var badPath: String { path + ".bad" }
    /// A state file is a few dozen bytes; anything much larger is not ours.
    static let maxSize = 4096

    public init(path: String) { self.path = path }

    public enum LoadResult: Sendable, Equatable {
        case missing
        case loaded(ControlState)
        case damaged(ControlStateError)
        case unreadable(StateFileError)
    }

    /// The saved state, or nil (defaults) with the reason logged.
    public func load(log: Logger) -> ControlState? {
        switch read() {
        case .loaded(let s):
            log.info("state: loaded \(path)", ["volume": s.volume, "muted": s.muted])
            return s
        case .missing:
            log.notice("state: no saved state at \(path) (first start?); using the defaults")
        case .damaged(let e):
            let kept = rename(path, badPath) == 0 ? "; the damaged file is kept as \(badPath)" : ""
            log.error("state: \(path) is unusable: \(e); using the defaults\(kept)")
        case .unreadable(let e):
            log.error("state: cannot read saved state: \(e); using the defaults")
        }
        return nil
    }

    public func read() -> LoadResult {
        if access(tempPath, F_OK) == 0 { unlink(tempPath) }  // an interrupted save: never used
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else {
            return errno == ENOENT ? .missing : .unreadable(StateFileError(operation: "opening", path: path, errno: errno))
        }
        defer { close(fd) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 1024)
        while bytes.count <= Self.maxSize {
            let n = Glibc.read(fd, &chunk, chunk.count)
            if n < 0 {
                if errno == EINTR { continue }
                return .unreadable(StateFileError(operation: "reading", path: path, errno: errno))
            }
            if n == 0 { break }
            bytes += chunk[..<n]
        }
        if bytes.count > Self.maxSize { return .damaged(.notAStateFile) }
        do throws(ControlStateError) {
            return .loaded(try ControlStateCodec.decode(bytes))
        } catch {
            return .damaged(error)
        }
    }

    /// Writes the state atomically (see the type's documentation). Creates the directory if
    /// it is missing.
    public func save(_ state: ControlState) throws(StateFileError) {
        try save(bytes: Array(ControlStateCodec.encode(state).utf8))
    }

    func save(bytes: [UInt8]) throws(StateFileError) {
        let dir = Self.directory(of: path)
        try Self.makeDirectories(dir)
        let fd = open(tempPath, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw StateFileError(operation: "creating", path: tempPath, errno: errno) }
        var off = 0
        while off < bytes.count {
            let n = bytes[off...].withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
            if n < 0 {
                if errno == EINTR { continue }
                let e = errno
                close(fd)
                unlink(tempPath)
                throw StateFileError(operation: "writing", path: tempPath, errno: e)
            }
            off += n
        }
        if fsync(fd) != 0 {
            let e = errno
            close(fd)
            unlink(tempPath)
            throw StateFileError(operation: "syncing", path: tempPath, errno: e)
        }
        close(fd)
        guard rename(tempPath, path) == 0 else {
            let e = errno
            unlink(tempPath)
            throw StateFileError(operation: "renaming \(tempPath) to", path: path, errno: e)
        }
        let dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard dfd >= 0 else { throw StateFileError(operation: "opening directory", path: dir, errno: errno) }
        defer { close(dfd) }
        if fsync(dfd) != 0 { throw StateFileError(operation: "syncing directory", path: dir, errno: errno) }
    }

    static func directory(of path: String) -> String {
        guard let slash = path.lastIndex(of: "/") else { return "." }
        return slash == path.startIndex ? "/" : String(path[..<slash])
    }

    static func makeDirectories(_ dir: String) throws(StateFileError) {
        var st = stat()
        if stat(dir, &st) == 0 { return }
        let parent = directory(of: dir)
        if parent != dir { try makeDirectories(parent) }
        if mkdir(dir, 0o755) != 0 && errno != EEXIST {
            throw StateFileError(operation: "creating directory", path: dir, errno: errno)
        }
    }
}
