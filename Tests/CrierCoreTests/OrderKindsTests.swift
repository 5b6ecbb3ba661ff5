import Testing
@testable import CrierCore
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The table of order kinds (`OrderKindSpec.all`) is the one place a kind is described: these
/// tests walk it, so a new entry is checked end to end (wire form, errors, words in every
/// language, config keys, signed fields, docs) without a test of its own for each of them.
@Suite("Order kinds: one table")
struct OrderKindsTests {
    /// Valid values of a kind's field, at the edges of its rule.
    static func samples(_ k: OrderKindSpec) -> [Order.Kind.Value] {
        switch k.value {
        case .integer(let r): [.integer(r.lowerBound), .integer(r.upperBound), .integer((r.lowerBound + r.upperBound) / 2)]
        case .amount: [.string("0"), .string("9.9"), .string("100.50"), .string("1500000")]
        case .text: [.string("请到前台取餐 7"), .string("Table 12, please")]
        }
    }

    static func fileText(_ relative: String) -> String? {
        // Tests/CrierCoreTests/OrderKindsTests.swift → the repository root.
        var root = #filePath.split(separator: "/", omittingEmptySubsequences: false).dropLast(3).joined(separator: "/")
        if root.isEmpty { root = "/" }
        guard let f = fopen(root + "/" + relative, "rb") else { return nil }
        defer { fclose(f) }
        var bytes: [UInt8] = []
        var buf = [UInt8](repeating: 0, count: 65536)
        while true {
            let n = fread(&buf, 1, buf.count, f)
            if n <= 0 { break }
            bytes += buf[0..<n]
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    @Test("the table: its kinds, and the wire and signed fields derived from it")
    func theTable() {
        // Pins: a new kind changes what servers may send and what they sign (docs/protocol.md),
        // so it updates these lines on purpose.
        #expect(OrderKindSpec.all.map(\.name) == ["new_customer", "payment", "text"])
        #expect(OrderKindSpec.all.map(\.field) == ["number", "amount", "text"])
        #expect(OrderKindSpec.namesInProse == "new_customer, payment or text")
        // The canonical form of signed orders (docs/protocol.md) is unchanged by the table.
        #expect(OrderSigning.canonicalFields == ["type", "id", "kind", "number", "amount", "text", "lang", "priority", "ttl", "ts"])
        #expect(Set(OrderKindSpec.all.map(\.name)).count == OrderKindSpec.all.count, "two kinds with one name")
        for k in OrderKindSpec.all {
            #expect(OrderKindSpec.named(k.name) == k)
            #expect(OrderSigning.canonicalFields.contains(k.field), "\(k.name): its field \(k.field) is not signed")
            if k.value == .text { #expect(k.field == "text", "\(k.name): a text kind's words are its `text`") }
        }
        #expect(OrderKindSpec.named("no_such_kind") == nil)
    }

    @Test("every kind round-trips through the codec, with and without the optional fields")
    func roundTrip() throws {
        for k in OrderKindSpec.all {
            for v in Self.samples(k) {
                for o in [Order(id: "K-\(k.name)", kind: Order.Kind(k, v)),
                          Order(id: "K2", kind: Order.Kind(k, v), lang: .en, text: k.value == .text ? nil : "own words",
                                priority: 5, ttl: 60)] {
                    let line = ProtocolCodec.encode(.order(o))
                    let obj = try JSON.parse(line).get()
                    guard case .object(let fields) = obj else { Issue.record("not an object"); continue }
                    #expect(fields["kind"] == .string(k.name))
                    #expect(fields[k.field] == v.json, "\(k.name): \(String(decoding: line, as: UTF8.self))")
                    #expect(ProtocolCodec.decode(line) == .success(.order(o)), "\(k.name): \(String(decoding: line, as: UTF8.self))")
                }
            }
            // Its field is required, and the error names the field and the kind.
            let bare = #"{"type":"order","id":"M-1","kind":"\#(k.name)"}"#
            guard case .failure(let e) = ProtocolCodec.decode(Array(bare.utf8)) else { Issue.record("\(k.name) without \(k.field) accepted"); continue }
            #expect(e.kind == .missingField)
            #expect(e.message == "order: missing field \"\(k.field)\" (required for kind \(k.name))")
            #expect(e.rejectedAck == Ack(id: "M-1", status: .rejected, reason: Ack.Reason.invalidOrder, message: e.message))
        }
        let unknown = ProtocolCodec.decode(Array(#"{"type":"order","id":"U","kind":"no_such_kind","number":1}"#.utf8))
        guard case .failure(let e) = unknown else { Issue.record("unknown kind accepted"); return }
        #expect(e.message == "order: field \"kind\" must be \(OrderKindSpec.namesInProse), got \"no_such_kind\"")
    }

    @Test("every kind has a template in every language with its placeholder, and says its value")
    func templates() {
        let schema = CrierConfig.schema
        for k in OrderKindSpec.all {
            for t in OrderKindSpec.templates where t.name == k.name || t.name == k.coalescing?.name {
                let (name, placeholder, defaults) = (t.name, t.placeholder, t.defaults)
                for lang in Lang.allCases {
                    let key = "template.\(lang.rawValue).\(name)"
                    guard let d = defaults[lang] else { Issue.record("\(key): no default"); continue }
                    #expect(Templates.placeholderNames(in: d) == [placeholder], "\(key) = \(d)")
                    #expect(Templates()[lang, Templates.Name(rawValue: name)] == d)
                    #expect(schema.first { $0.name == key }?.defaultText == d, "\(key) is not a config key with its default")
                }
            }
            if let c = k.coalescing {
                for lang in Lang.allCases {
                    #expect(c.item[lang].map(Templates.placeholderNames(in:)) == [k.field], "\(k.name): coalesced item (\(lang.rawValue))")
                }
            }
            // Said in every language: the placeholder filled, something to say, no braces left.
            for v in Self.samples(k) {
                for lang in Lang.allCases {
                    let r = Announcer().announce(Order(id: "S", kind: Order.Kind(k, v)), lang: lang)
                    #expect(r.speakable && !r.utterance.text.contains("{"), "\(k.name) \(v) (\(lang.rawValue)): \(r.utterance.text)")
                }
            }
        }
    }

    @Test("every kind is in the generated docs (configuration.md, crier.conf) and described in protocol.md and speech.md")
    func docs() throws {
        let table = CrierConfig.markdownTable(), example = CrierConfig.example()
        let configuration = try #require(Self.fileText("docs/configuration.md"))
        let conf = try #require(Self.fileText("board/crier.conf"))
        let protocolDoc = try #require(Self.fileText("docs/protocol.md"))
        let speech = try #require(Self.fileText("docs/speech.md"))
        let tableCurrent = configuration.contains(table), exampleCurrent = conf == example
        #expect(tableCurrent, "docs/configuration.md is out of date: run scripts/gen-docs.sh")
        #expect(exampleCurrent, "board/crier.conf is out of date: run scripts/gen-docs.sh")
        let kindRow = protocolDoc.split(separator: "\n").first { $0.hasPrefix("| `kind` |") }.map(String.init) ?? ""
        for t in OrderKindSpec.templates {
            for lang in Lang.allCases {
                let key = "template.\(lang.rawValue).\(t.name)", d = t.defaults[lang] ?? ""
                #expect(table.contains("| `\(key)` | `\(d)` |"), "\(key) not in `crier config --markdown`")
                #expect(example.contains("\(key) = "), "\(key) not in `crier config --example`")
            }
            let zh = t.defaults[.zh] ?? "", en = t.defaults[.en] ?? ""
            // protocol.md, section 3: the default words of each kind, for server authors.
            #expect(protocolDoc.contains("| `\(zh)`") && protocolDoc.contains("| `\(en)`"),
                    "docs/protocol.md, section 3, lacks the templates of \(t.name): \(zh) / \(en)")
            #expect(speech.contains("| \(t.name)") && speech.contains("| \(zh)") && speech.contains("| \(en)"),
                    "docs/speech.md, Templates, lacks the row of \(t.name)")
        }
        for k in OrderKindSpec.all {
            #expect(kindRow.contains("`\(k.name)`"), "docs/protocol.md: the `kind` row does not list \(k.name)")
            let fieldRow = protocolDoc.split(separator: "\n").first { $0.hasPrefix("| `\(k.field)` |") }.map(String.init) ?? ""
            #expect(fieldRow.contains("for `\(k.name)`"), "docs/protocol.md: no row for the field \(k.field), for `\(k.name)`")
        }
    }
}
