import CrierCore
import CrierPosix
import CrierSystem

/// Wi-Fi: the supplicant's control socket; what it says goes to the speaker policy (which owns
/// the `WifiMonitor`, its log lines and its prompts).
extension Daemon {
    func startWifi() {
        guard let w = policy.wifi else { return }
        let path = w.config.controlDir + "/" + w.config.interface
        let (stream, cont) = AsyncStream.makeStream(of: WpaControl.Observation.self)
        let control = WpaControl(path: path) { cont.yield($0) }
        do throws(SystemError) {
            try control.start()
        } catch {
            wifiLog.error("cannot start the Wi-Fi monitor: \(error); the box joins Wi-Fi anyway but cannot say how it goes")
            return
        }
        wpa = control
        Task { for await o in stream { self.handleWifi(o) } }
        var ssids = [w.config.ssid, w.config.backupSSID].compactMap { $0?.text }
        ssids = ssids.map { "\"" + $0 + "\"" }
        wifiLog.info("watching the Wi-Fi supplicant", ["socket": path, "networks": ssids.joined(separator: ","),
                                                       "country": w.config.country ?? "?"])
    }

    /// For a reload: the network "Wi-Fi connected" was said for (hex), or nil.
    public func wifiConnectedSaid() -> String? { policy.wifiConnectedSaid.map { Hex.encode($0) } }

    /// Before `start`, after a reload: what the image before had said (`wifiConnectedSaid`).
    public func reloaded(wifiConnectedSaid hex: String) {
        guard let n = Hex.decode(hex) else { return }
        policy.reloaded(wifiConnectedSaid: n)
    }

    func handleWifi(_ o: WpaControl.Observation) {
        switch o {
        case .event(let e, _): feed(.wifi(e))
        case .status(let st, let signal): feed(.wifiStatus(st, signal: signal))
        case .unreachable(let why): feed(.wifiUnreachable(why))
        }
    }
}
