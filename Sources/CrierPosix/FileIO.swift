import Glibc

/// Whole-file and stderr I/O on plain fds.
public enum FileIO {
    /// The whole buffer to a blocking fd, retrying short writes and EINTR.
    @discardableResult
    public static func writeAll(_ fd: Int32, _ bytes: some Collection<UInt8>) -> Bool {
        let bytes = Array(bytes)
        return bytes.withUnsafeBytes { buf in
            var off = 0
            while off < buf.count {
                let n = Glibc.write(fd, buf.baseAddress! + off, buf.count - off)
                if n > 0 { off += n } else if n < 0 && errno == EINTR { continue } else { return false }
            }
            return true
        }
    }

    /// One line of text to stderr (for the commands' messages to a person at a terminal).
    public static func stderr(_ text: String) {
        writeAll(2, Array(text.utf8))
    }

    public static func exists(_ path: String) -> Bool {
        access(path, F_OK) == 0
    }

    /// What an unprivileged writer may still use on the file system of `dir` (`f_bavail`, not
    /// root's share), and its block size; nil when statvfs fails.
    public static func freeSpace(_ dir: String) -> (bytes: Int64, block: Int64)? {
        var s = statvfs()
        guard statvfs(dir.isEmpty ? "/" : dir, &s) == 0 else { return nil }
        return (Int64(s.f_bavail) * Int64(s.f_frsize), Int64(s.f_frsize))
    }

    /// The whole file, or why not. Refuses more than `limit` bytes (a config on a FAT card
    /// should never be a disk image someone dropped there by mistake).
    public static func read(_ path: String, limit: Int = 16 << 20) throws(SystemError) -> [UInt8] {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw SystemError("open", path: path) }
        defer { close(fd) }
        var out: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65536)
        while true {
            let n = chunk.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
            if n < 0 {
                if errno == EINTR { continue }
                throw SystemError("read", path: path)
            }
            if n == 0 { return out }
            out.append(contentsOf: chunk[0..<n])
            if out.count > limit { throw SystemError("read", path: path, code: EFBIG) }
        }
    }

    /// Writes the file whole: to PATH.tmp, then renamed over PATH, so a reader (or a power
    /// cut) never sees half of it. A path that exists and is not a regular file (/dev/stdout, a
    /// FIFO) is written directly.
    public static func write(_ path: String, _ bytes: [UInt8]) throws(SystemError) {
        var st = stat()
        if stat(path, &st) == 0 && (st.st_mode & S_IFMT) != S_IFREG {
            let fd = open(path, O_WRONLY | O_CLOEXEC)
            guard fd >= 0 else { throw SystemError("open", path: path) }
            defer { close(fd) }
            guard writeAll(fd, bytes) else { throw SystemError("write", path: path) }
            return
        }
        try replace(path, bytes, mode: 0o644, sync: false)
    }

    /// As `write`, readable by the owner only (0600): a file that holds a secret (the
    /// generated wpa_supplicant configuration has the Wi-Fi password).
    public static func writePrivate(_ path: String, _ bytes: [UInt8]) throws(SystemError) {
        unlink(path + ".tmp")  // a leftover would keep its own, maybe wider, mode
        try replace(path, bytes, mode: 0o600, sync: false)
    }

    /// PATH.tmp written (and fsynced when `sync`), then renamed over PATH; the temporary file
    /// is removed on any failure. The one copy of this for `write` and `writeDurably`.
    static func replace(_ path: String, _ bytes: [UInt8], mode: mode_t, sync: Bool) throws(SystemError) {
        let tmp = path + ".tmp"
        let fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode)
        guard fd >= 0 else { throw SystemError("open", path: tmp) }
        guard writeAll(fd, bytes) else {
            let e = errno
            close(fd)
            unlink(tmp)
            throw SystemError("write", path: tmp, code: e)
        }
        if sync && fsync(fd) != 0 {
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
    }

    public static func currentDirectory() -> String {
        var buf = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
        guard getcwd(&buf, buf.count) != nil else { return "." }
        return String(decoding: buf.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// $TMPDIR (or /tmp), ending in "/".
    public static func temporaryDirectory() -> String {
        let d = env("TMPDIR").flatMap { $0.isEmpty ? nil : $0 } ?? "/tmp"
        return d.hasSuffix("/") ? d : d + "/"
    }

    public static func env(_ name: String) -> String? {
        getenv(name).map { String(cString: $0) }
    }
}
