import CrierCore
import Foundation
import Synchronization
import Testing
@testable import CrierAudio

/// The engine against ALSA's own `file` plugin (Support.swift): no sound card needed, and the
/// test reads back exactly what was written to ALSA.
@Suite struct AudioEngineTests {
    let rate = 48000

    func tone(ms: Double, level: Double = 0.5) -> Clip {
        Tone.beep(format: AudioFormat(rate: rate, channels: 2), hz: 440, ms: ms, level: level)
    }

    @Test func keepsSilenceFlowingAndMixesAClipInWithCleanEdges() async throws {
        let dir = tempDir()
        let wav = dir + "/out.wav"
        let log = MemoryLogSink()
        let e = engine(fileDevice(wav), log: log, fastRetry: true)
        e.start()
        await waitWritten(e, atLeast: UInt64(rate) / 4)  // 250 ms of keep-alive silence first
        let outcome = await e.playAndWait(tone(ms: 300))
        #expect(outcome == .played)
        let afterClip = e.stats.framesWritten
        await waitWritten(e, atLeast: afterClip + UInt64(rate) / 5)
        e.stop()

        let d = try WAV.decode(Array(FileManager.default.contents(atPath: wav)!))
        #expect(d.rate == rate && d.channels == 2)
        let x = d.channel(0)
        let first = try #require(Signal.firstLoud(x, threshold: 0.01))
        let last = try #require(Signal.lastLoud(x, threshold: 0.01))
        #expect(first >= rate / 4 - 1000, "leading silence: first loud sample at \(first)")
        #expect(Double(last - first) / Double(rate) > 0.28 && Double(last - first) / Double(rate) < 0.31)
        #expect(x.count - last > rate / 10, "trailing silence after the clip")
        #expect(Signal.peak(x[...]) < 0.5 * 0.71 + 0.01, "headroom applied")
        // 5 ms fades: no step at the edges bigger than a 440 Hz sine at this level can make.
        let maxStep = Signal.maxStep(x, in: max(0, first - 50)..<(last + 50))
        #expect(maxStep < 0.03, "max step \(maxStep)")
        #expect(e.stats.clamped == 0)
        #expect(log.lines.contains { $0.contains("INFO audio: opened device=file:") && $0.contains("type=FILE") })
        #expect(log.lines.last?.contains("INFO audio: closed") == true)
    }

    /// The audio thread asks for audio.realtime_priority on itself; the engine reports what it got.
    @Test func theAudioThreadReportsItsSchedulingPolicy() async throws {
        let wav = tempDir() + "/rt.wav"
        let off = engine(fileDevice(wav), log: nil) { $0.realtimePriority = 0 }
        #expect(off.threadPolicy == nil, "nothing before the thread starts")
        off.start()
        await waitWritten(off, atLeast: 480)
        #expect(off.threadPolicy == ThreadPolicy(kind: .other, detail: "off: audio.realtime_priority = 0"))
        off.stop()
        let rt = engine(fileDevice(wav), log: nil) { $0.realtimePriority = 7 }
        rt.start()
        await waitWritten(rt, atLeast: 480)
        var limit = rlimit()
        getrlimit(__rlimit_resource_t(14), &limit)  // RLIMIT_RTPRIO
        if geteuid() == 0 || limit.rlim_cur >= 7 {
            #expect(rt.threadPolicy == ThreadPolicy(kind: .fifo, priority: 7))
        } else {
            #expect(rt.threadPolicy == ThreadPolicy(kind: .other, detail: "real-time refused: EPERM Operation not permitted"))
        }
        rt.stop()
    }

