import CrierCore
import CrierLink
import CrierSystem
import CrierPosix
import CrierRuntime
import Glibc
import Synchronization

/// `crier-sim mqtt-fleet`: a benchmark, not a test (scripts/bench.sh --only mqtt). N boxes' MQTT
/// links (the real `MQTTLink`: own thread, libmosquitto client, persistent session, inbox
/// journal fsynced per order) in one process against one broker, each "saying" an order at
/// once (the ack follows the order event, no audio), and the MQTT order simulator publishing
/// orders at a steady rate round robin. Prints the simulator's summary: every order acked
/// exactly once, publish → ack p50/p99.
public struct MQTTFleetOptions: Sendable {
    public var server: ServerAddress
    public var boxes = 100
    public var rate = 50.0
    public var seconds = 20.0
    public var dir = FileIO.temporaryDirectory()
    public var username: String?
    public var password: String?
    public init(server: ServerAddress) { self.server = server }
}

public enum MQTTFleetCommand {
    public static func run(_ o: MQTTFleetOptions) -> Int32 {
        let hub = LogHub(clock: WallClock.now)
        hub.add(StderrSink(syslogPrefix: false))
        hub.setMinimum(.warning)
        let log = hub.logger("fleet")
        let links = Mutex<[MQTTLink]>([])
        let connected = Atomic<Int>(0)
        let t0 = Monotonic.now()
        for i in 0..<o.boxes {
            var lc = LinkConfig()
            lc.server = o.server
            lc.heartbeat = 30
            lc.mqtt.username = o.username
            lc.mqtt.password = o.password
            var opts = MQTTLink.Options()
            let id = "fleet-\(i)"
            opts.inbox = InboxStore(path: o.dir + "/" + id + ".inbox", log: log)
            let index = i
            let link = MQTTLink(config: lc, deviceID: id, log: log, options: opts) { e in
                switch e {
                case .order(let order):
                    let l = links.withLock { $0[index] }
                    l.send(Ack(id: order.id, status: .spoken), reply: false)
                case .connected: connected.add(1, ordering: .relaxed)
                default: break
                }
            }
            links.withLock { $0.append(link) }
        }
        for l in links.withLock({ $0 }) { l.start() }
        while connected.load(ordering: .relaxed) < o.boxes, Monotonic.now() - t0 < 60 { usleep(50_000) }
        let up = connected.load(ordering: .relaxed)
        print("fleet boxes=\(o.boxes) connected=\(up) connect_s=\(Format.fixed(Monotonic.now() - t0, 2))")
        var mc = MQTTSimConfig(server: o.server)
        mc.devices = (0..<o.boxes).map { "fleet-\($0)" }
        mc.username = o.username
        mc.password = o.password
        mc.quiet = true
        mc.clientID = "crier-fleet-sim-\(getpid())"
        var sc = OrderServerConfig()
        sc.rate = o.rate
        sc.count = max(1, Int(o.rate * o.seconds))
        sc.randomOrders = false
        sc.drainTimeout = 30
        let sim = MQTTOrderSim(mqtt: mc, orders: sc)
        let code: Int32
        do {
            let s = try sim.run()
            code = s.timedOut || s.unacked > 0 || s.duplicates > 0 ? ExitCode.failure : ExitCode.ok
        } catch {
            FileIO.stderr("crier-sim mqtt-fleet: \(error)\n")
            code = ExitCode.failure
        }
        var syncs = 0
        var syncSeconds = 0.0
        for l in links.withLock({ $0 }) {
            let st = l.inbox.syncStats
            syncs += st.syncs
            syncSeconds += st.seconds
        }
        print("inbox fsyncs=\(syncs) mean_ms=\(syncs > 0 ? Format.fixed(syncSeconds / Double(syncs) * 1000, 2) : "-")")
        for l in links.withLock({ $0 }) { l.stop() }
        return code
    }
}
