import CrierPosix
import Glibc

/// Where the control socket lives when crier.conf keeps the default `control.socket`.
///
/// Under systemd the unit creates /run/crier (RuntimeDirectory=crier). Started by hand, root
/// may create it; anyone else cannot, so the daemon binds under the user's own runtime
/// directory ($XDG_RUNTIME_DIR/crier) instead, and `crier status` / `crier say` look at both.
public enum ControlPath {
    public static let systemDirectory = "/run/crier"

    /// The paths a client tries, in order, for a configured path. Only the default path has a
    /// fallback: a path the integrator wrote is used as written.
    public static func candidates(configured: String, xdgRuntimeDir: String? = FileIO.env("XDG_RUNTIME_DIR")) -> [String] {
        guard configured == ControlServer.defaultPath else { return [configured] }
        var all = [configured]
        if let user = userPath(xdgRuntimeDir: xdgRuntimeDir), user != configured { all.append(user) }
        return all
    }

    /// $XDG_RUNTIME_DIR/crier/control.sock, when that variable names an absolute directory.
    public static func userPath(xdgRuntimeDir: String?) -> String? {
        guard let d = xdgRuntimeDir, d.hasPrefix("/") else { return nil }
        return (d.hasSuffix("/") ? String(d.dropLast()) : d) + "/crier/control.sock"
    }

    /// Creates the socket's directory when it is missing (0750: the socket's group may enter).
    /// Returns errno on failure, 0 on success or when it exists.
    static func ensureDirectory(of socketPath: String, mode: mode_t) -> Int32 {
        guard let slash = socketPath.lastIndex(of: "/"), slash != socketPath.startIndex else { return 0 }
        let dir = String(socketPath[..<slash])
        if mkdir(dir, mode) == 0 { return 0 }
        let e = errno
        if e == EEXIST { return 0 }
        if e == ENOENT {
            // $XDG_RUNTIME_DIR exists by definition; /run too. A missing grandparent is the
            // integrator's path: create one more level at most.
            if ensureDirectory(of: dir, mode: mode) == 0, mkdir(dir, mode) == 0 || errno == EEXIST { return 0 }
        }
        return e
    }
}