    @Test func speechDoesNotWaitForTheIdlePeriod() async throws {
        let wav = tempDir() + "/out.wav"
        // A long idle period (200 ms): a clip must still start at once, not when the period ends.
        let e = engine(fileDevice(wav), log: nil) { c in
            c.periodMs = 200
            c.bufferMs = 800
        }
        e.start()
        var latencies: [Double] = []
        for _ in 0..<5 {
            _ = await e.playAndWait(tone(ms: 30))
            latencies.append(e.stats.lastStartLatency)
        }
        e.stop()
        latencies.sort()
        // Waiting out the period would put the median near 100 ms.
        #expect(latencies[2] < 0.025, "play() → first frame written: \(latencies.map { Int($0 * 1000) }) ms")
    }

    @Test func idleSilenceIsWrittenSeveralPeriodsPerWakeup() async throws {
        let wav = tempDir() + "/out.wav"
        let e = engine(fileDevice(wav), log: MemoryLogSink(), fastRetry: true)
        e.start()
        await waitWritten(e, atLeast: UInt64(rate) / 2)
        e.stop()
        let s = e.stats
        let period = Double(rate) * 0.020
        // One wakeup per period would be 1.0; idle batching writes 4 periods per wakeup.
        let perWakeup = Double(s.framesWritten) / Double(max(1, s.wakeups)) / period
        #expect(perWakeup >= 2.5, "\(s.framesWritten) frames in \(s.wakeups) wakeups")
    }

    @Test func speechAfterAnIdleBatchStartsAtNowInTheStream() async throws {
        let wav = tempDir() + "/out.wav"
        let e = engine(fileDevice(wav), log: MemoryLogSink(), fastRetry: true)
        let t0 = Date()
        e.start()
        await waitWritten(e, atLeast: UInt64(rate) / 4)
        // Just after a batch went out: the stream now lags the clock by up to a batch (80 ms).
        try await Task.sleep(for: .milliseconds(60))
        let at = Date().timeIntervalSince(t0)
        _ = await e.playAndWait(tone(ms: 50))
        e.stop()
        let x = try capture(wav)
        let first = try #require(Signal.firstLoud(x, threshold: 0.01))
        // At "now" (t0 is taken before the engine's own start, so `at` can only overestimate).
        #expect(Double(first) / Double(rate) > at - 0.03, "tone at \(Double(first) / Double(rate)) s, played at \(at) s")
    }

    @Test func missingDeviceIsRetriedAndQueuedSpeechLandsWhenItAppears() async throws {
        let dir = tempDir() + "/later"  // does not exist yet: the file PCM cannot open
        let wav = dir + "/out.wav"
        let log = MemoryLogSink()
        let e = engine(fileDevice(wav), log: log, fastRetry: true)
        e.start()
        let played = Task { await e.playAndWait(tone(ms: 200)) }
        // Wait for the failure to be logged, then let the device "appear".
        let t0 = Date()
        while !log.lines.contains(where: { $0.contains("WARN audio:") }) && Date().timeIntervalSince(t0) < 5 {
            try? await Task.sleep(for: .milliseconds(5))
        }
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        #expect(await played.value == .played)
        while !log.lines.contains(where: { $0.contains("INFO audio: opened") }) && Date().timeIntervalSince(t0) < 5 {
            try? await Task.sleep(for: .milliseconds(5))
        }
        e.stop()
        let warnings = log.lines.filter { $0.contains("WARN audio:") }
        #expect(warnings.count == 1, "logged once per state change, not per retry: \(log.lines)")
        #expect(warnings.first?.contains("retrying") == true)
        #expect(log.lines.contains { $0.contains("INFO audio: opened") && $0.contains("after=") })
        let x = try capture(wav)
        #expect(Signal.firstLoud(x, threshold: 0.01) != nil, "the speech queued while the device was missing was played")
    }

    @Test func unknownDeviceGivesAnActionableError() async throws {
        let log = MemoryLogSink()
        let e = engine("nosuchcard_xyz", log: log, fastRetry: true)
        e.start()
        let t0 = Date()
        while log.lines.isEmpty && Date().timeIntervalSince(t0) < 5 { try? await Task.sleep(for: .milliseconds(5)) }
        e.stop()
        let line = try #require(log.lines.first)
        #expect(line.contains("audio device 'nosuchcard_xyz' not found"))
        #expect(line.contains("check audio.device in crier.conf"))
        #expect(e.stats.deviceOpen == false)
    }

