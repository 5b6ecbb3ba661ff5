import CrierCore
import CrierPosix
import Glibc

/// `crier voice render`: every clip of the inventory through a command-line TTS into a work
/// folder, then `crier voice build` from it (docs/voice.md, "Rendering a pack with a TTS").
public enum VoiceRender {
    /// Per clip: a TTS that takes longer for one word or phrase is stuck (a cloud CLI waiting on
    /// the network, a model that does not load).
    public static let defaultTimeout = 60.0

    public struct Failure: Error, Sendable, CustomStringConvertible {
        public var description: String
    }

    /// Renders `clips` into `dir` as NAME.wav; stops at the first clip that fails, naming it.
    public static func render(_ clips: [VoiceClip], tts: TTSCommand, into dir: String, timeout: Double, progress: (Int, VoiceClip) -> Void) throws(Failure) {
        for (i, clip) in clips.enumerated() {
            progress(i, clip)
            let out = dir + "/" + clip.name + ".wav"
            let (program, args) = tts.argv(text: clip.text, out: out)
            let r: Subprocess.Result
            do {
                r = try Subprocess.run(program, args, timeout: timeout, capture: 4096)
            } catch {
                throw Failure(description: "clip \(clip.name) (\"\(clip.text)\"): cannot run \(program): \(error); check --tts (the program must be on PATH)")
            }
            let said = "clip \(clip.name) (\"\(clip.text)\"): \(program)"
            let errText = r.stderrText.split(whereSeparator: { $0 == "\n" }).suffix(3).joined(separator: " / ")
            let why = errText.isEmpty ? "" : ": " + String(errText.prefix(300))
            if r.timedOut {
                throw Failure(description: "\(said) did not finish in \(ConfigValue.fmt(timeout)) s (--timeout); killed\(why)")
            }
            if let s = r.signal { throw Failure(description: "\(said) was killed by signal \(s)\(why)") }
            if r.status != 0 { throw Failure(description: "\(said) exited with status \(r.status ?? -1)\(why)") }
            var st = stat()
            guard stat(out, &st) == 0, st.st_size > 0 else {
                throw Failure(description: "\(said) exited 0 but wrote nothing to {out} (\(out)); the command must write a WAV file there")
            }
        }
    }
}

extension VoiceCommand {
    /// `crier voice render`: render every clip with the TTS, then build (and check) the pack.
    public static func render(_ o: VoicePackBuilder.Options, tts template: String, timeout: Double) -> Int32 {
        let tts: TTSCommand
        switch TTSCommand.parse(template) {
        case .success(let t): tts = t
        case .failure(let p):
            FileIO.stderr("crier voice render: \(p)\n")
            return ExitCode.usage
        }
        let loaded: ConfigLoader.Loaded
        do {
            loaded = try ConfigLoader.load(path: o.configPath ?? CrierConfig.defaultPath, required: o.configPath != nil)
        } catch {
            FileIO.stderr("crier voice render: \(error)\n")
            return ExitCode.failure
        }
        if FileIO.exists(o.output) {
            FileIO.stderr("crier voice render: \(o.output) already exists; remove it or choose another --output\n")
            return ExitCode.failure
        }
        let inventory = VoiceInventory.clips(lang: o.lang, templates: loaded.config.templates)
        let work = o.output + ".rendering-\(getpid())"
        guard mkdir(work, 0o755) == 0 else {
            FileIO.stderr("crier voice render: cannot create \(work): \(String(cString: strerror(errno)))\n")
            return ExitCode.failure
        }
        defer { VoicePackBuilder.removeTree(work) }
        let t0 = Monotonic.now()
        do throws(VoiceRender.Failure) {
            try VoiceRender.render(inventory, tts: tts, into: work, timeout: timeout) { i, _ in
                if i > 0 && i % 50 == 0 { FileIO.stderr("crier voice render: \(i) of \(inventory.count) clips\n") }
            }
        } catch {
            FileIO.stderr("crier voice render: \(error); nothing written to \(o.output)\n")
            return ExitCode.failure
        }
        print("rendered \(inventory.count) clips with \(tts.words[0]) in \(Format.fixed(Monotonic.now() - t0, 1)) s")
        var b = o
        b.from = work
        if b.name == nil { b.name = "rendered with \(tts.words[0])" }
        // The program only: a cloud TTS's arguments may hold a key.
        b.sourceNote = "clips rendered by `crier voice render` with \(tts.words[0])"
        return build(b)
    }
}
