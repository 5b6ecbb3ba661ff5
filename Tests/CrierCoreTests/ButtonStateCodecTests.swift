import Testing
@testable import CrierCore

@Suite("State file codec")
struct ButtonStateCodecTests {
    let muted = ControlState(volume: 7, muted: true, mutedSince: WallTime(unixMillis: 1_764_489_600_000))

    @Test("round trip, and the text is what docs/buttons.md shows")
    func roundTrip() throws {
        let text = ControlStateCodec.encode(muted)
        #expect(text == "crier-state 1\nvolume=7\nmuted=1\nmuted_since=1764489600000\ncrc32=e4e55d65\n")
        #expect(try ControlStateCodec.decode(Array(text.utf8)) == muted)
        let plain = ControlState(volume: 0)
        #expect(try ControlStateCodec.decode(Array(ControlStateCodec.encode(plain).utf8)) == plain)
    }

    @Test("CRC-32 is the IEEE one")
    func crc() {
        #expect(ControlStateCodec.crc32(Array("123456789".utf8)) == 0xCBF4_3926)
    }

    @Test("every truncation is detected")
    func truncation() {
        let bytes = Array(ControlStateCodec.encode(muted).utf8)
        for n in 0..<bytes.count {
            #expect(throws: ControlStateError.self) { try ControlStateCodec.decode(Array(bytes[..<n])) }
        }
        #expect(throws: ControlStateError.empty) { try ControlStateCodec.decode([]) }
        #expect(throws: ControlStateError.truncated) { try ControlStateCodec.decode(Array(bytes.dropLast(3))) }
    }

    @Test("a flipped byte is a checksum mismatch; garbage and other versions are refused")
    func corruption() {
        var bytes = Array(ControlStateCodec.encode(muted).utf8)
        bytes[21] = UInt8(ascii: "3")  // volume=7 -> volume=3
        // A do/catch, not `#expect { } throws: { }`: Swift 6.0 (Debian 13) crashes type-checking
        // that macro around a typed-throws call.
        do throws(ControlStateError) {
            _ = try ControlStateCodec.decode(bytes)
            Issue.record("a flipped byte was accepted")
        } catch {
            if case .checksumMismatch = error {} else { Issue.record("expected checksumMismatch, got \(error)") }
        }
        #expect(throws: ControlStateError.notAStateFile) { try ControlStateCodec.decode([0xff, 0x00, 0x12]) }
        #expect(throws: ControlStateError.notAStateFile) { try ControlStateCodec.decode(Array("hello\n".utf8)) }
        #expect(throws: ControlStateError.unsupportedVersion("2")) {
            try ControlStateCodec.decode(Array("crier-state 2\nvolume=1\n".utf8))
        }
    }

    @Test("a well-formed file with a bad field names the field")
    func badField() {
        let body = "crier-state 1\nvolume=loud\nmuted=0\n"
        let text = body + "crc32=\(ControlStateCodec.hex(ControlStateCodec.crc32(Array(body.utf8))))\n"
        #expect(throws: ControlStateError.badField("volume", "loud")) { try ControlStateCodec.decode(Array(text.utf8)) }
        #expect(ControlStateError.badField("volume", "loud").description == "field volume has a bad value \"loud\"")
    }
}
