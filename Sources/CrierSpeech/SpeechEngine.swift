import CEspeakNG
import CrierCore
import CrierPosix
import Dispatch
import Glibc
import Synchronization

/// Why text could not be turned into sound.
public enum SpeechError: Error, Sendable, Equatable, CustomStringConvertible {
    /// espeak-ng could not start (data directory missing or unreadable).
    case initFailed(path: String)
    /// Synthesis ran past its deadline and was cut off.
    case deadlineExceeded(seconds: Double, text: String)
    case synthFailed(code: Int32)
    case shutDown
    /// The listener no longer wants it (a streamed clip was stopped); not a failure.
    case cancelled
    /// The process could not start the speech thread (out of threads or memory).
    case noThread(String)
    /// crier ended inside the synthesis of this text `times` times in a row in this boot
    /// (`SynthesisCrashGuard`): it is not given to espeak-ng again until a reboot.
    case crashedBefore(times: Int, text: String)

    public var description: String {
        switch self {
        case .initFailed(let p):
            "espeak-ng could not start (data directory \(p.isEmpty ? "system default" : "'\(p)'") has no espeak-ng-data/phontab); install espeak-ng-data or fix speech.data_path in crier.conf"
        case .deadlineExceeded(let s, let t):
            "speech synthesis took longer than \(ConfigValue.fmt(s)) s and was cut off (text starts \"\(t.prefix(40))\")"
        case .synthFailed(let c): "espeak-ng failed with error \(c)"
        case .shutDown: "the speech engine has stopped"
        case .cancelled: "speech synthesis was cancelled"
        case .noThread(let why): "cannot start the speech thread (\(why)); crier exits so systemd restarts it"
        case .crashedBefore(let n, let t):
            "crier ended inside espeak-ng \(n) times in a row synthesizing this text (starts \"\(t.prefix(40))\"); it is not synthesized again until a reboot (docs/speech.md, \"A text that crashes the synthesizer\")"
        }
    }
}

/// Mono S16 samples straight from the synthesizer.
public struct SpeechAudio: Sendable {
    public var rate: Int
    public var samples: [Int16]
    public var floats: [Float] { samples.map { Float($0) / 32768 } }
}

/// Where a streamed synthesis puts its samples: called on the speech thread with each chunk as
/// espeak-ng hands it out (a few ms of audio, the first ~0.25 ms after the call). Returning false
/// aborts the synthesis (the clip was stopped). Keep it short: it runs inside espeak's callback.
public protocol SpeechChunkSink: AnyObject, Sendable {
    func speechChunk(_ samples: UnsafeBufferPointer<Int16>, rate: Int) -> Bool
}

/// The only place espeak-ng is called. The library keeps global state and crashes when used
/// from two threads (DESIGN.md), so every call in the process runs on one dedicated thread, in
/// order; `SpeechEngine` values are handles onto it. The thread lives as long as the process:
/// `espeak_Terminate` can deadlock on the library's own helper thread, and there is nothing to
/// gain from tearing the library down before exit.
public final class SpeechEngine: Sendable {
    public let dataPath: String
    let log: Logger
    /// Longest one synthesis may run before it is aborted (a runaway input must not stall alerts).
    public let deadline: Double
    private let stopped = Atomic<Bool>(false)

    public init(dataPath: String = "", deadline: Double = 5, log: Logger) {
        self.dataPath = dataPath
        self.deadline = deadline
        self.log = log
    }

    public var lastProgress: Double { EspeakThread.shared.lastProgress }

    /// For a stall watchdog: "now" while the speech thread is idle, the start of the current
    /// job while it works — a job that never ends stops this value from moving.
    public var progressMark: Double { EspeakThread.shared.busySince ?? Monotonic.now() }

    /// Refuses further work from this handle. Work already queued still completes.
    public func stop() { stopped.store(true, ordering: .relaxed) }

