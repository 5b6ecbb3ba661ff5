import CrierCore
import Glibc
import Testing
@testable import CrierGPIO

/// The libgpiod backend against a real kernel: needs root and the gpio-sim module (Linux 5.17+,
/// configfs mounted), so it runs only with CRIER_GPIO_SIM=1 (the VM test sets that up). It
/// makes a simulated chip whose lines are named like a Pi's, then presses buttons by changing
/// the simulated pull of a line.
private let simEnabled = getenv("CRIER_GPIO_SIM").map { String(cString: $0) == "1" } ?? false

private struct GPIOSim {
    static let root = "/sys/kernel/config/gpio-sim/crier-test"
    let bank = root + "/gpio-bank0"
    var chip = ""
    var device = ""

    init() throws {
        try Self.sh("modprobe gpio-sim 2>/dev/null; mountpoint -q /sys/kernel/config || mount -t configfs none /sys/kernel/config; true")
        try Self.sh("""
            set -e; r=\(Self.root); [ -d $r ] && { echo 0 > $r/live; rmdir $r/gpio-bank0/line* $r/gpio-bank0 $r; } || true
            mkdir -p $r/gpio-bank0; echo 32 > $r/gpio-bank0/num_lines
            for n in 17 22 23 27; do mkdir $r/gpio-bank0/line$n; echo GPIO$n > $r/gpio-bank0/line$n/name; done
            echo 1 > $r/live
            """)
        chip = try Self.read(bank + "/chip_name")
        device = try Self.read(Self.root + "/dev_name")
    }

    /// Sets what the outside world does to the line: pull-up (1) or pull-down (0).
    func drive(_ offset: Int, _ level: Bool) throws {
        try Self.sh("echo \(level ? "pull-up" : "pull-down") > /sys/devices/platform/\(device)/\(chip)/sim_gpio\(offset)/pull")
    }

    func remove() {
        _ = try? Self.sh("r=\(Self.root); echo 0 > $r/live; rmdir $r/gpio-bank0/line* $r/gpio-bank0 $r")
    }

    struct Failed: Error { let what: String }

    static func sh(_ cmd: String) throws {
        guard system(cmd) == 0 else { throw Failed(what: cmd) }
    }

    static func read(_ path: String) throws -> String {
        guard let b = readFile(path) else { throw Failed(what: "read \(path)") }
        return String(decoding: b, as: UTF8.self).split(separator: "\n").first.map(String.init) ?? ""
    }
}

@Suite("libgpiod with gpio-sim (CRIER_GPIO_SIM=1)", .serialized, .enabled(if: simEnabled))
struct GPIOSimTests {
    @Test("named lines: presses, a hold, and a busy line's error")
    func buttons() async throws {
        let sim = try GPIOSim()
        defer { sim.remove() }
        var c = ButtonsConfig()
        c[.replay].holdMs = 300
        c[.acknowledge].line = .chip(sim.chip, offset: 5)  // by chip and offset
        for o in [17, 22, 23, 27, 5] { try sim.drive(o, true) }  // buttons at rest (pulled up)
        let (log, sink) = testLog()
        let got = Collector<Gesture>()
        let reader = ButtonReader(config: c, log: log) { got.add($0) }
        reader.start()
        defer { reader.stop() }
        #expect(await eventually { sink.lines.filter { $0.contains("ready") }.count == 5 })
        // The same line requested again is busy, with a clear error.
        let second = GPIODInput(config: c, log: log)
        second.openMissing(now: 0)
        #expect(second.status.first?.1 == .busy(line: "GPIO17", consumer: "crier"))
        second.close()

        try sim.drive(22, false); await pause(0.1); try sim.drive(22, true)  // mute
        #expect(await got.waitFor { $0.contains { $0.action == .mute && $0.kind == .press } })
        try sim.drive(23, false); await pause(0.5); try sim.drive(23, true)  // replay held
        #expect(await got.waitFor { $0.contains { $0.action == .replay && $0.kind == .hold } })
        try sim.drive(5, false); await pause(0.1); try sim.drive(5, true)    // acknowledge by offset
        #expect(await got.waitFor { $0.contains { $0.action == .acknowledge && $0.kind == .press } })
        #expect(!got.all.contains { $0.action == .replay && $0.kind == .press })
    }
}
