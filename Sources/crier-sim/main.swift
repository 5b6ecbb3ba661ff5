import CrierCore
import CrierLink
import CrierPosix
import CrierRuntime
import CrierSim
import Glibc

// crier-sim: the reference order servers, the MQTT fleet bench and the demo, for integrators,
// tests and benchmarks. Not linked into `crier`, the box's binary (docs/architecture.md).
// Argument parsing only; the commands live in CrierSim.

let usage = """
    usage: crier-sim <command> [options]

    commands:
      demo           the reference order server on loopback plus the daemon, in one command
      order-sim      the reference order server (sends orders, prints every ack)
      mqtt-fleet     a benchmark: N MQTT links in one process against one broker

    Run `crier-sim <command> --help` for a command's options.
    Exit codes: 0 ok, 1 runtime failure, 2 usage error.
    """

typealias Args = CommandArgs
extension CommandArgs {
    // The usage lines say crier-sim (CommandArgs' own init, with program "crier", is crier's).
    init(rest: [String], help: String) { self.init(rest: rest, help: help, program: "crier-sim") }
}
func fail(_ message: String, _ help: String) -> Never { CommandArgs.fail(message, help, program: "crier-sim") }

var argv = Array(CommandLine.arguments.dropFirst())
guard let command = argv.first else { fail("no command given", usage) }
argv.removeFirst()

