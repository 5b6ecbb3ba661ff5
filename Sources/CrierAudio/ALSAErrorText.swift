import CALSA
import Glibc

/// ALSA reports details through a global error callback that by default prints to stderr,
/// outside our log format. A per-thread handler (snd_lib_error_set_local) captures the last
/// message instead so it can go into our own, structured error.
enum ALSAErrorText {
    /// The message lives in a thread-specific slot: each thread sees only its own.
    static let lastKey: pthread_key_t = {
        var k = pthread_key_t()
        pthread_key_create(&k) { free($0) }
        return k
    }()

    static func install() {
        _ = lastKey
        _ = snd_lib_error_set_local { _, _, _, _, fmt, args in
            guard let fmt, let args else { return }
            var buf = [CChar](repeating: 0, count: 256)
            _ = vsnprintf(&buf, buf.count, fmt, args)
            let old = pthread_getspecific(ALSAErrorText.lastKey)
            free(old)
            pthread_setspecific(ALSAErrorText.lastKey, strdup(buf))
        }
    }

    /// The last message on this thread (cleared by reading).
    static func take() -> String {
        guard let p = pthread_getspecific(lastKey) else { return "" }
        let s = String(cString: p.assumingMemoryBound(to: CChar.self))
        free(p)
        pthread_setspecific(lastKey, nil)
        return s
    }
}
