/// A small, strict JSON (RFC 8259) reader and writer for protocol lines. No Foundation.
///
/// Reading rules (docs/protocol.md, "JSON"):
/// - The input must be valid UTF-8 (no overlong forms, no surrogates, nothing above U+10FFFF).
/// - `\uXXXX` escapes must form valid scalars: a lone or reversed surrogate is an error.
/// - Control characters (U+0000...U+001F) inside strings must be escaped.
/// - At most `Limits.maxDepth` nested arrays/objects and `Limits.maxBytes` bytes.
/// - Numbers keep their literal text (`JSONNumber.literal`) so that integers are read exactly and
///   a huge number is "out of range", never silently rounded.
/// - A key repeated in one object is an error (`duplicate key "id"`): two readers of the same line
///   must never disagree about what it says.
/// - Whitespace may surround the value; nothing else may follow it.
public enum JSONValue: Sendable, Equatable {
    case null
    case bool(Bool)
    case number(JSONNumber)
    case string(String)
    case array([JSONValue])
    case object(JSONObject)

    /// What a value is, in words for error messages: "a string", "an object".
    public var typeName: String {
        switch self {
        case .null: "null"
        case .bool: "a boolean"
        case .number: "a number"
        case .string: "a string"
        case .array: "an array"
        case .object: "an object"
        }
    }
}

/// A number as written. `int` and `double` interpret it.
public struct JSONNumber: Sendable, Equatable, CustomStringConvertible {
    public let literal: String

    public init(literal: String) { self.literal = literal }
    public init(_ v: Int) { literal = String(v) }

    /// Written without fraction or exponent and within Int's range.
    public var int: Int? {
        guard !literal.contains(where: { $0 == "." || $0 == "e" || $0 == "E" }) else { return nil }
        return Int(literal)
    }

    /// Finite doubles only: `1e999` is nil, not infinity.
    public var double: Double? {
        guard let d = Double(literal), d.isFinite else { return nil }
        return d
    }

    public var isInteger: Bool { !literal.contains(where: { $0 == "." || $0 == "e" || $0 == "E" }) }

    public var description: String { literal }
}

/// An object with its keys in the order they were read or added (writing is deterministic).
public struct JSONObject: Sendable, Equatable {
    public private(set) var pairs: [(key: String, value: JSONValue)] = []

    public init() {}
    public init(_ pairs: [(String, JSONValue)]) {
        for (k, v) in pairs { self[k] = v }
    }

    public subscript(key: String) -> JSONValue? {
        get { pairs.first(where: { $0.key == key })?.value }
        set {
            if let i = pairs.firstIndex(where: { $0.key == key }) {
                if let newValue { pairs[i].value = newValue } else { pairs.remove(at: i) }
            } else if let newValue {
                pairs.append((key, newValue))
            }
        }
    }

    public var keys: [String] { pairs.map(\.key) }

    public static func == (a: JSONObject, b: JSONObject) -> Bool {
        a.pairs.elementsEqual(b.pairs, by: { $0.key == $1.key && $0.value == $1.value })
    }
}

/// Why a line is not acceptable JSON; `offset` is the byte where reading stopped.
public struct JSONError: Error, Sendable, Equatable, CustomStringConvertible {
    public enum Kind: Sendable, Equatable {
        case invalidUTF8, syntax, tooDeep, tooLarge, duplicateKey, invalidEscape, controlCharacter
    }
    public var kind: Kind
    public var message: String
    public var offset: Int

    public var description: String { "\(message) at byte \(offset)" }
}

public enum JSON {
    public struct Limits: Sendable, Equatable {
        /// Arrays and objects nested inside each other; the protocol needs 1.
        public var maxDepth = 16
        /// The whole text; the protocol's line limit.
        public var maxBytes = 16384
        public init(maxDepth: Int = 16, maxBytes: Int = 16384) {
            self.maxDepth = maxDepth
            self.maxBytes = maxBytes
        }
    }

    public static func parse(_ bytes: some Collection<UInt8>, limits: Limits = Limits()) -> Result<JSONValue, JSONError> {
        guard bytes.count <= limits.maxBytes else {
            return .failure(JSONError(kind: .tooLarge, message: "text is \(bytes.count) bytes, more than the limit of \(limits.maxBytes)", offset: limits.maxBytes))
        }
        let buf = Array(bytes)
        if let bad = firstInvalidUTF8(buf) {
            return .failure(JSONError(kind: .invalidUTF8, message: "invalid UTF-8", offset: bad))
        }
        var p = Parser(b: buf, limits: limits)
        do throws(JSONError) {
            p.skipSpace()
            let v = try p.value(depth: 0)
            p.skipSpace()
            guard p.i == buf.count else { throw p.fail(.syntax, "unexpected \(p.describe(p.i)) after the value") }
            return .success(v)
        } catch {
            return .failure(error)
        }
    }

