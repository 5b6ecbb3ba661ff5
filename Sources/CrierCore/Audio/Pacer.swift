/// The audio engine's pacing decisions, without the device (docs/audio.md, "Latency without
/// wasted CPU", "Streaming speech"): how far ahead of the listener the stream is written, when
/// queued silence is taken back for new speech, how far a started streamed clip may be written
/// ahead of its synthesis, the floor raised after an underrun, and how long the thread sleeps.
///
/// The engine's thread owns the PCM and the mixer and does only the I/O: it asks the device
/// (avail, delay, state, rewindable) and the mixer (idle, the stream's lead), hands the answers
/// in, and does what it is told, in this order per wakeup:
/// 1. `takeBack`: frames of queued silence to rewind for a clip just added (`tookBack`);
/// 2. `plan`: the room to fill (and, self-paced, the silence to catch up to the clock first);
/// 3. `limit`: the room cut to what a streamed clip's synthesis has;
/// 4. `Plan.next` per block written (`wrote`; `underran` when the device recovered an xrun);
/// 5. `sleep`: how long to wait, on the wake pipe alone or on the device's descriptors too.
/// Answers the device may not need are asked through closures, so the engine queries ALSA
/// exactly when the pacer needs it. `Tests/CrierCoreTests/PacerTests.swift` runs it against
/// simulated devices.
public struct Pacer: Sendable, Equatable {
    /// The open device, as negotiated.
    public struct Device: Sendable, Equatable {
        public var rate: Int
        /// Frames per period and in the ring buffer.
        public var period: Int
        public var buffer: Int
        /// null and file PCMs consume at once: the stream is paced against the clock instead.
        public var selfPaced: Bool
        /// TEST ONLY (scripts/soak.sh): a self-paced stream's clock runs this many times faster
        /// than real time, so a year of speech fits in an hour (`AudioTestSpeed`). 1 on a box; never
        /// applied to a clock-driven device (a real card plays at its own rate).
        public var speed: Double

        public init(rate: Int, period: Int, buffer: Int, selfPaced: Bool, speed: Double = 1) {
            self.rate = rate
            self.period = period
            self.buffer = buffer
            self.selfPaced = selfPaced
            self.speed = selfPaced && speed.isFinite && speed > 0 ? speed : 1
        }

        /// Frames per second of wall time: the rate, times the test speed on a self-paced device.
        var pace: Double { Double(rate) * (selfPaced ? speed : 1) }

        func frames(ms: Double) -> Int { AudioFormat(rate: rate, channels: 1).frames(ms: ms) }
    }

    public let device: Device
    /// Monotonic seconds the stream started at: the clock a self-paced device is paced by.
    public let start: Double
    /// Frames that stay queued when silence is taken back: time to render and write. A whole
    /// period (at least 10 ms): less made the device underrun right at the start of speech on a
    /// slow CPU (seen in the VM tier).
    public let safety: Int
    /// Idle on a clock-driven device, the thread wakes when this much silence is left queued;
    /// also the floor after an underrun while speech streamed in (`idleKeep`).
    public let idleMargin: Int
    /// A streamed clip's samples are written once at least this many are in hand (1 ms).
    public let minWrite: Int
    /// Idle on a self-paced PCM (null, file), silence is written this many periods at a time.
    public static let idleBatchPeriods = 4

    /// Stream frames written so far (less what was taken back).
    public private(set) var written: UInt64 = 0
    /// Stream frame where the queued audio became pure silence (what may be taken back).
    public private(set) var silentFrom: UInt64 = 0
    /// While a started clip is still being synthesized, the least queued before gap silence is
    /// written rather than waiting for its samples: below the rewind's safety (which a rewind
    /// leaves queued). A self-paced PCM cannot underrun and a new clip starts with nothing queued
    /// ("now" in the stream): there the stream may lag the clock by a period before gap silence
    /// keeps it at pace. Raised to `idleMargin` for as long as the device stays open by an
    /// underrun while speech streamed in (a slow or emulated CPU): gap silence ahead, up to that
    /// margin, rather than underruns.
    public private(set) var floor: Int
    /// A started streamed clip's synthesis was running at the last `limit`.
    public private(set) var streaming = false

    public init(device: Device, start: Double) {
        self.device = device
        self.start = start
        safety = max(device.frames(ms: 10), device.period)
        idleMargin = Self.idleKeep(buffer: device.buffer, period: device.period)
        minWrite = max(1, device.frames(ms: 1))
        floor = device.selfPaced ? -device.period : safety / 2
    }

