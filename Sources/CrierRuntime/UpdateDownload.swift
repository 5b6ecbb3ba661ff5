import CrierCore
import CrierPosix
import CrierHTTP
import Glibc

/// What RAUC installs from: a bundle file as given; an http(s) URL downloaded into
/// `update.dir` first (`update.download = on`, docs/updates.md "Downloads"), or handed to RAUC
/// to stream (`off`). Shared by `crier update URL` and the server's offers.
enum UpdateDownload {
    struct Prepared {
        var path: String
        /// Removed once RAUC is done with it, installed or not.
        var downloaded: Bool
    }

    /// Blocking (a download takes minutes): on a thread of its own. `say` gets one line per
    /// step: the start, every 10 %, each resumed connection, the end.
    static func prepare(_ source: UpdateSource, _ config: UpdateConfig, say: (String) -> Void,
                        keepGoing: @escaping () -> Bool = { true }) -> Result<Prepared, HTTPDownload.Failure> {
        guard case .url(let url) = source, config.download else { return .success(Prepared(path: source.description, downloaded: false)) }
        let path = config.downloadPath
        let t0 = Monotonic.now()
        say("downloading \(url) to \(path) (resumed if the connection drops)")
        let r = HTTPDownload.fetch(url, to: path, event: { e in
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
            return .success(Prepared(path: path, downloaded: true))
        case .failure(let f):
            return .failure(HTTPDownload.Failure(message: "download of \(url) failed: \(f.message)"))
        }
    }

    static func discard(_ p: Prepared) {
        if p.downloaded { unlink(p.path) }
    }

    static func mib(_ b: Int64) -> String { Format.fixed(Double(b) / 1_048_576, 1) }
}
