import CALSA
import CrierCore
import CrierPosix
import Dispatch
import Glibc
import Synchronization

/// What happened to a clip handed to `AudioEngine.play`.
public enum ClipOutcome: Sendable, Equatable {
    /// Its last sample has left the device: the device said so (docs/audio.md, "A device lost
    /// with a clip's end still queued"). One whose end was queued in a lost device plays again.
    case played
    /// `stop(id:)` faded it out early.
    case stopped
    /// The engine shut down before it was played.
    case shutdown
}

/// How a clip ended and how much of it was heard: the daemon acks `spoken` only the orders
/// whose part of a clip lies within `heardFrames` (docs/protocol.md, "Partial alerts").
public struct ClipEnd: Sendable, Equatable {
    public var outcome: ClipOutcome
    /// Frames of the clip that left the device at full level: all of them when played, up to
    /// where the fade-out began when stopped, 0 when the engine shut down or was replaced first
    /// (not known, so counted as not heard).
    public var heardFrames: Int

    public init(_ outcome: ClipOutcome, heardFrames: Int) {
        self.outcome = outcome
        self.heardFrames = heardFrames
    }
}

/// Settings the engine is built with (from `audio.*` in crier.conf).
public struct AudioEngineConfig: Sendable {
    public var device: String
    public var format: AudioFormat
    public var periodMs: Int
    public var bufferMs: Int
    public var fadeMs: Double
    public var headroomDb: Double
    /// First retry delay after the device could not be opened; doubles up to `retryMax`.
    public var retryMin = 0.5
    public var retryMax = 5.0
    /// SCHED_FIFO priority of the audio thread; 0: ordinary scheduling.
    public var realtimePriority = 0

    public init(_ a: AudioConfig) {
        device = a.device
        format = AudioFormat(rate: a.rate, channels: a.channels)
        periodMs = a.periodMs
        bufferMs = a.bufferMs
        fadeMs = a.fadeMs
        headroomDb = a.headroomDb
        realtimePriority = a.realtimePriority
    }
}

/// Counters for status, benchmarks and tests.
public struct AudioStats: Sendable, Equatable {
    public var deviceOpen = false
    public var deviceType = ""
    public var periodFrames = 0
    public var bufferFrames = 0
    public var framesWritten: UInt64 = 0
    public var wakeups: UInt64 = 0
    public var recoveries = 0
    public var reopenings = 0
    public var rewoundFrames: UInt64 = 0
    public var clamped = 0
    public var lastError = ""
    /// Seconds from play() to the clip's first frame being written to ALSA, for the last clip.
    public var lastStartLatency: Double = 0
    /// Frames of silence played because a streamed clip's synthesis was behind playback.
    public var gapFrames: UInt64 = 0
    /// Background music: ducked right now (on the way down, down, or coming back up).
    public var musicDucked = false
    /// Music frames the audio thread wanted but the music buffer did not have (played as silence).
    public var musicUnderrunFrames: UInt64 = 0
}

/// The one thread that owns the ALSA PCM. From `start()` to `stop()` it keeps the device open
/// and fed (silence when there is nothing to say), so the DAC and amp never sleep or pop, and
/// mixes clips into that stream. See docs/audio.md for the timing rules.
public final class AudioEngine: Sendable {
    public let config: AudioEngineConfig
    let log: Logger
    let wake = WakePipe()

    private struct Inbox {
        var adds: [(UInt64, Clip, Double, Double, Bool, @Sendable (ClipEnd) -> Void)] = []
        var stops: [UInt64] = []
        var gain: Double?
        var musicLevel: Double?
        var stopping = false
    }

    private let inbox = Mutex(Inbox())
    private let nextID = Atomic<UInt64>(1)
    private let statsBox = Mutex(AudioStats())
    /// Monotonic nanoseconds of the last loop iteration: the supervisor's progress signal.
    private let progressNs = Atomic<Int64>(0)
    private let done = Mutex<(finished: Bool, waiters: [CheckedContinuation<Void, Never>])>((false, []))
    private let threadExited = DispatchSemaphore(value: 0)
    private let started = Atomic<Bool>(false)
    /// Where background music comes from (docs/music.md); nil: none. Swapped, never shared
    /// with a replaced player's thread.
    private let musicFeed = Mutex<MusicBuffer?>(nil)
    /// Set from the moment an alert is known (before its first sample exists) until the
    /// speaker loop has nothing left to say: music ducks for the whole queue.
    private let duckRequested = Atomic<Bool>(false)
    private let musicSettings: MusicConfig
    private let policyBox = Mutex<ThreadPolicy?>(nil)

