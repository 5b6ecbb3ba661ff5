import CrierCore
import CrierPosix
import Glibc

/// Downloads one file onto the card, resuming after a dropped connection (docs/updates.md,
/// "Downloads"): the bytes go to `PATH.part`, the URL they came from to `PATH.url`; a later
/// call for the same URL asks for the rest (`Range`), one for another URL starts over. Only a
/// complete file, fsynced, is renamed to PATH. Blocking: run it on a thread of its own. What
/// each answer means is `BundleDownload`'s (CrierCore).
public enum HTTPDownload {
    public struct Options: Sendable {
        /// Connections tried, each resuming where the last stopped, before giving up.
        public var attempts = 6
        public var stallSeconds = 30
        public var connectTimeout = 15
        /// Left free on the file system for crier's state, the journal and RAUC's own records.
        public var reserveBytes: Int64 = 64 << 20
        public var maxBytes: Int64 = 2 << 30
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

    /// Returns the file's size once PATH holds all of it.
    public static func fetch(_ url: String, to path: String, options: Options = Options(),
                             event: (Event) -> Void, keepGoing: @escaping () -> Bool,
                             sleep: (Double) -> Void = { s in if s > 0 { usleep(UInt32(min(s, 3600) * 1e6)) } }) -> Result<Int64, Failure> {
        let part = path + ".part", urlFile = path + ".url"
        let dir = path.split(separator: "/", omittingEmptySubsequences: false).dropLast().joined(separator: "/")
        // Left by another user (`crier update` run as root, then the daemon as crier): not ours
        // to append to, but the directory is, so start over.
        for f in [part, urlFile] where access(f, F_OK) == 0 && access(f, W_OK) != 0 { unlink(f) }
        if (try? FileIO.read(urlFile, limit: 8192)).map({ String(decoding: $0, as: UTF8.self) }) != url {
            unlink(part)
            do throws(SystemError) {
                try FileIO.write(urlFile, Array(url.utf8))
            } catch {
                return .failure(Failure(message: "cannot write \(urlFile): \(error)"))
            }
        }
        var lastError = ""
        for attempt in 1...max(1, options.attempts) {
            if attempt > 1 {
                let delay = BundleDownload.retryDelay(attempt: attempt)
                event(.retrying(attempt: attempt, after: lastError, delay: delay, have: fileSize(part) ?? 0))
                sleep(delay)
            }
            guard keepGoing() else { return .failure(Failure(message: "stopped")) }
            switch once(url, part: part, dir: dir, attempt: attempt, options: options, event: event, keepGoing: keepGoing) {
            case .done(let size):
                guard rename(part, path) == 0 else { return .failure(Failure(message: "cannot rename \(part): \(errnoText(errno))")) }
                unlink(urlFile)
                syncDir(dir)
                return .success(size)
            case .retry(let why):
                lastError = why
            case .fatal(let why):
                return .failure(Failure(message: why))
            }
        }
        return .failure(Failure(message: "\(lastError) (gave up after \(options.attempts) connections; the \(fileSize(part) ?? 0) bytes on the card are resumed next time)"))
    }

    enum Attempt {
        case done(Int64)
        case retry(String)
        case fatal(String)
    }

    /// One connection. Its state is touched only on the calling thread (libcurl calls back
    /// on it), so a plain class is enough.
    final class Sink {
        var response = BundleDownload.Response()
        var fd: Int32 = -1
        var have: Int64
        var total: Int64?
        var decided = false
        var problem: Attempt?
        var nextReport: Int64 = 0
        init(have: Int64) { self.have = have }
    }

