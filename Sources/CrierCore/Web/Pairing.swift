/// Pairing a phone with the box by a code the box says aloud (docs/setup.md, docs/security.md).
/// Pure: time is passed in, random digits come from the caller.
///
/// - A code is 4 digits, valid `codeLifetime` (120 s) and for one successful use; asking again
///   replaces it, but not more often than every `requestInterval` (10 s): a stranger on the
///   Wi-Fi cannot make the box recite codes all day.
/// - `maxWrong` (5) wrong codes in a row lock pairing for `lockout` (300 s), doubling with each
///   further lockout up to `maxLockout` (3600 s), so guessing 10 000 codes takes weeks of the
///   box saying codes aloud. A correct code resets the count and the doubling. The count
///   survives a new code (asking again does not buy five more guesses).
/// - `maxUnused` (5) codes said without a pairing lock pairing the same way: a stranger cannot
///   make the box recite codes every 10 s all day.
public struct Pairing: Sendable, Equatable {
    public struct Limits: Sendable, Equatable {
        public var codeLifetime = 120.0
        public var requestInterval = 10.0
        public var maxWrong = 5
        public var lockout = 300.0
        public var maxLockout = 3600.0
        public var maxUnused = 5
        public init() {}
    }

    public enum RequestResult: Sendable, Equatable {
        /// Say this code aloud now.
        case speak(code: String)
        /// A code was said less than `requestInterval` ago; it is still the valid one.
        case tooSoon(retryAfter: Double)
        case locked(retryAfter: Double)
        /// Too many codes said without a pairing: this request started a lockout of `seconds`.
        case lockedNow(seconds: Double)
    }

    public enum SubmitResult: Sendable, Equatable {
        case paired
        /// Wrong; `left` more tries before the lockout.
        case wrong(left: Int)
        /// This wrong code started a lockout of `seconds`.
        case lockedNow(seconds: Double)
        case locked(retryAfter: Double)
        /// No code asked for, or it expired: ask for a new one.
        case noCode
    }

    public let limits: Limits
    private var code: String?
    private var codeExpires = 0.0
    private var lastRequest = -Double.infinity
    private var wrong = 0
    private var lockouts = 0
    private var lockedUntil = -Double.infinity
    private var unused = 0

    public init(limits: Limits = Limits()) { self.limits = limits }

    /// Four digits from `random` (any source of uniform bytes; rejection sampling, no bias).
    public static func makeCode(_ random: () -> UInt8) -> String {
        var digits = ""
        while digits.count < 4 {
            let b = random()
            if b < 250 { digits.append(Character(Unicode.Scalar(UInt8(ascii: "0") + b % 10))) }
        }
        return digits
    }

    public func locked(now: Double) -> Double? { now < lockedUntil ? lockedUntil - now : nil }

    public mutating func request(now: Double, random: () -> UInt8) -> RequestResult {
        if let r = locked(now: now) { return .locked(retryAfter: r) }
        if code != nil, now < codeExpires, now - lastRequest < limits.requestInterval {
            return .tooSoon(retryAfter: limits.requestInterval - (now - lastRequest))
        }
        if unused >= limits.maxUnused {
            unused = 0
            code = nil
            return .lockedNow(seconds: lockOut(now: now))
        }
        unused += 1
        let c = Self.makeCode(random)
        code = c
        codeExpires = now + limits.codeLifetime
        lastRequest = now
        return .speak(code: c)
    }

    public mutating func submit(_ attempt: String, now: Double) -> SubmitResult {
        if let r = locked(now: now) { return .locked(retryAfter: r) }
        guard let c = code, now < codeExpires else {
            code = nil
            return .noCode
        }
        // Compared in full, whatever the first difference (no early exit to time).
        let a = Array(attempt.utf8), b = Array(c.utf8)
        var diff = a.count == b.count ? 0 : 1
        for i in 0..<min(a.count, b.count) { diff |= Int(a[i] ^ b[i]) }
        if diff == 0 {
            code = nil
            wrong = 0
            unused = 0
            lockouts = 0
            return .paired
        }
        wrong += 1
        guard wrong >= limits.maxWrong else { return .wrong(left: limits.maxWrong - wrong) }
        wrong = 0
        code = nil
        return .lockedNow(seconds: lockOut(now: now))
    }

    /// Starts a lockout, each one twice as long as the last (up to `maxLockout`); its length.
    private mutating func lockOut(now: Double) -> Double {
        var seconds = limits.lockout
        for _ in 0..<min(lockouts, 16) { seconds *= 2 }
        seconds = min(seconds, limits.maxLockout)
        lockouts += 1
        lockedUntil = now + seconds
        // A lockout settles both counts; the next one is longer.
        wrong = 0
        unused = 0
        return seconds
    }

    /// What the box says: the digits one by one (SpokenText reads single digits as words), twice.
    public static func spokenText(code: String, lang: Lang) -> String {
        let spaced = code.map(String.init).joined(separator: " ")
        switch lang {
        case .zh: return "配对码 \(spaced)。再说一遍，\(spaced)。"
        case .en: return "Pairing code \(spaced). Again, \(spaced)."
        }
    }
}
