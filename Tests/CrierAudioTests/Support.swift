import CrierCore
import Foundation
@testable import CrierAudio

// The engine suites' fixtures: an engine against ALSA's own `file` plugin (system alsa.conf:
// `file:'PATH',wav` writes every frame to PATH and discards it), so no sound card is needed and
// a test reads back exactly what was written to ALSA.

/// A fresh directory for one test's captures.
func tempDir() -> String {
    let d = NSTemporaryDirectory() + "crier-audio-\(UUID().uuidString)"
    try! FileManager.default.createDirectory(atPath: d, withIntermediateDirectories: true)
    return d
}

/// The ALSA device that writes every frame to the WAV file `wav`.
func fileDevice(_ wav: String) -> String { "file:'\(wav)',wav" }

/// An engine on `device` logging to `log` (nil: nowhere). `fastRetry`: a device that cannot
/// open is retried every 50-200 ms instead of 0.5-5 s, for tests that wait for the retry.
/// `adjust` changes the rest of the configuration (period, buffer) before the engine is made.
func engine(_ device: String, log: MemoryLogSink?, fastRetry: Bool = false,
            _ adjust: (inout AudioEngineConfig) -> Void = { _ in }) -> AudioEngine {
    var a = AudioConfig()
    a.device = device
    var c = AudioEngineConfig(a)
    if fastRetry {
        c.retryMin = 0.05
        c.retryMax = 0.2
    }
    adjust(&c)
    let hub = LogHub(clock: { WallTime(unixMillis: 0) })
    if let log { hub.add(log) }
    return AudioEngine(config: c, log: hub.logger("audio"))
}

/// Waits on the engine's own progress (not a fixed sleep) until `frames` have been written.
func waitWritten(_ e: AudioEngine, atLeast frames: UInt64, timeout: Double = 5) async {
    let start = Date()
    while e.stats.framesWritten < frames && Date().timeIntervalSince(start) < timeout {
        try? await Task.sleep(for: .milliseconds(5))
    }
}

/// Channel 0 of what the file device wrote to `wav`.
func capture(_ wav: String) throws -> [Float] {
    try WAV.decode(Array(FileManager.default.contents(atPath: wav)!)).channel(0)
}