    /// The daemon's speech thread waits for each utterance at SCHED_FIFO `priority` and keeps it
    /// until the utterance's first chunk is out, then synthesizes the rest as SCHED_OTHER
    /// (docs/audio.md, "Real-time priority"): an order's first sound does not wait for the
    /// box's other programs, and a long synthesis never holds a core at real-time priority.
    /// 0 leaves the thread ordinary. A refusal is logged once.
    public func keepRealtime(priority: Int) {
        EspeakThread.shared.submit(.realtime(priority, log))
    }

    /// Remembers, in `dir` (crier's runtime directory: it outlives the process, not a reboot),
    /// the text being synthesized, so that a text that ends the process inside espeak-ng twice
    /// in a row is refused (`SynthesisCrashGuard`). Ask before the first synthesis; the files
    /// are `speech-mark` (rewritten in place around each synthesis, 17 bytes) and
    /// `speech-strikes` (only after such an end). `testAbort` (TEST ONLY,
    /// CRIER_TEST_SPEECH_ABORT): a text containing it aborts the process inside the synthesis.
    public func guardCrashes(dir: String, testAbort: String? = nil) {
        EspeakThread.shared.submit(.crashGuard(dir, testAbort, log))
    }

    /// What the speech thread got from `keepRealtime` (nil: never asked).
    public var threadPolicy: ThreadPolicy? { EspeakThread.shared.policy }

    public func synthesize(_ u: Utterance, voice: VoiceConfig) async throws(SpeechError) -> SpeechAudio {
        if stopped.load(ordering: .relaxed) { throw .shutDown }
        let r = await withCheckedContinuation { (c: CheckedContinuation<Result<SpeechAudio, SpeechError>, Never>) in
            EspeakThread.shared.submit(.synth(u, voice, EspeakThread.Settings(dataPath: dataPath, deadline: deadline, log: log), nil, { c.resume(returning: $0) }))
        }
        return try r.get()
    }

    /// Synthesizes into `sink` chunk by chunk instead of collecting the whole utterance: the
    /// caller can play the first chunk while the rest is made. Returns the samples produced.
    /// Same thread, same deadline, same abort; `.cancelled` when the sink said stop.
    @discardableResult
    public func synthesize(_ u: Utterance, voice: VoiceConfig, into sink: any SpeechChunkSink) async throws(SpeechError) -> Int {
        try await start(u, voice: voice, into: sink).samples()
    }

    /// `synthesize(_:voice:into:)` put on the speech thread's queue now, by the caller's own
    /// thread: no task has to be scheduled before espeak starts (the first sound of an alert
    /// waits for each such hop, ~0.1-0.3 ms each on a small CPU). `samples()` waits for the end.
    public func start(_ u: Utterance, voice: VoiceConfig, into sink: any SpeechChunkSink) -> SynthesisJob {
        let job = SynthesisJob()
        if stopped.load(ordering: .relaxed) {
            job.complete(.failure(.shutDown))
        } else {
            EspeakThread.shared.submit(.synth(u, voice, EspeakThread.Settings(dataPath: dataPath, deadline: deadline, log: log), sink, { job.complete($0) }))
        }
        return job
    }

    /// espeak-ng's phoneme transcription of what would be said (as `espeak-ng -x`), for tests
    /// and `crier say --phonemes`.
    public func phonemes(_ u: Utterance, voice: VoiceConfig) async -> String {
        if stopped.load(ordering: .relaxed) { return "" }
        return await withCheckedContinuation { (c: CheckedContinuation<String, Never>) in
            EspeakThread.shared.submit(.phonemes(u, voice, EspeakThread.Settings(dataPath: dataPath, deadline: deadline, log: log), c))
        }
    }
}

/// A streamed synthesis on the speech thread's queue (`SpeechEngine.start`). It ends once:
/// whichever comes first, the end or the wait for it, hands over to the other under the lock.
public final class SynthesisJob: Sendable {
    private struct State {
        var result: Result<SpeechAudio, SpeechError>?
        var waiter: CheckedContinuation<Result<SpeechAudio, SpeechError>, Never>?
    }

