/// One kind of order (`"kind"` on the wire): everything the box knows about it, in one entry.
/// The protocol codec (reading and writing the order, its errors), the announcer (which
/// template, what fills it, how several are said together), the signed fields, the config
/// keys `template.<lang>.<name>` with their defaults and the generated docs all derive from
/// `OrderKindSpec.all`; nothing else lists the kinds (the shorthands such as
/// `Order.Kind.newCustomer(number:)` only point at an entry).
///
/// Adding a kind: one entry below (a `static let` and its place in `all`) with its field, the
/// rule for that field's value and its default template in every language (`Lang.allCases`),
/// each with `{field}`. Then its test: update the pins in OrderKindsTests (`theTable`: the
/// kinds, the signed fields) and add an example of its wire form and words; OrderKindsTests
/// walks the table and checks every entry round-trips through the codec, has its templates
/// and config keys, and is in the docs. The docs: run scripts/gen-docs.sh (the config keys in
/// docs/configuration.md and board/crier.conf), and describe it to server authors in
/// docs/protocol.md, section 3, and in docs/speech.md, "Templates" (the test names the lines
/// missing). A new *value* rule (other than integer, amount or text) is code: `Value`,
/// `read`, and `Announcer.spoken`.
public struct OrderKindSpec: Sendable, Equatable, CustomStringConvertible {
    /// How the kind's field is written on the wire and checked when it is read.
    public enum Value: Sendable, Equatable {
        /// A JSON integer (`42`, not `42.0`, `"42"` or `4.2e1`) in the range.
        case integer(ClosedRange<Int>)
        /// A decimal string (`Order.isValidAmount`); a JSON number is refused (binary floats
        /// lose cents). Said with its integer digits grouped by three (`Announcer.grouped`).
        case amount
        /// The words themselves, with a non-space character. The field is `text`: an order of
        /// such a kind has no own text to replace its template, and never falls back to it.
        case text
    }

    /// Several waiting orders of a kind said in one utterance (docs/protocol.md, "Coalescing").
    public struct Coalescing: Sendable, Equatable {
        /// Template name (`template.<lang>.<name>`) of the whole utterance.
        public var name: String
        /// Its placeholder, filled with the list of items.
        public var placeholder: String
        /// Default template per language; each has `{placeholder}`.
        public var templates: [Lang: String]
        /// One item of the list per language, with the kind's `{field}`: "{number}号" is
        /// 41号、42号、43号 in zh. Separators are the language's (`Announcer.listPieces`).
        public var item: [Lang: String]
    }

    /// The wire name (`"kind":"new_customer"`), which is also its template's name.
    public var name: String
    /// The JSON field holding the order's value; also the placeholder the value fills.
    public var field: String
    public var value: Value
    /// Default template per language (`template.<lang>.<name>`); each has `{field}`.
    public var templates: [Lang: String]
    /// nil: always said one order at a time.
    public var coalescing: Coalescing?

    public static func == (a: OrderKindSpec, b: OrderKindSpec) -> Bool { a.name == b.name }
    public var description: String { name }

    // MARK: the table

    public static let newCustomer = OrderKindSpec(
        name: "new_customer", field: "number", value: .integer(Order.numberRange),
        templates: [.zh: "新客户来了，{number}号", .en: "New customer, number {number}"],
        coalescing: Coalescing(name: "new_customers", placeholder: "numbers",
                               templates: [.zh: "新客户来了，{numbers}", .en: "New customers: {numbers}"],
                               item: [.zh: "{number}号", .en: "{number}"]))

    public static let payment = OrderKindSpec(
        name: "payment", field: "amount", value: .amount,
        templates: [.zh: "收款{amount}元", .en: "Payment received, {amount}"])

    public static let text = OrderKindSpec(
        name: "text", field: "text", value: .text,
        templates: [.zh: "{text}", .en: "{text}"])

