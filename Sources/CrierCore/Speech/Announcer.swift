/// What an alert or prompt is about, before it becomes words.
public enum AnnouncementContent: Sendable, Equatable {
    case newCustomer(number: Int)
    /// Several waiting `new_customer` alerts said in one utterance.
    case newCustomers(numbers: [Int])
    /// `amount` is a validated decimal string such as "100.50".
    case payment(amount: String)
    case text(String)
    case prompt(Templates.Name)
}

/// Text ready for the synthesizer, in one language.
public struct Utterance: Sendable, Equatable {
    public var text: String
    public var lang: Lang
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
    }

    /// `overrideText` is an order's own `text`, which replaces the template.
    public func announce(_ content: AnnouncementContent, lang: Lang, overrideText: String? = nil) -> Result {
        let raw: String
        if let overrideText {
            raw = overrideText
        } else {
            switch content {
            case .newCustomer(let n):
                raw = Templates.fill(templates[lang, .newCustomer], ["number": String(n)])
            case .newCustomers(let ns):
                raw = Templates.fill(templates[lang, .newCustomers], ["numbers": Self.list(ns, lang: lang)])
            case .payment(let amount):
                raw = Templates.fill(templates[lang, .payment], ["amount": amount])
            case .text(let t):
                raw = Templates.fill(templates[lang, .text], ["text": t])
            case .prompt(let name):
                raw = templates[lang, name]
            }
        }
        // Sanitize before spelling numbers so the cap counts what the sender wrote, and
        // spelling cannot be used to smuggle characters past it.
        let clean = TextSanitizer.clean(raw, maxChars: maxChars)
        let spoken = NumberWords.spellNumbers(in: clean.text, lang: lang)
        return Result(utterance: Utterance(text: spoken, lang: lang), truncated: clean.truncated, replaced: clean.replaced)
    }

    /// zh: 41号、42号、43号; en: 41, 42 and 43.
    static func list(_ ns: [Int], lang: Lang) -> String {
        switch lang {
        case .zh:
            return ns.map { "\($0)号" }.joined(separator: "、")
        case .en:
            let items = ns.map(String.init)
            guard items.count > 1 else { return items.first ?? "" }
            return items.dropLast().joined(separator: ", ") + " and " + items.last!
        }
    }
}
