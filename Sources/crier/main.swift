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
      say TEXT...    speak TEXT on the configured device, or write it to a WAV file
      voice          recorded-clip voice packs: the recording script, checking a pack
      status         what the running daemon is doing (--json for machines)
      update FILE|URL  install a signed update bundle into the other slot (the Pi image)
      check-config   validate a config file and print the effective configuration
      config         print a fully commented example config (--example)
      wifi-config    write wpa_supplicant's file from crier.conf's wifi.* keys (at boot)
      apply-config   write the local page's checked settings into crier.conf (crier-config.service)
      setup          the setup hotspot of the running daemon: open, close, state, submit SSID
      setup-ap-config  write the setup hotspot's hostapd/dnsmasq/supplicant files (its unit)

    The order simulator and the demo are `crier-sim order-sim` and `crier-sim demo` (package
    crier-sim). Run `crier <command> --help` for a command's options. Config: /boot/firmware/crier.conf
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

typealias Args = CommandArgs
func fail(_ message: String, _ help: String) -> Never { CommandArgs.fail(message, help) }

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
               crier voice build [--config FILE] --from DIR --lang zh|en --output PACK [--rate HZ] [--name N] [--licence L]
                 recordings NAME.wav/.flac -> a pack: trimmed, at -20 LUFS, resampled, checked
               crier voice render [--config FILE] --tts 'COMMAND {text} {out}' --lang zh|en --output PACK [...]
                 renders every clip with a command-line TTS, then builds (the build's options too)
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
    case "build", "render":
        guard let l = a.value("--lang") else { fail("voice \(sub) needs --lang zh|en", help) }
        guard let lang = Lang(rawValue: l) else { fail("--lang expects zh or en, got \"\(l)\"", help) }
        guard let out = a.value("--output") else { fail("voice \(sub) needs --output PACK", help) }
        let tts = sub == "render" ? a.value("--tts") : nil
        let from = sub == "build" ? a.value("--from") : nil
        guard sub == "render" ? tts != nil : from != nil else { fail(sub == "render" ? "voice render needs --tts 'COMMAND {text} {out}'" : "voice build needs --from DIR", help) }
        var o = VoicePackBuilder.Options(from: from ?? "", lang: lang, output: out)
        o.configPath = a.value("--config")
        if let r = a.value("--rate") {
            guard let v = Int(r) else { fail("--rate expects Hz, got \"\(r)\"", help) }
            o.rate = v
        }
        o.name = a.value("--name")
        o.licence = a.value("--licence")
        let timeout = a.value("--timeout").map { Double($0) ?? -1 } ?? VoiceRender.defaultTimeout
        guard timeout > 0 else { fail("--timeout expects seconds", help) }
        a.noUnknownOptions()
        guard a.rest.isEmpty else { fail("voice \(sub) takes no arguments", help) }
        exit(tts.map { VoiceCommand.render(o, tts: $0, timeout: timeout) } ?? VoiceCommand.build(o))
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
case "demo", "order-sim", "mqtt-fleet":
    // Moved out of the box's binary (issue 32): integrators' scripts get one clear line.
    FileIO.stderr("crier: \(command) is no longer part of crier: run `crier-sim \(command)` (package crier-sim; from a source tree: .build/debug/crier-sim after swift build)\n")
    exit(ExitCode.usage)
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
case "apply-config":
    let help = "usage: crier apply-config REQUEST TARGET   (crier-config.service: the local page's settings, checked, into crier.conf)"
    var a = Args(rest: argv, help: help)
    if a.flag("--help") { print(help); exit(0) }
    a.noUnknownOptions()
    guard a.rest.count == 2 else { fail("apply-config takes REQUEST and TARGET", help) }
    exit(ApplyConfigCommand.run(request: a.rest[0], target: a.rest[1]))
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
case "setup":
    let help = """
        usage: crier setup [--config FILE] open|close|state|rescan
               crier setup [--config FILE] submit [--hidden] [--country CC] SSID   (password: one line on stdin; empty = open)
          the running daemon's setup hotspot (docs/setup-hotspot.md), through its control socket
        """
    var a = Args(rest: argv, help: help)
    if a.flag("--help") { print(help); exit(0) }
    let file = a.value("--config")
    let hidden = a.flag("--hidden")
    let country = a.value("--country")
    a.noUnknownOptions()
    guard let verb = a.rest.first, ["open", "close", "state", "rescan", "submit"].contains(verb) else { fail("expected open, close, state, rescan or submit", help) }
    var words = verb
    if verb == "submit" {
        guard a.rest.count == 2 else { fail("submit takes one SSID", help) }
        let psk = readLine(strippingNewline: true) ?? ""
        words += " " + Hex.encode(Array(a.rest[1].utf8)) + " " + (psk.isEmpty ? "-" : Hex.encode(Array(psk.utf8)))
        if hidden { words += " hidden" }
        if let c = country { words += " " + c }
    } else {
        guard a.rest.count == 1 else { fail("\(verb) takes no arguments", help) }
    }
    exit(SetupCommand.run(configPath: file, words: words))
case "setup-ap-config":
    let help = """
        usage: crier setup-ap-config [--config FILE] [--dir DIR] [--group NAME]
          writes DIR/hostapd.conf, DIR/dnsmasq.conf and DIR/wpa_supplicant.conf for the setup
          hotspot (crier-setup-ap.service) and prints the access point's name. Default DIR \(SetupAPConfigCommand.defaultDir).
        """
    var a = Args(rest: argv, help: help)
    if a.flag("--help") { print(help); exit(0) }
    let file = a.value("--config")
    let dir = a.value("--dir") ?? SetupAPConfigCommand.defaultDir
    let group = a.value("--group")
    a.noUnknownOptions()
    guard a.rest.isEmpty else { fail("setup-ap-config takes no arguments", help) }
    exit(SetupAPConfigCommand.run(configPath: file, dir: dir, group: group))
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
