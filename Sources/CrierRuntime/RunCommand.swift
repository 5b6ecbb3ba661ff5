import CrierAudio
import CrierCore
import CrierSystem
import CrierLink
import CrierPosix
import Dispatch
import Glibc
import Synchronization

public enum RunCommand {
    /// How the run ends: exit with a code, or re-exec in place with a changed crier.conf.
    enum End: Sendable { case exit(Int32), reload(startedAt: Double) }

    /// The documented bound on a stop (SIGTERM → exit), and on the stop half of a reload.
    public static let stopLimit = 6.0

    /// The daemon. Returns 0 after SIGTERM/SIGINT/SIGQUIT, 1 when the supervisor gives up
    /// (restart intensity exceeded) or another daemon already runs. SIGHUP re-reads crier.conf
    /// and, when it changed and is valid, re-executes this program in the same process.
    public static func run(configPath: String?, arguments: [String] = CommandLine.arguments) async -> Int32 {
        let reloadedAt = ReExec.takeMarker()
        let wifiSaid = ReExec.take(ReExec.wifiSaidVariable)
        // Signals first: one arriving during start-up must neither kill the daemon (the default
        // action) nor be lost; the stream holds it until the loop below reads it.
        let handled = SignalWatcher.Signal.asynchronous
        let watcher: Result<SignalWatcher, SystemError>
        do { watcher = .success(try SignalWatcher.start(handled)) } catch { watcher = .failure(error) }
        // A config the box cannot read is logged and the defaults are used: a shop's typo
        // must not silence the speaker. The same configuration check-config prints.
        let ctx = CommandContext.forRun(configPath: configPath)
        let fileConfig = ctx.loaded.config
        var config = fileConfig
        // A reload is not a power-on: no "started" prompt.
        if reloadedAt != nil { config.status.onStart = false }
        let hub = ctx.hub
        let log = hub.logger("runtime")
        // TEST ONLY (scripts/soak.sh): CRIER_TEST_AUDIO_SPEED compresses the limiter's minute too.
        let testSpeed = AudioTestSpeed(value: FileIO.env(AudioTestSpeed.variable), device: config.audio.device)
        hub.limitRepeats(RateLimiter(window: testSpeed.logWindow(RateLimiter().window)))
        hub.noteClockSteps(monotonic: Monotonic.now)
        let lastError = LastErrorSink()
        hub.add(lastError)
        // The local page's log tail (docs/setup.md), from the first line on.
        let logTail = LogTailSink()
        if config.web.listen != nil { hub.add(logTail) }
        var serial: SerialSink?
        if !config.log.serial.isEmpty {
            do {
                let sink = try SerialSink(path: config.log.serial, options: SerialSink.Options(baud: config.log.serialBaud))
                hub.add(sink)
                serial = sink
            } catch {
                log.error("serial log on \(config.log.serial) unavailable: \(error); check log.serial in crier.conf")
            }
        }
        // Now that every sink is there (serial console, last error), what the config said.
        ctx.reportConfig()
        if !ctx.loaded.fileFound && ctx.loaded.diagnostics.isEmpty {
            log.warning("no config file at \(ctx.loaded.path); using defaults (see `crier config --example`)")
        }
        let signals: SignalWatcher
        switch watcher {
        case .success(let w): signals = w
        case .failure(let error):
            log.error("cannot watch signals: \(error)")
            return ExitCode.failure
        }
        let notifier: SystemdNotifier?
        do { notifier = try SystemdNotifier() } catch {
            log.error("systemd notify socket unusable: \(error); continuing without it")
            notifier = nil
        }

        let daemon = Daemon(config: config, hub: hub, configPath: ctx.loaded.path)
        // A reload is not a new connection: "Wi-Fi connected" said before it is not said again.
        if reloadedAt != nil, let w = wifiSaid { await daemon.reloaded(wifiConnectedSaid: w) }
        let supervisor: Supervisor
        do {
            var parts: [any SupervisedComponent] = [AudioComponent(daemon: daemon), SpeechComponent(daemon: daemon, deadline: config.speech.deadline)]
            if config.link.server != nil { parts.append(LinkComponent(daemon: daemon, heartbeat: config.link.heartbeat)) }
            parts.append(ButtonsComponent(daemon: daemon))
            if config.music.enabled { parts.append(MusicComponent(daemon: daemon, stallSeconds: config.music.stallSeconds)) }
            supervisor = try Supervisor(components: parts,
                                        options: config.supervision.options, log: hub.logger("supervisor"))
        } catch {
            log.error("\(error)")
            return ExitCode.failure
        }
        // Filled in once the control socket is ours (the single-instance lock): a second
        // daemon that is refused must not touch the run record.
        let powerView = PowerView()
        let snapshot: @Sendable () async -> StatusSnapshot = {
            var s = await daemon.snapshot(components: supervisor.statuses(), lastError: lastError.lastError)
            (s.power, s.lastStart) = powerView.status
            return s
        }
        // The control socket is the single-instance lock: bound before anything else starts, so
        // a second daemon refuses before it opens the device or connects as the same device id.
        // A socket file nobody answers on (a SIGKILLed daemon's) is replaced.
        var control: ControlServer?
        if !config.log.controlSocket.isEmpty {
            do throws(ControlError) {
                // Group-restricted where the package created the `crier` group; owner-only otherwise.
                let group: String? = getgrnam("crier") != nil ? "crier" : nil
                control = try ControlServer.bindDefaultOrFallback(
                    configured: config.log.controlSocket, group: group,
                    handlers: .init(status: snapshot, say: { lang, text in await daemon.request(lang, text) },
                                    setup: { words in await daemon.setupCommand(words) }),
                    log: hub.logger("control"))
            } catch {
                if case .alreadyRunning = error {
                    log.error("refusing to start: \(error)")
                    return ExitCode.failure
                }
                log.warning("control socket unavailable: \(error); `crier status` will not reach this daemon, and a second daemon would not be refused")
            }
        }

        let power = await RunPower.start(config: config, daemon: daemon, reload: reloadedAt != nil, log: log, view: powerView)
        if let dir = control.map({ FileIO.directory(of: $0.path) }) {
            // Before anything is said. TEST ONLY: CRIER_TEST_SPEECH_ABORT (test_security.py).
            daemon.guardSpeechCrashes(dir: dir, testAbort: FileIO.env("CRIER_TEST_SPEECH_ABORT"))
        }
        await daemon.start()
        await daemon.setRuntimeDir(control.map { FileIO.directory(of: $0.path) })
        let web = LocalPage.start(config: config, configPath: ctx.loaded.path, daemon: daemon,
                                  runtimeDir: control.map { FileIO.directory(of: $0.path) },
                                  snapshot: snapshot, tail: logTail, hub: hub)
        let (ends, endsIn) = AsyncStream.makeStream(of: End.self)
        let supTask = Task {
            do {
                try await supervisor.run()
            } catch {
                log.error("\(error); exiting so systemd restarts the whole process")
                endsIn.yield(.exit(ExitCode.failure))
            }
        }
        let stopping = Atomic<Bool>(false)
        let reloadPath = ctx.loaded.path
        let reloadRequired = configPath != nil || ctx.loaded.fileFound
        let signalTask = Task {
            for await s in signals.signals {
                switch s {
                case .terminate, .interrupt, .quit:
                    if !stopping.load(ordering: .relaxed) {
                        log.info("signal received; shutting down", ["signal": s.description])
                        endsIn.yield(.exit(ExitCode.ok))
                    } else {
                        log.notice("signal received while stopping; cutting the current alert now instead of at the end of the grace period",
                                   ["signal": s.description])
                        await daemon.hurry()
                    }
                case .hangup:
                    let t = Monotonic.now()
                    if stopping.load(ordering: .relaxed) {
                        log.notice("signal received while stopping; already on the way out", ["signal": s.description])
                    } else if Reload.changed(path: reloadPath, required: reloadRequired, running: fileConfig, log: log) {
                        endsIn.yield(.reload(startedAt: t))
                    }
                default:
                    log.notice("signal received; it has no meaning for crier, ignored", ["signal": s.description])
                }
            }
        }
        try? notifier?.ready(status: StatusFormat.systemdLine(await snapshot()))
        if let t = reloadedAt {
            log.info("reloaded: running with the new configuration", ["after": Format.fixed(Monotonic.now() - t, 2) + "s"])
        }
        let petTask = Task {
            guard let n = notifier, let petter = WatchdogPetter.fromEnvironment() else { return }
            await WatchdogPetter.run(petter, clock: SystemClock(), reloaded: reloadedAt != nil, health: { supervisor.health() },
                                     pet: { try? n.watchdog() }, log: hub.logger("watchdog"))
        }
        let statusTask = Task {
            while !Task.isCancelled {
                try? await Task.sleep(for: .seconds(5))
                hub.flushRepeats()
                try? notifier?.status(StatusFormat.systemdLine(await snapshot()))
            }
        }
        var first = End.exit(ExitCode.ok)
        for await e in ends { first = e; break }
        let end = first
        stopping.store(true, ordering: .relaxed)
        let stopStarted = Monotonic.now()
        switch end {
        case .exit: try? notifier?.stopping(status: "stopping")
        case .reload:
            // systemd (Type=notify-reload, or a unit's ExecReload) waits for the READY=1 the
            // new image sends. WATCHDOG=1: systemd's watchdog timer runs on through the stop
            // (bounded by the backstop), the exec and the new image's start, which pets at once
            // (WatchdogPetter.start); the pet before the stop may be 4.4 s old.
            try? notifier?.send(["RELOADING=1", "MONOTONIC_USEC=\(Int64(Monotonic.now() * 1e6))", "STATUS=reloading crier.conf", "WATCHDOG=1"])
        }
        // The stop is bounded whatever part of it hangs (a driver call, a thread in connect):
        // past the limit the process leaves anyway, saying where it was.
        let backstop = StopBackstop(limit: stopLimit, log: log) {
            if case .reload(let t) = end {
                let e = ReExec.exec(arguments: arguments, reloadStartedAt: t, handled: handled)
                log.error("reload failed: \(e); exiting so systemd restarts crier")
            }
            _exit(ExitCode.failure)
        }
        statusTask.cancel()
        petTask.cancel()
        power.monitor.stop()
        backstop.stage("closing the control socket and the local page")
        control?.close()
        web?.stop()
        // Supervision ends first, so parts stopping on purpose are not "restarted".
        backstop.stage("stopping the supervisor")
        supervisor.stop()
        _ = await supTask.value
        backstop.stage("finishing the current alert, closing the link and the audio device")
        await daemon.shutdown()
        backstop.finished()
        log.info("stop took", ["seconds": Format.fixed(Monotonic.now() - stopStarted, 2)])
        hub.flushRepeats(final: true)
        serial?.close(flushTimeout: 0.5)
        switch end {
        case .exit(let code):
            signalTask.cancel()
            // A stop that ran to its end: the next start says "after a clean stop".
            if code == ExitCode.ok { power.runRecord.stopped() }
            return code
        case .reload(let t):
            log.info("reload: starting again in place with the new configuration", ["after": Format.fixed(Monotonic.now() - t, 2) + "s"])
            let carry = await daemon.wifiConnectedSaid().map { [(ReExec.wifiSaidVariable, $0)] } ?? []
            try? notifier?.send(["WATCHDOG=1"])
            let e = ReExec.exec(arguments: arguments, reloadStartedAt: t, handled: handled, carry: carry)
            log.error("reload failed: \(e); exiting so systemd restarts crier with the new configuration")
            return ExitCode.failure
        }
    }
}
