import CALSA

/// ALSA reports details through a global error callback that by default prints to stderr,
/// outside our log format. A per-thread handler (snd_lib_error_set_local, in CALSA's shim.h:
/// a va_list callback cannot be a Swift closure for Swift 6.0 on aarch64) captures the last
/// message instead so it can go into our own, structured error.
enum ALSAErrorText {
    static func install() {
        crier_alsa_capture_errors()
    }

    /// The last message on this thread (cleared by reading).
    static func take() -> String {
        var buf = [CChar](repeating: 0, count: 256)
        let n = crier_alsa_take_error(&buf, Int32(buf.count))
        guard n > 0 else { return "" }
        return buf.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
    }
}
