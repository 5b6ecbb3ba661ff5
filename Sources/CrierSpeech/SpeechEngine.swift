import CEspeakNG
import CrierCore
import Foundation
import Synchronization

/// Why text could not be turned into sound.
public enum SpeechError: Error, Sendable, Equatable, CustomStringConvertible {
    /// espeak-ng could not start (data directory missing or unreadable).
    case initFailed(path: String)
    /// Synthesis ran past its deadline and was cut off.
    case deadlineExceeded(seconds: Double, text: String)
    case synthFailed(code: Int32)
    case shutDown

    public var description: String {
        switch self {
        case .initFailed(let p):
            "espeak-ng could not start (data directory \(p.isEmpty ? "system default" : "'\(p)'")); install espeak-ng-data or fix speech.data_path in crier.conf"
        case .deadlineExceeded(let s, let t):
            "speech synthesis took longer than \(ConfigValue.fmt(s)) s and was cut off (text starts \"\(t.prefix(40))\")"
        case .synthFailed(let c): "espeak-ng failed with error \(c)"
        case .shutDown: "the speech engine has stopped"
        }
    }
}

/// Mono S16 samples straight from the synthesizer.
public struct SpeechAudio: Sendable {
    public var rate: Int
    public var samples: [Int16]
    public var floats: [Float] { samples.map { Float($0) / 32768 } }
}

/// The only place espeak-ng is called. The library keeps global state and crashes when used
/// from two threads (DESIGN.md), so every call runs on one dedicated thread, in order.
public final class SpeechEngine: Sendable {
    public let dataPath: String
    let log: Logger
    /// Longest one synthesis may run before it is aborted (a runaway input must not stall alerts).
    public let deadline: Double

    private enum Job {
        case synth(Utterance, VoiceConfig, CheckedContinuation<Result<SpeechAudio, SpeechError>, Never>)
        case phonemes(Utterance, VoiceConfig, CheckedContinuation<String, Never>)
    }

    private struct Queue {
        var jobs: [Job] = []
        var stopping = false
        var started = false
    }

    // Jobs hold continuations, which are Sendable; Job itself is only built and consumed under
    // the lock or on the speech thread.
    private let queue = Mutex(Queue())
    private let signal = DispatchSemaphore(value: 0)
    private let exited = DispatchSemaphore(value: 0)
    private let progressNs = Atomic<Int64>(0)

    public init(dataPath: String = "", deadline: Double = 5, log: Logger) {
        self.dataPath = dataPath
        self.deadline = deadline
        self.log = log
    }

    public var lastProgress: Double { Double(progressNs.load(ordering: .relaxed)) / 1e9 }

    private func ensureStarted() {
        let first = queue.withLock { q in
            defer { q.started = true }
            return !q.started
        }
        guard first else { return }
        let t = Thread { [self] in
            var worker = Worker(engine: self)
            worker.run()
            exited.signal()
        }
        t.name = "crier-speech"
        t.start()
    }

    public func stop() {
        let wasRunning = queue.withLock { q in
            defer { q.stopping = true }
            return q.started && !q.stopping
        }
        if wasRunning {
            signal.signal()
            exited.wait()
        }
    }

    public func synthesize(_ u: Utterance, voice: VoiceConfig) async throws(SpeechError) -> SpeechAudio {
        ensureStarted()
        let r = await withCheckedContinuation { (c: CheckedContinuation<Result<SpeechAudio, SpeechError>, Never>) in
            let ok = queue.withLock { q in
                if q.stopping { return false }
                q.jobs.append(.synth(u, voice, c))
                return true
            }
            if ok { signal.signal() } else { c.resume(returning: .failure(.shutDown)) }
        }
        return try r.get()
    }

    /// espeak-ng's phoneme transcription of what would be said (as `espeak-ng -x`), for tests
    /// and `crier say --phonemes`.
    public func phonemes(_ u: Utterance, voice: VoiceConfig) async -> String {
        ensureStarted()
        return await withCheckedContinuation { (c: CheckedContinuation<String, Never>) in
            let ok = queue.withLock { q in
                if q.stopping { return false }
                q.jobs.append(.phonemes(u, voice, c))
                return true
            }
            if ok { signal.signal() } else { c.resume(returning: "") }
        }
    }

    // MARK: the speech thread

    /// Collects one synthesis; reached from the C callback through espeak's user_data.
    final class Collector {
        var samples: [Int16] = []
        let deadline: Double
        var aborted = false
        init(deadline: Double) { self.deadline = deadline }
    }

    private struct Worker {
        let engine: SpeechEngine
        var rate = 0
        var currentVoice: String?
        var currentParams: (Int, Int, Int)?
        var failedVoices: Set<String> = []

