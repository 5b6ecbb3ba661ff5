import CrierAudio
import CrierCore
import CrierSystem
import CrierLink
import CrierPosix
import Dispatch
import Glibc

public enum RunCommand {
    /// The daemon. Returns 0 after SIGTERM/SIGINT, 1 when the supervisor gives up (restart
    /// intensity exceeded) so systemd restarts the whole process.
    public static func run(configPath: String?) async -> Int32 {
        // A config the box cannot read is logged and the defaults are used: a shop's typo
        // must not silence the speaker. The same configuration check-config prints.
        let ctx = CommandContext.forRun(configPath: configPath)
        let config = ctx.loaded.config
        let hub = ctx.hub
        let log = hub.logger("runtime")
        if !ctx.loaded.fileFound && ctx.loaded.diagnostics.isEmpty {
            log.warning("no config file at \(ctx.loaded.path); using defaults (see `crier config --example`)")
        }
        hub.limitRepeats()
        let lastError = LastErrorSink()
        hub.add(lastError)
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
        let signals: SignalWatcher
        do {
            signals = try SignalWatcher.start([.terminate, .interrupt])
        } catch {
            log.error("cannot watch signals: \(error)")
            return ExitCode.failure
        }
        let notifier: SystemdNotifier?
        do { notifier = try SystemdNotifier() } catch {
            log.error("systemd notify socket unusable: \(error); continuing without it")
            notifier = nil
        }

        let daemon = Daemon(config: config, hub: hub)
        await daemon.start()
        let supervisor: Supervisor
        do {
            var parts: [any SupervisedComponent] = [AudioComponent(daemon: daemon), SpeechComponent(daemon: daemon, deadline: config.speech.deadline)]
            if config.link.server != nil { parts.append(LinkComponent(daemon: daemon, heartbeat: config.link.heartbeat)) }
            parts.append(ButtonsComponent(daemon: daemon))
            supervisor = try Supervisor(components: parts,
                                        options: config.supervision.options, log: hub.logger("supervisor"))
        } catch {
            log.error("\(error)")
            return ExitCode.failure
        }
        let (ends, endsIn) = AsyncStream.makeStream(of: Int32.self)
        let supTask = Task {
            do {
                try await supervisor.run()
            } catch {
                log.error("\(error); exiting so systemd restarts the whole process")
                endsIn.yield(ExitCode.failure)
            }
        }
        let signalTask = Task {
            for await s in signals.signals {
                log.info("signal received; shutting down", ["signal": s.description])
                endsIn.yield(ExitCode.ok)
            }
        }
        let snapshot: @Sendable () async -> StatusSnapshot = {
            await daemon.snapshot(components: supervisor.statuses(), lastError: lastError.lastError)
        }
        var control: ControlServer?
        if !config.log.controlSocket.isEmpty {
            do {
                // Group-restricted where the package created the `crier` group; owner-only otherwise.
                let group: String? = getgrnam("crier") != nil ? "crier" : nil
                control = try ControlServer(path: config.log.controlSocket, group: group,
                                            handlers: .init(status: snapshot, say: { lang, text in await daemon.request(lang, text) }),
                                            log: hub.logger("control"))
            } catch {
                log.warning("control socket unavailable: \(error); `crier status` will not reach this daemon")
            }
        }
        try? notifier?.ready(status: StatusFormat.systemdLine(await snapshot()))
        let petTask = Task {
            guard let n = notifier, let petter = WatchdogPetter.fromEnvironment() else { return }
            await WatchdogPetter.run(petter, clock: SystemClock(), health: { supervisor.health() },
                                     pet: { try? n.watchdog() }, log: hub.logger("watchdog"))
        }
        let statusTask = Task {
            while !Task.isCancelled {
                try? await Task.sleep(for: .seconds(5))
                hub.flushRepeats()
                try? notifier?.status(StatusFormat.systemdLine(await snapshot()))
            }
        }
        var code = ExitCode.ok
        for await c in ends { code = c; break }
        try? notifier?.stopping(status: "stopping")
        statusTask.cancel()
        petTask.cancel()
        signalTask.cancel()
        control?.close()
        // Supervision ends first, so parts stopping on purpose are not "restarted".
        supervisor.stop()
        _ = await supTask.value
        await daemon.shutdown()
        hub.flushRepeats(final: true)
        serial?.close(flushTimeout: 1)
        return code
    }
}

/// The audio engine under supervision: progress is the engine thread's own loop; a stall gets
/// a fresh engine (the stuck thread cannot be stopped).
struct AudioComponent: SupervisedComponent {
    let daemon: Daemon
    var name: String { "audio" }
    var stallDeadline: Double? { 3 }
    var stopTimeout: Double { 1 }

    func run(progress: ProgressHandle) async throws {
        // A sixth of the stall deadline: detection stays within 3.5 s, and each check is a
        // wakeup of the idle process (docs/audio.md, "Idle wakeups").
        await progress.follow(every: 0.5) { daemon.engine.lastProgress }
    }

    func requestStop(_ reason: StopReason) {
        if reason == .stalled { Task { await daemon.replaceAudioEngine() } }
    }
}

/// The espeak-ng thread: a synthesis that outlives its deadline by far (the library stuck in C,
/// where the deadline callback cannot reach) counts as a stall. The library cannot be restarted
/// in-process, so repeated stalls end in the restart intensity and a process restart.
struct SpeechComponent: SupervisedComponent {
    let daemon: Daemon
    let deadline: Double
    var name: String { "speech" }
    var stallDeadline: Double? { deadline + 10 }

