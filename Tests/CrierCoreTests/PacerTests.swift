import Synchronization
import Testing
@testable import CrierCore

/// The audio engine's pacing (`Pacer`) run against simulated devices over seeded timelines: a
/// clock-driven ring buffer (hw, dmix: start threshold, underrun when the reader catches up with
/// the writer, rewind) and a self-paced PCM (null, file), the real `Mixer` and `ClipStream`s that
/// arrive in chunks, urgent clips that arrive with silence queued, and a thread that wakes late,
/// sometimes very late (a busy or emulated CPU: underruns). `Sim.run` makes the same calls in the
/// same order as `AudioEngine.stream`, with an injected clock.
@Suite struct PacerTests {
    static let seeds = Array(UInt64(1)...20)

    /// Frames written never exceed the buffer: clock-driven, nothing queued beyond it; self-paced,
    /// never more than a buffer ahead of the clock. Every kind of timeline.
    @Test(arguments: seeds) func neverWritesBeyondTheBuffer(seed: UInt64) {
        for kind in Sim.Kind.allCases {
            let out = Sim.run(Sim.Scenario(seed: seed, kind: kind, speech: .mixed, stalls: true, urgent: true))
            #expect(out.beyondBuffer.isEmpty, "seed \(seed) \(kind): \(out.beyondBuffer.prefix(3))")
            #expect(out.written > 0)
            // The rewind's rules hold with late wakeups and underruns too.
            #expect(out.rewindProblems.isEmpty, "seed \(seed) \(kind): \(out.rewindProblems.prefix(3))")
            #expect(out.lateStarts.isEmpty, "seed \(seed) \(kind): \(out.lateStarts.prefix(3))")
        }
    }

    /// A started streamed clip never runs dry while its synthesis is ahead: a synthesis faster
    /// than real time with chunks of 5-20 ms and a thread that wakes on time gives no gap frame
    /// at all, and every clip's samples are all played. With late wakeups and slow synthesis gap
    /// silence is written only in a wakeup where the device would otherwise run low (queued at
    /// or below the floor) or waits for its start threshold.
    @Test(arguments: seeds) func aStartedStreamedClipNeverRunsDryWhileItsSamplesAreThere(seed: UInt64) {
        for kind in Sim.Kind.allCases {
            let fast = Sim.run(Sim.Scenario(seed: seed, kind: kind, speech: .fast, stalls: false, urgent: seed % 2 == 0))
            #expect(fast.gapFrames == 0, "seed \(seed) \(kind): \(fast.gapFrames) gap frames, synthesis ahead")
            #expect(fast.clipsStarted > 0 && fast.clipsFinished == fast.clipsStarted, "seed \(seed) \(kind)")
            #expect(fast.underruns == 0, "seed \(seed) \(kind): \(fast.underruns) underruns on time")
            let rough = Sim.run(Sim.Scenario(seed: seed, kind: kind, speech: .mixed, stalls: true, urgent: true))
            #expect(rough.gapsNotLow.isEmpty, "seed \(seed) \(kind): \(rough.gapsNotLow.prefix(3))")
        }
    }

    /// An underrun while speech streams in raises the floor to the idle margin for as long as the
    /// device stays open (never lowered); one with nothing streaming leaves it. Late wakeups
    /// (30-150 ms against an 80 ms buffer) make underruns on every seed.
    @Test(arguments: seeds) func anUnderrunWhileStreamingRaisesTheFloor(seed: UInt64) {
        let out = Sim.run(Sim.Scenario(seed: seed, kind: .clock, speech: .mixed, stalls: true, urgent: false))
        #expect(out.underruns > 0, "seed \(seed): the timeline should underrun")
        #expect(out.floorProblems.isEmpty, "seed \(seed): \(out.floorProblems.prefix(3))")
        #expect(out.raisedFloors == (out.underrunsWhileStreaming > 0 ? 1 : 0), "seed \(seed): raised \(out.raisedFloors) times")
        // A device recovered from an underrun is filled to its start threshold (a partial period
        // included) and plays again: never left waiting for it (silent for good) past one wakeup.
        #expect(out.leftStopped.isEmpty, "seed \(seed): \(out.leftStopped.prefix(3))")
    }