    /// A clip cut short says how much of it was heard, and that matches what reached ALSA:
    /// the daemon acks `spoken` only the orders whose part lies within it.
    @Test(arguments: [false, true])
    func aStoppedClipReportsHowMuchWasHeard(engineStop: Bool) async throws {
        let wav = tempDir() + "/cut.wav"
        let e = engine(fileDevice(wav), log: MemoryLogSink(), fastRetry: true)
        e.start()
        await waitWritten(e, atLeast: UInt64(rate) / 4)
        let clip = tone(ms: 3000)
        let ended = Mutex<ClipEnd?>(nil)
        let id = e.play(clip, onEnd: { end in ended.withLock { $0 = end } })
        try await Task.sleep(for: .milliseconds(700))
        if engineStop { e.stop() } else { e.stop(id: id) }
        let start = Date()
        while ended.withLock({ $0 }) == nil && Date().timeIntervalSince(start) < 5 { try await Task.sleep(for: .milliseconds(5)) }
        if !engineStop {
            await waitWritten(e, atLeast: e.stats.framesWritten + UInt64(rate) / 5)
            e.stop()
        }
        let end = try #require(ended.withLock { $0 })
        #expect(end.outcome == .stopped)
        let heard = Double(end.heardFrames) / Double(rate)
        #expect(heard > 0.4 && heard < 1.5, "heard \(heard) s of a 3 s clip stopped after 0.7 s")
        let x = try capture(wav)
        let first = try #require(Signal.firstLoud(x, threshold: 0.01))
        let last = try #require(Signal.lastLoud(x, threshold: 0.01))
        let written = Double(last - first) / Double(rate)
        #expect(abs(written - heard) < 0.03, "reported \(heard) s heard, \(written) s written")
    }

    @Test func stopEndsUnplayedClipsWithShutdown() async throws {
        let e = engine("nosuchcard_xyz", log: MemoryLogSink(), fastRetry: true)
        e.start()
        let t = Task { await e.playAndWait(tone(ms: 100)) }
        try await Task.sleep(for: .milliseconds(50))
        e.stop()
        #expect(await t.value == .shutdown)
    }

    @Test(.timeLimit(.minutes(1))) func aClipPlayedAfterStopEndsAtOnceWithShutdown() async throws {
        let e = engine("nosuchcard_xyz", log: MemoryLogSink(), fastRetry: true)
        e.start()
        e.stop()
        // Before: queued in an inbox nobody drains any more, and the caller waited for ever.
        #expect(await e.playAndWait(tone(ms: 100)) == .shutdown)
    }

    @Test func gainChangeLowersLevel() async throws {
        let wav = tempDir() + "/g.wav"
        let e = engine(fileDevice(wav), log: MemoryLogSink(), fastRetry: true)
        e.start()
        _ = await e.playAndWait(tone(ms: 200))
        e.setGain(0.5)
        _ = await e.playAndWait(tone(ms: 200))
        e.stop()
        let x = try capture(wav)
        let loud = x.indices.filter { abs(x[$0]) > 0.01 }
        let firstHalf = Array(loud.prefix(while: { $0 < loud.first! + rate / 5 }))
        let secondStart = try #require(loud.first(where: { $0 > firstHalf.last! + 100 }))
        let a = Signal.peak(x[firstHalf.first!..<firstHalf.last!])
        // Skip the first 30 ms: the gain ramps (never steps) to its new value.
        let b = Signal.peak(x[(secondStart + rate * 3 / 100)..<min(x.count, secondStart + rate / 6)])
        #expect(abs(Double(b / a) - 0.5) < 0.02, "second clip at half gain: \(a) → \(b)")
    }
}