    /// TEST ONLY: `CRIER_TEST_AUDIO_SPEED`, read once when the engine is made (`AudioTestSpeed`).
    let testSpeed: AudioTestSpeed

    public init(config: AudioEngineConfig, log: Logger, music: MusicConfig = MusicConfig()) {
        self.config = config
        self.log = log
        musicSettings = music
        testSpeed = AudioTestSpeed(value: FileIO.env(AudioTestSpeed.variable), device: config.device)
        if let m = testSpeed.message {
            if testSpeed.refused { log.error(m, ["device": config.device]) } else { log.warning(m, ["device": config.device]) }
        }
    }

    /// Mixes music from `buffer` (interleaved float at the output format) under everything
    /// else, from the next period on; nil: no music.
    public func attachMusic(_ buffer: MusicBuffer?) {
        musicFeed.withLock { $0 = buffer }
        wake.wake()
    }

    /// Linear music level (before the master gain); ramps in over 20 ms. 0 silences it (mute).
    public func setMusicLevel(_ g: Double) {
        inbox.withLock { $0.musicLevel = g }
        wake.wake()
    }

    /// Ducks the music now and keeps it down until `false` (then hold and release follow).
    public func requestDuck(_ on: Bool) {
        if duckRequested.exchange(on, ordering: .relaxed) != on { wake.wake() }
    }

    public var stats: AudioStats { statsBox.withLock { $0 } }
    public var lastProgress: Double { Double(progressNs.load(ordering: .relaxed)) / 1e9 }

    public func start() {
        guard !started.exchange(true, ordering: .relaxed) else { return }
        progressNs.store(Int64(Monotonic.now() * 1e9), ordering: .relaxed)
        if let e = wake.failure { log.error("no wake-up pipe (\(e)); clips start up to one period late") }
        do {
            try PosixThread.detach(name: "crier-audio") { [self] in
                let policy = RealtimeAudioThread.apply(priority: config.realtimePriority, log: log)
                policyBox.withLock { $0 = policy }
                var loop = Loop(engine: self)
                loop.run()
                threadExited.signal()
            }
        } catch {
            // The supervisor sees no progress and restarts the component.
            log.error("cannot start the audio thread: \(error)")
        }
    }

    /// The audio thread's scheduling policy; nil until the thread has started.
    public var threadPolicy: ThreadPolicy? { policyBox.withLock { $0 } }

    /// Fades out whatever plays, writes a little silence, closes the device. Blocks until done.
    public func stop() {
        guard started.load(ordering: .relaxed) else { return }
        let first = inbox.withLock { i in
            defer { i.stopping = true }
            return !i.stopping
        }
        wake.wake()
        // Bounded: a thread stuck inside a driver call must not hang the shutdown.
        if first && threadExited.wait(timeout: .now() + 3) == .timedOut {
            log.error("audio thread did not stop within 3 s (stuck in the driver?); leaving it")
        }
    }

    /// Asks the thread to stop without waiting for it: for an engine whose thread is stuck in a
    /// driver call and is being replaced (the supervisor's stall restart).
    public func abandon() {
        inbox.withLock { $0.stopping = true }
        wake.wake()
    }

    /// Queues a clip to be mixed in at once. `onDone` runs on the audio thread: keep it short.
    @discardableResult
    public func play(_ clip: Clip, gain: Double = 1, onDone: @escaping @Sendable (ClipOutcome) -> Void = { _ in }) -> UInt64 {
        play(clip, gain: gain, onEnd: { onDone($0.outcome) })
    }

    /// As `play(_:gain:onDone:)`, reporting how much of the clip was heard.
    @discardableResult
    public func play(_ clip: Clip, gain: Double = 1, onEnd: @escaping @Sendable (ClipEnd) -> Void) -> UInt64 {
        play(clip, gain: gain, ducksMusic: true, onEnd: onEnd)
    }

