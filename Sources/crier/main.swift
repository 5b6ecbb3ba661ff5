import CrierCore
import CrierRuntime
import Foundation

// The executable: argument parsing only; every command lives in CrierRuntime.

let usage = """
    usage: crier <command> [options]

    commands:
      run            the daemon: audio, speech, order link (what the systemd unit starts)
      say TEXT...    speak TEXT on the configured device, or write it to a WAV file
      check-config   validate a config file and print the effective configuration
      config         print a fully commented example config (--example)

    Run `crier <command> --help` for a command's options. Config: /boot/firmware/crier.conf
    unless --config FILE is given. Exit codes: 0 ok, 1 runtime failure, 2 usage error.
    """

let sayUsage = """
    usage: crier say [--config FILE] [--lang zh|en] [--output FILE.wav] [--print] [--phonemes] TEXT...

      --output FILE.wav  write the exact samples that would be played, instead of playing
      --print            print the text as it will be synthesized (numbers in words) and exit
      --phonemes         print espeak-ng's phonemes for it and exit
    """

func fail(_ message: String, _ help: String) -> Never {
    FileHandle.standardError.write(Data("crier: \(message)\n\n\(help)\n".utf8))
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
    o.printOnly = a.flag("--print")
    o.phonemes = a.flag("--phonemes")
    a.noUnknownOptions()
    if let dd = a.rest.firstIndex(of: "--") { a.rest.remove(at: dd) }
    guard !a.rest.isEmpty else { fail("say needs TEXT", sayUsage) }
    o.text = a.rest.joined(separator: " ")
    exit(await SayCommand.run(o))
case "check-config":
    let help = "usage: crier check-config [FILE]   (default \(CrierConfig.defaultPath))"
    var a = Args(rest: argv, help: help)
    if a.flag("--help") { print(help); exit(0) }
    let file = a.value("--config")
    a.noUnknownOptions()
    guard a.rest.count <= 1 else { fail("check-config takes one FILE", help) }
    exit(CheckConfigCommand.run(path: a.rest.first ?? file))
case "config":
    let help = "usage: crier config --example   print every key with its default and a line of documentation"
    var a = Args(rest: argv, help: help)
    if a.flag("--help") { print(help); exit(0) }
    guard a.flag("--example") else { fail("config needs --example", help) }
    a.noUnknownOptions()
    print(CrierConfig.example(), terminator: "")
default:
    fail("unknown command \"\(command)\"", usage)
}
