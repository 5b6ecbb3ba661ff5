import CrierAudio
import CrierCore
import CrierLink
import Dispatch
import Foundation

public enum RunCommand {
    /// The daemon. Returns the exit code after SIGTERM/SIGINT (0) or a fatal error.
    public static func run(configPath: String?) async -> Int32 {
        let ctx: CommandContext
        switch CommandContext.make(configPath: configPath) {
        case .success(let c): ctx = c
        case .failure(let e):
            // A config the box cannot read is logged and the defaults are used: a shop's typo
            // must not silence the speaker.
            let hub = LogHub(clock: WallClock.now)
            hub.add(StderrSink())
            hub.logger("config").error("\(e); running with defaults")
            ctx = CommandContext(hub: hub, loaded: ConfigLoader.Loaded(config: CrierConfig(), path: configPath ?? CrierConfig.defaultPath,
                                                                        fileFound: false, diagnostics: []))
        }
        let log = ctx.hub.logger("runtime")
        if !ctx.loaded.fileFound {
            log.warning("no config file at \(ctx.loaded.path); using defaults (see `crier config --example`)")
        }
        let daemon = Daemon(config: ctx.loaded.config, hub: ctx.hub)
        let signals = SignalStream([SIGTERM, SIGINT])
        await daemon.start()
        let sig = await signals.next()
        log.info("signal received; shutting down", ["signal": sig == SIGTERM ? "TERM" : "INT"])
        await daemon.shutdown()
        return ExitCode.ok
    }
}

/// SIGTERM/SIGINT as an async value, through Dispatch (the handler runs on a queue, not in
/// signal context).
final class SignalStream {
    private let stream: AsyncStream<Int32>
    private let sources: [any DispatchSourceSignal]

    init(_ signals: [Int32]) {
        let (s, c) = AsyncStream.makeStream(of: Int32.self)
        stream = s
        var srcs: [any DispatchSourceSignal] = []
        for sig in signals {
            signal(sig, SIG_IGN)
            let src = DispatchSource.makeSignalSource(signal: sig, queue: .global())
            src.setEventHandler { c.yield(sig) }
            src.resume()
            srcs.append(src)
        }
        sources = srcs
    }

    func next() async -> Int32 {
        for await s in stream { return s }
        return SIGTERM
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
            FileHandle.standardError.write(Data("crier order-sim: \(error)\n".utf8))
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
            FileHandle.standardError.write(Data("crier demo: \(e)\n".utf8))
            return ExitCode.failure
        }
        let log = ctx.hub.logger("demo")
        var sc = OrderServerConfig()
        sc.host = "127.0.0.1"
        sc.port = 0
        sc.every = o.every
        sc.readStdin = true
        sc.idPrefix = "D-"
        let server = OrderServer(config: sc)
        let port: Int
        do {
            port = try server.start()
        } catch {
            log.error("\(error)")
            return ExitCode.failure
        }
        var config = ctx.loaded.config
        config.link.server = ServerAddress(host: "127.0.0.1", port: port)
        config.deviceID = "demo"
        config.link.heartbeat = 5
        if ctx.loaded.fileFound == false {
            config.buttons.input = .keyboard
            config.buttons.statePath = NSTemporaryDirectory() + "crier-demo-state"
        }
        let format = AudioFormat(rate: config.audio.rate, channels: config.audio.channels)
        if let why = AudioEngine.probe(device: config.audio.device, format: format) {
            let path = FileManager.default.currentDirectoryPath + "/" + o.wav
            log.notice("\(why.description); writing the stream to \(path) instead (play it with `aplay \(o.wav)`)")
            config.audio.device = "file:'\(path)',wav"
        } else {
            log.notice("playing on audio device '\(config.audio.device)'")
        }
        log.notice("order server on 127.0.0.1:\(port): an order every \(ConfigValue.fmt(o.every.lowerBound))-\(ConfigValue.fmt(o.every.upperBound)) s; type a number + Enter for an order now, text for a text alert; Ctrl-C to stop")
        let daemon = Daemon(config: config, hub: ctx.hub)
        let signals = SignalStream([SIGTERM, SIGINT])
        await daemon.start()
        if let s = o.seconds {
            let stopper = Task { try? await Task.sleep(for: .seconds(s)); kill(getpid(), SIGTERM) }
            _ = stopper
        }
        _ = await signals.next()
        await daemon.shutdown()
        server.stop()
        return ExitCode.ok
    }
}
