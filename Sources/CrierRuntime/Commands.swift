import CrierAudio
import CrierCore
import CrierPosix
import CrierSpeech
import CrierSystem
import Glibc
import Synchronization

/// Exit codes: 0 ok, 1 runtime failure, 2 usage error (the usual convention).
public enum ExitCode {
    public static let ok: Int32 = 0
    public static let failure: Int32 = 1
    public static let usage: Int32 = 2
}

/// Shared start-up for every command: logging to stderr and the config file.
public struct CommandContext: Sendable {
    public let hub: LogHub
    public let loaded: ConfigLoader.Loaded

    public init(hub: LogHub, loaded: ConfigLoader.Loaded) {
        self.hub = hub
        self.loaded = loaded
    }

    /// Fails only when the user named a file that cannot be read (a command then stops);
    /// `crier run` uses `forRun`, which never fails.
    public static func make(configPath: String?, logLevel: LogLevel? = nil) -> Result<CommandContext, ConfigLoader.LoadError> {
        do {
            let loaded = try ConfigLoader.load(path: configPath ?? CrierConfig.defaultPath, required: configPath != nil)
            return .success(start(loaded, logLevel: logLevel))
        } catch {
            return .failure(error)
        }
    }

    /// The daemon's start-up: the configuration `crier check-config` prints for the same file
    /// (`ConfigLoader.effective`), every problem logged with its line, and the digest of what
    /// runs (check-config prints the same digest).
    /// Nothing is logged yet: the daemon first adds the sinks crier.conf names (the serial
    /// console, the last-error record), then calls `reportConfig`, so an integrator watching the
    /// serial port sees the config's problems too.
    public static func forRun(configPath: String?) -> CommandContext {
        let path = configPath ?? CrierConfig.defaultPath
        return start(ConfigLoader.effective(path: path, required: configPath != nil), logLevel: nil, report: false)
    }

    /// Logs every problem of the configuration with its line and, for a daemon, what runs.
    public func reportConfig(daemon: Bool = true) {
        let log = hub.logger("config")
        for d in loaded.diagnostics {
            if d.severity == .error { log.error(d.description) } else { log.warning(d.description) }
        }
        if daemon, loaded.fileFound || !loaded.diagnostics.isEmpty {
            log.info("loaded", ["file": loaded.path, "errors": loaded.errors.count,
                                "warnings": loaded.warnings.count, "digest": loaded.digest])
        }
    }

    private static func start(_ loaded: ConfigLoader.Loaded, logLevel: LogLevel?, report: Bool = true) -> CommandContext {
        let hub = LogHub(clock: WallClock.now)
        hub.add(StderrSink())
        hub.setMinimum(logLevel ?? loaded.config.log.level)
        let ctx = CommandContext(hub: hub, loaded: loaded)
        if report { ctx.reportConfig(daemon: false) }
        return ctx
    }
}

public enum CheckConfigCommand {
    /// Validates a file, prints its problems to stderr and the effective configuration to
    /// stdout: exactly what `crier run` would use (the same `ConfigLoader.effective`), with the
    /// digest the daemon logs at start. Exit 1 when there is any error.
    public static func run(path: String?) -> Int32 {
        let p = path ?? CrierConfig.defaultPath
        let loaded = ConfigLoader.effective(path: p, required: true)
        for d in loaded.diagnostics {
            // Escaped like a log line: the file may hold control characters or bidi overrides.
            FileIO.stderr("\(d.severity == .error ? "error" : "warning"): \(LogRecord.escape(d.description))\n")
        }
        print("# effective configuration from \(LogRecord.escape(p)) (digest \(loaded.digest), as `crier run` logs it)")
        print(loaded.config.rendered(), terminator: "")
        if !loaded.errors.isEmpty {
            FileIO.stderr("\(LogRecord.escape(p)): \(loaded.errors.count) error(s); the box would use the values shown above (defaults for those keys)\n")
            return ExitCode.failure
        }
        return ExitCode.ok
    }
}

/// `crier wifi-config`: the wpa_supplicant configuration from crier.conf's wifi.* keys, written
/// at every boot into /run by crier-wifi-config.service (the root is read-only; the card is what
/// a shop edits). No Wi-Fi configured: the output is removed and the supplicant's unit, which
/// needs the file, does not start.
public enum WifiConfigCommand {
    public static let defaultOutput = "/run/crier-wifi/wpa_supplicant.conf"