    /// As `play(_:gain:onEnd:)`; `ducksMusic` false for sounds music should not dip under (the click).
    @discardableResult
    public func play(_ clip: Clip, gain: Double, ducksMusic: Bool, onEnd: @escaping @Sendable (ClipEnd) -> Void) -> UInt64 {
        let id = nextID.wrappingAdd(1, ordering: .relaxed).oldValue
        let now = Monotonic.now()
        // Streamed speech: samples the audio thread is waiting for wake it at once.
        if let st = clip.stream {
            let w = wake
            st.setWaker { w.wake() }
        }
        // A clip handed to a stopped engine ends at once: its thread may be gone, and nobody
        // would ever call back (a caller waiting on it would hang).
        let refused = inbox.withLock { i -> Bool in
            if i.stopping { return true }
            i.adds.append((id, clip, gain, now, ducksMusic, onEnd))
            return false
        }
        if refused {
            onEnd(ClipEnd(.shutdown, heardFrames: 0))
            return id
        }
        wake.wake()
        return id
    }

    /// Plays a clip and returns when it has been heard (or the engine stopped).
    public func playAndWait(_ clip: Clip, gain: Double = 1) async -> ClipOutcome {
        await withCheckedContinuation { (c: CheckedContinuation<ClipOutcome, Never>) in
            play(clip, gain: gain) { c.resume(returning: $0) }
        }
    }

    public func stop(id: UInt64) {
        inbox.withLock { $0.stops.append(id) }
        wake.wake()
    }

    /// Master gain (linear, 1 = unity before headroom); ramps in over ~20 ms, within one period.
    public func setGain(_ g: Double) {
        inbox.withLock { $0.gain = g }
        wake.wake()
    }

    // MARK: The audio thread

    private struct Loop {
        let engine: AudioEngine
        var mixer: Mixer
        var callbacks: [UInt64: @Sendable (ClipEnd) -> Void] = [:]
        var stoppedIDs: Set<UInt64> = []
        /// Clips fully rendered but maybe still in the device buffer: where each ends in the
        /// stream and what of it is heard once that end has played.
        var pending: [QueuedClipEnd] = []
        /// What had left the device at its last good answer (reset per open device): a clip
        /// whose end is queued when the device is lost is heard only up to there.
        var playhead = Playhead()
        /// Each clip not yet ended, as handed to play(): a clip whose end never left a lost
        /// device is mixed again from its start.
        var clips: [UInt64: (clip: Clip, gain: Double, ducks: Bool)] = [:]
        var stopping = false
        /// When each clip was handed to play(), for the start-latency figure.
        var enqueuedAt: [UInt64: Double] = [:]
        /// Streamed clips whose synthesis fell behind (logged once per clip).
        var gapped: Set<UInt64> = []
        var lastStart: Double?
        /// The music's level/duck state, with what it was for the audio still queued (rewinds).
        var music: MusicTimeline
        /// Scratch block the music is read into, and what was read for the audio still queued
        /// in the device (handed back to the buffer when that audio is taken back).
        var musicBlock: [Float] = []
        var musicHistory: [Float] = []
        var musicSource: MusicBuffer?

        init(engine: AudioEngine) {
            self.engine = engine
            mixer = Mixer(format: engine.config.format, fadeMs: engine.config.fadeMs, headroomDb: engine.config.headroomDb)
            music = MusicTimeline(MusicMix(rate: engine.config.format.rate, channels: engine.config.format.channels,
                                           config: engine.musicSettings, level: 0))
        }

        /// One block of the stream: music read from its buffer (levelled and ducked) under the
        /// mixer's clips. The only place music enters the render loop.
        mutating func render(into buf: inout [Int16], frames n: Int, historyLimit: Int, clips: Bool = true) -> Mixer.Rendered {
            let feed = engine.musicFeed.withLock { $0 }
            if feed !== musicSource {
                musicSource = feed
                musicHistory = []
                music.forget()
            }
            music.limit = historyLimit
            // Nothing buffered (no source, between tracks of a stalled stream, outside
            // music.hours): the block is mixed exactly as without music, and music fades in
            // when it comes back. Muted music is still read (a stream stays live) at level 0.
            guard let feed, feed.channels == mixer.format.channels, feed.filledFrames > 0 else {
                music.starved(frames: n)
                return buf.withUnsafeMutableBufferPointer { mixer.render(into: $0, frames: n) }
            }
            let ch = mixer.format.channels
            if musicBlock.count < n * ch { musicBlock = [Float](repeating: 0, count: n * ch) }
            let got = musicBlock.withUnsafeMutableBufferPointer { feed.read(into: $0, frames: n) }
            musicHistory.append(contentsOf: musicBlock[0..<(got * ch)])
            if musicHistory.count > historyLimit * ch { musicHistory.removeFirst(musicHistory.count - historyLimit * ch) }
            let duck = mixer.wantsDuck || engine.duckRequested.load(ordering: .relaxed)
            musicBlock.withUnsafeMutableBufferPointer { music.apply($0, frames: n, available: got, duck: duck) }
            return buf.withUnsafeMutableBufferPointer { o in
                musicBlock.withUnsafeBufferPointer { m in
                    let block = UnsafeBufferPointer(rebasing: m[0..<(n * ch)])
                    return clips ? mixer.render(into: o, frames: n, music: block) : mixer.renderMusicOnly(into: o, frames: n, music: block)
                }
            }
        }

