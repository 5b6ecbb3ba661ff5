import CrierCore
import CrierPosix
import CrierWeb
import Glibc

/// Wires the local page (docs/setup.md): CrierCore's `WebApp` behind CrierWeb's server, its
/// actions through the daemon's own entry points (`request`, the buttons' press), its settings
/// written into crier.conf and applied by the SIGHUP path.
enum LocalPage {
    /// Where a settings change goes when the daemon may not write crier.conf itself (the
    /// packaged unit: /boot/firmware is read-only to it); crier-config.path applies it as root.
    static func requestPath(runtimeDir: String) -> String { runtimeDir + "/crier.conf.new" }

    /// Replaced durably (FileIO.writeDurably writes 0600), then given back the mode it had, so
    /// a file others could read stays readable (`crier check-config` as another user).
    static func writeKeepingMode(_ path: String, _ bytes: [UInt8]) throws(SystemError) {
        var st = stat()
        let mode: mode_t = stat(path, &st) == 0 ? st.st_mode & 0o7777 : 0o644
        try FileIO.writeDurably(path, bytes)
        _ = chmod(path, mode)
    }

    enum Written { case written, handedOver }

    /// crier.conf's new text, the way every change from a phone is saved (the page's settings,
    /// the setup hotspot's network): replaced durably when the daemon may write it; otherwise
    /// (EACCES/EPERM/EROFS: the packaged unit, /boot/firmware read-only to it) handed to
    /// crier-config.path as `RUNTIME_DIR/crier.conf.new`, which `crier apply-config` checks,
    /// writes as root and follows with `systemctl reload crier`.
    static func writeConfig(_ text: String, configPath: String, runtimeDir: String?, log: Logger, what: String) -> Result<Written, ConfigEditor.Refusal> {
        do throws(SystemError) {
            try writeKeepingMode(configPath, Array(text.utf8))
            return .success(.written)
        } catch {
            guard [EACCES, EPERM, EROFS].contains(error.code), let dir = runtimeDir else {
                log.error("cannot write \(configPath): \(error); \(what) not saved")
                return .failure(ConfigEditor.Refusal(key: nil, message: "cannot write the configuration file"))
            }
            // Not ours to write: the root helper checks it again, writes it and reloads.
            do throws(SystemError) {
                try FileIO.writePrivate(requestPath(runtimeDir: dir), Array(text.utf8))
            } catch {
                log.error("cannot hand the \(what) to crier-config: \(error); \(what) not saved")
                return .failure(ConfigEditor.Refusal(key: nil, message: "cannot save the \(what)"))
            }
            log.info("\(what) handed to crier-config.service to write \(configPath) and reload", ["request": requestPath(runtimeDir: dir)])
            return .success(.handedOver)
        }
    }