    /// Offset of the first byte that breaks UTF-8 (RFC 3629: no overlongs, no surrogates, ≤ U+10FFFF).
    public static func firstInvalidUTF8(_ b: [UInt8]) -> Int? {
        var i = 0
        let n = b.count
        while i < n {
            let c = b[i]
            if c < 0x80 { i += 1; continue }
            let len: Int
            var lo: UInt8 = 0x80, hi: UInt8 = 0xBF
            switch c {
            case 0xC2...0xDF: len = 2
            case 0xE0: len = 3; lo = 0xA0
            case 0xE1...0xEC, 0xEE...0xEF: len = 3
            case 0xED: len = 3; hi = 0x9F  // no UTF-16 surrogates
            case 0xF0: len = 4; lo = 0x90
            case 0xF1...0xF3: len = 4
            case 0xF4: len = 4; hi = 0x8F
            default: return i
            }
            guard i + len <= n else { return i }
            guard b[i + 1] >= lo, b[i + 1] <= hi else { return i }
            for k in 2..<len where b[i + k] & 0xC0 != 0x80 { return i }
            i += len
        }
        return nil
    }

    // MARK: writing

    /// Compact JSON: no spaces, keys in the object's order, non-ASCII written as UTF-8, and
    /// control characters, `"` and `\` escaped. Non-finite numbers cannot occur (JSONNumber
    /// holds a literal).
    public static func write(_ v: JSONValue) -> [UInt8] {
        var out: [UInt8] = []
        write(v, into: &out)
        return out
    }

    /// How strings are escaped: `wire` is what Crier sends (DEL and every control escaped as
    /// \u00XX except \n \r \t); `canonical` is JavaScript's `JSON.stringify` / Python's
    /// `json.dumps(ensure_ascii=False)`, which signed orders are computed over (docs/protocol.md §14).
    public enum StringStyle: Sendable { case wire, canonical }

    public static func write(_ v: JSONValue, into out: inout [UInt8], style: StringStyle = .wire) {
        switch v {
        case .null: out += Array("null".utf8)
        case .bool(let b): out += Array((b ? "true" : "false").utf8)
        case .number(let n): out += Array(n.literal.utf8)
        case .string(let s): writeString(s, into: &out, style: style)
        case .array(let a):
            out.append(UInt8(ascii: "["))
            for (i, e) in a.enumerated() {
                if i > 0 { out.append(UInt8(ascii: ",")) }
                write(e, into: &out, style: style)
            }
            out.append(UInt8(ascii: "]"))
        case .object(let o):
            out.append(UInt8(ascii: "{"))
            for (i, p) in o.pairs.enumerated() {
                if i > 0 { out.append(UInt8(ascii: ",")) }
                writeString(p.key, into: &out, style: style)
                out.append(UInt8(ascii: ":"))
                write(p.value, into: &out, style: style)
            }
            out.append(UInt8(ascii: "}"))
        }
    }

    static func writeString(_ s: String, into out: inout [UInt8], style: StringStyle = .wire) {
        let hex = Array("0123456789abcdef".utf8)
        out.append(UInt8(ascii: "\""))
        for c in s.utf8 {
            switch c {
            case UInt8(ascii: "\""): out += [UInt8(ascii: "\\"), UInt8(ascii: "\"")]
            case UInt8(ascii: "\\"): out += [UInt8(ascii: "\\"), UInt8(ascii: "\\")]
            case 0x0A: out += [UInt8(ascii: "\\"), UInt8(ascii: "n")]
            case 0x0D: out += [UInt8(ascii: "\\"), UInt8(ascii: "r")]
            case 0x09: out += [UInt8(ascii: "\\"), UInt8(ascii: "t")]
            case 0x08 where style == .canonical: out += [UInt8(ascii: "\\"), UInt8(ascii: "b")]
            case 0x0C where style == .canonical: out += [UInt8(ascii: "\\"), UInt8(ascii: "f")]
            case 0x7F where style == .canonical: out.append(c)
            case 0..<0x20, 0x7F:
                out += Array("\\u00".utf8)
                out.append(hex[Int(c >> 4)])
                out.append(hex[Int(c & 0xF)])
            default: out.append(c)
            }
        }
        out.append(UInt8(ascii: "\""))
    }
}