    public static func run(configPath: String?, output: String, group: String?) -> Int32 {
        let p = configPath ?? CrierConfig.defaultPath
        let loaded = ConfigLoader.effective(path: p, required: configPath != nil)
        let wifiProblems = loaded.diagnostics.filter { ($0.key ?? "").hasPrefix("wifi.") }
        for d in wifiProblems {
            FileIO.stderr("crier wifi-config: \(d.severity == .error ? "error" : "warning"): \(LogRecord.escape(d.description))\n")
        }
        let w = loaded.config.wifi
        let unsafe = WpaSupplicantConf.problems(w, group: group)
        for p in unsafe { FileIO.stderr("crier wifi-config: error: \(LogRecord.escape(p))\n") }
        let hasErrors = wifiProblems.contains { $0.severity == .error } || !unsafe.isEmpty
        guard let text = WpaSupplicantConf.render(w, group: group, source: p) else {
            if FileIO.exists(output) { unlink(output) }
            FileIO.stderr("crier wifi-config: Wi-Fi \(hasErrors ? "off because of the error(s) above" : "not configured (no wifi.ssid)") in \(LogRecord.escape(p)); no supplicant file written\n")
            return hasErrors ? ExitCode.failure : ExitCode.ok
        }
        do throws(SystemError) {
            try FileIO.writePrivate(output, Array(text.utf8))
        } catch {
            FileIO.stderr("crier wifi-config: cannot write \(output): \(error)\n")
            return ExitCode.failure
        }
        let names = w.networks.map { "\"\(LogRecord.escape($0.ssid.text))\" (\($0.name)\($0.hidden ? ", hidden" : "")\($0.psk == .open ? ", open" : ""))" }
        FileIO.stderr("crier wifi-config: wrote \(output): \(names.joined(separator: ", ")), country \(w.country ?? "?")\n")
        return hasErrors ? ExitCode.failure : ExitCode.ok
    }
}

public struct SayOptions: Sendable {
    public var configPath: String?
    public var lang: Lang?
    public var output: String?
    public var printOnly = false
    public var phonemes = false
    /// A voice pack folder for this text's language (over `voice.pack.<lang>`).
    public var voicePack: String?
    public var text: String
    public init(text: String) { self.text = text }
}

public enum SayCommand {
    public static func run(_ o: SayOptions) async -> Int32 {
        let ctx: CommandContext
        switch CommandContext.make(configPath: o.configPath) {
        case .success(let c): ctx = c
        case .failure(let e):
            FileIO.stderr("crier say: \(e)\n")
            return ExitCode.failure
        }
        var config = ctx.loaded.config
        // --voice-pack: the pack for the text's language, over voice.pack.<lang>.
        if let vp = o.voicePack { config.voicePacks.setting[o.lang ?? config.speech.lang] = .path(vp) }
        let speech = SpeechEngine(dataPath: config.speech.dataPath, deadline: config.speech.deadline, log: ctx.hub.logger("speech"))
        defer { speech.stop() }
        let pipeline = SpeechPipeline(config: config, speech: speech, log: ctx.hub.logger("speech"))
        let u = pipeline.words(.text(o.text), lang: o.lang)
        guard TextSanitizer.isSpeakable(u.text) else {
            // A usage error, not a success with 0 s of audio (issue 13 item 12).
            FileIO.stderr("crier say: nothing to say: TEXT has no letter or digit"
                + (o.text.isEmpty ? "" : " after removing control, invisible and emoji characters") + "\n")
            return ExitCode.usage
        }
        if o.printOnly {
            print(u.text)
            return ExitCode.ok
        }
        if o.phonemes {
            print(await pipeline.phonemes(u))
            return ExitCode.ok
        }
        let log = ctx.hub.logger("say")
        // With a daemon running, speak through it: the device is never opened twice.
        if o.output == nil && !config.log.controlSocket.isEmpty {
            do {
                let reply = try ControlClient.say(o.lang ?? config.speech.lang, o.text, path: config.log.controlSocket)
                log.info("sent to the running daemon", ["reply": reply])
                return ExitCode.ok
            } catch .notRunning {
                // No daemon: speak ourselves below.
            } catch {
                log.error("\(error)")
                return ExitCode.failure
            }
        }
        if let output = o.output {
            let format = AudioFormat(rate: config.audio.rate, channels: config.audio.channels)
            do {
                let clip = try await pipeline.clip(u, rate: format.rate)
                let samples = OfflineRender.render([clip], format: format, audio: config.audio)
                try FileIO.write(output, WAV.encode(rate: format.rate, channels: format.channels, samples: samples))
                log.info("wrote", ["file": output, "seconds": Format.fixed(Double(samples.count / format.channels) / Double(format.rate), 2)])
                return ExitCode.ok
            } catch {
                log.error("\(error)")
                return ExitCode.failure
            }
        }
        // A one-off from a shell: ordinary scheduling, no real-time refusal to log.
        var engineConfig = AudioEngineConfig(config.audio)
        engineConfig.realtimePriority = 0
        let engine = AudioEngine(config: engineConfig, log: ctx.hub.logger("audio"))
        engine.start()
        defer { engine.stop() }
        let clip: Clip
        do {
            clip = try await pipeline.clip(u, rate: config.audio.rate)
        } catch {
            log.error("\(error)")
            return ExitCode.failure
        }
        // The engine retries a missing device forever (right for the daemon); a command must
        // give up: the device has `openTimeout` to start taking audio, the clip its length more.
        let seconds = Double(clip.samples.count) / Double(config.audio.rate)
        let outcome = await playBounded(clip, on: engine, openTimeout: openTimeout, totalTimeout: openTimeout + seconds + 5)
        switch outcome {
        case .played(let o):
            if o != .played { log.error("the audio engine stopped before the text was said", ["device": config.audio.device]) }
            return o == .played ? ExitCode.ok : ExitCode.failure
        case .deviceNeverOpened:
            let why = engine.stats.lastError
            log.error("cannot speak: audio device '\(config.audio.device)' did not open within \(ConfigValue.fmt(openTimeout)) s\(why.isEmpty ? "" : " (\(why))"), and no crier daemon is running to speak through; check audio.device in crier.conf (`aplay -L`), or write a WAV with --output")
            return ExitCode.failure
        case .timedOut:
            log.error("cannot speak: audio device '\(config.audio.device)' stopped taking audio (\(engine.stats.lastError)); gave up after \(ConfigValue.fmt((openTimeout + seconds + 5).rounded())) s")
            return ExitCode.failure
        }
    }

