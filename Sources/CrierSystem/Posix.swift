import CrierCore
import CrierPosix
import Glibc

enum Posix {
    /// A unix socket address for `path`; a leading "@" names an abstract socket.
    static func unixAddress(_ path: String) -> (sockaddr_un, socklen_t)? {
        var addr = sockaddr_un()
        addr.sun_family = sa_family_t(AF_UNIX)
        var bytes = Array(path.utf8)
        let abstract = bytes.first == UInt8(ascii: "@")
        if abstract { bytes[0] = 0 }
        let capacity = MemoryLayout.size(ofValue: addr.sun_path)
        guard !bytes.isEmpty, bytes.count < capacity else { return nil }
        withUnsafeMutableBytes(of: &addr.sun_path) { p in
            p.copyBytes(from: bytes)
            if !abstract { p[bytes.count] = 0 }
        }
        let base = MemoryLayout<sockaddr_un>.offset(of: \.sun_path)!
        // Abstract names are exactly their bytes long; paths include the terminating NUL.
        let len = base + bytes.count + (abstract ? 0 : 1)
        return (addr, socklen_t(len))
    }
}
