import Testing
@testable import CrierCore

/// Outside the macro (Swift 6.0.3 crashes on closures inside `@Test(arguments:)`).
let voiceEnglishExamples = SpokenText.examples.filter { $0.en != nil }

/// Issue 33 step 1: the clip inventory and the splice planner. The plan's clips, read out, are
/// the words `crier say --print` prints; only the shop's own words are left to espeak-ng.
@Suite struct VoicePlanTests {
    static let planners: [Lang: SplicePlanner] = [
        .zh: SplicePlanner(lang: .zh, clips: VoiceInventory.clips(lang: .zh)),
        .en: SplicePlanner(lang: .en, clips: VoiceInventory.clips(lang: .en)),
    ]

    /// What `crier say --print TEXT` prints (default config).
    static func sayPrint(_ text: String, _ lang: Lang) -> String {
        Announcer().announce(.text(text), lang: lang).utterance.text
    }

    /// The plan reads out the words exactly, and every gap is words the shop wrote (they are in
    /// the text as written): every word a rule produces has a clip.
    static func check(_ input: String, _ lang: Lang, expectCovered: Bool? = nil) {
        let words = sayPrint(input, lang)
        let plan = planners[lang]!.plan(words)
        #expect(plan.words == words, "\(lang) \(input): plan reads \(plan.words)")
        let written = TextSanitizer.clean(input, maxChars: 500).text
        for g in plan.gaps {
            #expect(written.contains(g.trimmingSpaces), "\(lang) \(input): gap \"\(g)\" is not shop text; words \(words); plan \(plan.steps)")
        }
        if let expectCovered { #expect(plan.covered == expectCovered, "\(lang) \(input): gaps \(plan.gaps)") }
    }

    @Test(arguments: SpokenText.examples)
    func chineseExampleRow(_ e: SpokenTextExample) {
        // A row whose input has no hanzi and no Latin word is all numbers and symbols: covered.
        let shopWords = e.input.unicodeScalars.contains { $0.value >= 0x4E00 && $0.value <= 0x9FFF }
            || e.input.split(whereSeparator: { !($0.isASCII && $0.isLetter) }).contains { w in w.count > 1 && w.contains { $0.isLowercase } }
        Self.check(e.input, .zh, expectCovered: shopWords ? nil : true)
    }

    @Test(arguments: voiceEnglishExamples)
    func englishExampleRow(_ e: SpokenTextExample) {
        Self.check(e.input, .en)
    }

    @Test func exampleRowsThatAreAllNumbersAreCoveredInEnglish() {
        for input in ["#42", "No.42", "A012", "#A012", "AB12", "3,500", "1,234,567", "12345678901234", "$3.05", "$1,234.56",
                      "£2.50", "50%-80%", "12:00", "12:00:30", "00:00", "22:00-24:00", "2026-12-01", "2026.12.01-2026.12.03",
                      "3/15", "3~5", "+86 13800138000", "400-820-8820", "-3℃~5℃", "1/2", "3/4", "1+1", "60℃", "A-12", "2×3",
                      "1.2.3", "0.05", "€5", "10010", "3:1"] {
            Self.check(input, .en, expectCovered: true)
        }
        // The shop's own words are the only gaps.
        #expect(Self.planners[.en]!.plan(Self.sayPrint("Table 5, 2 drinks", .en)).gaps == ["Table", "drinks"])
        #expect(Self.planners[.zh]!.plan(Self.sayPrint("请到3号窗口取餐", .zh)).gaps == ["请", "窗口取餐"])
        #expect(Self.planners[.en]!.plan(Self.sayPrint("9:00 am", .en)).gaps == ["am"])
    }

    @Test func aPlanNamesTheClipsInOrderWithPausesAtPunctuation() {
        let zh = Self.planners[.zh]!.plan("新客户来了，四十二号")
        #expect(zh.steps == [.clip(name: "tpl_new_customer", text: "新客户来了"), .pause(ms: 200, text: "，"),
                             .clip(name: "four", text: "四"), .clip(name: "ten", text: "十"), .clip(name: "two", text: "二"),
                             .clip(name: "number", text: "号")])
        let en = Self.planners[.en]!.plan("New customer, number forty-two")
        #expect(en.clipNames == ["tpl_new_customer", "number", "forty_two"])
        #expect(en.steps[1] == .pause(ms: 200, text: ","))
        // twenty-first: no clip for the whole word in a pack without it, so its parts.
        let partial = SplicePlanner(lang: .en, clips: VoiceInventory.clips(lang: .en).filter { $0.name != "twenty_first" })
        #expect(partial.plan("May twenty-first").steps == [.clip(name: "may", text: "May"), .pause(ms: 0, text: " "),
                                                           .clip(name: "twenty", text: "twenty"), .pause(ms: 0, text: "-"),
                                                           .clip(name: "first", text: "first")])
        // A word the pack lacks is a gap, named.
        let noYuan = SplicePlanner(lang: .zh, clips: VoiceInventory.clips(lang: .zh).filter { $0.name != "yuan" })
        #expect(noYuan.plan("收款八元").gaps == ["元"])
        #expect(!noYuan.plan("收款八元").covered)
    }

    /// Every template, in both languages, with the values the daemon fills in: said from clips alone.
    @Test func everyTemplateWithEveryKindOfValueIsCovered() {
        var r = SplitMix64(seed: 33)
        let announcer = Announcer()
        for lang in Lang.allCases {
            let planner = Self.planners[lang]!
            var contents: [AnnouncementContent] = Templates.Name.allCases.filter { Templates.placeholders[$0] == nil }.map { .prompt($0) }
            contents += [.filled(.updated, ["version": "1.4.2"]), .filled(.updateFailed, ["version": "2.0.0", "from_version": "1.9.10"])]
            for _ in 0..<300 {
                contents.append(.newCustomer(number: Int.random(in: 0...99_999, using: &r)))
                contents.append(.newCustomers(numbers: (0..<Int.random(in: 2...5, using: &r)).map { _ in Int.random(in: 1...9999, using: &r) }))
                let cents = Int.random(in: 0...99, using: &r)
                contents.append(.payment(amount: "\(UInt64.random(in: 0...9_999_999_999, using: &r))" + (cents % 3 == 0 ? "" : ".\(cents / 10)\(cents % 10)")))
            }
            for c in contents {
                for part in announcer.announceParts(c, lang: lang) + [announcer.announce(c, lang: lang)] {
                    let words = part.utterance.text
                    let plan = planner.plan(words)
                    #expect(plan.words == words)
                    #expect(plan.covered, "\(lang) \(c): \(words) has gaps \(plan.gaps)")
                }
            }
        }
    }

    /// Seeded random numbers, every way SpokenText reads them: covered.
    @Test func numbersOfEveryLengthAreCovered() {
        var r = SplitMix64(seed: 3333)
        for lang in Lang.allCases {
            let planner = Self.planners[lang]!
            for _ in 0..<2000 {
                let digits = Int.random(in: 1...12, using: &r)
                let n = UInt64.random(in: 0..<UInt64(Self.pow10(digits)), using: &r)
                for words in [NumberWords.integer(n, lang: lang), NumberWords.words("\(n).\(n % 100)", lang: lang),
                              NumberWords.digitByDigit("\(n)", lang: lang), lang == .en ? Reader.enOrdinal(Int(n % 1_000_000)) : "第" + NumberWords.zh(n),
                              lang == .en ? Reader.enYear(Int(n % 3000)) : Reader.digitWords("\(n)", lang: .zh, phone: true)] {
                    let plan = planner.plan(words)
                    #expect(plan.words == words)
                    #expect(plan.covered, "\(lang) \(n): \(words) has gaps \(plan.gaps)")
                }
            }
        }
    }

    static func pow10(_ n: Int) -> Int { (0..<n).reduce(1) { a, _ in a * 10 } }

    /// The seeded shop texts of SpokenTextTests: only what the shop wrote is ever a gap.
    @Test func seededShopTextsLeaveOnlyShopWordsToEspeak() {
        for lang in Lang.allCases {
            for (text, _) in SpokenTextSamples.texts(seed: 33, count: 500) {
                Self.check(text, lang)
            }
        }
    }

    @Test func theInventoryHasValidUniqueNamesAndEachClipPlansAsItself() {
        for lang in Lang.allCases {
            let clips = VoiceInventory.clips(lang: lang)
            #expect(Set(clips.map(\.name)).count == clips.count, "\(lang): duplicate names")
            #expect(Set(clips.map { VoiceInventory.key($0.text, lang: lang) }).count == clips.count, "\(lang): duplicate texts")
            for c in clips {
                #expect(VoiceClip.isValidName(c.name), "\(lang): bad name \(c.name)")
                #expect(Self.planners[lang]!.plan(c.text).steps == [.clip(name: c.name, text: c.text)], "\(lang): \(c)")
            }
            // Status prompts and template fragments come first: the script starts with what the box says most.
            #expect(clips.first?.kind == .template)
            #expect(clips.contains { $0.name == "tpl_link_down_2" && $0.text == (lang == .zh ? "请检查网络" : "please check the network") })
        }
        #expect(VoiceInventory.clips(lang: .zh).count < 150)
        #expect(VoiceInventory.clips(lang: .en).count < 330)
    }

    /// A shop's own templates bring their own clips; the plan of the filled template uses them.
    @Test func configuredTemplatesBringTheirFragments() {
        var t = Templates()
        t.table[.zh]![.newCustomer] = "欢迎光临，请{number}号桌的顾客取餐"
        t.table[.en]![.payment] = "Got {amount}, thanks!"
        let zh = VoiceInventory.clips(lang: .zh, templates: t)
        #expect(zh.filter { $0.name.hasPrefix("tpl_new_customer_") }.map(\.text) == ["欢迎光临", "请", "号桌的顾客取餐"])
        let words = Announcer(templates: t).announce(.newCustomer(number: 12), lang: .zh).utterance.text
        let plan = SplicePlanner(lang: .zh, clips: zh).plan(words)
        #expect(plan.covered && plan.words == words)
        #expect(plan.clipNames == ["tpl_new_customer_1", "tpl_new_customer_2", "ten", "two", "tpl_new_customer_3"])
        let en = VoiceInventory.clips(lang: .en, templates: t)
        #expect(en.filter { $0.name.hasPrefix("tpl_payment_") }.map(\.text) == ["Got", "thanks"])
        let ew = Announcer(templates: t).announce(.payment(amount: "3.50"), lang: .en).utterance.text
        #expect(SplicePlanner(lang: .en, clips: en).plan(ew).clipNames == ["tpl_payment_1", "three", "point", "five", "tpl_payment_2"])
    }

    /// Any text at all (emoji, combining marks, CRLF, controls, mixed scripts): the plan reads
    /// it out unchanged and never traps.
    @Test func anyTextPlansBackToItself() {
        var r = SplitMix64(seed: 333)
        let pool: [String] = ["四", "十", "新客户来了", "，", "、", " ", "A", "a", "-", "+", "'", "twenty", "-one", "o'clock", "\r\n",
                              "e\u{301}", "👍🏽", "\u{200B}", "\u{0}", "Ж", "𠀀", "。", "?", "degrees", "Celsius", "DEGREES", "AB", "ABCDEF",
                              "first", "--", "艾", "特", "百分", "之", "点"]
        for _ in 0..<3000 {
            let text = (0..<Int.random(in: 0...12, using: &r)).map { _ in pool[Int.random(in: 0..<pool.count, using: &r)] }.joined()
            for lang in Lang.allCases {
                let plan = Self.planners[lang]!.plan(text)
                #expect(plan.words == text, "\(lang): \(text.unicodeScalars.map { String($0.value, radix: 16) })")
            }
        }
    }
}