    static func once(_ url: String, part: String, dir: String, attempt: Int, options: Options,
                     event: (Event) -> Void, keepGoing: @escaping () -> Bool) -> Attempt {
        let have = fileSize(part) ?? 0
        var o = HTTPStream.Options()
        o.connectTimeout = options.connectTimeout
        o.stallSeconds = options.stallSeconds
        if have > 0 { o.headers = ["Range: bytes=\(have)-"] }
        let sink = Sink(have: have)
        defer { if sink.fd >= 0 { close(sink.fd) } }
        // (the event closure is not escaping: it is called back only during `get`)
        let outcome = withoutActuallyEscaping(event) { event in
            HTTPStream.get(url, options: o, onHeader: { sink.response.header($0) }, onData: { bytes in
                if !sink.decided {
                    sink.decided = true
                    switch BundleDownload.decide(have: have, sink.response, maxBytes: options.maxBytes) {
                    case .fail(let why):
                        sink.problem = .fatal(why)
                        return false
                    case .append(let total), .restart(let total):
                        let restart = sink.response.status == 200
                        if restart { sink.have = 0 }
                        sink.total = total
                        if let t = total, let free = freeBytes(dir),
                           let why = BundleDownload.spaceProblem(need: t - sink.have, free: free, reserve: options.reserveBytes, dir: dir) {
                            sink.problem = .fatal(why)
                            return false
                        }
                        sink.fd = open(part, O_WRONLY | O_CREAT | O_CLOEXEC | (restart ? O_TRUNC : O_APPEND), 0o640)
                        guard sink.fd >= 0 else {
                            sink.problem = .fatal("cannot open \(part): \(errnoText(errno))")
                            return false
                        }
                        event(.started(attempt: attempt, from: sink.have, total: total))
                        sink.nextReport = sink.have + step(total)
                    }
                }
                guard bytes.count > 0 else { return true }
                if let t = sink.total, sink.have + Int64(bytes.count) > t {
                    sink.problem = .fatal("the server sent more than the \(t) bytes it announced")
                    return false
                }
                if sink.total == nil, sink.have + Int64(bytes.count) > options.maxBytes {
                    sink.problem = .fatal("the bundle is bigger than the \(options.maxBytes >> 20) MiB a bundle may be")
                    return false
                }
                guard FileIO.writeAll(sink.fd, bytes) else {
                    let e = errno
                    sink.problem = e == ENOSPC
                        ? .fatal("crier-data is full (\(part)); free some space, or set update.download = off to stream the bundle")
                        : .retry("cannot write \(part): \(errnoText(e))")
                    return false
                }
                sink.have += Int64(bytes.count)
                if sink.have >= sink.nextReport {
                    event(.progress(bytes: sink.have, total: sink.total))
                    sink.nextReport = sink.have + step(sink.total)
                }
                return true
            }, keepGoing: keepGoing)
        }
        if let p = sink.problem { return p }
        switch outcome {
        case .stopped:
            return .fatal("stopped")
        case .failed(let why):
            // 416 with the size we have: it was all there already (a crash before the rename).
            if sink.response.status == 416, have > 0, sink.response.rangeTotal == have { break }
            // 416 otherwise: what is on the card does not fit the server's file (it changed): start over.
            if sink.response.status == 416 || why.contains("416") { unlink(part); return .retry("the server's file changed (HTTP 416); starting over") }
            if why.contains("returned error: 4") { return .fatal(why) }
            return .retry(why)
        case .ended:
            if !sink.decided {
                // An empty body (no data callback at all).
                if sink.response.status == 206 || sink.response.status == 200, sink.response.total == have, have > 0 { break }
                return .fatal("the server sent an empty file")
            }
            if let t = sink.total, sink.have != t { return .retry("the connection ended at byte \(sink.have) of \(t)") }
        }
        let fd = sink.fd >= 0 ? sink.fd : open(part, O_WRONLY | O_CLOEXEC)
        guard fd >= 0, fsync(fd) == 0 else { return .retry("cannot fsync \(part): \(errnoText(errno))") }
        if fd != sink.fd { close(fd) }
        return .done(sink.have)
    }

    static func step(_ total: Int64?) -> Int64 { total.map { max($0 / 10, 1) } ?? (16 << 20) }

    static func fileSize(_ p: String) -> Int64? {
        var st = stat()
        return stat(p, &st) == 0 ? Int64(st.st_size) : nil
    }

    static func freeBytes(_ dir: String) -> Int64? {
        var s = statvfs()
        guard statvfs(dir.isEmpty ? "/" : dir, &s) == 0 else { return nil }
        return Int64(s.f_bavail) * Int64(s.f_frsize)
    }

    static func syncDir(_ dir: String) {
        let fd = open(dir.isEmpty ? "/" : dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        if fd >= 0 { fsync(fd); close(fd) }
    }
}
