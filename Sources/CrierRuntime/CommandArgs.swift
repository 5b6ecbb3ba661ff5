import CrierPosix
import Glibc

/// Pulls `--flag value` / `--flag=value` options off an argument list: the parsing both
/// executables (`crier`, `crier-sim`) share. A usage error prints the message and the help
/// and exits 2.
public struct CommandArgs {
    public var rest: [String]
    public let help: String
    public let program: String

    public init(rest: [String], help: String, program: String = "crier") {
        self.rest = rest
        self.help = help
        self.program = program
    }

    public static func fail(_ message: String, _ help: String, program: String = "crier") -> Never {
        FileIO.stderr("\(program): \(message)\n\n\(help)\n")
        exit(ExitCode.usage)
    }

    public mutating func flag(_ name: String) -> Bool {
        if let i = rest.firstIndex(of: name) { rest.remove(at: i); return true }
        return false
    }

    public mutating func value(_ name: String) -> String? {
        if let i = rest.firstIndex(of: name) {
            guard i + 1 < rest.count else { Self.fail("\(name) needs a value", help, program: program) }
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

    public func noUnknownOptions() {
        if let bad = rest.first(where: { $0.hasPrefix("--") && $0 != "--" }) { Self.fail("unknown option \(bad)", help, program: program) }
    }
}