    /// A rewind (an urgent clip arriving with silence queued) takes back only silence that has not
    /// played, keeps the safety queued, and the clip starts within that safety of the listener.
    @Test(arguments: seeds) func aRewindTakesBackOnlyQueuedSilence(seed: UInt64) {
        let out = Sim.run(Sim.Scenario(seed: seed, kind: .clock, speech: .mixed, stalls: false, urgent: true))
        #expect(out.rewinds > 0, "seed \(seed): no rewind happened")
        #expect(out.rewindProblems.isEmpty, "seed \(seed): \(out.rewindProblems.prefix(3))")
        #expect(out.lateStarts.isEmpty, "seed \(seed): \(out.lateStarts.prefix(3))")
    }

    /// Music playing and no clip: the buffer is kept full, so a thread waking later than the idle
    /// margin (half the 80 ms buffer) but not by the buffer less a period is not heard. The same
    /// lateness in plain silence underruns (unheard there: silence against silence), which is why
    /// only music changes how the idle thread sleeps.
    /// Also a 60 ms buffer of 10 ms periods and a 128 ms one of 1 024 frames: every wakeup is
    /// late by a time between the idle margin and the buffer less a period (2 ms inside each).
    @Test(arguments: seeds) func musicKeepsTheBufferFullSoALateWakeupIsNotHeard(seed: UInt64) {
        for shape in [(period: 960, buffer: 3840), (period: 480, buffer: 2880), (period: 1024, buffer: 6144)] {
            let margin = Double(Pacer.idleKeep(buffer: shape.buffer, period: shape.period)) / 48000
            let late = (margin + 0.002)...(Double(shape.buffer - shape.period) / 48000 - 0.002)
            let music = Sim.run(Sim.Scenario(seed: seed, kind: .clock, speech: .none, stalls: false, urgent: seed % 2 == 0,
                                             music: true, late: late, shape: shape))
            #expect(music.underruns == 0, "seed \(seed) \(shape): \(music.underruns) underruns with music, every wakeup \(late) s late")
            #expect(music.beyondBuffer.isEmpty && music.written > 0)
            let silence = Sim.run(Sim.Scenario(seed: seed, kind: .clock, speech: .none, stalls: false, urgent: false, late: late, shape: shape))
            #expect(silence.underruns > 0, "seed \(seed) \(shape): silence waking \(late) s late should run below its margin")
        }
    }

    /// The device's "room for a period" comes later than the whole buffer (60-150 ms), timers on
    /// time: the poll's backstop wakes the thread while the idle margin is still queued, with
    /// music, speech and clicks alike: no underrun. (Without the backstop every such wakeup
    /// underruns.)
    @Test(arguments: seeds) func aLateDeviceSignalIsCoveredByTheBackstop(seed: UInt64) {
        for shape in [(period: 960, buffer: 3840), (period: 480, buffer: 2880), (period: 1024, buffer: 6144)] {
            for speech in [Sim.Speech.none, .fast] {
                let out = Sim.run(Sim.Scenario(seed: seed, kind: .clock, speech: speech, stalls: false, urgent: true,
                                               music: true, lateDevice: 0.06...0.15, shape: shape))
                #expect(out.underruns == 0, "seed \(seed) \(shape) \(speech): \(out.underruns) underruns")
                #expect(out.beyondBuffer.isEmpty && out.written > 0)
                #expect(out.clipsFinished == out.clipsStarted)
            }
        }
    }