private struct Parser {
    let b: [UInt8]
    let limits: JSON.Limits
    var i = 0

    init(b: [UInt8], limits: JSON.Limits) {
        self.b = b
        self.limits = limits
    }

    func fail(_ kind: JSONError.Kind, _ message: String) -> JSONError {
        JSONError(kind: kind, message: message, offset: i)
    }

    func describe(_ at: Int) -> String {
        guard at < b.count else { return "end of text" }
        let c = b[at]
        if c >= 0x21 && c < 0x7F { return "'\(Character(Unicode.Scalar(c)))'" }
        return "byte 0x\(String(c, radix: 16))"
    }

    mutating func skipSpace() {
        while i < b.count, b[i] == 0x20 || b[i] == 0x09 || b[i] == 0x0A || b[i] == 0x0D { i += 1 }
    }

    mutating func value(depth: Int) throws(JSONError) -> JSONValue {
        guard i < b.count else { throw fail(.syntax, "unexpected end of text, expected a value") }
        switch b[i] {
        case UInt8(ascii: "{"): return .object(try object(depth: depth + 1))
        case UInt8(ascii: "["): return .array(try array(depth: depth + 1))
        case UInt8(ascii: "\""): return .string(try string())
        case UInt8(ascii: "t"): try literal("true"); return .bool(true)
        case UInt8(ascii: "f"): try literal("false"); return .bool(false)
        case UInt8(ascii: "n"): try literal("null"); return .null
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return .number(try number())
        default: throw fail(.syntax, "unexpected \(describe(i)), expected a value")
        }
    }

    mutating func literal(_ word: String) throws(JSONError) {
        for c in word.utf8 {
            guard i < b.count, b[i] == c else { throw fail(.syntax, "unexpected \(describe(i)), expected \(word)") }
            i += 1
        }
    }

    mutating func object(depth: Int) throws(JSONError) -> JSONObject {
        guard depth <= limits.maxDepth else { throw fail(.tooDeep, "nested more than \(limits.maxDepth) levels deep") }
        i += 1  // {
        var obj = JSONObject()
        var seen = Set<String>()
        skipSpace()
        if i < b.count, b[i] == UInt8(ascii: "}") { i += 1; return obj }
        while true {
            skipSpace()
            guard i < b.count, b[i] == UInt8(ascii: "\"") else { throw fail(.syntax, "unexpected \(describe(i)), expected a key in quotes") }
            let keyAt = i
            let key = try string()
            guard seen.insert(key).inserted else {
                throw JSONError(kind: .duplicateKey, message: "duplicate key \"\(key)\"", offset: keyAt)
            }
            skipSpace()
            guard i < b.count, b[i] == UInt8(ascii: ":") else { throw fail(.syntax, "unexpected \(describe(i)), expected ':'") }
            i += 1
            skipSpace()
            let v = try value(depth: depth)
            obj[key] = v
            skipSpace()
            guard i < b.count else { throw fail(.syntax, "unexpected end of text, expected ',' or '}'") }
            if b[i] == UInt8(ascii: ",") { i += 1; continue }
            if b[i] == UInt8(ascii: "}") { i += 1; return obj }
            throw fail(.syntax, "unexpected \(describe(i)), expected ',' or '}'")
        }
    }

    mutating func array(depth: Int) throws(JSONError) -> [JSONValue] {
        guard depth <= limits.maxDepth else { throw fail(.tooDeep, "nested more than \(limits.maxDepth) levels deep") }
        i += 1  // [
        var out: [JSONValue] = []
        skipSpace()
        if i < b.count, b[i] == UInt8(ascii: "]") { i += 1; return out }
        while true {
            skipSpace()
            out.append(try value(depth: depth))
            skipSpace()
            guard i < b.count else { throw fail(.syntax, "unexpected end of text, expected ',' or ']'") }
            if b[i] == UInt8(ascii: ",") { i += 1; continue }
            if b[i] == UInt8(ascii: "]") { i += 1; return out }
            throw fail(.syntax, "unexpected \(describe(i)), expected ',' or ']'")
        }
    }