switch command {
case "--help", "-h", "help":
    print(usage)
case "--version", "version":
    print("crier-sim \(CrierVersion.string)")
case "demo":
    let help = """
        usage: crier-sim demo [--config FILE] [--every MIN-MAX] [--seconds N] [--wav FILE] [--mqtt URL]

          The reference order server on 127.0.0.1 plus the daemon. Orders every MIN-MAX seconds
          (default 4-8); type a number + Enter for an order now. Audio goes to audio.device
          (default `default`), or to FILE (default crier-demo.wav) when that device cannot open.
          Keys + - m r a act as the buttons when stdin is a terminal. --seconds stops after N s.
          --mqtt mqtt://127.0.0.1 goes through that broker (a local mosquitto) instead.
        """
    var a = Args(rest: argv, help: help)
    if a.flag("--help") { print(help); exit(0) }
    var o = DemoOptions()
    o.configPath = a.value("--config")
    if let e = a.value("--every") {
        guard let r = OrderServerConfig.parseRange(e), r.lowerBound > 0 else { fail("--every expects MIN-MAX seconds, got \"\(e)\"", help) }
        o.every = r
    }
    if let s = a.value("--seconds") {
        guard let v = Double(s), v > 0 else { fail("--seconds expects a positive number, got \"\(s)\"", help) }
        o.seconds = v
    }
    if let w = a.value("--wav") { o.wav = w }
    if let m = a.value("--mqtt") {
        guard let addr = try? ServerAddress(parsing: m), addr.isMQTT else { fail("--mqtt expects mqtt://HOST:PORT, got \"\(m)\"", help) }
        o.mqtt = addr
    }
    a.noUnknownOptions()
    exit(await DemoCommand.run(o))
case "order-sim":
    let help = """
        usage: crier-sim order-sim [--host ADDR] [--port P] [--every MIN-MAX] [--rate N] [--count N]
                                   [--token T] [--state FILE] [--numbers MIN-MAX] [--no-stdin]
                                   [--key K] [--tls-cert FILE --tls-key FILE]
                                   [--offer-update URL --offer-version V]
               crier-sim order-sim --mqtt mqtt[s]://HOST[:PORT] [--device ID[,ID…]] [--prefix P] [--username U]
                                   [--password P] [--ca FILE] [--client-id ID] [--quiet] + the order options

          The reference order server (docs/protocol.md). Sends a random new_customer order every
          MIN-MAX seconds (default 60-240; 0 = none), or N per second with --rate; stops after
          --count orders once all are acked. Lines typed on stdin become orders (a number →
          new_customer, other text → text). Prints one line per event: order, ack, device.
          --state FILE keeps unacked orders across restarts of the server.
          --key K signs every order with the shared secret K (hex or base64, as server.key).
          --tls-cert/--tls-key serve TLS with that PEM certificate chain and private key.
          --offer-update URL --offer-version V offers that RAUC bundle to every box after its
          hello (docs/updates.md; a box installs it only with update.allow_remote = on).
          --mqtt URL publishes the orders to a broker instead (PREFIX/DEVICE/orders, QoS 1) and
          prints the acks every box publishes on PREFIX/+/acks, then publish→ack latency.
        """
    var a = Args(rest: argv, help: help)
    if a.flag("--help") { print(help); exit(0) }
    var o = OrderSimOptions()
    if let m = a.value("--mqtt") {
        do throws(ConfigValueError) {
            let addr = try ServerAddress(parsing: m)
            guard addr.isMQTT else { fail("--mqtt expects mqtt://HOST:PORT or mqtts://HOST:PORT, got \"\(m)\"", help) }
            var mc = MQTTSimConfig(server: addr)
            if let d = a.value("--device") { mc.devices = d.split(separator: ",").map(String.init) }
            if let p = a.value("--prefix") { mc.prefix = p }
            mc.username = a.value("--username")
            mc.password = a.value("--password")
            mc.ca = a.value("--ca")
            if let c = a.value("--client-id") { mc.clientID = c }
            mc.quiet = a.flag("--quiet")
            o.mqtt = mc
        } catch { fail("--mqtt: \(error.message)", help) }
    }
    o.config.readStdin = !a.flag("--no-stdin")
    if let h = a.value("--host") { o.config.host = h }
    if let p = a.value("--port") {
        guard let v = Int(p), (0...65535).contains(v) else { fail("--port expects 0...65535, got \"\(p)\"", help) }
        o.config.port = v
    }
    if let e = a.value("--every") {
        if e == "0" {
            o.config.randomOrders = false
        } else {
            guard let r = OrderServerConfig.parseRange(e) else { fail("--every expects MIN-MAX seconds or 0, got \"\(e)\"", help) }
            o.config.every = r
        }
    }
    if let r = a.value("--rate") {
        guard let v = Double(r), v > 0 else { fail("--rate expects orders per second > 0, got \"\(r)\"", help) }
        o.config.rate = v
    }
    if let c = a.value("--count") {
        guard let v = Int(c), v > 0 else { fail("--count expects a positive integer, got \"\(c)\"", help) }
        o.config.count = v
    }
    if let n = a.value("--numbers") {
        guard let r = OrderServerConfig.parseRange(n), r.lowerBound >= 0, r.upperBound <= 999_999 else { fail("--numbers expects MIN-MAX, got \"\(n)\"", help) }
        o.config.numbers = Int(r.lowerBound)...Int(r.upperBound)
    }
    o.config.token = a.value("--token")
    o.config.stateFile = a.value("--state")
    if let k = a.value("--key") {
        do throws(ConfigValueError) { o.config.key = try SecretValue.key(k) } catch { fail("--key: \(error.message)", help) }
    }
    o.config.tlsCert = a.value("--tls-cert")
    o.config.tlsKey = a.value("--tls-key")
    if (o.config.tlsCert == nil) != (o.config.tlsKey == nil) { fail("--tls-cert and --tls-key go together", help) }
    switch (a.value("--offer-update"), a.value("--offer-version")) {
    case (nil, nil): break
    case let (url?, version?):
        // Through the codec, so that the sim offers only what a box would accept.
        let offer = UpdateOffer(url: url, version: version)
        switch ProtocolCodec.decode(ProtocolCodec.encode(.update(offer))) {
        case .success: o.config.updateOffer = offer
        case .failure(let e): fail("--offer-update/--offer-version: \(e.message)", help)
        }
    default: fail("--offer-update and --offer-version go together", help)
    }
    a.noUnknownOptions()
    guard a.rest.isEmpty else { fail("order-sim takes no arguments", help) }
    exit(OrderSimCommand.run(o))
case "mqtt-fleet":
    let help = """
        usage: crier-sim mqtt-fleet --server mqtt://HOST:PORT [--boxes N] [--rate R] [--seconds S] [--dir D]
                                    [--username U --password P]
          A benchmark (scripts/bench.sh --only mqtt): N MQTT links in this process, orders at R
          per second for S seconds round robin; prints acked-once counts and publish→ack p50/p99.
        """
    var a = Args(rest: argv, help: help)
    if a.flag("--help") { print(help); exit(0) }
    guard let s = a.value("--server"), let addr = try? ServerAddress(parsing: s), addr.isMQTT else { fail("--server mqtt://HOST:PORT is required", help) }
    var o = MQTTFleetOptions(server: addr)
    if let v = a.value("--boxes") { guard let n = Int(v), n > 0 else { fail("--boxes expects a positive integer", help) }; o.boxes = n }
    if let v = a.value("--rate") { guard let r = Double(v), r > 0 else { fail("--rate expects orders per second > 0", help) }; o.rate = r }
    if let v = a.value("--seconds") { guard let r = Double(v), r > 0 else { fail("--seconds expects a positive number", help) }; o.seconds = r }
    if let d = a.value("--dir") { o.dir = d }
    o.username = a.value("--username")
    o.password = a.value("--password")
    a.noUnknownOptions()
    exit(MQTTFleetCommand.run(o))
default:
    fail("unknown command \"\(command)\"", usage)
}
