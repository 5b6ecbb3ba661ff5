/// Wi-Fi: what the supplicant said (logged), the state and its prompts, and how they share the
/// air with the server link's prompts (issue 19).
extension SpeakerPolicy {
    mutating func wifiEvent(_ e: WpaEvent, now: Double) {
        guard var w = wifi else { return }
        w.observe(e, now: now)
        func ssidText(_ s: [UInt8]?) -> String { s.map { String(decoding: $0, as: UTF8.self) } ?? "?" }
        func num(_ n: Int?) -> String { n.map(String.init) ?? "?" }
        switch e {
        case .wrongKey(let ssid):
            // Said at every failed handshake: the log shows the supplicant's retries.
            log(.warning, "wifi", "Wi-Fi password wrong: the WPA handshake failed (WRONG_KEY); check wifi.psk in crier.conf (case matters)",
                [("ssid", ssidText(ssid))])
        case .authReject(let type, let transaction, let status):
            if e.isSAEConfirmRejected {
                log(.warning, "wifi", "Wi-Fi password wrong: the access point refused the WPA3 (SAE) confirm; check wifi.psk in crier.conf (case matters)",
                    [("status_code", num(status))])
            } else {
                log(.info, "wifi", "Wi-Fi authentication refused by the access point",
                    [("auth_type", num(type)), ("transaction", num(transaction)), ("status_code", num(status))])
            }
        case .tempDisabled(let ssid, let reason):
            log(.warning, "wifi", "Wi-Fi network temporarily disabled by the supplicant", [("ssid", ssidText(ssid)), ("reason", reason)])
        case .disconnected(let reason):
            log(.info, "wifi", "Wi-Fi disconnected", [("reason", num(reason))])
        case .terminating:
            log(.warning, "wifi", "the Wi-Fi supplicant is exiting")
        case .connected, .networkNotFound, .attempt:
            break
        }
        wifi = w
        wifiTick(now: now)
    }

    /// For a reload (SIGHUP re-executes crier with the new crier.conf; `crier apply-config`
    /// sends it after the portal saved a network): the network "Wi-Fi connected" was said
    /// for, nil if it was not said or is still waiting to be (then the new image says it).
    public var wifiConnectedSaid: [UInt8]? {
        guard let n = wifi?.connectedSaidFor, !statusPrompts.contains(.wifiConnected) else { return nil }
        return n
    }

    /// Before `start`, in the image a reload started: what the image before had said
    /// (`wifiConnectedSaid`). Finding the same network online is then not said again.
    public mutating func reloaded(wifiConnectedSaid network: [UInt8]) {
        wifi?.reloaded(connectedSaidFor: network)
    }

    /// State changes go to the log, due prompts to the status prompts (one of each kind waiting).
    mutating func wifiTick(now: Double) {
        guard var w = wifi else { return }
        if let s = w.update(now: now) {
            logWifi(s, w, now: now)
            // Wi-Fi back: the server link gets status.link_down_after to reconnect before its
            // failure prompt ("Wi-Fi connected", "server connection failed", "server connected"
            // in a row was heard in the VM test).
            if s == .online {
                linkPrompts.networkReturned(now: now)
                // and "server connection failed" being said right now is cut short
                if let p = promptPlay, p.name == .linkDown { out.append(.stopClip(p.clip)) }
            }
        }
        // A server prompt waiting from before Wi-Fi knew what is wrong: the Wi-Fi one says more.
        if w.suppressesLinkDown { statusPrompts.removeAll { $0 == .linkDown } }
        // While the setup hotspot is open, its own outcomes are said instead (the monitor sees
        // the setup supplicant's tries too).
        if let p = w.due(now: now), setup?.isOpen != true {
            // A prompt about an earlier state that is still waiting is now wrong.
            statusPrompts.removeAll { $0 != p && [.wifiConnected, .wifiWrongPassword, .wifiNotFound, .wifiNoAddress].contains($0) }
            if p == .wifiConnected { statusPrompts.removeAll { $0 == .linkDown } }
            if !statusPrompts.contains(p) { statusPrompts.append(p) }
            if w.isProblem, w.since < now - 0.001 { logWifi(w.state, w, now: now, repeat: true) }
        }
        wifi = w
    }

    mutating func logWifi(_ s: WifiMonitor.State, _ w: WifiMonitor, now: Double, repeat again: Bool = false) {
        let ssid = w.ssidText ?? w.wrongKeyNetwork ?? w.config.ssid?.text ?? "?"
        var f: [(String, String)] = [("state", s.rawValue)]
        if again { f.append(("for", Format.fixed(now - w.since, 0) + "s")) }
        switch s {
        case .online:
            log(.info, "wifi", "Wi-Fi connected", f + [("ssid", ssid), ("network", w.network ?? "?"), ("ip", w.address ?? "?"),
                                                       ("signal_dbm", w.signal.map(String.init) ?? "?")])
        case .wrongPassword:
            log(.warning, "wifi", "Wi-Fi password wrong; check wifi.psk in crier.conf", f + [("ssid", ssid)])
        case .notFound:
            let names = [w.config.ssid, w.config.backupSSID].compactMap { $0?.text }.joined(separator: ",")
            log(.warning, "wifi", "Wi-Fi network not found; check wifi.ssid (case and spaces matter), that the router is on and in reach, and wifi.country",
                f + [("ssid", names), ("after", ConfigValue.fmt(w.config.notFoundAfter) + "s")])
        case .noAddress:
            log(.warning, "wifi", "Wi-Fi connected but no IP address from DHCP; check the router's DHCP server",
                f + [("ssid", ssid), ("after", ConfigValue.fmt(w.config.noAddressAfter) + "s")])
        case .noSupplicant:
            log(.warning, "wifi", "Wi-Fi supplicant not running", f)
        case .searching, .connecting, .starting:
            log(.info, "wifi", "Wi-Fi \(s.rawValue)", f)
        }
    }
}
