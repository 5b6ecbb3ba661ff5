/// Over-the-air updates (docs/updates.md): where the image's update scripts leave their records,
/// how crier reaches RAUC, and whether the order server may offer a bundle.
public struct UpdateConfig: Sendable, Equatable {
    public init() {}

    /// The directory holding `update-pending` and `update-outcome` (crier-data, bound to
    /// /var/lib/crier on the image; the scripts there write to this path).
    public var dir = "/var/lib/crier"
    /// The `rauc` program; "off": this box is not updated by crier (no `crier update`, no offers).
    public var rauc: String? = "rauc"
    /// Say "已更新到版本…" / "Updated to version …" (or the rollback) once after the update.
    public var announce = true
    /// Let the order server offer a bundle (`{"type":"update"}` over the link); off: offers are
    /// logged and answered "refused".
    public var allowRemote = false
    /// The file crier creates to have the box rebooted into an installed update at a quiet
    /// moment (crier-reboot.path, root, watches it); nil: never reboot, only log.
    public var rebootRequest: String? = "/run/crier/reboot-request"
    /// Seconds without anything said before that reboot.
    public var quietSeconds = 60.0
    /// An http(s) bundle is downloaded into `dir` first (resumed after a dropped connection)
    /// and RAUC installs it from the card. Off: RAUC streams it, which RAUC 1.13 (Debian 13)
    /// cannot do reliably: udev's probe of the new nbd device disconnects it (fixed in RAUC
    /// 1.15; docs/updates.md, "Downloads").
    public var download = true
    /// MiB a download always leaves free on update.dir's file system (crier's journals, state,
    /// RAUC's records), checked while it is written.
    public var keepFreeMiB = 64
    /// The most a downloaded bundle may be, announced or not (MiB). The Pi's slot is 1 GiB and
    /// a bundle (compressed) is smaller than its slot: 172 MiB for the 488 MiB root.
    public var maxDownloadMiB = 1024
    /// A connection with less than 1 KiB/s (no answer at all included) for this long is dropped.
    public var stallSeconds = 30
    /// The whole download, every connection and wait, gives up after this long.
    public var downloadLimitSeconds = 3600

    public var pendingPath: String { dir + "/update-pending" }
    /// Where a downloaded bundle is kept until RAUC has installed it (`.part` while it comes).
    public var downloadPath: String { dir + "/update-download.raucb" }
    /// Held (flock) from the start of a download until RAUC is done with it: one download at a
    /// time, and leftovers are removed only by whoever holds it.
    public var downloadLockPath: String { dir + "/update-download.lock" }
    public var outcomePath: String { dir + "/update-outcome" }

    static let keys: [ConfigKey] = [
        ConfigKey("update.dir", section: "updates", default: "/var/lib/crier",
                  doc: "Where the image's update scripts keep update-pending and update-outcome (crier-data); change only with them.",
                  apply: { c, v throws(ConfigValueError) in
                      var p = try ConfigValue.absolutePath(v)
                      while p.count > 1 && p.hasSuffix("/") { p.removeLast() }
                      c.update.dir = p
                  }, render: { $0.update.dir }),
        ConfigKey("update.rauc", section: "updates", default: "rauc",
                  doc: "The RAUC program used by `crier update` and server offers (a name on PATH or an absolute path); off: no updates through crier.",
                  apply: { c, v throws(ConfigValueError) in
                      let v = try ConfigValue.nonEmpty(v, what: "a program name, a path or off")
                      if v.lowercased() == "off" { c.update.rauc = nil; return }
                      guard !v.contains(where: { $0 == " " || $0.isNewline }) else {
                          throw ConfigValueError("expected a program name or an absolute path without spaces, got \(ConfigValue.shown(v))")
                      }
                      guard v.hasPrefix("/") || !v.contains("/") else {
                          throw ConfigValueError("expected a name on PATH or an absolute path, got the relative path \(ConfigValue.shown(v))")
                      }
                      c.update.rauc = v
                  }, render: { $0.update.rauc ?? "off" }),
        ConfigKey("update.announce", section: "updates", default: "on",
                  doc: "Say once that the box was updated (\"已更新到版本…\") or that an update failed and the old version runs again.",
                  apply: { c, v throws(ConfigValueError) in c.update.announce = try ConfigValue.bool(v) },
                  render: { $0.update.announce ? "on" : "off" }),
        ConfigKey("update.allow_remote", section: "updates", default: "off",
                  doc: "Install a bundle the order server offers ({\"type\":\"update\",\"url\":…}); only signed bundles are accepted either way.",
                  apply: { c, v throws(ConfigValueError) in c.update.allowRemote = try ConfigValue.bool(v) },
                  render: { $0.update.allowRemote ? "on" : "off" }),
        ConfigKey("update.reboot_request", section: "updates", default: "/run/crier/reboot-request",
                  doc: "After a server-offered update is installed, crier creates this file at a quiet moment and crier-reboot.path (root) reboots the box; off: never reboot, only log.",
                  apply: { c, v throws(ConfigValueError) in
                      c.update.rebootRequest = v.lowercased() == "off" ? nil : try ConfigValue.absolutePath(v)
                  }, render: { $0.update.rebootRequest ?? "off" }),
        ConfigKey("update.quiet_seconds", section: "updates", default: "60",
                  doc: "Seconds with nothing said (no order waiting) before that reboot.",
                  apply: { c, v throws(ConfigValueError) in c.update.quietSeconds = try ConfigValue.number(v, 1...86400) },
                  render: { ConfigValue.fmt($0.update.quietSeconds) }),
        ConfigKey("update.download", section: "updates", default: "on",
                  doc: "Download an http(s) bundle into update.dir first (resumed when the connection drops; needs the bundle's size free) and install it from there; off: RAUC streams it (needs RAUC 1.15 or newer).",
                  apply: { c, v throws(ConfigValueError) in c.update.download = try ConfigValue.bool(v) },
                  render: { $0.update.download ? "on" : "off" }),
        ConfigKey("update.keep_free_mib", section: "updates", default: "64",
                  doc: "MiB a download always leaves free in update.dir for crier's journals and state, checked as it is written; a bundle that does not fit stops and is removed. 1-4096.",
                  apply: { c, v throws(ConfigValueError) in c.update.keepFreeMiB = try ConfigValue.int(v, 1...4096) },
                  render: { String($0.update.keepFreeMiB) }),
        ConfigKey("update.max_download_mib", section: "updates", default: "1024",
                  doc: "The most a downloaded bundle may be, in MiB, whether the server announces its size or not. 1-16384.",
                  apply: { c, v throws(ConfigValueError) in c.update.maxDownloadMiB = try ConfigValue.int(v, 1...16384) },
                  render: { String($0.update.maxDownloadMiB) }),
        ConfigKey("update.stall_seconds", section: "updates", default: "30",
                  doc: "A download connection with no answer, or under 1 KiB/s, for this many seconds is dropped (and resumed by the next one). 1-600.",
                  apply: { c, v throws(ConfigValueError) in c.update.stallSeconds = try ConfigValue.int(v, 1...600) },
                  render: { String($0.update.stallSeconds) }),
        ConfigKey("update.download_limit_seconds", section: "updates", default: "3600",
                  doc: "A download not complete after this many seconds, all connections and waits together, is given up and removed. 5-86400.",
                  apply: { c, v throws(ConfigValueError) in c.update.downloadLimitSeconds = try ConfigValue.int(v, 5...86400) },
                  render: { String($0.update.downloadLimitSeconds) }),
    ]
}