    /// Half the buffer, at least two periods (the margin a busy CPU needs to refill in time).
    public static func idleKeep(buffer: Int, period: Int) -> Int {
        min(buffer, max(2 * period, buffer / 2))
    }

    /// Frames the clock has reached at `now` since `start`: what a self-paced device has played
    /// (`speed`: the test-only factor of `Device.speed`).
    public static func clock(since start: Double, now: Double, rate: Int, speed: Double = 1) -> Int64 {
        Int64((now - start) * Double(rate) * speed)
    }

    // MARK: 1. Taking back queued silence

    /// Frames of queued silence to take back (`snd_pcm_rewind`) so speech just added does not
    /// wait behind it; 0 or less: none. Clock-driven devices only, keeping `safety` queued and
    /// never more than the device says it can rewind. `played` is asked with `written` (what
    /// had left the device), `rewindable` only when there is silence queued.
    public func takeBack(added: Bool, played: (UInt64) -> UInt64, rewindable: () -> Int) -> Int {
        guard added && !device.selfPaced && written > silentFrom else { return 0 }
        let tail = Int(written - max(silentFrom, played(written)))
        return min(tail - safety, rewindable())
    }

    /// The device took back `frames` (what `snd_pcm_rewind` answered).
    public mutating func tookBack(_ frames: Int) {
        written -= UInt64(max(0, min(frames, Int(clamping: written))))
    }

    // MARK: 2-4. What to write

    /// What one wakeup writes.
    public struct Plan: Sendable, Equatable {
        /// Self-paced only: frames of silence (music alone, if any) to write first so a clip
        /// just added starts at "now" in the stream: idle silence goes out in batches and lags
        /// the clock by up to one.
        public var catchUp: Int
        /// Frames still to write after that.
        public var frames: Int
        /// How far ahead of the listener the device is kept (frames): a full buffer while
        /// something plays, nothing ahead of the clock when idle on a self-paced device.
        public var ahead: Int
        /// `frames` was cut to a streamed clip's samples (`limit`): the thread then sleeps until
        /// its next chunk or until the queue is down to the floor.
        public var limited = false
        /// The last block may be shorter than a period: a limited write, a self-paced device's
        /// write for a clip just added, and the rest up to a stopped device's start threshold (a
        /// partial period written before an underrun leaves it a partial period short).
        public var partial = false
        let period: Int
        let added: Bool

        /// The next catch-up block (at most a period), nil when caught up.
        public mutating func nextCatchUp() -> Int? {
            guard catchUp > 0 else { return nil }
            let n = min(period, catchUp)
            catchUp -= n
            return n
        }

        /// The next block to render and write (whole periods but for a partial last one), nil
        /// when done.
        public mutating func next() -> Int? {
            guard frames >= period || (frames > 0 && partial) else { return nil }
            let n = min(period, frames)
            frames -= n
            return n
        }
    }

    /// The room to fill this wakeup. `added`: a clip that can be heard now was just added;
    /// `idle`: the mixer plays nothing; `avail`: the device's free frames (clock-driven; nil on
    /// a self-paced one, paced by `now` instead).
    public func plan(added: Bool, idle: Bool, now: Double, avail: Int?) -> Plan {
        guard device.selfPaced else {
            return Plan(catchUp: 0, frames: avail ?? 0, ahead: device.buffer, period: device.period, added: added)
        }
        // Idle: nothing ahead of the clock, so arriving speech lands at "now" in the stream
        // (there is no rewind on these devices).
        let ahead = idle && !added ? 0 : device.buffer
        let clock = Self.clock(since: start, now: now, rate: device.rate, speed: device.selfPaced ? device.speed : 1)
        let behind = added && Int64(written) < clock ? Int(clock - Int64(written)) : 0
        let due = clock + Int64(ahead)
        let frames = Int(max(0, due - Int64(written) - Int64(behind)))
        return Plan(catchUp: behind, frames: frames, ahead: ahead, period: device.period, added: added)
    }

