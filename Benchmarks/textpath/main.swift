// The text path before an alert's first sound (issue 16), stage by stage, in-process: what the
// order's admission costs (the nothing-to-say check renders the words), what the speaker loop's
// render costs, and espeak-ng from the call to its first chunk and to its last. A benchmark:
// it prints a table and never fails on a time.
//
//   swift run -c release crier-textpath-bench [--runs N]     (scripts/bench.sh --only textpath)
import CrierCore
import CrierPosix
import CrierSpeech
import Glibc
import Synchronization

var runs = 300
var args = CommandLine.arguments.dropFirst()
while let a = args.popFirst() {
    if a == "--runs", let v = args.popFirst().flatMap({ Int($0) }), v > 0 { runs = v } else {
        print("usage: crier-textpath-bench [--runs N]"); exit(2)
    }
}

func zh(_ n: Int) -> String { NumberWords.spellNumbers(in: String(n), lang: .zh) }
let order = "新客户来了，四十二号"
let ten = "新客户来了，" + (41...50).map { zh($0) + "号" }.joined(separator: "、")
let base = "请各位顾客注意，本店今日推出新品，欢迎品尝。取餐时请出示取餐码，谢谢合作。"
let long = String(String(repeating: base, count: 20).prefix(500))
// The bench's three texts (scripts/bench/bench.py first_sound_texts) as text orders, and a real
// coalesced alert of ten new-customer orders (its parts rendered one by one).
let cases: [(String, Order, AnnouncementContent)] = [
    ("one order (text)", Order(id: "o", kind: .text(order)), .text(order)),
    ("ten numbers (text)", Order(id: "t", kind: .text(ten)), .text(ten)),
    ("500 characters (text)", Order(id: "l", kind: .text(long)), .text(long)),
    ("ten orders coalesced", Order(id: "c", kind: .newCustomer(number: 41)), .newCustomers(numbers: Array(41...50))),
]

let announcer = Announcer(templates: Templates(), maxChars: 500)
let voice = SpeechConfig().voices[.zh]!

func percentile(_ xs: [Double], _ p: Double) -> Double {
    let s = xs.sorted()
    return s[min(s.count - 1, Int((Double(s.count - 1) * p).rounded()))]
}
func us(_ xs: [Double]) -> String {
    "\(Format.fixed(percentile(xs, 0.5) * 1e6, 1)) / \(Format.fixed(percentile(xs, 0.99) * 1e6, 1))"
}
func time(_ body: () -> Void) -> Double {
    let t0 = Monotonic.now()
    body()
    return Monotonic.now() - t0
}

/// Records when espeak-ng's first chunk arrives; the synthesis runs to its end.
final class FirstChunk: SpeechChunkSink {
    let start: Double
    private let first = Mutex<Double?>(nil)
    init(start: Double) { self.start = start }
    func speechChunk(_ samples: UnsafeBufferPointer<Int16>, rate: Int) -> Bool {
        first.withLock { if $0 == nil { $0 = Monotonic.now() - start } }
        return true
    }
    var at: Double? { first.withLock { $0 } }
}

let hub = LogHub(clock: WallClock.now)
let engine = SpeechEngine(log: hub.logger("speech"))
let espeakRuns = max(1, runs / 10)
// The first synthesis loads the voice's dictionaries (the daemon does it at start): not counted.
do { _ = try await engine.synthesize(Utterance(text: "。", lang: .zh), voice: voice) } catch { print("espeak-ng failed: \(error)"); exit(1) }

print("text path before the first sound: p50 / p99 over \(runs) runs (espeak: \(espeakRuns)), microseconds")
print("")
print("| text | chars | sanitize | numbers as words | admission (nothing-to-say) | render for the speaker | espeak call → first chunk | espeak, whole text |")
print("|---|---:|---:|---:|---:|---:|---:|---:|")
for (name, o, content) in cases {
    var admit: [Double] = [], render: [Double] = [], first: [Double] = [], whole: [Double] = []
    var clean: [Double] = [], numbers: [Double] = []
    let raw: String = if case .order(let k) = content, k.spec == .text { k.value.text } else { announcer.announceParts(content, lang: .zh).map(\.utterance.text).joined() }
    let cleaned = TextSanitizer.clean(raw, maxChars: 500).text
    var parts: [Announcer.Result] = []
    for _ in 0..<runs {
        clean.append(time { _ = TextSanitizer.clean(raw, maxChars: 500) })
        numbers.append(time { _ = NumberWords.spellNumbers(in: cleaned, lang: .zh) })
        admit.append(time { _ = announcer.nothingToSay(o, lang: .zh) })
        render.append(time { parts = announcer.announceParts(content, lang: .zh) })
    }
    for _ in 0..<espeakRuns {
        let t0 = Monotonic.now()
        let sink = FirstChunk(start: t0)
        do {
            _ = try await engine.synthesize(parts[0].utterance, voice: voice, into: sink)
        } catch {
            print("espeak-ng failed: \(error)"); exit(1)
        }
        whole.append(Monotonic.now() - t0)
        if let f = sink.at { first.append(f) }
    }
    let chars = parts.reduce(0) { $0 + $1.utterance.text.count }
    print("| \(name) | \(chars) | \(us(clean)) | \(us(numbers)) | \(us(admit)) | \(us(render)) | \(first.isEmpty ? "-" : us(first)) | \(us(whole)) |")
}
