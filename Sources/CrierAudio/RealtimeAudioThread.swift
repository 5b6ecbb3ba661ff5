import CrierCore
import CrierPosix
import Synchronization

/// The audio thread's real-time priority (docs/audio.md, "Real-time priority").
enum RealtimeAudioThread {
    private static let logged = Mutex(false)

    /// On the audio thread, before its first period: SCHED_FIFO `priority` for this thread
    /// alone (0: left as it is). A refusal is logged once per process, with what to change; an
    /// engine the supervisor starts again asks again, silently.
    static func apply(priority: Int, log: Logger) -> ThreadPolicy {
        let code = ThreadScheduling.requestRealtime(priority: priority)
        let first = logged.withLock { done in
            defer { done = true }
            return !done
        }
        return ThreadPolicy.asked(priority, errno: code, errnoName: errnoName(code), errnoText: errnoText(code), by: .audio,
                                  log: first ? log : nil)
    }
}