    mutating func number() throws(JSONError) -> JSONNumber {
        let start = i
        func isDigit(_ c: UInt8) -> Bool { c >= 0x30 && c <= 0x39 }
        if b[i] == UInt8(ascii: "-") { i += 1 }
        guard i < b.count, isDigit(b[i]) else { throw fail(.syntax, "expected a digit in a number") }
        if b[i] == UInt8(ascii: "0") {
            i += 1
            if i < b.count, isDigit(b[i]) { throw fail(.syntax, "a number may not start with 0") }
        } else {
            while i < b.count, isDigit(b[i]) { i += 1 }
        }
        if i < b.count, b[i] == UInt8(ascii: ".") {
            i += 1
            guard i < b.count, isDigit(b[i]) else { throw fail(.syntax, "expected a digit after '.'") }
            while i < b.count, isDigit(b[i]) { i += 1 }
        }
        if i < b.count, b[i] == UInt8(ascii: "e") || b[i] == UInt8(ascii: "E") {
            i += 1
            if i < b.count, b[i] == UInt8(ascii: "+") || b[i] == UInt8(ascii: "-") { i += 1 }
            guard i < b.count, isDigit(b[i]) else { throw fail(.syntax, "expected a digit in the exponent") }
            while i < b.count, isDigit(b[i]) { i += 1 }
        }
        // ASCII only, so this cannot fail.
        return JSONNumber(literal: String(decoding: b[start..<i], as: UTF8.self))
    }

    mutating func hex4() throws(JSONError) -> UInt32 {
        guard i + 4 <= b.count else { throw fail(.invalidEscape, "\\u needs 4 hex digits") }
        var v: UInt32 = 0
        for _ in 0..<4 {
            let c = b[i]
            let d: UInt32
            switch c {
            case 0x30...0x39: d = UInt32(c - 0x30)
            case 0x41...0x46: d = UInt32(c - 0x41 + 10)
            case 0x61...0x66: d = UInt32(c - 0x61 + 10)
            default: throw fail(.invalidEscape, "\\u needs 4 hex digits, got \(describe(i))")
            }
            v = v << 4 | d
            i += 1
        }
        return v
    }

    mutating func string() throws(JSONError) -> String {
        i += 1  // opening quote
        var out: [UInt8] = []
        var runStart = i
        while true {
            guard i < b.count else { throw fail(.syntax, "unterminated string") }
            let c = b[i]
            if c == UInt8(ascii: "\"") {
                out += b[runStart..<i]
                i += 1
                // The whole input was validated as UTF-8 and escapes produce valid scalars.
                return String(decoding: out, as: UTF8.self)
            }
            if c < 0x20 { throw fail(.controlCharacter, "control character 0x\(String(c, radix: 16)) in a string must be escaped") }
            if c != UInt8(ascii: "\\") { i += 1; continue }
            out += b[runStart..<i]
            let escAt = i
            i += 1
            guard i < b.count else { throw fail(.syntax, "unterminated string") }
            let e = b[i]
            i += 1
            switch e {
            case UInt8(ascii: "\""): out.append(0x22)
            case UInt8(ascii: "\\"): out.append(0x5C)
            case UInt8(ascii: "/"): out.append(0x2F)
            case UInt8(ascii: "b"): out.append(0x08)
            case UInt8(ascii: "f"): out.append(0x0C)
            case UInt8(ascii: "n"): out.append(0x0A)
            case UInt8(ascii: "r"): out.append(0x0D)
            case UInt8(ascii: "t"): out.append(0x09)
            case UInt8(ascii: "u"):
                var v = try hex4()
                if v >= 0xDC00 && v <= 0xDFFF {
                    throw JSONError(kind: .invalidEscape, message: "lone low surrogate \\u\(String(v, radix: 16))", offset: escAt)
                }
                if v >= 0xD800 && v <= 0xDBFF {
                    guard i + 6 <= b.count, b[i] == UInt8(ascii: "\\"), b[i + 1] == UInt8(ascii: "u") else {
                        throw JSONError(kind: .invalidEscape, message: "lone high surrogate \\u\(String(v, radix: 16))", offset: escAt)
                    }
                    i += 2
                    let lo = try hex4()
                    guard lo >= 0xDC00 && lo <= 0xDFFF else {
                        throw JSONError(kind: .invalidEscape, message: "high surrogate \\u\(String(v, radix: 16)) not followed by a low surrogate", offset: escAt)
                    }
                    v = 0x10000 + ((v - 0xD800) << 10) + (lo - 0xDC00)
                }
                // Non-surrogate values up to 0x10FFFF are always valid scalars.
                UTF8.encode(Unicode.Scalar(v)!) { out.append($0) }
            default:
                throw JSONError(kind: .invalidEscape, message: "invalid escape: \\ followed by \(describe(i - 1))", offset: escAt)
            }
            runStart = i
        }
    }
}
