import CrierCore
import CrierPosix
import CrierHTTP
import Glibc

/// What RAUC installs from: a bundle file as given; an http(s) URL downloaded into
/// `update.dir` first (`update.download = on`, docs/updates.md "Downloads"), or handed to RAUC
/// to stream (`off`). Shared by `crier update URL` and the server's offers. A URL is only ever
/// shown through `ShownURL` (no credentials, no signed query).
enum UpdateDownload {
    struct Prepared {
        var path: String
        /// Removed once RAUC is done with it, installed or not.
        var downloaded: Bool
        /// The download lock (update-download.lock), held until `discard`; -1: none.
        var lock: Int32 = -1
    }

    /// Blocking (a download takes minutes): on a thread of its own. `say` gets one line per
    /// step: the start, every 10 %, each resumed connection, the end.
    static func prepare(_ source: UpdateSource, _ config: UpdateConfig, say: (String) -> Void,
                        keepGoing: @escaping () -> Bool = { true }) -> Result<Prepared, HTTPDownload.Failure> {
        guard case .url(let url) = source, config.download else { return .success(Prepared(path: source.description, downloaded: false)) }
        let shown = ShownURL.redacted(url)
        let path = config.downloadPath
        let lock: Int32
        switch takeLock(config) {
        case .success(let fd): lock = fd
        case .failure(let f): return .failure(HTTPDownload.Failure(message: "download of \(shown) failed: \(f.message)"))
        }
        let t0 = Monotonic.now()
        var o = HTTPDownload.Options()
        o.reserveBytes = Int64(config.keepFreeMiB) << 20
        o.maxBytes = Int64(config.maxDownloadMiB) << 20
        o.stallSeconds = config.stallSeconds
        o.connectTimeout = min(15, max(config.stallSeconds, 1))
        o.limitSeconds = Double(config.downloadLimitSeconds)
        say("downloading \(shown) to \(path) (at most \(config.maxDownloadMiB) MiB, \(config.keepFreeMiB) MiB kept free, given up after \(config.downloadLimitSeconds) s)")
        let r = HTTPDownload.fetch(url, to: path, options: o, event: { e in
            switch e {
            case .started(let attempt, let from, let total):
                let size = total.map { "\(mib($0)) MiB" } ?? "size unknown"
                say(from > 0 ? "download: resuming at \(mib(from)) MiB of \(size) (connection \(attempt))" : "download: \(size)")
            case .progress(let bytes, let total):
                if let t = total, t > 0 {
                    say("download: \(Int(Double(bytes) * 100 / Double(t)))% (\(mib(bytes)) of \(mib(t)) MiB)")
                } else {
                    say("download: \(mib(bytes)) MiB")
                }
            case .retrying(let attempt, let why, let delay, let have):
                say("download: \(why); \(mib(have)) MiB kept, connection \(attempt) in \(Format.fixed(delay, 0)) s")
            }
        }, keepGoing: keepGoing)
        switch r {
        case .success(let size):
            say("downloaded \(mib(size)) MiB in \(Format.fixed(Monotonic.now() - t0, 1)) s; RAUC checks it before anything is written")
            return .success(Prepared(path: path, downloaded: true, lock: lock))
        case .failure(let f):
            close(lock)
            return .failure(HTTPDownload.Failure(message: "download of \(shown) failed: \(ShownURL.scrub(f.message, secretsOf: url))"))
        }
    }

    static func discard(_ p: Prepared) {
        if p.downloaded { unlink(p.path) }
        if p.lock >= 0 { close(p.lock) }
    }

    /// The download lock, taken without waiting: a second download (`crier update` by hand while
    /// the daemon downloads an offer) is refused instead of writing into the same file. Whoever
    /// holds it removes what an earlier run left (a power cut mid-download).
    static func takeLock(_ config: UpdateConfig) -> Result<Int32, HTTPDownload.Failure> {
        let p = config.downloadLockPath
        var fd = open(p, O_RDONLY | O_CREAT | O_CLOEXEC, 0o644)
        if fd < 0 && errno == EACCES {
            // Made by another user with a mode we cannot read: the directory is ours.
            unlink(p)
            fd = open(p, O_RDONLY | O_CREAT | O_CLOEXEC, 0o644)
        }
        guard fd >= 0 else { return .failure(HTTPDownload.Failure(message: "cannot open \(p): \(errnoText(errno))")) }
        fchmod(fd, 0o644)
        guard flock(fd, LOCK_EX | LOCK_NB) == 0 else {
            let e = errno
            close(fd)
            return .failure(HTTPDownload.Failure(message: e == EWOULDBLOCK
                ? "another download or install is running (\(p) is held); try again when it is done"
                : "cannot lock \(p): \(errnoText(e))"))
        }
        return .success(fd)
    }

    /// At the daemon's start: what a download cut by a power cut or a kill left in update.dir
    /// (`.part`, the finished file RAUC never got) takes space the journals need; removed unless
    /// a download holds the lock. Returns the bytes freed.
    static func removeLeftovers(_ config: UpdateConfig) -> Int64 {
        let path: String = config.downloadPath
        let files: [String] = [path, path + ".part", path + ".url"]
        guard files.contains(where: { access($0, F_OK) == 0 }),
              case .success(let fd) = takeLock(config) else { return 0 }
        defer { close(fd) }
        return HTTPDownload.removeLeftovers(config.downloadPath)
    }

    static func mib(_ b: Int64) -> String { Format.fixed(Double(b) / 1_048_576, 1) }
}
