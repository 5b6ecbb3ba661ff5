/// A text that takes crier down inside the synthesizer must not take it down forever. espeak-ng
/// is C that overruns its buffers on text nobody expected (docs/security.md, fuzzing); when it
/// kills the process in the middle of an order, systemd restarts crier, the server redelivers
/// the order (it was never acked), and the same text would kill it again, blocking every order
/// behind it. So the speech thread marks the text it is synthesizing (a key, in a file that
/// outlives the process but not a reboot: crier's runtime directory, kept across restarts by
/// `RuntimeDirectoryPreserve=restart`), and the next start reads the mark: one strike for that
/// text. A text with `refuseAfter` strikes in a row is not given to the synthesizer again until
/// a reboot; its alert fails like a synthesis past its deadline (acked `rejected`,
/// `speech_failed`) and the orders behind it are said. A synthesis that ends clears its text's
/// strikes, so a SIGKILL or a power dip that happens to land in one never condemns a text.
///
/// Pure: the speech thread owns the files (`SpeechEngine`).
public struct SynthesisCrashGuard: Sendable, Equatable {
    /// Strikes in a row before a text is refused: one crash may be a coincidence (a kill, the
    /// watchdog, an out-of-memory kill); two on the same text with nothing in between are not.
    public static let refuseAfter = 2
    /// Texts remembered; each needs a crash to get here, so this is never reached in practice.
    public static let capacity = 64

    /// Strikes by text key (`key(voice:text:)`).
    public private(set) var strikes: [UInt64: Int] = [:]

    public init(strikes: [UInt64: Int] = [:]) {
        self.strikes = strikes
    }

    /// FNV-1a (64 bit) of the voice name and the text: what is synthesized, not the order (a
    /// redelivery has the same text, and a prompt said for many orders has one key).
    public static func key(voice: String, text: String) -> UInt64 {
        var h: UInt64 = 0xcbf2_9ce4_8422_2325
        for b in voice.utf8 { h = (h ^ UInt64(b)) &* 0x100_0000_01b3 }
        h = (h ^ 0) &* 0x100_0000_01b3
        for b in text.utf8 { h = (h ^ UInt64(b)) &* 0x100_0000_01b3 }
        return h
    }

    // MARK: the mark (one fixed-size record, rewritten in place before and after each synthesis)

    /// Bytes of a mark: 16 hex digits and a newline.
    public static let markSize = 17
    /// Nothing is being synthesized.
    public static let idleMark: [UInt8] = Array("----------------\n".utf8)

    public static func mark(_ key: UInt64) -> [UInt8] {
        let hex = String(key, radix: 16)
        return Array((String(repeating: "0", count: 16 - hex.count) + hex + "\n").utf8)
    }

    /// The key a mark holds, nil when idle, empty, torn or not a mark.
    public static func decodeMark(_ bytes: [UInt8]) -> UInt64? {
        guard bytes.count >= 16 else { return nil }
        return UInt64(String(decoding: bytes.prefix(16), as: UTF8.self), radix: 16)
    }

    // MARK: strikes (a small text file, rewritten only when they change)

    /// Lines `KEY COUNT` (hex key, decimal count); anything else is ignored.
    public static func decode(_ text: String) -> SynthesisCrashGuard {
        var g = SynthesisCrashGuard()
        for line in text.split(separator: "\n") {
            let f = line.split(separator: " ")
            guard f.count == 2, let k = UInt64(f[0], radix: 16), let n = Int(f[1]), n > 0 else { continue }
            g.strikes[k] = min(n, 1_000)
        }
        return g
    }

    public func encoded() -> String {
        strikes.sorted { $0.key < $1.key }.map { String($0.key, radix: 16) + " \($0.value)\n" }.joined()
    }

    /// The last run ended while synthesizing `key` (the mark it left): one more strike. Returns
    /// the text's strikes now.
    @discardableResult
    public mutating func crashed(during key: UInt64) -> Int {
        if strikes[key] == nil, strikes.count >= Self.capacity, let drop = strikes.min(by: { $0.value < $1.value })?.key {
            strikes[drop] = nil
        }
        let n = (strikes[key] ?? 0) + 1
        strikes[key] = n
        return n
    }

    /// The strikes of a text that must not be synthesized, nil when it may be.
    public func refuses(_ key: UInt64) -> Int? {
        guard let n = strikes[key], n >= Self.refuseAfter else { return nil }
        return n
    }

    /// A synthesis of `key` ended (well or not, but inside the process): its strikes go.
    /// Returns true when there were some (the file must be rewritten).
    @discardableResult
    public mutating func ended(_ key: UInt64) -> Bool {
        strikes.removeValue(forKey: key) != nil
    }
}
