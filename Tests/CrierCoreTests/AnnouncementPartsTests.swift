import Testing
@testable import CrierCore

@Suite("Alert parts (one per coalesced order)")
struct AnnouncementPartsTests {
    @Test("cut per order, in order; together they say what the whole announcement says", arguments: Lang.allCases)
    func partsMatchTheWhole(lang: Lang) {
        let a = Announcer()
        for count in 2...9 {
            let ns = (0..<count).map { 41 + $0 * 7 }
            let whole = a.announce(.newCustomers(numbers: ns), lang: lang).utterance.text
            let parts = a.announceParts(.newCustomers(numbers: ns), lang: lang).map(\.utterance.text)
            #expect(parts.count == count)
            let squash = { (s: String) in s.filter { !$0.isWhitespace } }
            #expect(squash(parts.joined()) == squash(whole), "\(parts) vs \(whole)")
            for (i, n) in ns.enumerated() {
                let word = a.announce(.text(String(n)), lang: lang).utterance.text
                #expect(parts[i].contains(word.trimmed()), "part \(i) \(parts[i]) says \(n)")
            }
        }
    }

    @Test("one order, own text, or a template that cannot be cut: one part")
    func onePart() {
        var t = Templates()
        t.table[.zh]?[.newCustomers] = "{numbers}请取餐，{numbers}"
        #expect(Announcer(templates: t).announceParts(.newCustomers(numbers: [1, 2]), lang: .zh).count == 1)
        #expect(Announcer().announceParts(.newCustomer(number: 3), lang: .zh).count == 1)
        #expect(Announcer().announceParts(.newCustomers(numbers: [1, 2]), lang: .zh, overrideText: "x").count == 1)
    }
}

private extension String {
    func trimmed() -> String {
        var s = Substring(self)
        while s.first?.isWhitespace == true || s.first?.isPunctuation == true { s.removeFirst() }
        while s.last?.isWhitespace == true || s.last?.isPunctuation == true { s.removeLast() }
        return String(s)
    }
}