    /// Idle, a clock-driven device keeps at least the idle margin queued and wakes about
    /// rate / (buffer - margin) times a second (25/s with the defaults); a self-paced one is never
    /// ahead of the clock and lags it by at most a batch (four periods) and one, 12.5 wakeups/s.
    @Test(arguments: seeds) func idleStaysAtTheMargin(seed: UInt64) {
        for kind in Sim.Kind.allCases {
            let out = Sim.run(Sim.Scenario(seed: seed, kind: kind, speech: .none, stalls: false, urgent: false))
            #expect(out.idleProblems.isEmpty, "seed \(seed) \(kind): \(out.idleProblems.prefix(3))")
            #expect(out.underruns == 0)
            let p = out.pacer
            let perSecond = Double(out.wakeups) / out.seconds
            let expected = kind == .clock ? Double(p.device.rate) / Double(max(1, (p.device.buffer - p.idleMargin) / p.device.period) * p.device.period)
                : Double(p.device.rate) / Double(Pacer.idleBatchPeriods * p.device.period)
            #expect(perSecond <= expected * 1.1 + 1, "seed \(seed) \(kind): \(perSecond) wakeups/s, expected \(expected)")
            #expect(perSecond >= expected * 0.9 - 1, "seed \(seed) \(kind): \(perSecond) wakeups/s, expected \(expected)")
        }
    }

    /// The defaults' figures, by hand: 48 kHz, 20 ms periods, an 80 ms buffer.
    @Test func theDefaultsFigures() {
        let c = Pacer(device: .init(rate: 48000, period: 960, buffer: 3840, selfPaced: false), start: 0)
        #expect(c.safety == 960 && c.idleMargin == 1920 && c.minWrite == 48 && c.floor == 480)
        let s = Pacer(device: .init(rate: 48000, period: 960, buffer: 3840, selfPaced: true), start: 0)
        #expect(s.floor == -960)
        // Nothing written: nothing to take back; a self-paced device is never rewound.
        #expect(c.takeBack(added: true, played: { _ in 0 }, rewindable: { 3840 }) == 0)
        var w = c
        w.wrote(3840, sound: false)
        #expect(w.takeBack(added: true, played: { _ in 1000 }, rewindable: { 2840 }) == 2840 - 960)
        #expect(w.takeBack(added: false, played: { _ in 1000 }, rewindable: { 2840 }) == 0)
        var plan = w.plan(added: false, idle: true, now: 0, avail: 0)
        #expect(w.sleep(after: plan, idle: true, pendingEnd: nil, now: 0, played: { _ in 0 }, delay: { 3840 }) == .wake(timeout: 0.04))
        #expect(w.sleep(after: plan, idle: true, pendingEnd: nil, now: 0, played: { _ in 0 }, delay: { 2000 }) == .poll(backstop: 1))
        // The poll's backstop: until the queue is down to the idle margin, at least a period.
        #expect(w.sleep(after: plan, idle: false, queued: 3840, pendingEnd: nil, now: 0, played: { _ in 0 }, delay: { nil }) == .poll(backstop: 0.04))
        #expect(w.sleep(after: plan, idle: false, queued: 2000, pendingEnd: nil, now: 0, played: { _ in 0 }, delay: { nil }) == .poll(backstop: 0.02))
        w.limit(&plan, running: true, lead: nil, played: { _ in 0 })
        #expect(!plan.limited && plan.next() == nil)
    }
}

/// The simulation: a device model, the engine's call sequence, and the invariants checked as it
/// runs (each failure is a line saying where).
enum Sim {
    enum Kind: CaseIterable, CustomStringConvertible {
        case clock, selfPaced
        var description: String { self == .clock ? "clock-driven" : "self-paced" }
    }
    enum Speech { case none, fast, mixed }

    struct Scenario {
        var seed: UInt64
        var kind: Kind
        var speech: Speech
        /// Wakeups sometimes 30-150 ms late (a busy CPU): underruns on a clock-driven device.
        var stalls: Bool
        /// Whole clips (the volume click, a prompt) arriving at random times.
        var urgent: Bool
        var seconds = 3.0
        /// Music plays under the silence (the engine's `musicActive`): not idle for sleeping.
        var music = false
        /// Every wakeup this many seconds late (a guest whose CPU the emulator takes away).
        var late: ClosedRange<Double>? = nil
        /// The device's "room for a period" signal this many seconds late, timers on time (a
        /// softirq left to ksoftirqd behind busy processes: snd-aloop, a USB DAC).
        var lateDevice: ClosedRange<Double>? = nil
        /// The device's period and buffer (frames); nil: drawn from the seed.
        var shape: (period: Int, buffer: Int)? = nil
    }