        /// `frames` of audio were taken back from the device: their music goes back to the buffer
        /// and the music's envelope back to where it stood at the new end of the stream.
        mutating func unreadMusic(frames: Int) {
            guard frames > 0 else { return }
            let ch = mixer.format.channels
            // `musicBlock` has held every block rendered with music, so it is scratch enough for
            // re-running the part of one that stays (blocks without music need none).
            let musicFrames = musicBlock.withUnsafeMutableBufferPointer { music.takeBack(frames: frames, scratch: $0) }
            guard let feed = musicSource, musicFrames > 0 else { return }
            let k = min(musicFrames * ch, musicHistory.count)
            guard k > 0 else { return }
            musicHistory.suffix(k).withUnsafeBufferPointer { feed.unread($0) }
            musicHistory.removeLast(k)
        }

        /// Music is playing or fading: the stream is not idle silence.
        var musicActive: Bool {
            guard let feed = musicSource ?? engine.musicFeed.withLock({ $0 }) else { return false }
            return !music.mix.silentLevel && feed.filledFrames > 0
        }

        var log: Logger { engine.log }
        var config: AudioEngineConfig { engine.config }

        /// Applies queued commands; returns true when a clip that can be heard now was added (a
        /// streamed one counts once its first samples are there: `Mixer.pollStreams`).
        mutating func drainInbox() -> Bool {
            let i = engine.inbox.withLock { i -> Inbox in
                let copy = i
                i.adds = []; i.stops = []; i.gain = nil
                return copy
            }
            if i.stopping { stopping = true }
            if let g = i.gain { mixer.setGain(g) }
            if let g = i.musicLevel { music.mix.setLevel(g) }
            for (id, clip, gain, at, ducks, cb) in i.adds {
                callbacks[id] = cb
                clips[id] = (clip, gain, ducks)
                enqueuedAt[id] = at
                mixer.add(id: id, clip: clip, gain: gain, ducks: ducks)
            }
            for id in i.stops where callbacks[id] != nil {
                stoppedIDs.insert(id)
                mixer.stop(id: id)
            }
            let ready = mixer.pollStreams()
            return ready || i.adds.contains { $0.1.stream == nil }
        }

        mutating func finish(_ id: UInt64, _ outcome: ClipOutcome, heard: Int = 0) {
            gapped.remove(id)
            clips.removeValue(forKey: id)
            let o = stoppedIDs.remove(id) != nil && outcome == .played ? .stopped : outcome
            callbacks.removeValue(forKey: id)?(ClipEnd(o, heardFrames: o == .shutdown ? 0 : heard))
        }

        func progress() {
            engine.progressNs.store(Int64(Monotonic.now() * 1e9), ordering: .relaxed)
        }