    private let state = Mutex(State())

    init() {}

    func complete(_ r: Result<SpeechAudio, SpeechError>) {
        let waiter = state.withLock { s -> CheckedContinuation<Result<SpeechAudio, SpeechError>, Never>? in
            if let w = s.waiter {
                s.waiter = nil
                return w
            }
            s.result = r
            return nil
        }
        waiter?.resume(returning: r)
    }

    /// The number of samples produced; throws as `synthesize` does. Call it once.
    public func samples() async throws(SpeechError) -> Int {
        let r = await withCheckedContinuation { (c: CheckedContinuation<Result<SpeechAudio, SpeechError>, Never>) in
            let done = state.withLock { s -> Result<SpeechAudio, SpeechError>? in
                if let r = s.result { return r }
                s.waiter = c
                return nil
            }
            if let done { c.resume(returning: done) }
        }
        return try r.get().rate
    }
}

/// The process's one espeak-ng thread.
final class EspeakThread: Sendable {
    static let shared = EspeakThread()

    struct Settings: Sendable {
        var dataPath: String
        var deadline: Double
        var log: Logger
    }

    enum Job: Sendable {
        /// With a sink, samples go to it as they come and the result carries no samples (its
        /// `rate` field then holds the number of samples produced).
        case synth(Utterance, VoiceConfig, Settings, (any SpeechChunkSink)?, @Sendable (Result<SpeechAudio, SpeechError>) -> Void)
        case phonemes(Utterance, VoiceConfig, Settings, CheckedContinuation<String, Never>)
        /// Wait for jobs at SCHED_FIFO this priority (0: ordinary), until each first chunk.
        case realtime(Int, Logger)
        case crashGuard(String, String?, Logger)
    }

    private let policyBox = Mutex<ThreadPolicy?>(nil)
    var policy: ThreadPolicy? { policyBox.withLock { $0 } }

    private let queue = Mutex<[Job]>([])
    private let signal = DispatchSemaphore(value: 0)
    private let progressNs = Atomic<Int64>(0)
    private let busyNs = Atomic<Int64>(0)

    var busySince: Double? {
        let v = busyNs.load(ordering: .relaxed)
        return v == 0 ? nil : Double(v) / 1e9
    }

    /// Set when the thread could not start: every job is answered with it at once.
    private let startFailure = Mutex<SystemError?>(nil)

    private init() {
        do {
            try PosixThread.detach(name: "crier-speech") { [self] in
                var worker = Worker(owner: self)
                worker.run()
            }
        } catch {
            startFailure.withLock { $0 = error }
        }
    }

    var lastProgress: Double { Double(progressNs.load(ordering: .relaxed)) / 1e9 }

    func submit(_ job: Job) {
        if let e = startFailure.withLock({ $0 }) {
            switch job {
            case .synth(_, _, _, _, let done): done(.failure(.noThread("\(e)")))
            case .phonemes(_, _, _, let c): c.resume(returning: "")
            case .realtime, .crashGuard: break
            }
            return
        }
        queue.withLock { $0.append(job) }
        signal.signal()
    }

    /// Collects one synthesis; reached from the C callback through espeak's user_data.
    final class Collector {
        var samples: [Int16] = []
        let deadline: Double
        var aborted = false
        /// Streamed synthesis: chunks go here instead of `samples`.
        let sink: (any SpeechChunkSink)?
        var produced = 0
        var cancelled = false
        var rate = 0
        /// At SCHED_FIFO until the first chunk is handed over (then back to SCHED_OTHER).
        var boosted = false
        init(deadline: Double, sink: (any SpeechChunkSink)?) {
            self.deadline = deadline
            self.sink = sink
        }
    }

