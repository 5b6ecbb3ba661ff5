import CrierCore
import Glibc
import Testing
@testable import CrierGPIO

@Suite("State file on disk")
struct StateFileTests {
    @Test("save then load; the directory is created; no temp file stays")
    func roundTrip() throws {
        let d = TempDir(); defer { d.remove() }
        let f = StateFile(path: d.file("var/lib/crier/state"))
        let (log, _) = testLog()
        #expect(f.load(log: log) == nil)
        let s = ControlState(volume: 4, muted: true, mutedSince: WallTime(unixMillis: 1_764_489_600_000))
        try f.save(s)
        #expect(f.load(log: log) == s)
        #expect(!exists(f.tempPath))
        try f.save(ControlState(volume: 9))
        #expect(f.read() == .loaded(ControlState(volume: 9)))
    }

    @Test("missing file: defaults, logged as a first start")
    func missing() {
        let d = TempDir(); defer { d.remove() }
        let (log, sink) = testLog()
        #expect(StateFile(path: d.file("state")).load(log: log) == nil)
        #expect(sink.lines.contains { $0.contains("no saved state") && $0.contains("using the defaults") })
    }

    @Test("a truncated file gives defaults, says why, and is kept as .bad")
    func truncated() throws {
        let d = TempDir(); defer { d.remove() }
        let f = StateFile(path: d.file("state"))
        try f.save(ControlState(volume: 2))
        let full = readFile(f.path)!
        writeFile(f.path, Array(full.prefix(full.count - 5)))
        let (log, sink) = testLog()
        #expect(f.load(log: log) == nil)
        #expect(sink.lines.contains { $0.contains("ERROR") && $0.contains("truncated") && $0.contains("using the defaults") })
        #expect(exists(f.badPath) && !exists(f.path))
        // The next save works as usual.
        try f.save(ControlState(volume: 3))
        #expect(f.load(log: log) == ControlState(volume: 3))
    }

    @Test("garbage, an empty file, a huge file, a directory: defaults, never a crash")
    func garbage() {
        let d = TempDir(); defer { d.remove() }
        let (log, sink) = testLog()
        let f = StateFile(path: d.file("state"))
        for bytes in [[UInt8](repeating: 0, count: 40), [], Array("volume=7\n".utf8), [UInt8](repeating: 0x41, count: 100_000)] {
            writeFile(f.path, bytes)
            #expect(f.load(log: log) == nil)
        }
        mkdir(f.path, 0o755)
        #expect(f.load(log: log) == nil)
        #expect(sink.lines.filter { $0.contains("ERROR") }.count == 5)
    }

    @Test("killed mid-write: a partial temp file is left behind; the last good state loads and the temp goes")
    func killedMidWrite() throws {
        let d = TempDir(); defer { d.remove() }
        let f = StateFile(path: d.file("state"))
        let (log, _) = testLog()
        try f.save(ControlState(volume: 6))
        // What a process killed between write() and rename() leaves: a partial temp file.
        let next = Array(ControlStateCodec.encode(ControlState(volume: 1, muted: true, mutedSince: WallTime(unixMillis: 5))).utf8)
        for cut in [0, 5, next.count / 2, next.count - 1, next.count] {
            writeFile(f.tempPath, Array(next.prefix(cut)))
            #expect(f.load(log: log) == ControlState(volume: 6))
            #expect(!exists(f.tempPath))
        }
        // Killed before the first save ever finished: only a temp file, no state: defaults.
        unlink(f.path)
        writeFile(f.tempPath, Array(next.prefix(10)))
        #expect(f.load(log: log) == nil)
    }

    @Test("a save that cannot write says which file and why")
    func unwritable() {
        let d = TempDir(); defer { d.remove() }
        writeFile(d.file("notadir"), [1])
        let f = StateFile(path: d.file("notadir/state"))
        // A do/catch, not `#expect { } throws: { }` (Swift 6.0 crashes type-checking that macro
        // around a typed-throws call).
        do throws(StateFileError) {
            try f.save(ControlState(volume: 1))
            Issue.record("saving under a plain file succeeded")
        } catch {
            #expect(error.description.hasPrefix("creating \(d.file("notadir/state.tmp")): Not a directory"), "\(error)")
        }
    }
}