        mutating func run() {
            ALSAErrorText.install()
            var retry = config.retryMin
            var lastFailure: String?
            var failingSince: Double?
            while !stopping {
                _ = drainInbox()
                if stopping { break }
                var wroteAny = false
                do throws(AudioError) {
                    let device = try PCMDevice.open(config.device, format: config.format, periodMs: config.periodMs, bufferMs: config.bufferMs)
                    if device.format.rate != mixer.format.rate {
                        log.warning("device runs at \(device.format.rate) Hz, not audio.rate \(config.format.rate); speech is resampled for it",
                                    ["device": config.device])
                        mixer = Mixer(format: device.format, fadeMs: config.fadeMs, headroomDb: config.headroomDb, gain: mixer.currentGain)
                    }
                    // "opened" is only said once the device has really taken audio.
                    let (eng, lg, cfg) = (engine, log, config)
                    let written = try stream(device) {
                        wroteAny = true
                        var fields: [(String, String)] = [
                            ("device", cfg.device), ("type", device.typeName), ("rate", "\(device.format.rate)"),
                            ("channels", "\(device.format.channels)"), ("period", "\(device.periodFrames)"),
                            ("buffer", "\(device.bufferFrames)"),
                        ]
                        if let since = failingSince { fields.append(("after", Format.fixed(Monotonic.now() - since, 1) + "s")) }
                        lg.hub.emit(.info, lg.component, "opened", fields)
                        lastFailure = nil
                        failingSince = nil
                        retry = cfg.retryMin
                        eng.statsBox.withLock {
                            $0.deviceOpen = true; $0.deviceType = device.typeName
                            $0.periodFrames = device.periodFrames; $0.bufferFrames = device.bufferFrames
                        }
                    }
                    fadeOutAndClose(device, written: written)
                } catch var error {
                    if !wroteAny && error.kind == .lost { error.kind = .other }
                    let key = "\(error.kind) \(error.detail)"
                    if key != lastFailure {
                        if wroteAny {
                            log.error("\(error); keeping queued speech and reopening; \(error.hint)", ["device": config.device])
                        } else {
                            log.warning("\(error); retrying every \(ConfigValue.fmt(retry))-\(ConfigValue.fmt(config.retryMax)) s; \(error.hint)",
                                        ["device": config.device])
                        }
                        lastFailure = key
                    }
                    engine.statsBox.withLock {
                        $0.deviceOpen = false; $0.lastError = error.description
                        if wroteAny { $0.reopenings += 1 }
                    }
                    // Whatever was cut off is said again from its start once the device is back,
                    // also a clip whose end was still queued in the device (it never played).
                    mixer.rewindAll()
                    settlePending(replay: true)
                    failingSince = failingSince ?? Monotonic.now()
                    if wroteAny { retry = config.retryMin }
                    // Wait in slices so the supervisor still sees progress while the device is away.
                    let until = Monotonic.now() + retry
                    while !stopping && Monotonic.now() < until {
                        progress()
                        if engine.wake.wait(timeout: min(1, until - Monotonic.now())) { _ = drainInbox() }
                    }
                    progress()
                    retry = min(retry * 2, config.retryMax)
                }
            }
            for id in Array(callbacks.keys) { finish(id, .shutdown) }
            engine.statsBox.withLock { $0.deviceOpen = false }
        }

