// libFuzzer target: crier.conf as edited on a shop PC (any bytes). Invariants: parsing never
// traps; the effective configuration, rendered and parsed again, gives the same values (so
// `crier check-config` output is itself a valid config) — except secrets, which render as (set).

func fuzzConfig(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
    let text = String(decoding: UnsafeBufferPointer(start: data, count: size), as: UTF8.self)
    let parser = ConfigParser()
    let r = parser.parse(text, file: "fuzz.conf")
    for d in r.diagnostics { _ = d.description }
    let rendered = r.config.rendered()
    var back = parser.parse(rendered, file: "rendered.conf").config
    back.link.token = r.config.link.token
    back.link.key = r.config.link.key
    precondition(back == r.config, "render → parse changed the config:\n\(rendered)")
    return 0
}
