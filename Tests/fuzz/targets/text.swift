// libFuzzer target: the text pipeline from an order to the words handed to espeak-ng
// (TextSanitizer → template → NumberWords, i.e. Announcer). Byte 0 picks the language, the
// kind and speech.max_chars; the rest is the order's text (or amount/number).
// Invariants: no trap; no control, invisible or private-use character reaches the synthesizer;
// the output is bounded by max_chars (× the longest spelling of a character).

/// Longest expansion of one input character by NumberWords ("7" → "seven " and group words).
let maxExpansion = 24

func fuzzText(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
    guard size > 0 else { return 0 }
    let mode = data[0]
    let text = String(decoding: UnsafeBufferPointer(start: data + 1, count: size - 1), as: UTF8.self)
    let lang: Lang = mode & 1 == 0 ? .zh : .en
    let maxChars = 20 + Int(mode >> 2) * 8  // 20...524, around the default 500
    let announcer = Announcer(templates: Templates(), maxChars: maxChars)
    var results: [Announcer.Result] = []
    switch (mode >> 1) & 1 {
    case 0:
        results.append(announcer.announce(.text(text), lang: lang))
        results.append(announcer.announce(.newCustomer(number: 42), lang: lang, overrideText: text))
    default:
        if Order.isValidAmount(text) { results.append(announcer.announce(.payment(amount: text), lang: lang)) }
        if let n = Int(text), Order.numberRange.contains(n) {
            results.append(announcer.announce(.newCustomer(number: n), lang: lang))
            results.append(announcer.announce(.newCustomers(numbers: [n, n / 2, n / 3]), lang: lang))
        }
        _ = NumberWords.spellNumbers(in: text, lang: lang)
    }
    for r in results {
        let out = r.utterance.text
        for u in out.unicodeScalars {
            precondition(!TextSanitizer.isUnwanted(u), "unwanted U+\(String(u.value, radix: 16)) reaches espeak")
            precondition(u != "\n" && u != "\r", "line break reaches espeak")
            precondition(!TextSanitizer.leftOut(u, lang: lang), "U+\(String(u.value, radix: 16)) of a script left out of \(lang) text reaches espeak")
        }
        precondition(TextSanitizer.breakLongWords(out).broken == 0, "a word longer than \(TextSanitizer.maxWordScalars) reaches espeak")
        precondition(out.count <= maxChars * maxExpansion + 64, "\(out.count) characters from max_chars \(maxChars)")
    }
    return 0
}
