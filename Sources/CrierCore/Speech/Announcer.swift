/// What an alert or prompt is about, before it becomes words.
public enum AnnouncementContent: Sendable, Equatable {
    /// One order: its kind's template, filled with its value.
    case order(Order.Kind)
    /// Several waiting orders of a kind that coalesces (`OrderKindSpec.coalescing`), said in
    /// one utterance: their values, in the order said.
    case coalesced(OrderKindSpec, [Order.Kind.Value])
    case prompt(Templates.Name)
    /// A prompt whose template takes values (`updated`: `{version}`).
    case filled(Templates.Name, [String: String])

    /// Shorthands for code and tests; a new kind needs none.
    public static func newCustomer(number: Int) -> Self { .order(.newCustomer(number: number)) }
    /// Several waiting `new_customer` alerts said in one utterance.
    public static func newCustomers(numbers: [Int]) -> Self { .coalesced(.newCustomer, numbers.map { .integer($0) }) }
    /// `amount` is a validated decimal string such as "100.50".
    public static func payment(amount: String) -> Self { .order(.payment(amount: amount)) }
    public static func text(_ t: String) -> Self { .order(.text(t)) }
}

/// Text ready for the synthesizer, in one language.
public struct Utterance: Sendable, Equatable {
    public var text: String
    public var lang: Lang
    /// Said, never logged (the local page's pairing code).
    public var secret = false
    public init(text: String, lang: Lang) {
        self.text = text
        self.lang = lang
    }
}

/// Turns content into the exact words spoken: template, then sanitizing, then numbers as words.
public struct Announcer: Sendable {
    public var templates: Templates
    public var maxChars: Int

    public init(templates: Templates = Templates(), maxChars: Int = 500) {
        self.templates = templates
        self.maxChars = maxChars
    }

    public struct Result: Sendable, Equatable {
        public var utterance: Utterance
        /// Characters cut by the length cap, for the log.
        public var truncated: Int
        public var replaced: Int
        /// Characters of scripts the voice leaves out (`TextSanitizer.leftOut`), for the log.
        public var leftOut = 0
        /// Runs of more than `TextSanitizer.maxWordScalars` said in pieces, for the log.
        public var brokenWords = 0
        /// The words have something a voice can say (`TextSanitizer.isSpeakable`). When false,
        /// the alert must not be played and acked `spoken`: it is rejected `nothing_to_say`.
        public var speakable: Bool
        /// The order's own text had nothing to say; its template was used.
        public var fellBackToTemplate = false
    }

    /// An amount with its integer digits in groups of three (1500000 → 1,500,000), so that it
    /// is read as a number whatever the template says around it: more than 6 bare digits with
    /// no unit after them read as a code, digit by digit ("Payment received, one five zero
    /// zero…" for 1500000, a normal amount in IDR or VND). Anything else (a leading zero,
    /// not digits) is left as it is.
    static func grouped(_ amount: String) -> String {
        let parts = amount.split(separator: ".", maxSplits: 1, omittingEmptySubsequences: false)
        let int = Array(parts[0].utf8)
        guard int.count > 3, int.first != UInt8(ascii: "0"), int.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) else { return amount }
        var out: [UInt8] = []
        for (k, d) in int.enumerated() {
            if k > 0, (int.count - k) % 3 == 0 { out.append(UInt8(ascii: ",")) }
            out.append(d)
        }
        return String(decoding: out, as: UTF8.self) + (parts.count > 1 ? "." + parts[1] : "")
    }

    /// `overrideText` is an order's own `text`, which replaces the template, unless it has
    /// nothing to say: then a `new_customer` or `payment` order is announced with its template
    /// (the order is real, only its text is unusable) and `fellBackToTemplate` says so.
    public func announce(_ content: AnnouncementContent, lang: Lang, overrideText: String? = nil) -> Result {
        let raw: String
        switch content {
        case .order(let kind):
            raw = Templates.fill(templates[lang, Templates.Name(kind: kind.spec)], [kind.spec.field: Self.spoken(kind)])
        case .coalesced(let spec, let values):
            let pieces = Self.listPieces(values.map { Order.Kind(spec, $0) }, lang: lang)
            raw = Templates.fill(templates[lang, Self.coalescedName(spec)], [spec.coalescing?.placeholder ?? spec.field: pieces.joined()])
        case .prompt(let name):
            raw = templates[lang, name]
        case .filled(let name, let values):
            raw = Templates.fill(templates[lang, name], values)
        }
        if let overrideText {
            let r = render(overrideText, lang: lang)
            if r.speakable { return r }
            if case .order(let kind) = content, kind.spec.value == .text { return r }
            var t = render(raw, lang: lang)
            t.fellBackToTemplate = true
            return t
        }
        return render(raw, lang: lang)
    }

    func render(_ raw: String, lang: Lang) -> Result {
        // Sanitize before spelling numbers so the cap counts what the sender wrote, and
        // spelling cannot be used to smuggle characters past it.
        let clean = TextSanitizer.clean(raw, maxChars: maxChars, lang: lang)
        // Words broken last, so that no later step can join a run again.
        let (spoken, broken) = TextSanitizer.breakLongWords(NumberWords.spellNumbers(in: clean.text, lang: lang))
        return Result(utterance: Utterance(text: spoken, lang: lang), truncated: clean.truncated, replaced: clean.replaced,
                      leftOut: clean.leftOut, brokenWords: broken, speakable: TextSanitizer.isSpeakable(spoken))
    }

    /// What `order` would say, as the queue will announce it (its own `text` over the template).
    public func announce(_ order: Order, lang: Lang) -> Result {
        announce(.order(order.kind), lang: lang, overrideText: order.text)
    }

    /// The value as it goes into its template: an amount with its digits grouped (`grouped`).
    static func spoken(_ kind: Order.Kind) -> String {
        kind.spec.value == .amount ? grouped(kind.value.text) : kind.value.text
    }

    /// The template of several orders of `spec` said together.
    static func coalescedName(_ spec: OrderKindSpec) -> Templates.Name {
        Templates.Name(rawValue: spec.coalescing?.name ?? spec.name)
    }

    /// The rejection for an order with nothing to say (only emoji, symbols, invisible or
    /// control characters), or nil when it can be said. A template with fixed words
    /// ("新客户来了，{number}号") always has something to say.
    public func nothingToSay(_ order: Order, lang: Lang) -> Ack? {
        guard !announce(order, lang: lang).speakable else { return nil }
        return Ack(id: order.id, status: .rejected, reason: Ack.Reason.nothingToSay,
                   message: "nothing to say: no letter or digit left after removing control, invisible and emoji characters and scripts the voice does not read")
    }
}
