import Glibc

extension FileIO {
    /// Replaces the file so that a power cut at any moment leaves either the old or the new
    /// content, never a torn one: PATH.tmp written and fsynced, renamed over PATH, then the
    /// directory fsynced so the rename itself is on the card.
    public static func writeDurably(_ path: String, _ bytes: [UInt8]) throws(SystemError) {
        try replace(path, bytes, mode: 0o600, sync: true)
        let dir = directory(of: path)
        let dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        if dfd >= 0 {
            _ = fsync(dfd)
            close(dfd)
        }
    }

    /// "/var/lib/crier" for "/var/lib/crier/acks"; "." for a bare name.
    public static func directory(of path: String) -> String {
        guard let slash = path.lastIndex(of: "/") else { return "." }
        return slash == path.startIndex ? "/" : String(path[..<slash])
    }
}
