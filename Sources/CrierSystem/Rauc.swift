import CrierCore
import CrierPosix
import Glibc

/// RAUC, the update engine, through its command line (`rauc` talks to the root rauc service
/// over D-Bus; its policy lets any local user call it, and every bundle is checked against the
/// keyring whoever asks). Blocking: call from a dedicated thread.
public struct Rauc: Sendable {
    public let program: String

    public init(program: String) { self.program = program }

    public enum Failure: Error, Sendable, Equatable, CustomStringConvertible {
        /// The program could not be started.
        case notInstalled(program: String, why: String)
        /// RAUC ran and said no (a bad signature, another board, a truncated bundle, a busy
        /// service); `reason` is its own last words.
        case refused(reason: String, status: Int32?)
        case timedOut(what: String, seconds: Int)
        case badStatus(String)

        public var description: String {
            switch self {
            case .notInstalled(let p, let why):
                "cannot run RAUC ('\(p)': \(why)); is the rauc package installed? (update.rauc in crier.conf names the program)"
            case .refused(let reason, let status):
                "RAUC refused: \(reason)" + (status.map { " (exit status \($0))" } ?? " (killed)")
            case .timedOut(let what, let s):
                "RAUC did not finish \(what) within \(s) s; it was stopped (is rauc.service running? journalctl -u rauc)"
            case .badStatus(let m):
                "RAUC's status could not be read: \(m)"
            }
        }
    }

    /// `rauc status --detailed --output-format=json`.
    public func status(timeout: Double = 20) -> Result<RaucStatus, Failure> {
        let r: Subprocess.Result
        do throws(SystemError) {
            r = try Subprocess.run(program, ["status", "--detailed", "--output-format=json"], timeout: timeout)
        } catch {
            return .failure(.notInstalled(program: program, why: errnoText(error.code)))
        }
        if r.timedOut { return .failure(.timedOut(what: "`rauc status`", seconds: Int(timeout))) }
        guard r.succeeded else { return .failure(.refused(reason: Self.reason(r), status: r.status)) }
        switch RaucStatus.parse(r.stdout) {
        case .success(let s): return .success(s)
        case .failure(let e): return .failure(.badStatus(e.message))
        }
    }

    /// `rauc install SOURCE` (a bundle file or an http(s) URL RAUC streams). Each line RAUC
    /// prints (its progress: "20% Checking bundle done.") goes to `progress`.
    public func install(_ source: String, timeout: Double = 3600, progress: @escaping (String) -> Void) -> Result<Void, Failure> {
        let r: Subprocess.Result
        do throws(SystemError) {
            r = try Subprocess.run(program, ["install", source], timeout: timeout, capture: 64 << 10, onLine: progress)
        } catch {
            return .failure(.notInstalled(program: program, why: errnoText(error.code)))
        }
        if r.timedOut { return .failure(.timedOut(what: "the installation", seconds: Int(timeout))) }
        return r.succeeded ? .success(()) : .failure(.refused(reason: Self.reason(r), status: r.status))
    }

    /// The line that says why: RAUC ends a failed install with "LastError: …" or "Installing
    /// `…` failed: …"; otherwise the last line it printed.
    static func reason(_ r: Subprocess.Result) -> String {
        let lines = (r.stderrText + "\n" + r.stdoutText).split(whereSeparator: \.isNewline).map { $0.trimmed }.filter { !$0.isEmpty }
        if let l = lines.last(where: { $0.hasPrefix("LastError:") }) {
            return String(l.dropFirst("LastError:".count)).trimmed
        }
        if let l = lines.last(where: { $0.contains("failed") || $0.contains("error") || $0.contains("Error") }) { return l }
        return lines.last ?? "no message"
    }
}