        /// Keeps `device` fed until stop is requested and returns the frames written; throws when
        /// the device is lost. Every decision (how far ahead, what to take back, how long to
        /// sleep) is the `Pacer`'s (CrierCore); this does the ALSA calls, the mixing and the waits.
        mutating func stream(_ device: PCMDevice, onFirstWrite: () -> Void) throws(AudioError) -> UInt64 {
            var firstWriteDone = false
            let ch = device.format.channels
            let period = device.periodFrames
            let rate = device.format.rate
            var buf = [Int16](repeating: 0, count: period * ch)
            let zeros = buf
            let t0 = Monotonic.now()
            let speed = device.selfPaced ? engine.testSpeed.factor : 1
            var pacer = Pacer(device: Pacer.Device(rate: rate, period: period, buffer: device.bufferFrames, selfPaced: device.selfPaced,
                                                   speed: speed),
                              start: t0)
            let deepFloor = pacer.idleMargin
            let pollFDs = device.selfPaced ? [] : device.pollDescriptors()

            let (lg, eng, dev) = (log, engine, config.device)
            // The last sleep and wake-up, for the underrun warning's why (slept late, busy, short queue).
            var trace = UnderrunTrace(rate: rate)
            func recovered(_ e: AudioError) {
                if e.operation == "underrun" {
                    lg.hub.emit(.warning, lg.component, "underrun, recovered", [("device", dev)] + trace.explain(now: Monotonic.now()).fields)
                } else {
                    lg.warning("suspended, recovered", ["device": dev])
                }
                eng.statsBox.withLock { $0.recoveries += 1 }
                if pacer.underran() {
                    lg.warning("underrun while speech was streaming in; keeping \(deepFloor * 1000 / rate) ms queued from now on (slow CPU?)",
                               ["device": dev])
                }
            }

            // Where playback stands, `written` frames in; every good answer also moves the
            // playhead (what a lost device is known to have played). A device that does not
            // answer (lost, or in an xrun about to be recovered) leaves it where it was: never
            // further than it played.
            playhead = Playhead()
            func playedPosition(_ written: UInt64) -> UInt64 {
                if device.selfPaced {
                    let clock = max(0, Pacer.clock(since: t0, now: Monotonic.now(), rate: rate, speed: speed))
                    playhead.observe(written: written, clock: clock)
                    return UInt64(clock)
                }
                if let d = device.delay() { playhead.observe(written: written, delay: d) }
                return playhead.played
            }

            while !stopping {
                let added = drainInbox()
                if stopping { break }
                engine.statsBox.withLock { $0.wakeups += 1 }
                // Speech must not wait behind the silence already queued: take it back.
                let take = pacer.takeBack(added: added, played: playedPosition, rewindable: device.rewindable)
                if take > 0 {
                    let got = device.rewind(take)
                    pacer.tookBack(got)
                    unreadMusic(frames: got)
                    log.debug("took back queued silence so speech starts now", ["frames": got, "ms": got * 1000 / rate])
                    engine.statsBox.withLock { $0.rewoundFrames += UInt64(got) }
                }
                let avail = device.selfPaced ? nil : try device.avail(onRecover: recovered)
                let writtenBefore = pacer.written
                var plan = pacer.plan(added: added, idle: mixer.isIdle, now: Monotonic.now(), avail: avail)
                while let n = plan.nextCatchUp() {
                    if musicActive {
                        // Music keeps going up to "now" (a gap of zeros would be heard).
                        _ = render(into: &buf, frames: n, historyLimit: device.bufferFrames, clips: false)
                        try device.write(buf, frames: n, onRecover: recovered)
                    } else {
                        try device.write(zeros, frames: n, onRecover: recovered)
                    }
                    pacer.caughtUp(n)
                }
                let running = device.isRunning
                let lead = mixer.streamLead(want: plan.frames)
                pacer.limit(&plan, running: running, lead: lead, played: playedPosition)
                while let n = plan.next() {
                    let before = pacer.written
                    let r = render(into: &buf, frames: n, historyLimit: device.bufferFrames)
                    try device.write(buf, frames: n, onRecover: recovered)
                    pacer.wrote(n, sound: !r.silent)
                    // Writing is progress: a thread that is slower than real time (a starved
                    // CPU) underruns and says so, but it is not stuck.
                    progress()
                    // Established once it has taken a buffer's worth (and ≥ 250 ms): some PCMs
                    // (a file in a missing folder, a USB DAC mid-unplug) open, take a period, then fail.
                    if !firstWriteDone && pacer.written >= UInt64(max(device.bufferFrames, rate / 4)) {
                        firstWriteDone = true
                        onFirstWrite()
                    }
                    if !r.started.isEmpty {
                        let now = Monotonic.now()
                        for id in r.started { if let t = enqueuedAt.removeValue(forKey: id) { lastStart = now - t } }
                        if let l = lastStart { engine.statsBox.withLock { $0.lastStartLatency = l } }
                    }
                    if r.gapFrames > 0 {
                        for id in r.gaps where !gapped.contains(id) {
                            gapped.insert(id)
                            log.warning("speech synthesis is behind playback; playing silence until it catches up (slow CPU?)",
                                        ["clip": id])
                        }
                        engine.statsBox.withLock { $0.gapFrames += UInt64(r.gapFrames) }
                    }
                    for f in r.finished {
                        pending.append(QueuedClipEnd(id: f.id, end: before + UInt64(f.endFrame), quiet: f.quiet, heard: f.heard,
                                                     tail: f.tail, stopped: f.tail > 0))
                    }
                }
                let (ducked, under, written) = (music.mix.envelope.isDucked, music.mix.underrunFrames, pacer.written)
                engine.statsBox.withLock {
                    $0.framesWritten = written; $0.clamped = mixer.clampedSamples
                    $0.musicDucked = ducked; $0.musicUnderrunFrames = under
                }
                if !pending.isEmpty {
                    let played = playedPosition(written)
                    var still: [QueuedClipEnd] = []
                    for p in pending { if p.end <= played { finish(p.id, .played, heard: p.heard) } else { still.append(p) } }
                    pending = still
                }
                progress()
                // Queued now: what the device held at `avail` plus this wakeup's writes (no extra call).
                let queued = avail.map { max(0, device.bufferFrames - $0) + Int(pacer.written) - Int(writtenBefore) }
                let sleep = pacer.sleep(after: plan, idle: mixer.isIdle && pending.isEmpty, music: musicActive, queued: queued,
                                        pendingEnd: pending.map(\.end).min(), now: Monotonic.now(), played: playedPosition, delay: device.delay)
                switch sleep {
                case .wake(let timeout):
                    trace.sleeping(at: Monotonic.now(), queued: queued, asked: timeout)
                    engine.wake.wait(timeout: timeout)
                case .poll(let backstop):
                    trace.sleeping(at: Monotonic.now(), queued: queued, asked: backstop)
                    engine.wake.wait(timeout: backstop, extra: pollFDs)
                }
                trace.woke(at: Monotonic.now())
            }
            return pacer.written
        }

