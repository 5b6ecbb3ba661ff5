import CrierCore
import CrierPosix
import CrierSystem

/// The setup hotspot in the daemon (docs/setup-hotspot.md): `SetupMode` decides, this performs its
/// effects (the request file for crier-setup-ap.service, scans and tries on their own
/// threads, the prompts, saving the network) and feeds it the network's state.
extension Daemon {
    var setup: SetupMode? { policy.setup }

    /// What the page calls (CrierHTTP). Each call counts as use (the idle timer restarts).
    public func setupState() -> SetupPortal.State? {
        guard setup != nil else { return nil }
        feed(.setup(.used))
        return policy.setup.map { SetupPortal.state($0, configuredCountry: config.wifi.country, now: Self.now()) }
    }

    public func setupOpen() { feed(.setup(.open(.page))) }

    public func setupRescan() { feed(.setup(.rescan)) }

    /// The page's form: validated here (the same rule as for the page's own checks); a
    /// refusal comes back at once, an accepted network is tried and its outcome said aloud
    /// and shown in `setupState().lastOutcome`.
    public func setupSubmit(ssid: String, psk: String, hidden: Bool, country: String?) -> SetupNetwork.Problem? {
        guard setup != nil else { return nil }
        switch SetupNetwork.validate(ssid: ssid, psk: psk, hidden: hidden, country: country, configuredCountry: config.wifi.country) {
        case .failure(let p):
            hub.logger("setup").info("network refused", ["field": p.field, "why": p.code.rawValue])
            return p
        case .success(let n):
            feed(.setup(.submit(n)))
            return nil
        }
    }

    public func setupClose() { feed(.setup(.close(.page))) }

    /// The control socket's `setup …` (the console, the VM test): `open`, `close`, `state`
    /// (the page's JSON), `rescan`, `submit HEX-SSID HEX-PSK|- [hidden] [COUNTRY]` (hex: any
    /// bytes fit on the one request line; `-` is an open network).
    public func setupCommand(_ words: String) -> String {
        let w = words.split(separator: " ").map(String.init)
        guard setup != nil else { return "error setup.hotspot = off in crier.conf" }
        switch w.first {
        case "open": setupOpen(); return "ok " + (setup?.phase.rawValue ?? "")
        case "close": setupClose(); return "ok closed"
        case "rescan": setupRescan(); return "ok"
        case "state": return setupState().map(SetupPortal.json) ?? "error no setup"
        case "submit":
            guard w.count >= 3, let ssid = Hex.decode(w[1]), let psk = w[2] == "-" ? [] : Hex.decode(w[2]) else {
                return "error expected submit HEX-SSID HEX-PSK|- [hidden] [COUNTRY]"
            }
            let hidden = w.dropFirst(3).contains("hidden")
            let country = w.dropFirst(3).first { $0 != "hidden" }
            guard setup?.phase == .open else { return "error the setup hotspot is \(setup?.phase.rawValue ?? "off"), not open" }
            if let p = setupSubmit(ssid: String(decoding: ssid, as: UTF8.self), psk: String(decoding: psk, as: UTF8.self), hidden: hidden, country: country) {
                return "error \(p.field) \(p.code.rawValue): \(p.message)"
            }
            return "ok trying"
        default:
            return "error expected setup open, close, state, rescan or submit"
        }
    }

    func setupScanned(_ list: [ScannedNetwork]?) {
        guard setup != nil else { return }
        let log = hub.logger("setup")
        if let list {
            log.info("scan", ["networks": list.count])
        } else {
            log.warning("scan failed: no answer from the setup supplicant at \(config.wifi.controlDir)/\(config.wifi.interface) (is crier-setup-ap.service running? journalctl -u crier-setup-ap); the page lists no networks, a name can still be typed")
        }
        let wasScanning = setup?.phase == .scanning
        feed(.setup(.scanned(list ?? [])))
        if wasScanning, let s = setup, s.phase == .open {
            log.notice("setup hotspot open", ["ap": s.name.ssid, "by": s.openedBy?.rawValue ?? "?",
                                              "closes_after": ConfigValue.fmt(config.setup.closeAfterMinutes) + "min unused"])
        }
    }

