// libFuzzer target: crier.conf as edited on a shop PC (any bytes, read as the loader reads them).
// Invariants: parsing never traps; every diagnostic names a line of the input; the effective
// configuration, rendered (what `crier check-config` prints) and parsed again, gives the same
// values without a single diagnostic — except secrets, which render as (set).

func fuzzConfig(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    let parser = ConfigParser()
    let r = parser.parse(bytes: bytes, file: "fuzz.conf")
    let lines = max(1, ConfigParser.lines(bytes).count)
    for d in r.diagnostics {
        _ = d.description
        precondition((1...lines).contains(d.line), "diagnostic without a line of the file: \(d)")
    }
    // Secrets print as (set): a Wi-Fi password stands in for itself (a network named without
    // one is an error), the other secrets are left out; all are restored before comparing.
    let rendered = r.config.rendered().split(separator: "\n").compactMap { line -> Substring? in
        guard line.hasSuffix(" = (set)") else { return line }
        return line.hasPrefix("wifi.psk ") || line.hasPrefix("wifi.backup_psk ") ? Substring(line.dropLast(5) + "fuzz-password") : nil
    }.joined(separator: "\n")
    let again = parser.parse(rendered, file: "rendered.conf")
    // The one diagnostic a printed config may carry: a template that lost its placeholder
    // still has lost it, and says so again, as it did for the input.
    for d in again.diagnostics {
        precondition(d.severity == .warning && r.diagnostics.contains { $0.key == d.key && $0.message == d.message },
                     "the rendered config has problems: \(again.diagnostics)")
    }
    var back = again.config
    back.link.token = r.config.link.token
    back.link.key = r.config.link.key
    back.link.mqtt.password = r.config.link.mqtt.password
    back.wifi.psk = r.config.wifi.psk
    back.wifi.backupPSK = r.config.wifi.backupPSK
    precondition(back == r.config, "render → parse changed the config:\n\(rendered)")
    // The generated wpa_supplicant.conf: a value never adds to or cuts its line (issue 31,
    // `wifi.control_dir = /tmp/x GROUP=0`): its ctrl_interface line is exactly DIR=<dir>.
    if let wpa = WpaSupplicantConf.render(r.config.wifi, group: "crier") {
        let ctrl = wpa.split(separator: "\n").filter { $0.hasPrefix("ctrl_interface=") }
        precondition(ctrl == ["ctrl_interface=DIR=\(r.config.wifi.controlDir) GROUP=crier"] && !r.config.wifi.controlDir.contains(" "),
                     "a value changed the supplicant's ctrl_interface line: \(ctrl)")
    }
    return 0
}
