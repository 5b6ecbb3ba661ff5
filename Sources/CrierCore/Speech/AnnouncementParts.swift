extension Announcer {
    /// The words of an alert cut where each of its orders' part ends, for an alert that covers
    /// several orders (coalesced `new_customer`): each part is synthesized on its own and the
    /// clips are joined, so the daemon knows where in the sound each order's part ends and acks
    /// `spoken` only the orders whose part was heard (issue 13, item 5; docs/protocol.md,
    /// "Partial alerts"). The template's text before `{numbers}` goes with the first part,
    /// what follows with the last. A template without exactly one `{numbers}` cannot be cut:
    /// one part, and all of the alert's orders are heard or none.
    public func announceParts(_ content: AnnouncementContent, lang: Lang, overrideText: String? = nil) -> [Result] {
        guard overrideText == nil, case .newCustomers(let ns) = content, ns.count > 1 else {
            return [announce(content, lang: lang, overrideText: overrideText)]
        }
        let template = templates[lang, .newCustomers]
        let pieces = template.split(separator: "{numbers}", omittingEmptySubsequences: false)
        guard pieces.count == 2 else { return [announce(content, lang: lang)] }
        var items = Self.listPieces(ns, lang: lang)
        items[0] = Templates.fill(String(pieces[0]), [:]) + items[0]
        items[items.count - 1] += Templates.fill(String(pieces[1]), [:])
        return items.map { render($0, lang: lang) }
    }

    /// `list(_:lang:)` cut after each item, separators kept with the item before them; joined
    /// they are exactly `list`.
    static func listPieces(_ ns: [Int], lang: Lang) -> [String] {
        switch lang {
        case .zh:
            return ns.indices.map { i in "\(ns[i])号" + (i < ns.count - 1 ? "、" : "") }
        case .en:
            return ns.indices.map { i in
                String(ns[i]) + (i == ns.count - 1 ? "" : i == ns.count - 2 ? " and " : ", ")
            }
        }
    }
}
