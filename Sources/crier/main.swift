import CrierCore
import CrierLink
import CrierPosix
import CrierRuntime
import Glibc

// The executable: argument parsing only; every command lives in CrierRuntime.

let usage = """
    usage: crier <command> [options]

    commands:
      run            the daemon: audio, speech, order link, buttons (what the systemd unit starts)
      demo           the reference order server on loopback plus the daemon, in one command
      order-sim      the reference order server (sends orders, prints every ack)
      say TEXT...    speak TEXT on the configured device, or write it to a WAV file
      voice          recorded-clip voice packs: the recording script, checking a pack
      status         what the running daemon is doing (--json for machines)
      update FILE|URL  install a signed update bundle into the other slot (the Pi image)
      check-config   validate a config file and print the effective configuration
      config         print a fully commented example config (--example)
      wifi-config    write wpa_supplicant's file from crier.conf's wifi.* keys (at boot)

    Run `crier <command> --help` for a command's options. Config: /boot/firmware/crier.conf
    unless --config FILE is given. Exit codes: 0 ok, 1 runtime failure, 2 usage error.
    """

let sayUsage = """
    usage: crier say [--config FILE] [--lang zh|en] [--output FILE.wav] [--voice-pack DIR] [--print] [--phonemes] TEXT...

      --output FILE.wav  write the exact samples that would be played, instead of playing
      --print            print the text as it will be synthesized (numbers in words) and exit
      --phonemes         print espeak-ng's phonemes for it and exit
      --voice-pack DIR   say it from a recorded-clip voice pack (over voice.pack.zh/en; docs/voice.md);
                         text the pack does not cover is said by espeak-ng

      TEXT with nothing to say (empty, or only emoji, symbols or invisible characters) is a
      usage error: exit status 2.
    """

func fail(_ message: String, _ help: String) -> Never {
    FileIO.stderr("crier: \(message)\n\n\(help)\n")
    exit(ExitCode.usage)
}

/// Pulls `--flag value` / `--flag=value` options off an argument list.
struct Args {
    var rest: [String]
    let help: String

    mutating func flag(_ name: String) -> Bool {
        if let i = rest.firstIndex(of: name) { rest.remove(at: i); return true }
        return false
    }

    mutating func value(_ name: String) -> String? {
        if let i = rest.firstIndex(of: name) {
            guard i + 1 < rest.count else { fail("\(name) needs a value", help) }
            let v = rest[i + 1]
            rest.removeSubrange(i...(i + 1))
            return v
        }
        if let i = rest.firstIndex(where: { $0.hasPrefix(name + "=") }) {
            let v = String(rest[i].dropFirst(name.count + 1))
            rest.remove(at: i)
            return v
        }
        return nil
    }

    func noUnknownOptions() {
        if let bad = rest.first(where: { $0.hasPrefix("--") && $0 != "--" }) { fail("unknown option \(bad)", help) }
    }
}

var argv = Array(CommandLine.arguments.dropFirst())
guard let command = argv.first else { fail("no command given", usage) }
argv.removeFirst()

