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
        var code: Int32 = 0
        if priority > 0 {
            do { try ThreadScheduling.setRealtime(priority: priority) } catch { code = error.code }
        }
        let policy = ThreadPolicy.outcome(requested: priority, errno: code, errnoName: errnoName(code), errnoText: errnoText(code))
        let first = logged.withLock { done in
            defer { done = true }
            return !done
        }
        guard first else { return policy }
        if let advice = ThreadPolicy.refusalAdvice(requested: priority, errno: code, errnoName: errnoName(code)) {
            log.warning(advice)
        } else {
            log.info("audio thread: \(policy.line)")
        }
        return policy
    }
}
