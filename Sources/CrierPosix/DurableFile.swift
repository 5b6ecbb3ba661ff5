import Glibc

extension FileIO {
    /// Replaces the file so that a power cut at any moment leaves either the old or the new
    /// content, never a torn one: PATH.tmp written and fsynced, renamed over PATH, then the
    /// directory fsynced so the rename itself is on the card.
    public static func writeDurably(_ path: String, _ bytes: [UInt8]) throws(SystemError) {
        let tmp = path + ".tmp"
        let fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw SystemError("open", path: tmp) }
        guard writeAll(fd, bytes) else {
            let e = errno
            close(fd)
            unlink(tmp)
            throw SystemError("write", path: tmp, code: e)
        }
        guard fsync(fd) == 0 else {
            let e = errno
            close(fd)
            unlink(tmp)
            throw SystemError("fsync", path: tmp, code: e)
        }
        close(fd)
        guard rename(tmp, path) == 0 else {
            let e = errno
            unlink(tmp)
            throw SystemError("rename", path: path, code: e)
        }
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
