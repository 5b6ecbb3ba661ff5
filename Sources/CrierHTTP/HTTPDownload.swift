import CCurl
import CrierCore
import CrierPosix
import Glibc

/// Downloads one file onto the card (docs/updates.md, "Downloads"): the bytes go to
/// `PATH.part`; a dropped connection is resumed by the next one (`Range`) within the same call;
/// only a complete file, fsynced, is renamed to PATH. Every write keeps `reserveBytes` free on
/// the file system (measured as it goes, `BundleDownload.SpaceWatch`), no file grows past
/// `maxBytes`, every wait is bounded (connect, answer, progress, the whole call), and whatever
/// way it fails the `.part` is removed. The caller holds the download lock (one download at a
/// time). Blocking: run it on a thread of its own. What each answer means is `BundleDownload`'s
/// (CrierCore).
public enum HTTPDownload {
    public struct Options: Sendable {
        /// Connections tried, each resuming where the last stopped, before giving up.
        public var attempts = 6
        /// Under `BundleDownload.minRate` bytes a second (no answer at all included) this long: dropped.
        public var stallSeconds = 30
        public var connectTimeout = 15
        /// Left free on the file system for crier's state, the journal and RAUC's own records.
        public var reserveBytes: Int64 = 64 << 20
        public var maxBytes: Int64 = 1 << 30
        /// The whole call, every connection and wait, gives up after this long.
        public var limitSeconds = 3600.0
        public init() {}
    }

    public enum Event: Sendable {
        /// A connection (attempt n) starts at byte `from` of `total` (nil: unknown).
        case started(attempt: Int, from: Int64, total: Int64?)
        /// Another 10 % (or, with no size known, another 16 MiB) is on the card.
        case progress(bytes: Int64, total: Int64?)
        /// The connection ended short; the next attempt resumes after `delay` seconds.
        case retrying(attempt: Int, after: String, delay: Double, have: Int64)
    }

    public struct Failure: Error, Sendable, CustomStringConvertible {
        public var message: String
        public var description: String { message }
        public init(message: String) { self.message = message }
    }

    /// Removes what an earlier download left (a power cut, a kill): `PATH.part`, `PATH.url` (the
    /// resume record of crier before 0.9.x) and PATH itself. Only with the download lock held.
    /// Returns the bytes freed.
    @discardableResult
    public static func removeLeftovers(_ path: String) -> Int64 {
        var freed: Int64 = 0
        for f in [path + ".part", path + ".url", path] {
            if let n = fileSize(f), unlink(f) == 0 { freed += n }
        }
        return freed
    }

    /// Returns the file's size once PATH holds all of it. `url` is never printed as given: only
    /// `ShownURL.redacted` of it.
    public static func fetch(_ url: String, to path: String, options: Options = Options(),
                             event: (Event) -> Void, keepGoing: @escaping () -> Bool,
                             sleep: (Double) -> Void = { s in if s > 0 { usleep(UInt32(min(s, 3600) * 1e6)) } }) -> Result<Int64, Failure> {
        let part = path + ".part"
        let dir = path.split(separator: "/", omittingEmptySubsequences: false).dropLast().joined(separator: "/")
        let t0 = Monotonic.now()
        removeLeftovers(path)
        let fd = open(part, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0o640)
        guard fd >= 0 else { return .failure(Failure(message: "cannot create \(part): \(errnoText(errno))")) }
        var file = Part(fd: fd, path: part, dir: dir, watch: BundleDownload.SpaceWatch(reserve: options.reserveBytes, maxBytes: options.maxBytes, dir: dir.isEmpty ? "/" : dir))
        func fail(_ why: String) -> Result<Int64, Failure> {
            close(fd)
            unlink(part)
            return .failure(Failure(message: why))
        }
        let deadline = t0 + options.limitSeconds
        let inTime = { Monotonic.now() < deadline }
        var tried = 0
        func timeUp() -> String {
            "gave up after \(tried) connection\(tried == 1 ? "" : "s") in \(Format.fixed(Monotonic.now() - t0, 0)) s "
                + "(update.download_limit_seconds = \(Format.fixed(options.limitSeconds, 0)))"
        }
        var lastError = ""
        for attempt in 1...max(1, options.attempts) {
            if attempt > 1 {
                guard let delay = BundleDownload.nextWait(attempt: attempt, elapsed: Monotonic.now() - t0, limit: options.limitSeconds) else {
                    return fail("\(lastError); \(timeUp()); the partial download was removed")
                }
                event(.retrying(attempt: attempt, after: lastError, delay: delay, have: file.have))
                sleep(delay)
            }
            guard keepGoing() else { return fail("stopped") }
            tried = attempt
            switch once(url, file: &file, attempt: attempt, options: options, event: event, keepGoing: { keepGoing() && inTime() }) {
            case .done(let size):
                guard fsync(fd) == 0 else { return fail("cannot fsync \(part): \(errnoText(errno))") }
                close(fd)
                guard rename(part, path) == 0 else {
                    let e = errno
                    unlink(part)
                    return .failure(Failure(message: "cannot rename \(part): \(errnoText(e))"))
                }
                syncDir(dir)
                return .success(size)
            case .retry(let why):
                lastError = why
            case .fatal(let why):
                return fail("\(why); the partial download was removed")
            case .stopped:
                if !inTime() { return fail("\(lastError.isEmpty ? "" : lastError + "; ")\(timeUp()); the partial download was removed") }
                return fail("stopped")
            }
        }
        return fail("\(lastError); gave up after \(tried) connections in \(Format.fixed(Monotonic.now() - t0, 0)) s; the partial download was removed")
    }

