import CrierCore
import CrierPosix
import CrierSystem
import Glibc

/// `crier update FILE|URL`: installs a signed RAUC bundle into the other root slot
/// (docs/updates.md). RAUC checks the signature, the board and the bundle's integrity; the slot
/// is tried at the next boot and kept only if crier is healthy there (crier-mark-good).
public enum UpdateCommand {
    /// Exit statuses: 0 installed, 1 refused or failed (nothing changed), 2 usage, 3 this box
    /// cannot be updated through crier (update.rauc = off, or RAUC missing).
    public static let unavailable: Int32 = 3

    public struct Options: Sendable {
        public var source: String
        public var configPath: String?
        public var reboot = false
        public init(source: String, configPath: String? = nil) {
            self.source = source
            self.configPath = configPath
        }
    }

    public static func run(_ o: Options) -> Int32 {
        let loaded: ConfigLoader.Loaded
        do {
            loaded = try ConfigLoader.load(path: o.configPath ?? CrierConfig.defaultPath, required: o.configPath != nil)
        } catch {
            return say("\(error)", ExitCode.failure)
        }
        let config = loaded.config.update
        guard let program = config.rauc else {
            return say("updates through crier are off (update.rauc = off in \(loaded.path))", unavailable)
        }
        let source: UpdateSource
        do throws(UpdateSource.Invalid) {
            source = try UpdateSource(parsing: o.source, relativeTo: FileIO.currentDirectory())
        } catch {
            return say(error.message, ExitCode.usage)
        }
        if case .file(let path) = source {
            var st = stat()
            guard stat(path, &st) == 0 else {
                return say("bundle \(path): \(errnoText(errno)); nothing was changed", ExitCode.failure)
            }
            guard st.st_mode & S_IFMT == S_IFREG else {
                return say("bundle \(path) is not a regular file; nothing was changed", ExitCode.failure)
            }
        }
        let before = try? FileIO.read(config.pendingPath, limit: 4096)
        let prepared: UpdateDownload.Prepared
        switch UpdateDownload.prepare(source, config, say: { line in print("crier update: \(line)"); fflush(nil) }) {
        case .success(let p): prepared = p
        case .failure(let f): return say("\(f.message); nothing was changed, the running slot stays as it is", ExitCode.failure)
        }
        defer { UpdateDownload.discard(prepared) }
        // (with update.download = off the path is the URL, handed to RAUC as given: shown redacted)
        let secret = prepared.path
        print("crier update: installing \(ShownURL.redacted(prepared.path)) with \(program) (RAUC checks its signature and board first)")
        let rauc = Rauc(program: program)
        switch rauc.install(prepared.path, progress: { line in print("crier update: rauc: \(ShownURL.scrub(line, secretsOf: secret))"); fflush(nil) }) {
        case .failure(let f):
            if case .notInstalled = f { return say(f.description, unavailable) }
            return say("\(ShownURL.scrub(f.description, secretsOf: secret)); nothing was changed, the running slot stays as it is", ExitCode.failure)
        case .success:
            break
        }
        // The post-install handler (image: crier-rauc-post-install) records what was installed.
        let after = try? FileIO.read(config.pendingPath, limit: 4096)
        if let a = after, a != before, let p = PendingUpdate(fileText: String(decoding: a, as: UTF8.self)) {
            print("crier update: installed version \(p.version) into slot \(p.slot) (running slot \(p.fromSlot), crier \(p.fromVersion)); it is tried at the next boot and kept only if crier is healthy there")
        } else {
            print("crier update: installed; no new \(config.pendingPath) was written (not the crier image's post-install handler?), so no trial boot is watched")
        }
        guard o.reboot else {
            print("crier update: reboot to run it: systemctl reboot (or crier update --reboot next time)")
            return ExitCode.ok
        }
        print("crier update: rebooting now")
        do throws(SystemError) {
            let r = try Subprocess.run("systemctl", ["reboot"], timeout: 60)
            if !r.succeeded {
                return say("installed, but `systemctl reboot` failed: \(r.stderrText.split(whereSeparator: \.isNewline).last ?? "exit status \(r.status ?? -1)"); reboot by hand", ExitCode.failure)
            }
        } catch {
            return say("installed, but systemctl could not be run (\(error)); reboot by hand", ExitCode.failure)
        }
        return ExitCode.ok
    }

    static func say(_ message: String, _ code: Int32) -> Int32 {
        FileIO.stderr("crier update: \(message)\n")
        return code
    }
}
