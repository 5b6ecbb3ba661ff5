import CALSA
import CrierCore
import Glibc

/// A thin typed wrapper over one open ALSA playback PCM (S16_LE interleaved). Not thread safe:
/// the audio thread owns it, from open to close.
final class PCMDevice {
    let name: String
    let handle: OpaquePointer
    let format: AudioFormat
    let periodFrames: Int
    let bufferFrames: Int
    /// null and file PCMs consume instantly; the engine must pace itself for them.
    let selfPaced: Bool
    let typeName: String

    private init(name: String, handle: OpaquePointer, format: AudioFormat, period: Int, buffer: Int, selfPaced: Bool, typeName: String) {
        self.name = name
        self.handle = handle
        self.format = format
        self.periodFrames = period
        self.bufferFrames = buffer
        self.selfPaced = selfPaced
        self.typeName = typeName
    }

    deinit {
        snd_pcm_close(handle)
    }

    static func classify(_ code: Int32) -> AudioError.Kind {
        switch -code {
        case ENOENT, ENODEV, ENXIO: .notFound
        case EBUSY, EAGAIN: .busy
        case EINVAL: .unsupported
        case EIO, EBADFD, ESTRPIPE: .lost
        default: .other
        }
    }

    static func error(_ name: String, _ op: String, _ code: Int32) -> AudioError {
        var detail = ALSAErrorText.take()
        let sys = String(cString: snd_strerror(code))
        detail = detail.isEmpty ? sys : "\(detail); \(sys)"
        return AudioError(kind: classify(code), device: name, operation: op, code: code, detail: detail)
    }

    static func open(_ name: String, format: AudioFormat, periodMs: Int, bufferMs: Int) throws(AudioError) -> PCMDevice {
        ALSAErrorText.install()
        var pcm: OpaquePointer?
        let rc = snd_pcm_open(&pcm, name, SND_PCM_STREAM_PLAYBACK, 0)
        guard rc >= 0, let pcm else { throw error(name, "open", rc) }
        var hw: OpaquePointer?
        snd_pcm_hw_params_malloc(&hw)
        defer { snd_pcm_hw_params_free(hw) }
        func check(_ op: String, _ r: Int32) throws(AudioError) {
            if r < 0 {
                let e = error(name, op, r)
                snd_pcm_close(pcm)
                throw e
            }
        }
        try check("hw_params_any", snd_pcm_hw_params_any(pcm, hw))
        try check("set_access", snd_pcm_hw_params_set_access(pcm, hw, SND_PCM_ACCESS_RW_INTERLEAVED))
        try check("set_format S16_LE", snd_pcm_hw_params_set_format(pcm, hw, SND_PCM_FORMAT_S16_LE))
        try check("set_channels \(format.channels)", snd_pcm_hw_params_set_channels(pcm, hw, UInt32(format.channels)))
        var rate = UInt32(format.rate)
        // Resampling is ours (better quality, no surprise CPU): ask for the exact rate.
        snd_pcm_hw_params_set_rate_resample(pcm, hw, 0)
        try check("set_rate \(format.rate)", snd_pcm_hw_params_set_rate_near(pcm, hw, &rate, nil))
        var period = snd_pcm_uframes_t(format.frames(ms: Double(periodMs)))
        try check("set_period_size", snd_pcm_hw_params_set_period_size_near(pcm, hw, &period, nil))
        // Whole periods only: the engine writes period by period, so a buffer with a partial
        // period at its end would never fill to the start threshold (snd-dummy showed it).
        _ = snd_pcm_hw_params_set_periods_integer(pcm, hw)
        var buffer = snd_pcm_uframes_t(max(Int(period) * 2, format.frames(ms: Double(bufferMs))))
        try check("set_buffer_size", snd_pcm_hw_params_set_buffer_size_near(pcm, hw, &buffer))
        try check("hw_params", snd_pcm_hw_params(pcm, hw))
        snd_pcm_hw_params_get_period_size(hw, &period, nil)
        snd_pcm_hw_params_get_buffer_size(hw, &buffer)

        var sw: OpaquePointer?
        snd_pcm_sw_params_malloc(&sw)
        defer { snd_pcm_sw_params_free(sw) }
        try check("sw_params_current", snd_pcm_sw_params_current(pcm, sw))
        try check("set_avail_min", snd_pcm_sw_params_set_avail_min(pcm, sw, period))
        // Start once the whole buffer is queued: starting on the first period leaves a slow
        // machine one period to fill the rest, and it underruns before the first word.
        try check("set_start_threshold", snd_pcm_sw_params_set_start_threshold(pcm, sw, buffer / period * period))
        try check("sw_params", snd_pcm_sw_params(pcm, sw))

        let type = snd_pcm_type(pcm)
        let typeName = String(cString: snd_pcm_type_name(type))
        let selfPaced = type == SND_PCM_TYPE_NULL || type == SND_PCM_TYPE_FILE
        let actual = AudioFormat(rate: Int(rate), channels: format.channels)
        return PCMDevice(name: name, handle: pcm, format: actual, period: Int(period), buffer: Int(buffer),
                         selfPaced: selfPaced, typeName: typeName)
    }