        /// The device was lost: each clip whose end was still queued ends as far as it had played
        /// (`QueuedClipEnd.fate`, by the playhead's last good answer). One that was playing is
        /// mixed again from its start when the device is back (`replay`), like the clips the mixer
        /// had not finished; at shutdown it ends unheard.
        mutating func settlePending(replay: Bool) {
            let played = playhead.played
            let rate = mixer.format.rate
            if !pending.isEmpty {
                log.debug("device lost with clip ends queued", ["played": played, "ends": pending.map { "\($0.end)" }.joined(separator: ","),
                                                                "audible_ends": pending.map { "\($0.audibleEnd)" }.joined(separator: ",")])
            }
            for var p in pending {
                // A stop asked for after its last frame was rendered: not said again either.
                if stoppedIDs.contains(p.id) { p.stopped = true }
                switch p.fate(played: played) {
                case .ended(let heard):
                    if p.end > played {
                        log.info("lost with the last \(p.unplayed(played: played) * 1000 / rate) ms of a clip still queued, all of it silence after its last word; heard, not said again",
                                 ["device": config.device, "clip": p.id])
                    }
                    finish(p.id, p.stopped ? .stopped : .played, heard: heard)
                case .cut(let heard):
                    log.warning("lost before a stopped clip's fade-out had played; heard \(heard * 1000 / rate) ms of it, not the \(p.heard * 1000 / rate) ms before its fade",
                                ["device": config.device, "clip": p.id])
                    finish(p.id, .stopped, heard: heard)
                case .again:
                    let ms = p.unplayed(played: played) * 1000 / rate
                    if replay, let c = clips[p.id] {
                        log.warning("lost with the last \(ms) ms of a clip still queued; not heard, it plays again from its start when the device is back",
                                    ["device": config.device, "clip": p.id, "unplayed_sound_ms": p.unplayedSound(played: played) * 1000 / rate])
                        mixer.add(id: p.id, clip: c.clip, gain: c.gain, ducks: c.ducks)
                    } else {
                        log.warning("lost with the last \(ms) ms of a clip still queued while stopping; not heard",
                                    ["device": config.device, "clip": p.id])
                        finish(p.id, .shutdown)
                    }
                }
            }
            pending = []
        }

        /// Shutdown: let active clips fade, flush a little silence so the amp sees a clean edge.
        /// Clips end once that has played out; if the device fails first, only as far as it had
        /// played (`settlePending`).
        mutating func fadeOutAndClose(_ device: PCMDevice, written start: UInt64) {
            for id in mixer.activeIDs { mixer.stop(id: id) }
            music.mix.setLevel(0)
            let frames = device.periodFrames
            var buf = [Int16](repeating: 0, count: frames * device.format.channels)
            var written = start
            var ok = true
            for _ in 0..<2 {
                let r = render(into: &buf, frames: frames, historyLimit: 0)
                do throws(AudioError) { try device.write(buf, frames: frames) { _ in } } catch { ok = false }
                for f in r.finished {
                    pending.append(QueuedClipEnd(id: f.id, end: written + UInt64(f.endFrame), quiet: f.quiet, heard: f.heard,
                                                 tail: f.tail, stopped: true))
                }
                written += UInt64(frames)
            }
            if ok && !device.selfPaced { ok = device.drain() }
            if ok {
                for p in pending { finish(p.id, p.stopped ? .stopped : .played, heard: p.heard) }
                pending = []
            } else {
                settlePending(replay: false)
            }
            log.info("closed", ["device": config.device])
        }
    }
}

extension AudioEngine {
    /// Opens and closes `device` once: nil when it can be used, the reason otherwise.
    public static func probe(device: String, format: AudioFormat) -> AudioError? {
        ALSAErrorText.install()
        do throws(AudioError) {
            _ = try PCMDevice.open(device, format: format, periodMs: 20, bufferMs: 80)
            return nil
        } catch {
            return error
        }
    }
}