    /// Every kind, in the order the docs and the config keys list them.
    public static let all: [OrderKindSpec] = [newCustomer, payment, text]

    // MARK: derived

    public static func named(_ name: String) -> OrderKindSpec? { all.first { $0.name == name } }

    /// "new_customer, payment or text", for error messages.
    public static var namesInProse: String {
        let names = all.map(\.name)
        guard names.count > 1 else { return names.first ?? "" }
        return names.dropLast().joined(separator: ", ") + " or " + names.last!
    }

    /// Every template an order can be said with, in table order, with its placeholder and
    /// defaults: the kind's own, then its coalesced one.
    public static var templates: [(name: String, placeholder: String, defaults: [Lang: String])] {
        var out: [(name: String, placeholder: String, defaults: [Lang: String])] = []
        for k in all {
            out.append((name: k.name, placeholder: k.field, defaults: k.templates))
            if let c = k.coalescing { out.append((name: c.name, placeholder: c.placeholder, defaults: c.templates)) }
        }
        return out
    }

    /// The kinds' fields, in table order, each once (signed orders cover them).
    public static var fields: [String] {
        var out: [String] = []
        for k in all where !out.contains(k.field) { out.append(k.field) }
        return out
    }

    /// Reads and checks the kind's field of an order (after `kind` and the optional `text`).
    func read(_ r: FieldReader) throws(ProtocolError) -> Order.Kind.Value {
        switch value {
        case .integer(let range):
            guard r.obj[field] != nil else { throw r.missing(field, because: "kind \(name)") }
            let n = try r.int(field)
            guard range.contains(n) else {
                throw r.invalid(field, "must be \(range.lowerBound)...\(range.upperBound), got \(n)")
            }
            return .integer(n)
        case .amount:
            guard r.obj[field] != nil else { throw r.missing(field, because: "kind \(name)") }
            if case .number(let n)? = r.obj[field] {
                throw r.wrongType(field, "must be a decimal string like \"100.50\", got the number \(n.literal)")
            }
            let a = try r.string(field)
            guard Order.isValidAmount(a) else {
                throw r.invalid(field, "must be a decimal string like \"100.50\" (at most 2 decimals, no sign), got \"\(a)\"")
            }
            return .string(a)
        case .text:
            guard let t = try r.optionalString(field) else { throw r.missing(field, because: "kind \(name)") }
            guard t.contains(where: { !$0.isWhitespace }) else { throw r.invalid(field, "is empty") }
            return .string(t)
        }
    }
}

extension Order {
    /// An order's kind and the value of its field: `new_customer` 42, `payment` "100.50".
    public struct Kind: Sendable, Equatable, CustomStringConvertible {
        public enum Value: Sendable, Equatable {
            case integer(Int)
            case string(String)

            public var json: JSONValue {
                switch self {
                case .integer(let n): .number(JSONNumber(n))
                case .string(let s): .string(s)
                }
            }

            /// As written in a template before number spelling (`Announcer.grouped` for amounts).
            public var text: String {
                switch self {
                case .integer(let n): String(n)
                case .string(let s): s
                }
            }
        }

        public var spec: OrderKindSpec
        public var value: Value

        /// `value` must satisfy `spec.value` (the codec checks what comes from outside).
        public init(_ spec: OrderKindSpec, _ value: Value) {
            self.spec = spec
            self.value = value
        }

        public var name: String { spec.name }
        public var description: String { "\(spec.name) \(spec.field)=\(value.text)" }

        /// Shorthands for code and tests; a new kind needs none (`Kind(spec, value)`).
        /// 0...999999.
        public static func newCustomer(number: Int) -> Kind { Kind(.newCustomer, .integer(number)) }
        /// A decimal string: digits, optionally `.` and 1-2 digits ("100.50").
        public static func payment(amount: String) -> Kind { Kind(.payment, .string(amount)) }
        public static func text(_ t: String) -> Kind { Kind(.text, .string(t)) }
    }
}