switch command {
case "--help", "-h", "help":
    print(usage)
case "--version", "version":
    print("crier \(CrierVersion.string)")
case "say":
    var a = Args(rest: argv, help: sayUsage)
    if a.flag("--help") || a.flag("-h") { print(sayUsage); exit(0) }
    var o = SayOptions(text: "")
    o.configPath = a.value("--config")
    if let l = a.value("--lang") {
        guard let lang = Lang(rawValue: l) else { fail("--lang expects zh or en, got \"\(l)\"", sayUsage) }
        o.lang = lang
    }
    o.output = a.value("--output")
    o.voicePack = a.value("--voice-pack")
    o.printOnly = a.flag("--print")
    o.phonemes = a.flag("--phonemes")
    a.noUnknownOptions()
    if let dd = a.rest.firstIndex(of: "--") { a.rest.remove(at: dd) }
    guard !a.rest.isEmpty else { fail("say needs TEXT", sayUsage) }
    o.text = a.rest.joined(separator: " ")
    exit(await SayCommand.run(o))
case "voice":
    let help = """
        usage: crier voice clips [--config FILE] --lang zh|en
                 prints every clip the config can need, NAME<TAB>TEXT per line: the recording script
               crier voice check [--config FILE] [--lang zh|en] PACK
                 checks a pack folder against the config: coverage, missing and extra clips, level,
                 clipping, too-long clips, rates; exit 1 if the pack cannot serve alone
        """
    var a = Args(rest: argv, help: help)
    if a.flag("--help") || a.flag("-h") { print(help); exit(0) }
    guard let sub = a.rest.first else { fail("voice needs a subcommand", help) }
    a.rest.removeFirst()
    switch sub {
    case "clips":
        let file = a.value("--config")
        guard let l = a.value("--lang") else { fail("voice clips needs --lang zh|en", help) }
        guard let lang = Lang(rawValue: l) else { fail("--lang expects zh or en, got \"\(l)\"", help) }
        a.noUnknownOptions()
        guard a.rest.isEmpty else { fail("voice clips takes no arguments", help) }
        exit(VoiceCommand.clips(configPath: file, lang: lang))
    case "check":
        let file = a.value("--config")
        var lang: Lang?
        if let l = a.value("--lang") {
            guard let v = Lang(rawValue: l) else { fail("--lang expects zh or en, got \"\(l)\"", help) }
            lang = v
        }
        a.noUnknownOptions()
        guard a.rest.count == 1 else { fail("voice check takes one PACK folder", help) }
        exit(VoiceCommand.check(pack: a.rest[0], configPath: file, lang: lang))
    default:
        fail("unknown voice subcommand \"\(sub)\"", help)
    }
case "run":
    let help = "usage: crier run [--config FILE]   the daemon (default config \(CrierConfig.defaultPath))"
    var a = Args(rest: argv, help: help)
    if a.flag("--help") { print(help); exit(0) }
    let file = a.value("--config")
    a.noUnknownOptions()
    guard a.rest.isEmpty else { fail("run takes no arguments", help) }
    exit(await RunCommand.run(configPath: file))
case "demo":
    let help = """
        usage: crier demo [--config FILE] [--every MIN-MAX] [--seconds N] [--wav FILE] [--mqtt URL]

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
        usage: crier order-sim [--host ADDR] [--port P] [--every MIN-MAX] [--rate N] [--count N]
                               [--token T] [--state FILE] [--numbers MIN-MAX] [--no-stdin]
                               [--key K] [--tls-cert FILE --tls-key FILE]
                               [--offer-update URL --offer-version V]
               crier order-sim --mqtt mqtt[s]://HOST[:PORT] [--device ID[,ID…]] [--prefix P] [--username U]
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
        usage: crier mqtt-fleet --server mqtt://HOST:PORT [--boxes N] [--rate R] [--seconds S] [--dir D]
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
case "status":
    let help = "usage: crier status [--config FILE] [--json]   ask the running daemon (its control socket)"
    var a = Args(rest: argv, help: help)
    if a.flag("--help") { print(help); exit(0) }
    let file = a.value("--config")
    let json = a.flag("--json")
    a.noUnknownOptions()
    guard a.rest.isEmpty else { fail("status takes no arguments", help) }
    exit(StatusCommand.run(configPath: file, json: json))
case "update":
    let help = """
        usage: crier update [--config FILE] [--reboot] BUNDLE.raucb|https://URL
          Installs a signed RAUC bundle into the slot not running (docs/updates.md). The new slot
          is tried at the next boot and kept only if crier is healthy there; otherwise the box
          goes back by itself. --reboot reboots once it is installed.
          Exit status: 0 installed, 1 refused or failed (nothing changed), 2 usage,
          3 no RAUC here (update.rauc = off, or not installed).
        """
    var a = Args(rest: argv, help: help)
    if a.flag("--help") { print(help); exit(0) }
    let file = a.value("--config")
    let reboot = a.flag("--reboot")
    a.noUnknownOptions()
    guard a.rest.count == 1 else { fail("update takes one BUNDLE or URL", help) }
    var o = UpdateCommand.Options(source: a.rest[0], configPath: file)
    o.reboot = reboot
    exit(UpdateCommand.run(o))
case "check-config":
    let help = "usage: crier check-config [FILE]   (default \(CrierConfig.defaultPath))"
    var a = Args(rest: argv, help: help)
    if a.flag("--help") { print(help); exit(0) }
    let file = a.value("--config")
    a.noUnknownOptions()
    guard a.rest.count <= 1 else { fail("check-config takes one FILE", help) }
    exit(CheckConfigCommand.run(path: a.rest.first ?? file))
case "wifi-config":
    let help = """
        usage: crier wifi-config [--config FILE] [--output FILE] [--group NAME]
          writes wpa_supplicant's configuration (mode 0600) from the wifi.* keys of crier.conf;
          no wifi.ssid: removes FILE. Default output \(WifiConfigCommand.defaultOutput).
          --group NAME   the group allowed on the control socket (ctrl_interface GROUP=)
        """
    var a = Args(rest: argv, help: help)
    if a.flag("--help") { print(help); exit(0) }
    let file = a.value("--config")
    let output = a.value("--output") ?? WifiConfigCommand.defaultOutput
    let group = a.value("--group")
    a.noUnknownOptions()
    guard a.rest.isEmpty else { fail("wifi-config takes no arguments", help) }
    exit(WifiConfigCommand.run(configPath: file, output: output, group: group))
case "config":
    let help = """
        usage: crier config --example | --markdown
          --example   every key, commented out, with its default and a line of documentation
          --markdown  the key table of docs/configuration.md
        """
    var a = Args(rest: argv, help: help)
    if a.flag("--help") { print(help); exit(0) }
    if a.flag("--markdown") {
        a.noUnknownOptions()
        print(CrierConfig.markdownTable(), terminator: "")
    } else if a.flag("--example") {
        a.noUnknownOptions()
        print(CrierConfig.example(), terminator: "")
    } else {
        fail("config needs --example or --markdown", help)
    }
default:
    fail("unknown command \"\(command)\"", usage)
}