    struct Outcome {
        var pacer: Pacer
        var seconds: Double
        var written: UInt64 = 0
        var wakeups = 0
        var underruns = 0
        var underrunsWhileStreaming = 0
        var raisedFloors = 0
        var rewinds = 0
        var gapFrames = 0
        var clipsStarted = 0
        var clipsFinished = 0
        var beyondBuffer: [String] = []
        var gapsNotLow: [String] = []
        var floorProblems: [String] = []
        var rewindProblems: [String] = []
        var lateStarts: [String] = []
        var idleProblems: [String] = []
        var leftStopped: [String] = []
    }

    /// A PCM as far as the pacer sees it. Clock-driven: the reader (`hw`) advances with time once
    /// the queue reached the start threshold and stops in an xrun when it catches up with the
    /// writer (`appl`); `avail` and `write` recover it (PCMDevice does: snd_pcm_recover), `delay`
    /// fails in it. Self-paced: takes everything at once; what played is the pacing clock.
    struct PCM {
        enum State { case prepared, running, xrun }
        let rate: Int, period: Int, buffer: Int, selfPaced: Bool
        var appl: UInt64 = 0
        var hw: Double = 0
        var state = State.prepared
        var at: Double = 0

        var threshold: Int { buffer / period * period }
        var played: UInt64 { UInt64(hw) }
        var queued: Int { Int(appl) - Int(played) }

        mutating func advance(to t: Double) {
            defer { at = max(at, t) }
            guard !selfPaced, state == .running, t > at else { return }
            let reach = hw + (t - at) * Double(rate)
            if reach >= Double(appl) {
                hw = Double(appl)
                state = .xrun
            } else {
                hw = reach
            }
        }
        mutating func avail(_ now: Double, _ onRecover: () -> Void) -> Int {
            advance(to: now)
            if state == .xrun {
                state = .prepared
                onRecover()
                return buffer
            }
            return buffer - queued
        }
        mutating func delay(_ now: Double) -> Int? {
            advance(to: now)
            return selfPaced ? 0 : state == .xrun ? nil : queued
        }
        mutating func rewindable(_ now: Double) -> Int {
            advance(to: now)
            return selfPaced || state == .xrun ? 0 : queued
        }
        mutating func rewind(_ k: Int, _ now: Double) -> Int {
            let n = min(k, rewindable(now))
            guard n > 0 else { return 0 }
            appl -= UInt64(n)
            return n
        }
        mutating func isRunning(_ now: Double) -> Bool {
            advance(to: now)
            return selfPaced || state == .running
        }
        /// Writes; false when it went beyond the buffer.
        mutating func write(_ n: Int, _ now: Double, clock: Int64, _ onRecover: () -> Void) -> Bool {
            advance(to: now)
            if state == .xrun {
                state = .prepared
                onRecover()
            }
            let fits = selfPaced ? Int64(appl) + Int64(n) <= clock + Int64(buffer) : queued + n <= buffer
            appl += UInt64(n)
            if !selfPaced && state == .prepared && queued >= threshold { state = .running }
            return fits
        }
        /// When `.poll` returns: room for a period (avail_min), an xrun, or 1 s.
        func pollDue(_ now: Double) -> Double {
            guard state == .running else { return now }
            let target = Double(Int(appl) - buffer + period)
            return target <= hw ? now : min(now + 1, at + (target - hw) / Double(rate))
        }
    }

    /// Something that happens at a time: a clip handed to play(), a chunk of synthesis.
    enum Event {
        case add(UInt64, Clip)
        case append(ClipStream, [Float], last: Bool)
    }

    final class Poke: Sendable {
        let flag = Mutex(false)
        func set() { flag.withLock { $0 = true } }
        func take() -> Bool { flag.withLock { f in defer { f = false }; return f } }
    }