    private struct Worker {
        let owner: EspeakThread
        var rate = 0
        /// The data path the library was last initialized with (nil: never).
        var initializedPath: String?
        var currentVoice: String?
        var currentParams: (Int, Int, Int)?
        var failedVoices: Set<String> = []
        /// SCHED_FIFO priority to wait at (0: ordinary); refused once, never asked again.
        var waitPriority = 0
        /// Whether the thread is at SCHED_FIFO now.
        var realtime = false
        /// `SpeechEngine.guardCrashes`: nil until asked (or when its files cannot be written).
        var crashGuard: SynthesisCrashGuard?
        var markFD: Int32 = -1
        var strikesPath = ""
        var guardLog: Logger?
        var testAbort: String?

        mutating func run() {
            while true {
                if waitPriority > 0 && !realtime {
                    do {
                        try ThreadScheduling.setRealtime(priority: waitPriority)
                        realtime = true
                    } catch {
                        waitPriority = 0  // logged when it was first asked; not asked again
                    }
                }
                owner.signal.wait()
                guard let job = owner.queue.withLock({ q in q.isEmpty ? nil : q.removeFirst() }) else { continue }
                owner.progressNs.store(Int64(Monotonic.now() * 1e9), ordering: .relaxed)
                owner.busyNs.store(Int64(Monotonic.now() * 1e9), ordering: .relaxed)
                defer { owner.busyNs.store(0, ordering: .relaxed) }
                switch job {
                case .synth(let u, let v, let s, let sink, let done):
                    // Only a streamed synthesis is being waited for by a listener; a whole one
                    // (a pack render, a check) runs as an ordinary thread from the start.
                    if sink == nil { ordinary() }
                    done(synth(u, v, s, sink: sink))
                    ordinary()
                case .phonemes(let u, let v, let s, let c):
                    ordinary()
                    c.resume(returning: phonemes(u, v, s))
                case .realtime(let priority, let log):
                    askRealtime(priority, log: log)
                case .crashGuard(let dir, let abortOn, let log):
                    installCrashGuard(dir: dir, testAbort: abortOn, log: log)
                }
            }
        }

        mutating func ordinary() {
            guard realtime else { return }
            ThreadScheduling.setOrdinary()
            realtime = false
        }

        static let asker = ThreadPolicy.Asker(thread: "speech thread", key: "speech.realtime_priority",
                                              cost: "an order's first sound may wait for the box's other programs",
                                              grantedNote: " while it waits and until each utterance's first chunk")

        /// First asked here (so the refusal is logged with its errno), then kept by `run`.
        mutating func askRealtime(_ priority: Int, log: Logger) {
            if priority <= 0 { ordinary() }
            let code = ThreadScheduling.requestRealtime(priority: priority)
            realtime = priority > 0 && code == 0
            waitPriority = realtime ? priority : 0
            let policy = ThreadPolicy.asked(priority, errno: code, errnoName: errnoName(code), errnoText: errnoText(code),
                                            by: Self.asker, log: log)
            owner.policyBox.withLock { $0 = policy }
        }

