extension Announcer {
    /// The words of an alert cut where each of its orders' part ends, for an alert that covers
    /// several orders (coalesced `new_customer`): each part is synthesized on its own and the
    /// clips are joined, so the daemon knows where in the sound each order's part ends and acks
    /// `spoken` only the orders whose part was heard (issue 13, item 5; docs/protocol.md,
    /// "Partial alerts"). The template's text before its placeholder (`{numbers}`) goes with
    /// the first part, what follows with the last. A template without exactly one placeholder
    /// cannot be cut: one part, and all of the alert's orders are heard or none.
    public func announceParts(_ content: AnnouncementContent, lang: Lang, overrideText: String? = nil) -> [Result] {
        guard overrideText == nil, case .coalesced(let spec, let values) = content, values.count > 1 else {
            return [announce(content, lang: lang, overrideText: overrideText)]
        }
        let placeholder = "{" + (spec.coalescing?.placeholder ?? spec.field) + "}"
        let template = templates[lang, Self.coalescedName(spec)]
        let pieces = template.split(separator: placeholder, omittingEmptySubsequences: false)
        guard pieces.count == 2 else { return [announce(content, lang: lang)] }
        var items = Self.listPieces(values.map { Order.Kind(spec, $0) }, lang: lang)
        items[0] = Templates.fill(String(pieces[0]), [:]) + items[0]
        items[items.count - 1] += Templates.fill(String(pieces[1]), [:])
        return items.map { render($0, lang: lang) }
    }

    /// The list of several orders of one kind (zh: 41号、42号、43号; en: 41, 42 and 43), cut
    /// after each item, separators kept with the item before them; joined they are the list.
    /// Each item is its kind's `Coalescing.item` for the language.
    static func listPieces(_ kinds: [Order.Kind], lang: Lang) -> [String] {
        let items = kinds.map { k in
            Templates.fill(k.spec.coalescing?.item[lang] ?? "{\(k.spec.field)}", [k.spec.field: spoken(k)])
        }
        switch lang {
        case .zh:
            return items.indices.map { i in items[i] + (i < items.count - 1 ? "、" : "") }
        case .en:
            return items.indices.map { i in
                items[i] + (i == items.count - 1 ? "" : i == items.count - 2 ? " and " : ", ")
            }
        }
    }
}
