import CrierCore
import CrierPosix
import Glibc
import Synchronization
import Testing
@testable import CrierGPIO

/// This machine has no gpiochip: these tests cover the error paths. The real-kernel test
/// (gpio-sim / gpio-mockup) is part of the VM test.
@Suite("libgpiod input without a chip")
struct GPIODInputTests {
    let noChip = (0..<64).allSatisfy { access("/dev/gpiochip\($0)", F_OK) != 0 }

    @Test("an unknown line name: a clear error naming button and line, retried every 5 s, logged once")
    func missingLine() throws {
        try #require(noChip)
        var c = ButtonsConfig()
        c.buttons = [.volumeUp: ButtonSpec(line: .name("GPIO17")), .mute: ButtonSpec(line: .chip("gpiochip7", offset: 3))]
        let (log, sink) = testLog()
        let input = GPIODInput(config: c, log: log, clock: { 0 })
        input.openMissing(now: 0)
        #expect(input.status.map(\.1) == [.lineNotFound("GPIO17"), .chipNotFound("gpiochip7")])
        let errors = sink.lines.filter { $0.contains("ERROR") }
        #expect(errors.count == 2)
        #expect(errors[0].hasSuffix("ERROR buttons: button volume_up: line GPIO17 not found on any gpiochip; retrying every 5 s; check button.volume_up in crier.conf"))
        #expect(errors[1].hasSuffix("ERROR buttons: button mute: gpiochip7 not found (no such gpiochip); retrying every 5 s; check button.mute in crier.conf"))
        #expect(input.nextRetry == 5)

        input.openMissing(now: 4.9)  // not yet
        #expect(input.attempts == [.volumeUp: 1, .mute: 1])
        input.openMissing(now: 5)
        input.openMissing(now: 10)
        #expect(input.attempts == [.volumeUp: 3, .mute: 3])
        #expect(sink.lines.filter { $0.contains("ERROR") }.count == 2)  // the same error is not logged again
        #expect(sink.lines.filter { $0.contains("still unavailable") }.count == 4)
        input.close()
    }

    @Test("error texts for a busy line, a bad offset and no permission")
    func messages() {
        #expect(ButtonLineError.busy(line: "GPIO22", consumer: "gpio-keys").message(button: .mute, retryEvery: 5)
            == "button mute: line GPIO22 is busy (used by \"gpio-keys\"); retrying every 5 s; stop the other user of the line (gpioinfo shows it) or pick another line in button.mute")
        #expect(ButtonLineError.offsetOutOfRange(chip: "gpiochip0", offset: 60, lines: 54).description
            == "gpiochip0 has no line 60 (it has 54 lines, 0...53)")
        #expect(ButtonLineError.permissionDenied("GPIO17").message(button: .replay, retryEvery: 2.5)
            == "button replay: no permission to open the gpiochip of line GPIO17; retrying every 2.5 s; run crier in the gpio group (or as root)")
    }

    @Test("the reader keeps retrying in the background and stops promptly")
    func readerWithoutChip() async throws {
        try #require(noChip)
        let (log, sink) = testLog()
        let got = Collector<Gesture>()
        let reader = ButtonReader(config: ButtonsConfig(), log: log) { got.add($0) }
        reader.start()
        #expect(await eventually(timeout: 2) { sink.lines.filter { $0.contains("not found on any gpiochip") }.count == 5 })
        let t = Monotonic.now()
        reader.stop()
        #expect(Monotonic.now() - t < 0.5)  // woken, not waiting for the 5 s retry
        #expect(got.all.isEmpty)
        #expect(sink.lines.last?.contains("buttons: stopped") == true)
    }
}