        mutating func run() {
            let path = engine.dataPath
            rate = Int(espeak_Initialize(AUDIO_OUTPUT_SYNCHRONOUS, 200, path.isEmpty ? nil : path, Int32(espeakINITIALIZE_DONT_EXIT)))
            if rate > 0 {
                espeak_SetSynthCallback { wav, count, events in
                    guard let events, let ctx = events.pointee.user_data else { return 0 }
                    let c = Unmanaged<Collector>.fromOpaque(ctx).takeUnretainedValue()
                    if let wav, count > 0 { c.samples.append(contentsOf: UnsafeBufferPointer(start: wav, count: Int(count))) }
                    if Monotonic.now() > c.deadline {
                        c.aborted = true
                        return 1  // abort this synthesis
                    }
                    return 0
                }
                engine.log.debug("espeak-ng ready", ["rate": rate])
            } else {
                engine.log.error(SpeechError.initFailed(path: path).description)
            }
            while true {
                engine.signal.wait()
                let (job, stopping) = engine.queue.withLock { q -> (Job?, Bool) in
                    q.jobs.isEmpty ? (nil, q.stopping) : (q.jobs.removeFirst(), false)
                }
                guard let job else {
                    if stopping { break }
                    continue
                }
                engine.progressNs.store(Int64(Monotonic.now() * 1e9), ordering: .relaxed)
                switch job {
                case .synth(let u, let v, let c):
                    c.resume(returning: synth(u, v))
                case .phonemes(let u, let v, let c):
                    c.resume(returning: phonemes(u, v))
                }
            }
            if rate > 0 { espeak_Terminate() }
            // Fail whatever is still queued rather than leave callers waiting forever.
            let rest = engine.queue.withLock { q in defer { q.jobs = [] }; return q.jobs }
            for job in rest {
                switch job {
                case .synth(_, _, let c): c.resume(returning: .failure(.shutDown))
                case .phonemes(_, _, let c): c.resume(returning: "")
                }
            }
        }

        mutating func select(_ v: VoiceConfig, lang: Lang) {
            var name = v.voice
            if failedVoices.contains(name) { name = SpeechConfig().voices[lang]!.voice }
            if currentVoice != name {
                let r = espeak_SetVoiceByName(name)
                if r != EE_OK {
                    let fallback = SpeechConfig().voices[lang]!.voice
                    engine.log.error("espeak-ng voice '\(name)' not found; using '\(fallback)'; check speech.\(lang.rawValue).voice in crier.conf (`espeak-ng --voices` lists them)")
                    failedVoices.insert(name)
                    name = fallback
                    _ = espeak_SetVoiceByName(fallback)
                }
                currentVoice = name
                currentParams = nil
            }
            // Parameters persist across voice changes in espeak-ng: set them every time they differ.
            if currentParams == nil || currentParams! != (v.rate, v.pitch, v.volume) {
                espeak_SetParameter(espeakRATE, Int32(v.rate), 0)
                espeak_SetParameter(espeakPITCH, Int32(v.pitch), 0)
                espeak_SetParameter(espeakVOLUME, Int32(v.volume), 0)
                currentParams = (v.rate, v.pitch, v.volume)
            }
        }

        mutating func synth(_ u: Utterance, _ v: VoiceConfig) -> Result<SpeechAudio, SpeechError> {
            guard rate > 0 else { return .failure(.initFailed(path: engine.dataPath)) }
            select(v, lang: u.lang)
            let collector = Collector(deadline: Monotonic.now() + engine.deadline)
            let ctx = Unmanaged.passUnretained(collector).toOpaque()
            // No espeakSSML and no espeakPHONEMES: text from outside must not switch voices,
            // read files or inject phoneme codes.
            let flags = UInt32(espeakCHARS_UTF8 | espeakENDPAUSE)
            let r = withExtendedLifetime(collector) {
                u.text.withCString { p in
                    espeak_Synth(p, strlen(p) + 1, 0, POS_CHARACTER, 0, flags, nil, ctx)
                }
            }
            if collector.aborted { return .failure(.deadlineExceeded(seconds: engine.deadline, text: u.text)) }
            guard r == EE_OK else { return .failure(.synthFailed(code: r.rawValue)) }
            return .success(SpeechAudio(rate: rate, samples: collector.samples))
        }

        mutating func phonemes(_ u: Utterance, _ v: VoiceConfig) -> String {
            guard rate > 0 else { return "" }
            select(v, lang: u.lang)
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

enum Monotonic {
    static func now() -> Double {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return Double(ts.tv_sec) + Double(ts.tv_nsec) / 1e9
    }
}