    /// How long `crier say` waits for a device that does not open.
    public static let openTimeout = 5.0

    enum Bounded: Sendable { case played(ClipOutcome), deviceNeverOpened, timedOut }

    static func playBounded(_ clip: Clip, on engine: AudioEngine, openTimeout: Double, totalTimeout: Double) async -> Bounded {
        let result = Mutex<ClipOutcome?>(nil)
        engine.play(clip) { o in result.withLock { $0 = $0 ?? o } }
        let t0 = Monotonic.now()
        while true {
            if let o = result.withLock({ $0 }) { return .played(o) }
            let waited = Monotonic.now() - t0
            let open = engine.stats.deviceOpen
            if !open && engine.stats.framesWritten == 0 && waited > openTimeout { return .deviceNeverOpened }
            if waited > totalTimeout { return .timedOut }
            try? await Task.sleep(for: .milliseconds(20))
        }
    }
}

/// Renders clips through the same mixer the engine uses, without a device: the exact samples
/// `crier say --output` writes.
public enum OfflineRender {
    public static func render(_ clips: [Clip], format: AudioFormat, audio: AudioConfig, gain: Double = 1) -> [Int16] {
        var mixer = Mixer(format: format, fadeMs: audio.fadeMs, headroomDb: audio.headroomDb, gain: gain)
        for (i, c) in clips.enumerated() { mixer.add(id: UInt64(i + 1), clip: c) }
        var out: [Int16] = []
        let block = format.frames(ms: Double(audio.periodMs))
        var buf = [Int16](repeating: 0, count: block * format.channels)
        while !mixer.isIdle {
            _ = buf.withUnsafeMutableBufferPointer { mixer.render(into: $0, frames: block) }
            out += buf
        }
        return out
    }
}

public enum StatusCommand {
    /// Prints the daemon's answer on stdout, exit 0. Any failure (no daemon, busy, denied, a
    /// config that cannot be read) goes to stderr with exit 1; with `--json` stdout then still
    /// carries one JSON object, `{"error": …, "running": …}`, so a script's parser never sees text.
    public static func run(configPath: String?, json: Bool) -> Int32 {
        var path = ControlServer.defaultPath
        if let p = configPath {
            do {
                path = try ConfigLoader.load(path: p, required: true).config.log.controlSocket
            } catch {
                return fail("\(error)", json: json, running: nil)
            }
            if path.isEmpty {
                return fail("control.socket is empty in \(p): that daemon has no control socket", json: json, running: nil)
            }
        }
        do throws(ControlError) {
            print(try ControlClient.status(json: json, path: path), terminator: "")
            return ExitCode.ok
        } catch {
            let running: Bool? = switch error {
            case .notRunning: false
            case .busy, .refused, .timedOut: true
            default: nil
            }
            return fail(error.description, json: json, running: running)
        }
    }

    static func fail(_ message: String, json: Bool, running: Bool?) -> Int32 {
        FileIO.stderr("crier status: \(message)\n")
        if json {
            let o = JSONObject([("error", .string(message)), ("running", running.map(JSONValue.bool) ?? .null)])
            print(String(decoding: JSON.write(.object(o)), as: UTF8.self))
        }
        return ExitCode.failure
    }
}
