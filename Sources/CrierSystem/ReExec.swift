import CrierPosix
import Glibc

/// Re-executing the running program in the same process (same PID, so systemd and the
/// watchdog keep following it): how `SIGHUP` applies a changed crier.conf. Every component
/// then starts from the new configuration; nothing is ever half-applied.
public enum ReExec {
    /// Set in the new image's environment: the monotonic time (ns) the reload began, so the new
    /// process knows it is a reload (no "started" prompt) and can say how long it took.
    public static let markerVariable = "CRIER_RELOAD_STARTED_NS"
    /// Set with the marker when the image before had said "Wi-Fi connected": that network's
    /// name in hex (SpeakerPolicy.wifiConnectedSaid), so the new image does not say it again.
    public static let wifiSaidVariable = "CRIER_RELOAD_WIFI_SAID"

    /// The reload's start (monotonic seconds) when this process is a re-exec; removes the
    /// variable so a child (or the next reload) does not inherit it. Call first thing.
    ///
    /// A re-exec also gets its name back: the kernel names a process after the file it
    /// executes, and that is /proc/self/exe here, so after a reload `ps`, `pidof crier`, `ss -p`
    /// and `systemctl status` showed "exe" (the amd64 boot test). The name is argv[0]'s last
    /// component, as at a normal start (15 bytes at most: the kernel's limit).
    public static func takeMarker() -> Double? {
        guard let v = take(markerVariable) else { return nil }
        if let argv0 = CommandLine.arguments.first, let name = argv0.split(separator: "/").last, !name.isEmpty {
            // /proc/self/comm names the thread-group leader: the process as ps and ss show it.
            let fd = open("/proc/self/comm", O_WRONLY | O_CLOEXEC)
            if fd >= 0 {
                let bytes = Array(name.utf8.prefix(15))
                _ = bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
                close(fd)
            }
        }
        guard let ns = Int64(v), ns > 0 else { return nil }
        return Double(ns) / 1e9
    }

    /// A variable the image before set for this one (`exec`'s `carry`), removed like the marker.
    public static func take(_ variable: String) -> String? {
        guard let v = FileIO.env(variable) else { return nil }
        unsetenv(variable)
        return v
    }

    /// Replaces this process with /proc/self/exe run with `arguments` (argv, the program name
    /// first). Returns only on failure.
    ///
    /// `handled`: the signals the daemon handles. execve resets handlers to the default action
    /// (for most: terminate) until the new image installs its own, and a blocked mask does not
    /// help: the runtime clears the mask at start-up. An ignored signal stays ignored across
    /// execve, so every handled signal except the stop requests is ignored for that window (a
    /// SIGHUP or SIGUSR1 then means nothing anyway). SIGTERM/SIGINT/SIGQUIT keep their default
    /// action: in that window they still end the process, which is what was asked.
    /// `carry`: variables for the new image (`take` reads them), set in place of any inherited.
    public static func exec(arguments: [String], reloadStartedAt: Double, handled: [SignalWatcher.Signal],
                            carry: [(String, String)] = []) -> SystemError {
        let own = [markerVariable, wifiSaidVariable] + carry.map { $0.0 }
        var env: [String] = []
        // Optional on one Glibc overlay, implicitly unwrapped on another: state the type.
        let base: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>? = environ
        if var p = base {
            while let s = p.pointee {
                let entry = String(cString: s)
                if !own.contains(where: { entry.hasPrefix($0 + "=") }) { env.append(entry) }
                p += 1
            }
        }
        env.append("\(markerVariable)=\(Int64(reloadStartedAt * 1e9))")
        for (k, v) in carry { env.append("\(k)=\(v)") }
        let argv = arguments.map { strdup($0) } + [nil]
        let envp = env.map { strdup($0) } + [nil]
        let stops: Set<SignalWatcher.Signal> = [.terminate, .interrupt, .quit]
        let keep = handled.filter { !stops.contains($0) }
        for s in keep { signal(s.rawValue, SIG_IGN) }
        execve("/proc/self/exe", argv, envp)
        let e = errno
        SignalWatcher.reinstall(keep)
        for p in argv { free(p) }
        for p in envp { free(p) }
        return SystemError("execve /proc/self/exe", code: e)
    }
}
