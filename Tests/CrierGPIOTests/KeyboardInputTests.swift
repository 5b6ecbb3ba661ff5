import CrierCore
import CrierPosix
import Glibc
import Testing
@testable import CrierGPIO

/// A pseudo-terminal stands in for the console: the input side is the "stdin" the keyboard
/// input reads, the master side is where the test types.
private struct PTY {
    let master: Int32
    let slave: Int32
    init?() {
        // posix_openpt and friends need _XOPEN_SOURCE, which Glibc's module does not set:
        // open /dev/ptmx and use the Linux ioctls (TIOCSPTLCK, TIOCGPTN; same on x86-64 and arm64).
        master = open("/dev/ptmx", O_RDWR | O_NOCTTY)
        var unlock: Int32 = 0
        var n: UInt32 = 0
        guard master >= 0, ioctl(master, 0x4004_5431, &unlock) == 0, ioctl(master, 0x8004_5430, &n) == 0 else { return nil }
        slave = open("/dev/pts/\(n)", O_RDWR | O_NOCTTY)
        guard slave >= 0 else { return nil }
    }
    func type(_ s: String) { _ = Array(s.utf8).withUnsafeBytes { write(master, $0.baseAddress, $0.count) } }
    func lflag() -> tcflag_t { var t = termios(); tcgetattr(slave, &t); return t.c_lflag }
    func close() { Glibc.close(slave); Glibc.close(master) }
}

@Suite("Keyboard input", .serialized)
struct KeyboardInputTests {
    @Test("keys press and release buttons through the recognizer; raw mode is undone on close")
    func keys() async throws {
        let pty = try #require(PTY())
        defer { pty.close() }
        let before = pty.lflag()
        #expect(before & tcflag_t(ICANON) != 0)
        var c = ButtonsConfig()
        c.input = .keyboard
        c[.replay].holdMs = 300
        let (log, _) = testLog()
        let got = Collector<Gesture>()
        let reader = ButtonReader(config: c, log: log, makeInput: { c, l in KeyboardInput(config: c, log: l, fd: pty.slave) }) { got.add($0) }
        reader.start()
        // Raw mode is on once the input exists.
        #expect(await eventually { pty.lflag() & tcflag_t(ICANON) == 0 })
        pty.type("+")
        #expect(await got.waitFor { $0.count == 1 })
        await pause(0.150)
        pty.type("m")
        await pause(0.150)
        pty.type("r")
        await pause(0.150)
        pty.type("R")  // replay held
        await pause(0.600)
        pty.type("a-x")  // x: not a key; a and - at once
        #expect(await got.waitFor { $0.count == 6 })
        let seen = got.all.map { "\($0.action.rawValue) \($0.kind)" }
        #expect(Array(seen.prefix(4)) == ["volume_up press", "mute press", "replay press", "replay hold"])
        #expect(Set(seen.dropFirst(4)) == ["acknowledge press", "volume_down press"])  // typed together
        reader.stop()
        #expect(pty.lflag() == before)
    }

    @Test("not a terminal: said clearly, no buttons, stops promptly")
    func notATTY() async {
        var fds: [Int32] = [-1, -1]
        #expect(pipe(&fds) == 0)
        defer { close(fds[0]); close(fds[1]) }
        let (log, sink) = testLog()
        let input = KeyboardInput(config: ButtonsConfig(), log: log, fd: fds[0])
        #expect(sink.lines.contains { $0.contains("input = keyboard needs a terminal on stdin") })
        let w = WakePipe()
        w.wake()
        #expect(input.wait(until: nil, wakeFD: w.readFD).isEmpty)
    }

    @Test("without a wake pipe (fd -1) a wait with no deadline still returns within 200 ms")
    func noWakePipeStillReturns() {
        let t = Monotonic.now()
        #expect(pollFDs([], wake: -1, until: nil).isEmpty)
        let took = Monotonic.now() - t
        #expect(took >= 0.15 && took < 1, "\(took)")
    }
}