    /// Writes all frames, recovering from underruns and suspends. Returns recoveries done;
    /// throws only when the device is gone.
    func write(_ samples: UnsafeBufferPointer<Int16>, frames: Int, onRecover: (AudioError) -> Void) throws(AudioError) {
        var done = 0
        var attempts = 0
        while done < frames {
            let n = snd_pcm_writei(handle, samples.baseAddress! + done * format.channels, snd_pcm_uframes_t(frames - done))
            if n >= 0 {
                done += Int(n)
                continue
            }
            let code = Int32(n)
            if code == -EAGAIN { continue }
            if code == -EPIPE || code == -ESTRPIPE || code == -EINTR {
                attempts += 1
                let e = PCMDevice.error(name, code == -EPIPE ? "underrun" : "suspend", code)
                if attempts > 10 || snd_pcm_recover(handle, code, 1) < 0 { throw AudioError(kind: .lost, device: name, operation: e.operation, code: code, detail: e.detail) }
                onRecover(e)
                continue
            }
            var e = PCMDevice.error(name, "write", code)
            e.kind = .lost
            throw e
        }
    }

    /// The same for a whole buffer. Array.withUnsafeBufferPointer only `rethrows` (any Error) in
    /// Swift 6.0's standard library, so the AudioError leaves the closure as a value: one form
    /// that both 6.0 (Debian 13) and 6.3 type-check as throws(AudioError).
    func write(_ samples: [Int16], frames: Int, onRecover: (AudioError) -> Void) throws(AudioError) {
        let failure: AudioError? = samples.withUnsafeBufferPointer { b in
            do throws(AudioError) {
                try write(b, frames: frames, onRecover: onRecover)
                return nil
            } catch {
                return error
            }
        }
        if let failure { throw failure }
    }

    /// Frames free in the ring buffer (recovering an xrun first if there is one).
    func avail(onRecover: (AudioError) -> Void) throws(AudioError) -> Int {
        let a = snd_pcm_avail_update(handle)
        if a < 0 {
            let code = Int32(a)
            if code == -EPIPE || code == -ESTRPIPE, snd_pcm_recover(handle, code, 1) >= 0 {
                onRecover(PCMDevice.error(name, code == -EPIPE ? "underrun" : "suspend", code))
                return bufferFrames
            }
            var e = PCMDevice.error(name, "avail", code)
            e.kind = .lost
            throw e
        }
        return Int(a)
    }

    /// Frames queued but not yet played (0 on self-paced devices); nil when the device did not
    /// answer (lost, or in an xrun not yet recovered): then nothing is known about what played.
    func delay() -> Int? {
        var d = snd_pcm_sframes_t(0)
        return snd_pcm_delay(handle, &d) < 0 ? nil : max(0, Int(d))
    }

    /// Takes back up to `frames` queued frames; returns how many were taken.
    func rewind(_ frames: Int) -> Int {
        let can = snd_pcm_rewindable(handle)
        guard can > 0 else { return 0 }
        let r = snd_pcm_rewind(handle, snd_pcm_uframes_t(min(Int(can), frames)))
        return r < 0 ? 0 : Int(r)
    }

    func rewindable() -> Int { max(0, Int(snd_pcm_rewindable(handle))) }

    /// The device is playing what is queued (not waiting for its start threshold after an open
    /// or an underrun's recovery). Self-paced devices always are.
    var isRunning: Bool { selfPaced || snd_pcm_state(handle) == SND_PCM_STATE_RUNNING }

    var stateName: String { String(cString: snd_pcm_state_name(snd_pcm_state(handle))) }

    /// Poll descriptors that signal "room for a period".
    func pollDescriptors() -> [pollfd] {
        let n = snd_pcm_poll_descriptors_count(handle)
        guard n > 0 else { return [] }
        var fds = [pollfd](repeating: pollfd(), count: Int(n))
        let got = snd_pcm_poll_descriptors(handle, &fds, UInt32(n))
        return Array(fds.prefix(Int(max(0, got))))
    }

    /// Plays out what is queued; false when the device failed first (some of it never played).
    /// An underrun had played everything.
    func drain() -> Bool {
        let r = snd_pcm_drain(handle)
        return r >= 0 || r == -EPIPE
    }
}
