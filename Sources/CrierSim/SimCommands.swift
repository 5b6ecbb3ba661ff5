import CrierAudio
import CrierCore
import CrierLink
import CrierPosix
import CrierRuntime
import CrierSystem
import Glibc

/// `crier-sim order-sim`: the reference order server (TCP, or MQTT with --mqtt).
public struct OrderSimOptions: Sendable {
    public var config = OrderServerConfig()
    /// `--mqtt URL`: publish to a broker instead of serving protocol v1.
    public var mqtt: MQTTSimConfig?
    public init() {}
}

public enum OrderSimCommand {
    public static func run(_ o: OrderSimOptions) -> Int32 {
        if let m = o.mqtt {
            let sim = MQTTOrderSim(mqtt: m, orders: o.config)
            do {
                let summary = try sim.run()
                return summary.timedOut || summary.unacked > 0 ? ExitCode.failure : ExitCode.ok
            } catch {
                FileIO.stderr("crier-sim order-sim: \(error)\n")
                return ExitCode.failure
            }
        }
        let server = OrderServer(config: o.config)
        do {
            let summary = try server.run()
            return summary.timedOut || summary.unacked > 0 ? ExitCode.failure : ExitCode.ok
        } catch {
            FileIO.stderr("crier-sim order-sim: \(error)\n")
            return ExitCode.failure
        }
    }
}

public struct DemoOptions: Sendable {
    public var configPath: String?
    public var every: ClosedRange<Double> = 4...8
    public var seconds: Double?
    public var wav = "crier-demo.wav"
    /// Through this broker instead of the built-in v1 server.
    public var mqtt: ServerAddress?
    public init() {}
}

/// `crier-sim demo`: the reference order server on loopback plus the runtime, in one process.
public enum DemoCommand {
    public static func run(_ o: DemoOptions) async -> Int32 {
        let ctx: CommandContext
        switch CommandContext.make(configPath: o.configPath) {
        case .success(let c): ctx = c
        case .failure(let e):
            FileIO.stderr("crier-sim demo: \(e)\n")
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
        var config = ctx.loaded.config
        var mqttSim: MQTTOrderSim?
        let port: Int
        if let m = o.mqtt {
            var mc = MQTTSimConfig(server: m)
            mc.devices = ["demo"]
            mc.prefix = config.link.mqtt.prefix
            mc.clientID = "crier-demo-sim"
            let sim = MQTTOrderSim(mqtt: mc, orders: sc) { FileIO.stderr("order-sim: " + $0 + "\n") }
            mqttSim = sim
            do {
                try PosixThread.detach(name: "crier-demo-sim") {
                    do { _ = try sim.run() } catch { FileIO.stderr("crier-sim demo: \(error)\n") }
                }
            } catch {
                log.error("\(error)")
                return ExitCode.failure
            }
            config.link.server = m
            port = m.port
        } else {
            do {
                port = try server.start()
            } catch {
                log.error("\(error)")
                return ExitCode.failure
            }
            config.link.server = ServerAddress(host: "127.0.0.1", port: port)  // plain TCP on loopback
        }
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
            // Acks in memory only: every run's server numbers its orders D-1, D-2... afresh, and
            // an outbox kept from the last run answered them "already spoken" in silence.
            config.link.outbox = ""
        }
        let format = AudioFormat(rate: config.audio.rate, channels: config.audio.channels)
        if let why = AudioEngine.probe(device: config.audio.device, format: format) {
            let path = FileIO.currentDirectory() + "/" + o.wav
            log.notice("\(why.description); writing the stream to \(path) instead (play it with `aplay \(o.wav)`)")
            config.audio.device = "file:'\(path)',wav"
        } else {
            log.notice("playing on audio device '\(config.audio.device)'")
        }
        log.notice((o.mqtt.map { "orders through the broker \($0)" } ?? "order server on 127.0.0.1:\(port)") + ": an order every \(ConfigValue.fmt(o.every.lowerBound))-\(ConfigValue.fmt(o.every.upperBound)) s; type a number + Enter for an order now, text for a text alert; Ctrl-C to stop")
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
        if let sim = mqttSim { sim.requestStop() } else { server.stop() }
        return ExitCode.ok
    }
}
