import CrierCore
import CrierPosix

/// `crier voice …`: the tools for recorded-clip voice packs (docs/voice.md).
public enum VoiceCommand {
    /// `crier voice clips`: the recording script, `NAME<TAB>TEXT` per line, for the templates of
    /// the config (default config when none is given) and every word SpokenText's rules can say.
    public static func clips(configPath: String?, lang: Lang) -> Int32 {
        let loaded: ConfigLoader.Loaded
        do {
            loaded = try ConfigLoader.load(path: configPath ?? CrierConfig.defaultPath, required: configPath != nil)
        } catch {
            FileIO.stderr("crier voice clips: \(error)\n")
            return ExitCode.failure
        }
        for d in loaded.diagnostics {
            FileIO.stderr("crier voice clips: \(d.severity == .error ? "error" : "warning"): \(LogRecord.escape(d.description))\n")
        }
        var out = ""
        for c in VoiceInventory.clips(lang: lang, templates: loaded.config.templates) {
            out += c.name + "\t" + c.text + "\n"
        }
        print(out, terminator: "")
        return ExitCode.ok
    }
}