/// What `crier update` (or a server's offer) names: a bundle file on the box, or an http(s) URL
/// RAUC streams from (verity bundles; no copy on the card first).
public enum UpdateSource: Sendable, Equatable, CustomStringConvertible {
    case file(String)
    case url(String)

    public struct Invalid: Error, Sendable, Equatable, CustomStringConvertible {
        public var message: String
        public var description: String { message }
    }

    /// `relativeTo`: the working directory a relative path is taken from (RAUC's service runs
    /// elsewhere and needs an absolute path).
    public init(parsing s: String, relativeTo cwd: String) throws(Invalid) {
        guard !s.isEmpty else { throw Invalid(message: "no bundle given: expected a .raucb file or an https:// URL") }
        guard !s.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7f }) else {
            throw Invalid(message: "the bundle name has control characters: \(ConfigValue.shown(ShownURL.redacted(String(s.unicodeScalars.map { $0.value < 0x20 || $0.value == 0x7f ? "?" : Character($0) }))))")
        }
        let l = s.lowercased()
        if l.hasPrefix("https://") || l.hasPrefix("http://") {
            guard !s.contains(" "), s.count > (l.hasPrefix("https") ? 8 : 7) else {
                throw Invalid(message: "expected a URL without spaces, got \(ConfigValue.shown(ShownURL.redacted(s)))")
            }
            self = .url(s)
        } else if let scheme = Self.scheme(l) {
            throw Invalid(message: "RAUC installs from a file or an http(s) URL, not \(scheme)://"
                + (scheme == "file" ? "; give the path itself (\(s.dropFirst(7)))" : ""))
        } else if s.hasPrefix("/") {
            self = .file(s)
        } else {
            self = .file((cwd.hasSuffix("/") ? cwd : cwd + "/") + s)
        }
    }

    /// "ftp" for "ftp://…": letters, digits, + - . before "://".
    public static func scheme(_ l: String) -> String? {
        let u = Array(l.utf8)
        guard u.count > 3 else { return nil }
        for i in 0..<(u.count - 2) where u[i] == UInt8(ascii: ":") && u[i + 1] == UInt8(ascii: "/") && u[i + 2] == UInt8(ascii: "/") {
            let name = u[0..<i]
            guard !name.isEmpty, name.allSatisfy({ ($0 >= 0x61 && $0 <= 0x7a) || ($0 >= 0x30 && $0 <= 0x39) || $0 == 0x2b || $0 == 0x2d || $0 == 0x2e })
            else { return nil }
            return String(decoding: name, as: UTF8.self)
        }
        return nil
    }

    public var description: String {
        switch self {
        case .file(let p): p
        case .url(let u): u
        }
    }
}

/// `{"type":"update","url":"https://…/crier-….raucb","version":"0.9.2+…"}` from the order server.
public struct UpdateOffer: Sendable, Equatable {
    public var url: String
    public var version: String
    public init(url: String, version: String) {
        self.url = url
        self.version = version
    }
}