    enum Attempt {
        case done(Int64)
        case retry(String)
        case fatal(String)
        case stopped
    }

    /// The `.part` file, open for the whole call.
    struct Part {
        let fd: Int32
        let path: String
        let dir: String
        var watch: BundleDownload.SpaceWatch
        var have: Int64 = 0
    }

    /// One connection. Its state is touched only on the calling thread (libcurl calls back
    /// on it), so a plain class is enough.
    final class Sink {
        var response = BundleDownload.Response()
        var file: Part
        var total: Int64?
        var decided = false
        var problem: Attempt?
        var nextReport: Int64 = 0
        init(file: Part) { self.file = file }
    }

    static func once(_ url: String, file: inout Part, attempt: Int, options: Options,
                     event: (Event) -> Void, keepGoing: @escaping () -> Bool) -> Attempt {
        let have = file.have
        var o = HTTPStream.Options()
        o.connectTimeout = options.connectTimeout
        o.stallSeconds = options.stallSeconds
        o.minBytesPerSecond = BundleDownload.minRate
        o.maxRedirects = 5
        if have > 0 { o.headers = ["Range: bytes=\(have)-"] }
        let sink = Sink(file: file)
        defer { file = sink.file }
        let part = file.path, dir = file.dir
        // (the event closure is not escaping: it is called back only during `perform`)
        let finished = withoutActuallyEscaping(event) { event in
            HTTPStream.perform(url, options: o, onHeader: { sink.response.header($0) }, onData: { bytes in
                if !sink.decided {
                    sink.decided = true
                    switch BundleDownload.decide(have: have, sink.response, maxBytes: options.maxBytes) {
                    case .fail(let why):
                        sink.problem = .fatal(why)
                        return false
                    case .append(let total), .restart(let total):
                        if sink.response.status == 200, sink.file.have > 0 {
                            guard ftruncate(sink.file.fd, 0) == 0 else {
                                sink.problem = .fatal("cannot truncate \(part): \(errnoText(errno))")
                                return false
                            }
                            sink.file.have = 0
                        }
                        sink.total = total
                        if let t = total, let free = FileIO.freeSpace(dir),
                           let why = BundleDownload.spaceProblem(need: t - sink.file.have, free: free.bytes, reserve: options.reserveBytes, dir: dir) {
                            sink.problem = .fatal(why)
                            return false
                        }
                        event(.started(attempt: attempt, from: sink.file.have, total: total))
                        sink.nextReport = sink.file.have + step(total)
                    }
                }
                guard bytes.count > 0 else { return true }
                let n = Int64(bytes.count)
                if let t = sink.total, sink.file.have + n > t {
                    sink.problem = .fatal("the server sent more than the \(t) bytes it announced")
                    return false
                }
                if sink.file.watch.mustMeasure(before: n) {
                    if let f = FileIO.freeSpace(dir) { sink.file.watch.measured(free: f.bytes, blockSize: f.block) }
                }
                if let why = sink.file.watch.admit(have: sink.file.have, n) {
                    sink.problem = .fatal(why)
                    return false
                }
                guard FileIO.writeAll(sink.file.fd, bytes) else {
                    let e = errno
                    sink.problem = e == ENOSPC
                        ? .fatal("crier-data is full (\(part)); free some space, or set update.download = off to stream the bundle")
                        : .fatal("cannot write \(part): \(errnoText(e))")
                    return false
                }
                sink.file.have += n
                if sink.file.have >= sink.nextReport {
                    event(.progress(bytes: sink.file.have, total: sink.total))
                    sink.nextReport = sink.file.have + step(sink.total)
                }
                return true
            }, keepGoing: keepGoing)
        }
        if let p = sink.problem { return p }
        switch finished.outcome {
        case .stopped:
            return .stopped
        case .failed(let why):
            // 416 with the size we have: it was all there already.
            if sink.response.status == 416, have > 0, sink.response.rangeTotal == have { break }
            // 416 otherwise: what is on the card does not fit the server's file (it changed): start over.
            if sink.response.status == 416 {
                guard ftruncate(sink.file.fd, 0) == 0 else { return .fatal("cannot truncate \(part): \(errnoText(errno))") }
                sink.file.have = 0
                return .retry("the server's file changed (HTTP 416); starting over")
            }
            let end = connectionEnd(code: finished.code, libcurl: why, response: sink.response, url: url, options: o)
            let text = BundleDownload.message(end)
            return BundleDownload.retried(end) ? .retry(text) : .fatal(text)
        case .ended:
            if !sink.decided {
                // An empty body (no data callback at all).
                if sink.response.status == 206 || sink.response.status == 200, sink.response.total == have, have > 0 { break }
                return .fatal("the server sent an empty file")
            }
            if let t = sink.total, sink.file.have != t { return .retry("the connection ended at byte \(sink.file.have) of \(t)") }
        }
        return .done(sink.file.have)
    }