        /// Reads what the last run left (a mark: it ended inside a synthesis), counts the strike,
        /// and opens the mark for this run. Any file error leaves the guard off, logged.
        mutating func installCrashGuard(dir: String, testAbort abortOn: String?, log: Logger) {
            let markPath = dir + "/speech-mark"
            strikesPath = dir + "/speech-strikes"
            var g = SynthesisCrashGuard.decode(String(decoding: (try? FileIO.read(strikesPath, limit: 64 << 10)) ?? [], as: UTF8.self))
            if let key = SynthesisCrashGuard.decodeMark((try? FileIO.read(markPath, limit: 64)) ?? []) {
                let n = g.crashed(during: key)
                let then = n >= SynthesisCrashGuard.refuseAfter
                    ? "it is not synthesized again until a reboot; its alert is rejected (speech_failed) and the orders behind it are said"
                    : "it is tried again; a second end in a row on it and it is refused until a reboot"
                log.warning("the last run of crier ended inside espeak-ng while synthesizing one text (\(n) time\(n == 1 ? "" : "s") in a row); \(then)",
                            ["text_key": String(key, radix: 16)])
                writeStrikes(g, log: log)
            }
            let fd = open(markPath, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
            guard fd >= 0 else {
                log.warning("cannot keep \(markPath) (\(errnoText(errno))): a text that crashes espeak-ng would crash crier at every redelivery; check that crier's runtime directory is writable")
                return
            }
            markFD = fd
            crashGuard = g
            guardLog = log
            testAbort = abortOn
            setMark(SynthesisCrashGuard.idleMark)
            if let abortOn { log.warning("TEST ONLY: CRIER_TEST_SPEECH_ABORT is set: a text containing \"\(abortOn)\" aborts crier inside the synthesis") }
        }

        func setMark(_ bytes: [UInt8]) {
            _ = bytes.withUnsafeBytes { pwrite(markFD, $0.baseAddress, $0.count, 0) }
        }

        func writeStrikes(_ g: SynthesisCrashGuard, log: Logger) {
            do throws(SystemError) { try FileIO.write(strikesPath, Array(g.encoded().utf8)) } catch {
                log.warning("cannot write \(strikesPath): \(error); a text that crashes espeak-ng may crash crier again after the next restart")
            }
        }

        /// Milliseconds of audio per synth callback. espeak-ng calls back when this much is made
        /// (or a clause ends), so it bounds the synthesis before the first sample can play:
        /// with 200 ms, espeak took 0.68 ms (p50, this machine) to its first chunk; with 20 ms,
        /// 0.22 ms, and the order → first sound p50 fell from 1.34 to 0.87 ms (issue 16). The
        /// price is 50 callbacks per second of speech instead of 5, each a few µs.
        static let chunkMs = 20

        /// Initializes (or re-initializes for another data path) the library.
        mutating func ready(_ s: Settings) -> Bool {
            if initializedPath == s.dataPath { return rate > 0 }
            // espeak-ng quietly falls back to its built-in path when the one given is wrong;
            // a configured path that does not hold the data is a mistake worth reporting.
            if !s.dataPath.isEmpty && access(s.dataPath + "/espeak-ng-data/phontab", R_OK) != 0 {
                s.log.error(SpeechError.initFailed(path: s.dataPath).description)
                return false
            }
            rate = Int(espeak_Initialize(AUDIO_OUTPUT_SYNCHRONOUS, Int32(Self.chunkMs), s.dataPath.isEmpty ? nil : s.dataPath,
                                         Int32(espeakINITIALIZE_DONT_EXIT)))
            initializedPath = s.dataPath
            currentVoice = nil
            currentParams = nil
            if rate > 0 {
                espeak_SetSynthCallback { wav, count, events in
                    guard let events, let ctx = events.pointee.user_data else { return 0 }
                    let c = Unmanaged<Collector>.fromOpaque(ctx).takeUnretainedValue()
                    if let wav, count > 0 {
                        let chunk = UnsafeBufferPointer(start: wav, count: Int(count))
                        c.produced += chunk.count
                        if let sink = c.sink {
                            let more = sink.speechChunk(chunk, rate: c.rate)
                            if c.boosted {
                                // The first chunk is out: the rest is made as an ordinary thread.
                                ThreadScheduling.setOrdinary()
                                c.boosted = false
                            }
                            if !more {
                                c.cancelled = true
                                return 1  // the listener stopped the clip
                            }
                        } else {
                            c.samples.append(contentsOf: chunk)
                        }
                    }
                    if Monotonic.now() > c.deadline {
                        c.aborted = true
                        return 1  // abort this synthesis
                    }
                    return 0
                }
                s.log.debug("espeak-ng ready", ["rate": rate])
            } else {
                s.log.error(SpeechError.initFailed(path: s.dataPath).description)
            }
            return rate > 0
        }

        mutating func select(_ v: VoiceConfig, lang: Lang, log: Logger) {
            var name = v.voice
            if failedVoices.contains(name) { name = SpeechConfig().voices[lang]!.voice }
            if currentVoice != name {
                let r = espeak_SetVoiceByName(name)
                if r != EE_OK {
                    let fallback = SpeechConfig().voices[lang]!.voice
                    log.error("espeak-ng voice '\(name)' not found; using '\(fallback)'; check speech.\(lang.rawValue).voice in crier.conf (`espeak-ng --voices` lists them)")
                    failedVoices.insert(name)
                    name = fallback
                    _ = espeak_SetVoiceByName(fallback)
                }
                currentVoice = name
                currentParams = nil
            }
            // Parameters persist across voice changes in espeak-ng: set them whenever they differ.
            if currentParams == nil || currentParams! != (v.rate, v.pitch, v.volume) {
                espeak_SetParameter(espeakRATE, Int32(v.rate), 0)
                espeak_SetParameter(espeakPITCH, Int32(v.pitch), 0)
                espeak_SetParameter(espeakVOLUME, Int32(v.volume), 0)
                currentParams = (v.rate, v.pitch, v.volume)
            }
        }

        mutating func synth(_ u: Utterance, _ v: VoiceConfig, _ s: Settings, sink: (any SpeechChunkSink)?) -> Result<SpeechAudio, SpeechError> {
            guard ready(s) else { return .failure(.initFailed(path: s.dataPath)) }
            select(v, lang: u.lang, log: s.log)
            var guarded: UInt64?
            if let g = crashGuard {
                let key = SynthesisCrashGuard.key(voice: currentVoice ?? v.voice, text: u.text)
                if let n = g.refuses(key) { return .failure(.crashedBefore(times: n, text: u.text)) }
                setMark(SynthesisCrashGuard.mark(key))
                guarded = key
            }
            defer {
                if let key = guarded {
                    setMark(SynthesisCrashGuard.idleMark)
                    if crashGuard!.ended(key), let log = guardLog { writeStrikes(crashGuard!, log: log) }
                }
            }
            if let t = testAbort, u.text.contains(t) {
                s.log.error("TEST ONLY: aborting inside the synthesis (CRIER_TEST_SPEECH_ABORT)")
                abort()
            }
            let collector = Collector(deadline: Monotonic.now() + s.deadline, sink: sink)
            collector.rate = rate
            collector.boosted = realtime
            // The callback drops the priority at the first chunk; the thread is ordinary after.
            defer { if realtime { realtime = collector.boosted } }
            let ctx = Unmanaged.passUnretained(collector).toOpaque()
            // No espeakSSML and no espeakPHONEMES: text from outside must not switch voices,
            // read files or inject phoneme codes.
            let flags = UInt32(espeakCHARS_UTF8 | espeakENDPAUSE)
            let r = withExtendedLifetime(collector) {
                u.text.withCString { p in
                    espeak_Synth(p, strlen(p) + 1, 0, POS_CHARACTER, 0, flags, nil, ctx)
                }
            }
            if collector.cancelled { return .failure(.cancelled) }
            if collector.aborted { return .failure(.deadlineExceeded(seconds: s.deadline, text: u.text)) }
            guard r == EE_OK else { return .failure(.synthFailed(code: r.rawValue)) }
            if sink != nil { return .success(SpeechAudio(rate: collector.produced, samples: [])) }
            return .success(SpeechAudio(rate: rate, samples: collector.samples))
        }

        mutating func phonemes(_ u: Utterance, _ v: VoiceConfig, _ s: Settings) -> String {
            guard ready(s) else { return "" }
            select(v, lang: u.lang, log: s.log)
            var out: [String] = []
            u.text.withCString { base in
                var ptr: UnsafeRawPointer? = UnsafeRawPointer(base)
                while let p = ptr {
                    var cur: UnsafeRawPointer? = p
                    guard let ph = espeak_TextToPhonemes(&cur, espeakCHARS_UTF8, 0) else { break }
                    out.append(String(cString: ph))
                    if cur == p { break }
                    ptr = cur
                }
            }
            return out.joined(separator: " ")
        }
    }
}

