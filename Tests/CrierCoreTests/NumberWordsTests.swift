import Testing
@testable import CrierCore

@Suite struct NumberWordsTests {
    @Test(arguments: [
        ("0", "零"), ("2", "二"), ("10", "十"), ("11", "十一"), ("15", "十五"), ("20", "二十"), ("42", "四十二"),
        ("99", "九十九"), ("100", "一百"), ("101", "一百零一"), ("110", "一百一十"), ("115", "一百一十五"),
        ("1000", "一千"), ("1001", "一千零一"), ("1010", "一千零一十"), ("1234", "一千二百三十四"),
        ("10000", "一万"), ("10010", "一万零一十"), ("10500", "一万零五百"), ("100015", "十万零一十五"),
        ("123456", "十二万三千四百五十六"), ("100000000", "一亿"), ("100000001", "一亿零一"),
        ("100.50", "一百点五"), ("0.05", "零点零五"), ("3.14", "三点一四"), ("12.00", "十二"),
        ("007", "零零七"), ("1234567890123", "一二三四五六七八九零一二三"),
    ])
    func chinese(_ digits: String, _ expected: String) {
        #expect(NumberWords.words(digits, lang: .zh) == expected)
    }

    @Test(arguments: [
        ("0", "zero"), ("7", "seven"), ("13", "thirteen"), ("42", "forty-two"), ("100", "one hundred"),
        ("101", "one hundred one"), ("999", "nine hundred ninety-nine"), ("1000", "one thousand"),
        ("1234567", "one million two hundred thirty-four thousand five hundred sixty-seven"),
        ("100.50", "one hundred point five"), ("0.25", "zero point two five"), ("007", "zero zero seven"),
    ])
    func english(_ digits: String, _ expected: String) {
        #expect(NumberWords.words(digits, lang: .en) == expected)
    }

    @Test func spellsNumbersInsideText() {
        #expect(NumberWords.spellNumbers(in: "新客户来了，42号", lang: .zh) == "新客户来了，四十二号")
        #expect(NumberWords.spellNumbers(in: "收款100.50元", lang: .zh) == "收款一百点五元")
        #expect(NumberWords.spellNumbers(in: "温度-5度", lang: .zh) == "温度负五度")
        #expect(NumberWords.spellNumbers(in: "A-12", lang: .en) == "A-twelve")
        #expect(NumberWords.spellNumbers(in: "table A42 now", lang: .en) == "table A forty-two now")
        #expect(NumberWords.spellNumbers(in: "１２号", lang: .zh) == "十二号")  // full-width digits
        #expect(NumberWords.spellNumbers(in: "v1.2.3", lang: .en) == "v one point two point three")  // a version, not 1.2 and ".three"
        #expect(NumberWords.spellNumbers(in: "no digits", lang: .en) == "no digits")
    }
}

@Suite struct AnnouncerTests {
    let a = Announcer()

    @Test func defaultTemplatesInBothLanguages() {
        #expect(a.announce(.newCustomer(number: 42), lang: .zh).utterance.text == "新客户来了，四十二号")
        #expect(a.announce(.newCustomer(number: 42), lang: .en).utterance.text == "New customer, number forty-two")
        #expect(a.announce(.payment(amount: "100.50"), lang: .zh).utterance.text == "收款一百点五元")
        // Seven digits and more are an amount, not a code read digit by digit (IDR, VND).
        #expect(a.announce(.payment(amount: "1500000"), lang: .en).utterance.text == "Payment received, one million five hundred thousand")
        #expect(a.announce(.payment(amount: "1500000.50"), lang: .en).utterance.text == "Payment received, one million five hundred thousand point five")
        #expect(a.announce(.payment(amount: "1500000"), lang: .zh).utterance.text == "收款一百五十万元")
        #expect(a.announce(.payment(amount: "12345"), lang: .zh).utterance.text == "收款一万二千三百四十五元")
        #expect(Announcer.grouped("1234567.05") == "1,234,567.05" && Announcer.grouped("123") == "123" && Announcer.grouped("00012") == "00012")
        #expect(a.announce(.newCustomers(numbers: [41, 42, 43]), lang: .zh).utterance.text == "新客户来了，四十一号、四十二号、四十三号")
        #expect(a.announce(.newCustomers(numbers: [41, 42, 43]), lang: .en).utterance.text == "New customers: forty-one, forty-two and forty-three")
        #expect(a.announce(.prompt(.linkDown), lang: .zh).utterance.text == "服务连接失败，请检查网络")
    }

