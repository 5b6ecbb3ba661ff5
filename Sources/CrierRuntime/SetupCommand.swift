import CrierCore
import CrierPosix
import CrierSystem
import Glibc

/// `crier setup …`: the running daemon's setup hotspot through the control socket.
public enum SetupCommand {
    public static func run(configPath: String?, words: String) -> Int32 {
        var path = ControlServer.defaultPath
        if let p = configPath {
            do { path = try ConfigLoader.load(path: p, required: true).config.log.controlSocket } catch {
                FileIO.stderr("crier setup: \(error)\n")
                return ExitCode.failure
            }
        }
        do throws(ControlError) {
            let answer = try ControlClient.request(.setup(words), path: path, timeout: 10)
            print(answer, terminator: "")
            return answer.hasPrefix("error") ? ExitCode.failure : ExitCode.ok
        } catch {
            FileIO.stderr("crier setup: \(error)\n")
            return ExitCode.failure
        }
    }
}

/// `crier setup-ap-config`: the setup hotspot's files (hostapd, dnsmasq, the bare supplicant)
/// from crier.conf, written by crier-setup-ap.service (root) into its runtime directory before
/// it starts them. Prints the access point's name.
public enum SetupAPConfigCommand {
    public static let defaultDir = "/run/crier-setup-ap"

    public static func run(configPath: String?, dir: String, group: String?) -> Int32 {
        let p = configPath ?? CrierConfig.defaultPath
        let loaded = ConfigLoader.effective(path: p, required: configPath != nil)
        let c = loaded.config
        for d in loaded.diagnostics where (d.key ?? "").hasPrefix("wifi.") || (d.key ?? "").hasPrefix("setup.") {
            FileIO.stderr("crier setup-ap-config: \(d.severity == .error ? "error" : "warning"): \(LogRecord.escape(d.description))\n")
        }
        if let g = group, let problem = WpaSupplicantConf.groupProblem(g) {
            FileIO.stderr("crier setup-ap-config: error: \(problem)\n")
            return ExitCode.usage
        }
        let name = SetupNaming.name(config: c)
        let files = [
            ("hostapd.conf", HotspotConf.hostapd(ssid: name.ssid, interface: c.wifi.interface, country: c.wifi.country, channel: c.setup.channel, dir: dir)),
            ("dnsmasq.conf", HotspotConf.dnsmasq(interface: c.wifi.interface, dir: dir)),
            ("wpa_supplicant.conf", HotspotConf.supplicant(controlDir: c.wifi.controlDir, group: group, country: c.wifi.country)),
        ]
        for (f, text) in files {
            do throws(SystemError) {
                try FileIO.write(dir + "/" + f, Array(text.utf8))
            } catch {
                FileIO.stderr("crier setup-ap-config: cannot write \(dir)/\(f): \(error)\n")
                return ExitCode.failure
            }
        }
        print(name.ssid)
        FileIO.stderr("crier setup-ap-config: wrote \(dir)/{hostapd,dnsmasq,wpa_supplicant}.conf for \(name.ssid) on \(c.wifi.interface), channel \(c.setup.channel), country \(c.wifi.country ?? "none (world)")\n")
        return ExitCode.ok
    }
}

/// The box's hotspot name, as the daemon and the root unit both compute it.
public enum SetupNaming {
    /// `device.id` and the radio's MAC from sysfs (`HotspotName`); no radio: the id alone.
    public static func name(config c: CrierConfig) -> HotspotName {
        let mac = try? FileIO.read("/sys/class/net/\(c.wifi.interface)/address", limit: 64)
        let text = mac.map { String(decoding: $0, as: UTF8.self).split(whereSeparator: { $0 == "\n" || $0 == " " }).first.map(String.init) ?? "" }
        return HotspotName(deviceID: c.deviceID, mac: text)
    }
}