    static func start(config: CrierConfig, configPath: String, daemon: Daemon, runtimeDir: String?,
                      snapshot: @escaping @Sendable () async -> StatusSnapshot, tail: LogTailSink, hub: LogHub) -> WebServer? {
        let log = hub.logger("web")
        guard let listen = config.web.listen else {
            if FileIO.env("LISTEN_FDS") != nil {
                log.notice("web.listen = off, but systemd passed a socket for the page (crier.socket): it stays open unanswered; `systemctl disable --now crier.socket` closes it")
            }
            return nil
        }
        let sessionsPath = runtimeDir.map { $0 + "/web-sessions" }
        var sessions = WebSessions()
        if let p = sessionsPath, let b = try? FileIO.read(p, limit: 64 * 1024) {
            sessions = WebSessions.parse(String(decoding: b, as: UTF8.self), now: Monotonic.now())
        }
        #if DEBUG
        // Test builds only: a short session lifetime, so an expired session is tested end to end.
        if let s = FileIO.env("CRIER_TEST_WEB_SESSION_SECONDS").flatMap(Double.init), s > 0 { sessions.lifetime = s }
        #endif
        let hooks = WebHooks(
            status: snapshot,
            logTail: { tail.tail },
            say: { lang, text, secret in
                if secret {
                    #if DEBUG
                    // Test builds only (Tests/integration/test_web.py): what the box says, for the
                    // test to hear. A release build (the .deb, the image) has no such hook.
                    if let p = FileIO.env("CRIER_TEST_PAIRING_SPEECH_FILE") { try? FileIO.writePrivate(p, Array(text.utf8)) }
                    #endif
                    await daemon.requestSecret(lang, text)
                } else {
                    _ = await daemon.request(lang, text)
                }
            },
            perform: { action in
                switch action {
                case .volumeUp: await daemon.press(.volumeUp)
                case .volumeDown: await daemon.press(.volumeDown)
                case .mute: await daemon.press(.mute)
                case .replay: await daemon.press(.replay)
                case .test: break  // said through `say`
                }
            },
            readConfig: {
                do throws(SystemError) {
                    return .success(String(decoding: try FileIO.read(configPath, limit: 1 << 20), as: UTF8.self))
                } catch {
                    if error.code == ENOENT { return .success("") }
                    return .failure(ConfigEditor.Refusal(key: nil, message: "cannot read \(configPath): \(error)"))
                }
            },
            writeConfig: { text in
                switch writeConfig(text, configPath: configPath, runtimeDir: runtimeDir, log: log, what: "settings") {
                case .failure(let e): return .failure(e)
                case .success(.handedOver): return .success("saved; applying")
                case .success(.written):
                    // The same path as `systemctl reload crier`.
                    kill(getpid(), SIGHUP)
                    return .success("saved; applying")
                }
            },
            setupState: { await daemon.setupState() },
            setupSubmit: { ssid, psk, hidden, country in await daemon.setupSubmit(ssid: ssid, psk: psk, hidden: hidden, country: country) },
            setupRescan: { await daemon.setupRescan() },
            setupClose: { await daemon.setupClose() })
        let app = WebApp(config: config, hooks: hooks, log: log, clock: { Monotonic.now() }, sessions: sessions,
                         persist: { text in if let p = sessionsPath { try? FileIO.writePrivate(p, Array(text.utf8)) } })
        do {
            let server = try WebServer(listen: listen, log: log) { await app.handle($0) }
            log.info("local page listening", ["address": server.address])
            return server
        } catch {
            let hint = listen.port < 1024 ? " (a port below 1024 needs crier.socket: `systemctl enable --now crier.socket`)" : ""
            log.error("local page unavailable on \(listen): \(error)\(hint); check web.listen in crier.conf")
            return nil
        }
    }
}

/// `crier apply-config REQUEST TARGET`: what crier-config.service (root) runs when the local
/// page saved settings the daemon may not write itself. REQUEST is checked by the same parser
/// as `crier check-config` (any error: refused, nothing written), TARGET replaced durably
/// (temporary file, fsync, rename, directory fsync), REQUEST removed. Exit 0 written, 1 refused.
public enum ApplyConfigCommand {
    public static func run(request: String, target: String) -> Int32 {
        defer { unlink(request) }
        let bytes: [UInt8]
        do throws(SystemError) {
            bytes = try FileIO.read(request, limit: 1 << 20)
        } catch {
            FileIO.stderr("crier apply-config: \(error)\n")
            return ExitCode.failure
        }
        let r = ConfigParser().parse(bytes: bytes, file: target)
        guard r.errors.isEmpty else {
            for d in r.errors { FileIO.stderr("crier apply-config: refused: \(LogRecord.escape(d.description))\n") }
            return ExitCode.failure
        }
        do throws(SystemError) {
            try LocalPage.writeKeepingMode(target, bytes)
        } catch {
            FileIO.stderr("crier apply-config: \(error); \(target) unchanged\n")
            return ExitCode.failure
        }
        print("crier apply-config: \(target) written (\(bytes.count) bytes)")
        return ExitCode.ok
    }
}
