import CrierCore
import CrierPosix
import Glibc
import Synchronization
@testable import CrierGPIO

/// A fresh directory under /tmp, removed by `remove()`.
struct TempDir {
    let path: String
    init() {
        var template = Array("/tmp/crier-gpio-test-XXXXXX".utf8CString)
        path = template.withUnsafeMutableBufferPointer { String(cString: mkdtemp($0.baseAddress!)!) }
    }
    func file(_ name: String) -> String { path + "/" + name }
    func remove() { _ = system("rm -rf '\(path)'") }
}

final class Collector<T: Sendable>: Sendable {
    let items = Mutex<[T]>([])
    func add(_ t: T) { items.withLock { $0.append(t) } }
    var all: [T] { items.withLock { $0 } }

    /// Waits (really: these tests drive real threads) until `ok` holds or `timeout` passes.
    /// Sleeps with Task.sleep, so no thread of the shared pool is blocked meanwhile.
    func waitFor(timeout: Double = 5, _ ok: ([T]) -> Bool) async -> Bool {
        let end = Monotonic.now() + timeout
        while Monotonic.now() < end {
            if ok(all) { return true }
            try? await Task.sleep(for: .milliseconds(5))
        }
        return ok(all)
    }
}

func testLog() -> (Logger, MemoryLogSink) {
    let hub = LogHub(clock: { WallTime(unixMillis: 0) })
    hub.setMinimum(.debug)
    let sink = MemoryLogSink()
    hub.add(sink)
    return (hub.logger("buttons"), sink)
}

func writeFile(_ path: String, _ bytes: [UInt8]) {
    let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
    precondition(fd >= 0)
    _ = bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
    close(fd)
}

func readFile(_ path: String) -> [UInt8]? {
    let fd = open(path, O_RDONLY)
    guard fd >= 0 else { return nil }
    defer { close(fd) }
    var out: [UInt8] = []
    var buf = [UInt8](repeating: 0, count: 4096)
    while true {
        let n = read(fd, &buf, buf.count)
        if n <= 0 { break }
        out += buf[..<n]
    }
    return out
}

func exists(_ path: String) -> Bool { access(path, F_OK) == 0 }

/// Real-time pause without blocking a pool thread.
func pause(_ seconds: Double) async {
    try? await Task.sleep(for: .milliseconds(Int64(seconds * 1000)))
}

/// Waits until `ok` holds (or `timeout`).
func eventually(timeout: Double = 5, _ ok: () -> Bool) async -> Bool {
    let end = Monotonic.now() + timeout
    while Monotonic.now() < end {
        if ok() { return true }
        await pause(0.005)
    }
    return ok()
}