    /// libcurl's result, read for `BundleDownload`'s rules; nothing of the URL's secrets in it.
    static func connectionEnd(code: Int, libcurl why: String, response r: BundleDownload.Response,
                              url: String, options o: HTTPStream.Options) -> BundleDownload.ConnectionEnd {
        let why = ShownURL.scrub(why, secretsOf: url)
        switch code {
        case HTTPStream.Code.tooManyRedirects:
            return .tooManyRedirects(o.maxRedirects)
        case HTTPStream.Code.unsupportedProtocol:
            if let l = r.location, let scheme = UpdateSource.scheme(l.lowercased()), scheme != "http" && scheme != "https" {
                return .redirectRefused(scheme)
            }
            return .refused(why)
        case HTTPStream.Code.httpError:
            // "The requested URL returned error: 404" when the status line was not seen.
            return .httpStatus(r.status ?? why.split(separator: " ").last.flatMap { Int($0) } ?? 0)
        case HTTPStream.Code.timedOut where why.contains("too slow"):
            return r.status == nil ? .noAnswer(seconds: o.stallSeconds) : .tooSlow(seconds: o.stallSeconds, minRate: o.minBytesPerSecond)
        case HTTPStream.Code.badURL, HTTPStream.Code.peerVerification, HTTPStream.Code.caCert, HTTPStream.Code.loginDenied:
            return .refused(why)
        default:
            return .network(why)
        }
    }

    static func step(_ total: Int64?) -> Int64 { total.map { max($0 / 10, 1) } ?? (16 << 20) }

    static func fileSize(_ p: String) -> Int64? {
        var st = stat()
        return stat(p, &st) == 0 ? Int64(st.st_size) : nil
    }

    static func syncDir(_ dir: String) {
        let fd = open(dir.isEmpty ? "/" : dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        if fd >= 0 { fsync(fd); close(fd) }
    }
}
