// libFuzzer target: the text pipeline (as in text.swift) and then espeak-ng synthesis of the
// result, with the same flags and per-synthesis deadline the daemon uses (SpeechEngine): no
// SSML, no phoneme input, the synth callback aborts once the deadline passes. espeak-ng is not
// thread safe; libFuzzer calls this on one thread. espeak-ng itself is not instrumented (a
// system library): this finds its crashes and hangs (libFuzzer -timeout), not silent overreads.
import CEspeakNG
import Glibc

nonisolated(unsafe) var espeakRate: Int32 = 0
nonisolated(unsafe) var deadline: Double = 0
nonisolated(unsafe) var aborted = false
nonisolated(unsafe) var samples = 0
/// Seconds one synthesis may take (SpeechEngine's default is 5; fuzzing wants throughput).
let synthDeadline = 2.0
/// CRIER_FUZZ_SHOW=1: print the text handed to espeak-ng (to turn a crash file into a regression test).
let showText = getenv("CRIER_FUZZ_SHOW") != nil

func monotonic() -> Double {
    var ts = timespec()
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return Double(ts.tv_sec) + Double(ts.tv_nsec) / 1e9
}

func fuzzSpeech(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
    guard size > 0 else { return 0 }
    if espeakRate == 0 {
        espeakRate = espeak_Initialize(AUDIO_OUTPUT_SYNCHRONOUS, 200, nil, Int32(espeakINITIALIZE_DONT_EXIT))
        precondition(espeakRate > 0, "espeak-ng data missing (install espeak-ng-data)")
        espeak_SetSynthCallback { _, count, _ in
            samples += Int(count)
            if monotonic() > deadline {
                aborted = true
                return 1
            }
            return 0
        }
    }
    let mode = data[0]
    let text = String(decoding: UnsafeBufferPointer(start: data + 1, count: size - 1), as: UTF8.self)
    let lang: Lang = mode & 1 == 0 ? .zh : .en
    let voices = SpeechConfig().voices
    let announcer = Announcer(templates: Templates(), maxChars: SpeechConfig().maxChars)
    let u = announcer.announce(.text(text), lang: lang).utterance
    guard !u.text.isEmpty else { return 0 }
    if showText { print("espeak-ng gets (\(lang)): \(u.text.debugDescription)"); fflush(nil) }
    _ = espeak_SetVoiceByName(voices[lang]!.voice)
    deadline = monotonic() + synthDeadline
    aborted = false
    let flags = UInt32(espeakCHARS_UTF8 | espeakENDPAUSE)
    let r = u.text.withCString { p in espeak_Synth(p, strlen(p) + 1, 0, POS_CHARACTER, 0, flags, nil, nil) }
    precondition(r == EE_OK || aborted, "espeak_Synth returned \(r)")
    // Cut off means bounded: the callback got control back within a chunk of the deadline.
    precondition(monotonic() - deadline < 1.0, "synthesis ran \(monotonic() - deadline) s past its deadline")
    return 0
}