    static func run(_ s: Scenario) -> Outcome {
        var rng = SplitMix(state: s.seed &* 0x9E37_79B9 &+ (s.kind == .clock ? 1 : 2))
        let rate = 48000
        var period = [480, 960, 960, 1024][Int.random(in: 0..<4, using: &rng)]
        var buffer = period * Int.random(in: 3...6, using: &rng)
        if let shape = s.shape { (period, buffer) = shape }
        let format = AudioFormat(rate: rate, channels: 1)
        var dev = PCM(rate: rate, period: period, buffer: buffer, selfPaced: s.kind == .selfPaced)
        let t0 = 0.0
        var now = t0
        var pacer = Pacer(device: .init(rate: rate, period: period, buffer: buffer, selfPaced: s.kind == .selfPaced), start: t0)
        var out = Outcome(pacer: pacer, seconds: s.seconds)
        var mixer = Mixer(format: format)
        var playhead = Playhead()
        var pending: [QueuedClipEnd] = []
        let poke = Poke()

        // The timeline.
        var events: [(at: Double, event: Event)] = []
        var nextID: UInt64 = 1
        var stallsAt: [Double] = []
        if s.speech != .none {
            var t = Double.random(in: 0.1...0.4, using: &rng)
            while t < s.seconds - 1.5 {
                let st = ClipStream()
                st.setWaker { poke.set() }
                events.append((t, .add(nextID, Clip(stream: st))))
                nextID += 1
                // Each clip gets one long stall (100-200 ms, more than any buffer here) while
                // it streams in.
                if s.stalls { stallsAt.append(t + Double.random(in: 0.01...0.15, using: &rng)) }
                let fast = s.speech == .fast || Bool.random(using: &rng)
                var at = t + Double.random(in: 0.0002...0.005, using: &rng)
                var total = Int(Double(rate) * Double.random(in: 0.2...0.9, using: &rng))
                var phase = 0.0
                while total > 0 {
                    let n = min(total, format.frames(ms: Double.random(in: 5...20, using: &rng)))
                    var chunk = [Float](repeating: 0, count: n)
                    for i in 0..<n {
                        chunk[i] = Float(0.3 * Resampler.sin(phase))
                        phase += 0.07
                    }
                    total -= n
                    events.append((at, .append(st, chunk, last: total == 0)))
                    let speed = fast ? Double.random(in: 0.02...0.3, using: &rng) : Double.random(in: 0.3...1.6, using: &rng)
                    at += Double(n) / Double(rate) * speed
                }
                t = at + Double.random(in: 0.05...0.5, using: &rng)
            }
        }
        if s.urgent {
            // One in the first moments, with only the first silence queued.
            events.append((Double.random(in: 0.03...0.09, using: &rng), .add(nextID, Tone.beep(format: format, ms: 40))))
            nextID += 1
            for _ in 0..<Int.random(in: 2...5, using: &rng) {
                events.append((Double.random(in: 0.1...(s.seconds - 0.3), using: &rng), .add(nextID, Tone.beep(format: format, ms: 40))))
                nextID += 1
            }
        }
        events.sort { $0.at < $1.at }
        var inbox: [(UInt64, Clip)] = []
        var cursor = 0
        func deliver(until t: Double) -> Bool {
            var woke = false
            while cursor < events.count && events[cursor].at <= t {
                let e = events[cursor]
                cursor += 1
                switch e.event {
                case .add(let id, let clip):
                    inbox.append((id, clip))
                    poke.set()
                case .append(let st, let samples, let last):
                    st.append(samples)
                    if last { st.finish() }
                }
                woke = poke.take() || woke
            }
            return woke
        }

        // The engine's accounting, as in AudioEngine.stream.
        func clock() -> Int64 { Pacer.clock(since: t0, now: now, rate: rate) }
        func playedPosition(_ written: UInt64) -> UInt64 {
            if dev.selfPaced {
                let c = max(0, clock())
                playhead.observe(written: written, clock: c)
                return UInt64(c)
            }
            if let d = dev.delay(now) { playhead.observe(written: written, delay: d) }
            return playhead.played
        }
        /// What the listener has heard up to now (true position, not the pacer's).
        func truePlayed() -> Int64 {
            dev.advance(to: now)
            return dev.selfPaced ? clock() : Int64(dev.played)
        }
        var soundEnd: UInt64 = 0  // the sim's own record: stream frame past the last audible block
        var addedAt: [UInt64: (played: Int64, silentQueue: Bool)] = [:]
        var floorBefore = pacer.floor
        var wroteBlock = false
        var stoppedWakeups = 0
        func recovered() {
            out.underruns += 1
            if pacer.streaming { out.underrunsWhileStreaming += 1 }
            let streaming = pacer.streaming
            if pacer.underran() { out.raisedFloors += 1 }
            if streaming && pacer.floor != pacer.idleMargin {
                out.floorProblems.append("t=\(now): underrun while streaming left the floor at \(pacer.floor), not \(pacer.idleMargin)")
            }
        }
        var buf = [Int16](repeating: 0, count: 1024)

        while now < s.seconds {
            _ = deliver(until: now)
            // drainInbox
            let fresh = inbox
            inbox = []
            for (id, clip) in fresh {
                mixer.add(id: id, clip: clip)
                if clip.stream == nil { addedAt[id] = (truePlayed(), Int64(soundEnd) <= truePlayed()) }
            }
            let added = mixer.pollStreams() || fresh.contains { $0.1.stream == nil }
            out.wakeups += 1
            let idleWake = s.speech == .none && !s.urgent && !s.music
            if idleWake {
                dev.advance(to: now)
                let q = dev.selfPaced ? Int(Int64(pacer.written) - clock()) : dev.queued
                if !dev.selfPaced && out.wakeups > 1 && q < pacer.idleMargin - rate / 1000 {
                    out.idleProblems.append("t=\(now): idle with \(q) frames queued, margin \(pacer.idleMargin)")
                }
                if dev.selfPaced && (q > 0 || q < -(Pacer.idleBatchPeriods + 1) * period - rate / 1000) {
                    out.idleProblems.append("t=\(now): idle \(q) frames ahead of the clock")
                }
            }
            // 1. Take back queued silence.
            let take = pacer.takeBack(added: added, played: playedPosition, rewindable: { dev.rewindable(now) })
            if take > 0 {
                dev.advance(to: now)
                if take > dev.queued - pacer.safety {
                    out.rewindProblems.append("t=\(now): asked to take back \(take) with \(dev.queued) queued: played frames or the safety")
                }
                if pacer.written - UInt64(take) < soundEnd {
                    out.rewindProblems.append("t=\(now): took back \(take) frames reaching into sound (written \(pacer.written), sound to \(soundEnd))")
                }
                let got = dev.rewind(take, now)
                if dev.queued < pacer.safety { out.rewindProblems.append("t=\(now): \(dev.queued) left queued, less than the safety \(pacer.safety)") }
                pacer.tookBack(got)
                out.rewinds += 1
            }
            // 2. The room.
            let avail = dev.selfPaced ? nil : dev.avail(now, recovered)
            var plan = pacer.plan(added: added, idle: mixer.isIdle, now: now, avail: avail)
            while let n = plan.nextCatchUp() {
                if !dev.write(n, now, clock: clock(), recovered) { out.beyondBuffer.append("t=\(now): catch-up of \(n)") }
                pacer.caughtUp(n)
            }
            // 3. The limit.
            let running = dev.isRunning(now)
            let lead = mixer.streamLead(want: plan.frames)
            var queuedAtLimit: Int?
            pacer.limit(&plan, running: running, lead: lead) { w in
                let p = playedPosition(w)
                queuedAtLimit = Int(w) - Int(p)
                return p
            }
            let low = !running || (queuedAtLimit ?? .min) <= pacer.floor
            // 4. The writes.
            wroteBlock = false
            while let n = plan.next() {
                if buf.count < n { buf = [Int16](repeating: 0, count: n) }
                let before = pacer.written
                let r = buf.withUnsafeMutableBufferPointer { mixer.render(into: $0, frames: n) }
                if !dev.write(n, now, clock: clock(), recovered) {
                    out.beyondBuffer.append("t=\(now): \(n) frames with \(dev.queued - n) queued of \(buffer) (written \(pacer.written))")
                }
                pacer.wrote(n, sound: !r.silent)
                wroteBlock = true
                if !r.silent { soundEnd = pacer.written }
                if r.gapFrames > 0 {
                    out.gapFrames += r.gapFrames
                    if !low {
                        out.gapsNotLow.append("t=\(now): \(r.gapFrames) gap frames with \(queuedAtLimit ?? -1) queued over the floor \(pacer.floor), lead \(lead ?? -1)")
                    }
                }
                for id in r.started {
                    out.clipsStarted += 1
                    // A clip added with only silence queued starts within the safety (and a
                    // period's rounding) of what the listener had heard, on a rewinding device.
                    if !dev.selfPaced, let a = addedAt[id], a.silentQueue, Int64(before) - a.played > Int64(pacer.safety + period + rate / 100) {
                        out.lateStarts.append("t=\(now): clip \(id) starts \(Int64(before) - a.played) frames after what had played when it came")
                    }
                }
                for f in r.finished {
                    pending.append(QueuedClipEnd(id: f.id, end: before + UInt64(f.endFrame), quiet: f.quiet, heard: f.heard, tail: f.tail))
                }
            }
            if idleWake && dev.selfPaced && Int64(pacer.written) > clock() {
                out.idleProblems.append("t=\(now): idle, wrote \(Int64(pacer.written) - clock()) frames ahead of the clock")
            }
            if !pending.isEmpty {
                let played = playedPosition(pacer.written)
                let done = pending.filter { $0.end <= played }
                out.clipsFinished += done.count
                pending.removeAll { $0.end <= played }
            }
            if !dev.isRunning(now) {
                stoppedWakeups += 1
                if stoppedWakeups == 2 { out.leftStopped.append("t=\(now): \(dev.queued) queued, threshold \(dev.threshold), still waiting after two wakeups") }
            } else {
                stoppedWakeups = 0
            }
            if pacer.floor < floorBefore { out.floorProblems.append("t=\(now): the floor went down from \(floorBefore) to \(pacer.floor)") }
            floorBefore = pacer.floor
            // 5. Sleep, woken by the wake pipe (a clip added, a chunk the mixer waited for).
            let sleep = pacer.sleep(after: plan, idle: mixer.isIdle && pending.isEmpty, music: s.music,
                                    queued: dev.selfPaced ? nil : dev.queued, pendingEnd: pending.map(\.end).min(),
                                    now: now, played: playedPosition, delay: { dev.delay(now) })
            var due: Double
            switch sleep {
            case .wake(let timeout): due = now + timeout
            case .poll(let backstop):
                due = min(dev.pollDue(now) + (s.lateDevice.map { Double.random(in: $0, using: &rng) } ?? 0), now + backstop)
            }
            if poke.take() { due = now }
            // Events while asleep: one that pokes ends the sleep.
            while cursor < events.count && events[cursor].at <= due {
                let t = events[cursor].at
                if deliver(until: t) {
                    due = max(now, t)
                    break
                }
            }
            // Scheduling latency, and now and then a stall.
            var late = Double.random(in: 0...0.0005, using: &rng)
            if let l = s.late { late += Double.random(in: l, using: &rng) }
            if s.stalls && Int.random(in: 0..<30, using: &rng) == 0 { late += Double.random(in: 0.03...0.15, using: &rng) }
            if let at = stallsAt.first, now >= at {
                stallsAt.removeFirst()
                late += Double.random(in: 0.1...0.2, using: &rng)
            }
            // A wakeup that wrote nothing and sleeps 0 still moves time (the engine's loop takes
            // microseconds).
            now = max(due, now + (wroteBlock ? 0 : 0.00002)) + late
        }
        out.written = pacer.written
        out.pacer = pacer
        return out
    }
}