    func run(progress: ProgressHandle) async throws {
        let speech = daemon.pipeline.speech
        await progress.follow(every: 1) { speech.progressMark }
    }
}

/// The order link thread: it reconnects by itself; a thread that stops going round its loop
/// (stuck in a name lookup or connect) is replaced.
struct LinkComponent: SupervisedComponent {
    let daemon: Daemon
    let heartbeat: Double
    var name: String { "link" }
    // Longest legitimate silence of the loop: a connect timeout plus a slow name lookup.
    var stallDeadline: Double? { 45 }

    func run(progress: ProgressHandle) async throws {
        var last = -1.0
        while !Task.isCancelled, progress.stopRequested == nil {
            let mark = await daemon.linkProgress()
            if mark != last {
                last = mark
                progress.heartbeat()
            }
            try? await Task.sleep(for: .seconds(2))
        }
    }

    func requestStop(_ reason: StopReason) {
        if reason == .stalled { Task { await daemon.replaceLink() } }
    }
}

/// The button reader: its thread retries missing lines itself; the supervisor restarts it if
/// it ever ends.
struct ButtonsComponent: SupervisedComponent {
    let daemon: Daemon
    var name: String { "buttons" }
    var dependencies: [String] { ["audio"] }

    func run(progress: ProgressHandle) async throws {
        await daemon.runButtons()
    }

    func requestStop(_ reason: StopReason) {
        Task { await daemon.stopButtons() }
    }
}

public struct OrderSimOptions: Sendable {
    public var config = OrderServerConfig()
    public init() {}
}

public enum OrderSimCommand {
    public static func run(_ o: OrderSimOptions) -> Int32 {
        let server = OrderServer(config: o.config)
        do {
            let summary = try server.run()
            return summary.timedOut || summary.unacked > 0 ? ExitCode.failure : ExitCode.ok
        } catch {
            FileIO.stderr("crier order-sim: \(error)\n")
            return ExitCode.failure
        }
    }
}

public struct DemoOptions: Sendable {
    public var configPath: String?
    public var every: ClosedRange<Double> = 4...8
    public var seconds: Double?
    public var wav = "crier-demo.wav"
    public init() {}
}

/// `crier demo`: the reference order server on loopback plus the runtime, in one process.
public enum DemoCommand {
    public static func run(_ o: DemoOptions) async -> Int32 {
        let ctx: CommandContext
        switch CommandContext.make(configPath: o.configPath) {
        case .success(let c): ctx = c
        case .failure(let e):
            FileIO.stderr("crier demo: \(e)\n")
            return ExitCode.failure
        }
        let log = ctx.hub.logger("demo")
        var sc = OrderServerConfig()
        sc.host = "127.0.0.1"
        sc.port = 0
        sc.every = o.every
        sc.readStdin = true
        sc.idPrefix = "D-"
        sc.key = ctx.loaded.config.link.key  // a config with server.key: the demo signs its orders
        let server = OrderServer(config: sc)
        let port: Int
        do {
            port = try server.start()
        } catch {
            log.error("\(error)")
            return ExitCode.failure
        }
        var config = ctx.loaded.config
        config.link.server = ServerAddress(host: "127.0.0.1", port: port)  // plain TCP on loopback
        config.link.ca = nil
        config.link.pins = []
        config.deviceID = "demo"
        config.link.heartbeat = 5
        if ctx.loaded.fileFound == false {
            // Keys on a terminal; otherwise a FIFO a script can write levels to.
            if isatty(0) != 0 {
                config.buttons.input = .keyboard
            } else {
                let fifo = FileIO.temporaryDirectory() + "crier-demo-buttons"
                config.buttons.input = .fifo(fifo)
                log.notice("buttons: write lines like `GPIO27 0` / `GPIO27 1` to \(fifo) (stdin is not a terminal)")
            }
            config.buttons.statePath = FileIO.temporaryDirectory() + "crier-demo-state"
        }
        let format = AudioFormat(rate: config.audio.rate, channels: config.audio.channels)
        if let why = AudioEngine.probe(device: config.audio.device, format: format) {
            let path = FileIO.currentDirectory() + "/" + o.wav
            log.notice("\(why.description); writing the stream to \(path) instead (play it with `aplay \(o.wav)`)")
            config.audio.device = "file:'\(path)',wav"
        } else {
            log.notice("playing on audio device '\(config.audio.device)'")
        }
        log.notice("order server on 127.0.0.1:\(port): an order every \(ConfigValue.fmt(o.every.lowerBound))-\(ConfigValue.fmt(o.every.upperBound)) s; type a number + Enter for an order now, text for a text alert; Ctrl-C to stop")
        let daemon = Daemon(config: config, hub: ctx.hub)
        guard let signals = try? SignalWatcher.start([.terminate, .interrupt]) else { return ExitCode.failure }
        await daemon.start()
        let buttons = Task { await daemon.runButtons() }
        if let s = o.seconds {
            let stopper = Task { try? await Task.sleep(for: .seconds(s)); kill(getpid(), SIGTERM) }
            _ = stopper
        }
        for await _ in signals.signals { break }
        buttons.cancel()
        await daemon.shutdown()
        server.stop()
        return ExitCode.ok
    }
}