    func setupTried(_ outcome: SetupTryOutcome, ssid: String) {
        guard setup != nil else { return }
        let log = hub.logger("setup")
        switch outcome {
        case .connected: log.notice("network tried: connected", ["ssid": ssid])
        case .wrongPassword: log.warning("network tried: Wi-Fi password wrong", ["ssid": ssid])
        case .notFound: log.warning("network tried: not found within \(ConfigValue.fmt(config.setup.tryTimeout)) s", ["ssid": ssid])
        case .failed: log.error("network tried: the setup supplicant did not take the network (no control socket or a command refused)", ["ssid": ssid])
        }
        feed(.setup(.tried(outcome)))
    }

    /// What the policy's `SetupMode` asks of the radio (its prompts are the policy's own).
    func performSetup(_ e: SetupEffect) {
        guard let radio = setupRadio else { return }
        let log = hub.logger("setup")
        switch e {
        case .startAP, .station:
            let m: SetupRadio.Mode = e == .startAP ? .ap : .station
            do throws(SystemError) { try radio.request(m) } catch {
                log.error("cannot ask for \(m.rawValue) mode: \(error); check that crier-setup-ap.path is enabled and \(radio.requestPath)'s directory is crier's")
            }
        case .scan:
            runDetached("crier-setup-scan") { let l = radio.scan(); Task { await self.setupScanned(l) } }
        case .tryNetwork(let n):
            let timeout = config.setup.tryTimeout, ssid = n.ssid.text
            log.info("trying network", ["ssid": ssid, "security": n.psk == .open ? "open" : "wpa", "hidden": n.hidden])
            runDetached("crier-setup-try") {
                let o = radio.tryNetwork(n, timeout: timeout)
                Task { await self.setupTried(o, ssid: ssid) }
            }
        case .stop:
            do throws(SystemError) { try radio.request(nil) } catch {
                log.error("cannot end setup mode: \(error)")
            }
            log.notice("setup hotspot closed", ["by": setup?.closedBy?.rawValue ?? "?"])
        case .save(let n):
            saveSetupNetwork(n)
        case .say:
            break  // queued by the policy
        }
    }

    func runDetached(_ name: String, _ body: @escaping @Sendable () -> Void) {
        do throws(SystemError) { try PosixThread.detach(name: name, body) } catch {
            hub.logger("setup").error("cannot start a thread (\(error)); setup step skipped")
        }
    }

    /// Where crier.conf.new goes for crier-config.path (the control socket's directory).
    public func setRuntimeDir(_ dir: String?) { runtimeDir = dir }

    /// The joined network into crier.conf (for the next start), and the supplicant's socket
    /// watched again.
    func saveSetupNetwork(_ n: SetupNetwork) {
        let log = hub.logger("setup")
        if let path = configPath {
            // Through the page's conf writer: crier may not write the boot partition itself
            // (ProtectSystem=strict); then crier-config.service writes it and reloads.
            let old = (try? FileIO.read(path)).map { String(decoding: $0, as: UTF8.self) } ?? ""
            switch LocalPage.writeConfig(n.edited(conf: old), configPath: path, runtimeDir: runtimeDir, log: log, what: "network") {
            case .success(let how):
                log.notice("network saved to crier.conf", ["file": path, "ssid": n.ssid.text, "keys": n.confLines.map(\.key).joined(separator: ","),
                                                           "by": how == .written ? "crier" : "crier-config.service"])
            case .failure:
                log.error("cannot save the network to \(path); the box stays on it until it restarts, then set wifi.ssid and wifi.psk there by hand")
            }
        }
        // The policy's Wi-Fi monitor starts over on the network (SpeakerPolicy.setupEffects).
        wpa?.stop()
        wpa = nil
        startWifi()
    }

    /// The setup prompt's words: the template with the code digit by digit.
    func setupWords(_ name: Templates.Name) -> Utterance? {
        guard name == .setupHotspot, let s = setup else { return nil }
        return pipeline.words(.filled(.setupHotspot, ["code": s.name.spokenCode]), lang: config.speech.lang)
    }
}