    /// A started clip whose synthesis is running (`lead`: `Mixer.streamLead(want: plan.frames)`,
    /// nil when none): no further ahead than its samples while the device holds more than
    /// `floor`. Writing a buffer ahead would queue gap silence although the synthesis is only
    /// microseconds behind, and the rest of the speech would come a buffer later. Only while the
    /// device plays (`running`): one waiting for its start threshold (after an open or an
    /// underrun) must be filled to it, or it would never start. `played` is asked (with
    /// `written`) only then.
    public mutating func limit(_ plan: inout Plan, running: Bool, lead: Int?, played: (UInt64) -> UInt64) {
        streaming = lead != nil
        if running, let lead {
            let queued = Int(written) - Int(played(written))
            let cap = queued <= floor ? max(lead, device.period) : (lead >= minWrite ? lead : 0)
            if cap < plan.frames {
                plan.frames = cap
                plan.limited = true
            }
        }
        plan.partial = plan.limited || !running || plan.added && device.selfPaced
    }

    /// `frames` were written; `sound`: not all of them silence (no longer to be taken back).
    public mutating func wrote(_ frames: Int, sound: Bool) {
        written += UInt64(max(0, frames))
        if sound { silentFrom = written }
    }

    /// Self-paced catch-up silence was written (never taken back: no rewind on those devices).
    public mutating func caughtUp(_ frames: Int) {
        written += UInt64(max(0, frames))
    }

    /// The device recovered from an underrun (or a suspend). True when that raised the floor to
    /// the idle margin: it happened while speech was streaming in (log it once).
    public mutating func underran() -> Bool {
        guard streaming && floor < idleMargin else { return false }
        floor = idleMargin
        return true
    }

    // MARK: 5. Sleeping

    public enum Sleep: Sendable, Equatable {
        /// On the wake pipe alone, at most this many seconds (0: look again at once).
        case wake(timeout: Double)
        /// On the device's poll descriptors ("room for a period") and the wake pipe, and at most
        /// `backstop` seconds: the time for what is queued to run down to the idle margin (at
        /// least a period; 1 s when not known). The device's signal may come late where it is
        /// raised in a softirq (snd-aloop's timer, a USB DAC's URB completions), which the kernel
        /// may hand to ksoftirqd, an ordinary thread any busy process delays; the timer wakes the
        /// real-time thread itself (docs/audio.md, "A late device signal").
        case poll(backstop: Double)
    }

    /// How long to sleep after `plan` was written. `idle`: nothing plays and no clip's end is
    /// queued; `pendingEnd`: the earliest stream frame where a written clip ends (its end is
    /// queued: wake when it has played). Idle, the thread sleeps longer: new speech wakes it at
    /// once through the wake pipe and takes back the queued silence, so latency does not depend
    /// on how long it sleeps; only CPU wakeups do (docs/audio.md, "Idle wakeups"). `music`: music
    /// is playing under the silence of no clip. A wake-up late by more than what is queued is then
    /// heard (a gap in the music), so the thread keeps the buffer full as while a clip plays (woken
    /// by a period of room: late by up to the buffer less a period is still not heard) instead of
    /// letting it run down to the idle margin (half of it). `played` is asked only after a limited
    /// write, `delay` only idle on a clock-driven device. `queued`: frames in the device now,
    /// when known (the poll's backstop).
    public func sleep(after plan: Plan, idle: Bool, music: Bool = false, queued: Int? = nil, pendingEnd: UInt64?, now: Double,
                      played: (UInt64) -> UInt64, delay: () -> Int?) -> Sleep {
        let rate = device.pace
        if plan.limited {
            // Woken by the clip's next samples, or when the queue is down to `floor`.
            let p = played(written)
            var timeout = Double(Int(written) - Int(p) - floor) / rate
            if let end = pendingEnd { timeout = min(timeout, Double(Int(end) - Int(p)) / rate) }
            return .wake(timeout: max(0, timeout))
        }
        if device.selfPaced {
            let batch = idle ? Self.idleBatchPeriods : 1
            let nextDue = start + Double(Int64(written) + Int64(batch * device.period) - Int64(plan.ahead)) / device.pace
            var timeout = nextDue - now
            if let end = pendingEnd { timeout = min(timeout, start + Double(end) / device.pace - now) }
            return .wake(timeout: max(0, timeout))
        }
        if idle && !music, case let spare = (delay() ?? 0) - idleMargin, spare >= device.period {
            // Still well fed with silence: sleep until only the idle margin is left.
            return .wake(timeout: Double(spare) / rate)
        }
        guard let queued else { return .poll(backstop: 1) }
        return .poll(backstop: min(1, Double(max(device.period, queued - idleMargin)) / rate))
    }
}