    @Test func overrideTextReplacesTemplateAndIsSanitized() {
        let r = a.announce(.newCustomer(number: 1), lang: .zh, overrideText: "请\u{0007}到\n3号窗口\u{202E}")
        #expect(r.utterance.text == "请 到 三号窗口")
        #expect(r.replaced == 2)
    }

    @Test func capIsAppliedBeforeNumbersAreSpelled() {
        let small = Announcer(maxChars: 20)
        let r = small.announce(.text(String(repeating: "9", count: 30)), lang: .en)
        #expect(r.truncated == 10)
        #expect(!r.utterance.text.contains("9"))
    }

    @Test func configuredTemplateIsUsed() {
        var t = Templates()
        t.table[.zh]![.newCustomer] = "{number}号顾客请取餐"
        #expect(Announcer(templates: t).announce(.newCustomer(number: 7), lang: .zh).utterance.text == "七号顾客请取餐")
    }

    // Issue 13 item 12: nothing to say is a rejection, not 0 s of audio acked `spoken`.
    @Test(arguments: ["", " ", "\u{200B}\u{200C}\u{200D}\u{2060}\u{FEFF}", "\u{202E}\u{2066}\u{2069}\u{200F}",
                      "😀👍🏽❤️🍔", "\u{200B}😀\u{202E}", "\u{0007}\u{001B}\u{0085}", "。。。！？", "#%*", "\u{E000}"])
    func textWithNothingToSayIsRejected(_ text: String) {
        for lang in Lang.allCases {
            let r = a.announce(.text(text), lang: lang)
            #expect(!r.speakable, "\(lang): '\(text)' → '\(r.utterance.text)'")
            let ack = a.nothingToSay(Order(id: "T-1", kind: .text(text)), lang: lang)
            #expect(ack?.status == .rejected && ack?.reason == "nothing_to_say" && ack?.id == "T-1")
        }
    }

    @Test(arguments: ["取餐", "A", "5", "😀 42", "ok", "\u{200B}好"])
    func anyLetterOrDigitIsSomethingToSay(_ text: String) {
        #expect(a.announce(.text(text), lang: .zh).speakable)
        #expect(a.nothingToSay(Order(id: "T-2", kind: .text(text)), lang: .en) == nil)
    }

    @Test func ordersWithFixedTemplateWordsAlwaysHaveSomethingToSay() {
        for n in [0, 7, 999_999] {
            for lang in Lang.allCases {
                #expect(a.nothingToSay(Order(id: "N", kind: .newCustomer(number: n)), lang: lang) == nil)
            }
        }
        #expect(a.announce(.newCustomer(number: 0), lang: .zh).utterance.text == "新客户来了，零号")
        #expect(a.nothingToSay(Order(id: "P", kind: .payment(amount: "0.00")), lang: .zh) == nil)
        // A number-only template still says the number.
        var t = Templates()
        t.table[.zh]![.newCustomer] = "{number}"
        #expect(Announcer(templates: t).announce(.newCustomer(number: 0), lang: .zh).speakable)
    }

    @Test func unusableOwnTextFallsBackToTheTemplate() {
        // A real order whose own text is only emoji is still announced, with its template.
        let o = Order(id: "N-1", kind: .newCustomer(number: 42), text: "\u{200B}🎉🎉")
        let r = a.announce(o, lang: .zh)
        #expect(r.speakable && r.fellBackToTemplate)
        #expect(r.utterance.text == "新客户来了，四十二号")
        #expect(a.nothingToSay(o, lang: .zh) == nil)
        // A text order's text is the content: nothing to fall back to.
        #expect(a.nothingToSay(Order(id: "T-3", kind: .text("🎉"), text: "🎉"), lang: .zh)?.reason == "nothing_to_say")
    }
}
