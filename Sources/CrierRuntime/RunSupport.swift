import CrierCore
import CrierPosix
import CrierSystem
import Glibc
import Synchronization

// `crier run`'s parts that are not its sequence (RunCommand.swift): the reload check, the
// stop's time limit and the supervised components.

/// SIGHUP: what changed in crier.conf, and whether it may be applied.
enum Reload {
    /// True when the file is valid and differs from the running configuration. Every problem
    /// is logged with its line; an invalid file leaves the running configuration in place.
    static func changed(path: String, required: Bool, running: CrierConfig, log: Logger) -> Bool {
        log.info("reload requested (SIGHUP): reading the configuration again", ["path": path])
        let loaded: ConfigLoader.Loaded
        do {
            loaded = try ConfigLoader.load(path: path, required: required)
        } catch {
            log.error("reload refused: \(error); keeping the running configuration")
            return false
        }
        for d in loaded.diagnostics where d.severity != .error { log.warning("reload: \(d.description)") }
        if !loaded.errors.isEmpty {
            for d in loaded.errors { log.error("reload: \(d.description)") }
            log.error("reload refused: \(loaded.errors.count) error(s) in \(path); keeping the running configuration (fix them, then `systemctl reload crier` or SIGHUP again)")
            return false
        }
        if loaded.config == running {
            log.info("reload: configuration unchanged; nothing to do", ["path": path])
            return false
        }
        // Names only: values may be secrets (server.key).
        let keys = CrierConfig.schema.filter { $0.value(in: loaded.config) != $0.value(in: running) }.map(\.name)
        log.info("reload: configuration changed; finishing the current alert, then starting again in place with it",
                 ["changed": keys.isEmpty ? "?" : keys.joined(separator: ",")])
        return true
    }
}

/// Ends the process when a stop outlives its limit, naming the stage it hung in.
final class StopBackstop: Sendable {
    private let state = Mutex<(stage: String, done: Bool)>(("starting", false))

    init(limit: Double, log: Logger, expire: @escaping @Sendable () -> Void) {
        let deadline = Monotonic.now() + limit
        do {
            try PosixThread.detach(name: "crier-stop-limit") { [self] in
                while Monotonic.now() < deadline {
                    if state.withLock({ $0.done }) { return }
                    usleep(50_000)
                }
                let stage = state.withLock { $0.done ? nil : $0.stage }
                guard let stage else { return }
                log.error("stop did not finish within \(Format.fixed(limit, 0)) s; leaving now", ["stuck_in": stage])
                expire()
            }
        } catch {
            log.warning("no thread for the stop time limit: \(error); the stop is not bounded")
        }
    }

    func stage(_ s: String) { state.withLock { $0.stage = s } }
    func finished() { state.withLock { $0.done = true } }
}

/// The audio engine under supervision: progress is the engine thread's own loop; a stall gets
/// a fresh engine (the stuck thread cannot be stopped).
struct AudioComponent: SupervisedComponent {
    let daemon: Daemon
    var name: String { "audio" }
    var stallDeadline: Double? { 3 }
    var stopTimeout: Double { 1 }

    func run(progress: ProgressHandle) async throws {
        // A sixth of the stall deadline: detection stays within 3.5 s, and each check is a
        // wakeup of the idle process (docs/audio.md, "Idle wakeups").
        await progress.follow(every: 0.5) { daemon.engine.lastProgress }
    }

    func requestStop(_ reason: StopReason) {
        if reason == .stalled { Task { await daemon.replaceAudioEngine() } }
    }
}

/// The music thread: it reconnects and retries by itself; one that stops going round (a
/// decoder or a network call stuck in C) is replaced, and the alerts never wait for it.
struct MusicComponent: SupervisedComponent {
    let daemon: Daemon
    let stallSeconds: Double
    var name: String { "music" }
    // Longer than the longest legitimate silence of its loop (curl reports progress at least
    // once a second, even while connecting): music.stall_s plus 10 s.
    var stallDeadline: Double? { stallSeconds + 10 }
    // Music never takes the process (and so the alerts) down: a stall is detected at the
    // earliest after stallDeadline, so this many restarts per window are never reached;
    // Daemon.replaceMusic stops replacing after a few stalls instead.
    var restartPolicy: RestartPolicy? { RestartPolicy(initialBackoff: 1, maxBackoff: 30, multiplier: 2, maxRestarts: 100, window: 60) }

    func run(progress: ProgressHandle) async throws {
        await progress.follow(every: 1) { daemon.musicProgress() }
    }

    func requestStop(_ reason: StopReason) {
        if reason == .stalled { Task { await daemon.replaceMusic() } }
    }
}

/// The espeak-ng thread: a synthesis that outlives its deadline by far (the library stuck in C,
/// where the deadline callback cannot reach) counts as a stall. The library cannot be restarted
/// in-process, so repeated stalls end in the restart intensity and a process restart.
struct SpeechComponent: SupervisedComponent {
    let daemon: Daemon
    let deadline: Double
    var name: String { "speech" }
    var stallDeadline: Double? { deadline + 10 }

    func run(progress: ProgressHandle) async throws {
        let speech = daemon.pipeline.speech
        await progress.follow(every: 1) { speech.progressMark }
    }
}

/// The order link thread: it reconnects by itself; a thread that stops going round its loop
/// (stuck in a name lookup or connect) is replaced.
struct LinkComponent: SupervisedComponent {
    let daemon: Daemon
    let heartbeat: Double
    var name: String { "link" }
    // Longest legitimate silence of the loop: a connect timeout plus a slow name lookup.
    var stallDeadline: Double? { 45 }

    func run(progress: ProgressHandle) async throws {
        var last = -1.0
        while !Task.isCancelled, progress.stopRequested == nil {
            let mark = await daemon.linkProgress()
            if mark != last {
                last = mark
                progress.heartbeat()
            }
            try? await Task.sleep(for: .seconds(2))
        }
    }

    func requestStop(_ reason: StopReason) {
        if reason == .stalled { Task { await daemon.replaceLink() } }
    }
}

/// The button reader: its thread retries missing lines itself; the supervisor restarts it if
/// it ever ends.
struct ButtonsComponent: SupervisedComponent {
    let daemon: Daemon
    var name: String { "buttons" }
    var dependencies: [String] { ["audio"] }

    func run(progress: ProgressHandle) async throws {
        await daemon.runButtons()
    }

    func requestStop(_ reason: StopReason) {
        Task { await daemon.stopButtons() }
    }
}
