/// `voice.pack.zh` / `voice.pack.en`: where a language's voice pack comes from (docs/voice.md,
/// "Where packs live").
public enum VoicePackSetting: Sendable, Equatable {
    /// The default: the shop's folder on the boot partition, else the image's, else espeak-ng.
    case auto
    /// espeak-ng only: `off`, or empty (what an empty value meant before `auto` existed).
    case off
    /// This folder only.
    case path(String)

    /// `auto`, `off` or empty, or an absolute path.
    public static func parse(_ s: String) throws(ConfigValueError) -> VoicePackSetting {
        switch s {
        case "auto": return .auto
        case "", "off": return .off
        default:
            guard s.hasPrefix("/") else {
                throw ConfigValueError("expected auto, off or an absolute path (starting with /) to a voice pack folder, got \(ConfigValue.shown(s))")
            }
            return .path(s)
        }
    }

    public var rendered: String {
        switch self {
        case .auto: return "auto"
        case .off: return "off"
        case .path(let p): return p
        }
    }
}

/// Which folder a language's pack is loaded from: a pure rule over what each candidate folder
/// turned out to be (absent, refused, or loaded with how many of the needed clips).
public enum VoicePackPlaces {
    /// A folder a shop copies onto the card's FAT boot partition from a PC: `voice/zh`, `voice/en`.
    public static let shopBase = "/boot/firmware/voice"
    /// The image's packs on the read-only root (`scripts/build-image.sh --voice-pack`): they come
    /// with every signed update bundle, A/B.
    public static let imageBase = "/usr/share/crier/voice"
    public static let defaultBases = [shopBase, imageBase]
    /// Test only: colon-separated folders that replace the two bases above.
    public static let testBasesVariable = "CRIER_VOICE_PACK_DIRS"

    /// The bases: the test-only variable's folders (absolute ones; empty or unset: the default).
    public static func bases(environment value: String?) -> [String] {
        let dirs = (value ?? "").split(separator: ":").map(String.init).filter { $0.hasPrefix("/") }
        return dirs.isEmpty ? defaultBases : dirs
    }

    /// What one candidate folder is.
    public enum Probe<Pack> {
        /// No such folder: nothing to say about it.
        case absent
        /// There, but no usable pack (the loader's reason: no manifest, wrong language, …).
        case refused(String)
        /// Loaded; `covered` of the `needed` clips load.
        case loaded(Pack, covered: Int, needed: Int)
    }

    public struct Resolution<Pack> {
        /// The folder used, nil: espeak-ng says everything in the language.
        public var path: String?
        public var pack: Pack?
        /// Why, for the one log line at start.
        public var why: String
        /// Every folder probed, in order (a complete pack ends the search).
        public var probed: [String]
        /// True when nothing is said from clips for a reason a person should fix (an explicit
        /// folder that is not usable); false for `off` and for `auto` finding nothing.
        public var isProblem: Bool
    }

    /// - `off`: nothing probed.
    /// - a path: that folder only; absent or refused means espeak-ng (no other folder is tried:
    ///   the config named this one).
    /// - `auto`: `BASE/LANG` for each base in order (the shop's first). The first pack that
    ///   loads with every needed clip wins and the later folders are not read; if none is
    ///   complete, the one with the most clips (the earlier on a tie); a refused or half-copied
    ///   folder never hides a complete one behind it.
    public static func resolve<Pack>(_ setting: VoicePackSetting, lang: Lang, bases: [String],
                                     probe: (String) -> Probe<Pack>) -> Resolution<Pack> {
        let key = "voice.pack.\(lang.rawValue)"
        switch setting {
        case .off:
            return Resolution(path: nil, pack: nil, why: "\(key) = off: espeak-ng says everything in \(lang.rawValue)", probed: [], isProblem: false)
        case .path(let p):
            switch probe(p) {
            case .absent:
                return Resolution(path: nil, pack: nil, why: "\(key) = \(p): it does not exist; espeak-ng says everything in \(lang.rawValue); check \(key) in crier.conf", probed: [p], isProblem: true)
            case .refused(let reason):
                return Resolution(path: nil, pack: nil, why: "\(key) = \(p): not a usable pack (\(reason)); espeak-ng says everything in \(lang.rawValue); check \(key) in crier.conf", probed: [p], isProblem: true)
            case .loaded(let pack, let covered, let needed):
                return Resolution(path: p, pack: pack, why: "\(key) = \(p)" + (covered == needed ? "" : ", \(covered) of \(needed) clips"), probed: [p], isProblem: false)
            }
        case .auto:
            var notes: [String] = []
            var probed: [String] = []
            var best: (path: String, pack: Pack, covered: Int, needed: Int)?
            for base in bases {
                let dir = (base.hasSuffix("/") ? String(base.dropLast()) : base) + "/" + lang.rawValue
                probed.append(dir)
                switch probe(dir) {
                case .absent:
                    notes.append("no \(dir)")
                case .refused(let reason):
                    notes.append("\(dir) refused (\(reason))")
                case .loaded(let pack, let covered, let needed):
                    if covered == needed {
                        let passed = notes.isEmpty ? "" : "; " + notes.joined(separator: "; ")
                        let later = bases.count > probed.count ? "; it wins over the later \(bases.dropFirst(probed.count).map { "\($0)/\(lang.rawValue)" }.joined(separator: ", "))" : ""
                        return Resolution(path: dir, pack: pack, why: "\(key) = auto: \(dir) has every clip (\(covered))\(later)\(passed)", probed: probed, isProblem: false)
                    }
                    notes.append("\(dir) lacks \(needed - covered) of \(needed) clips")
                    if best == nil || covered > best!.covered { best = (dir, pack, covered, needed) }
                }
            }
            let passed = notes.joined(separator: "; ")
            if let b = best {
                return Resolution(path: b.path, pack: b.pack, why: "\(key) = auto: \(b.path), the most complete (\(b.covered) of \(b.needed) clips; espeak-ng says an alert with a missing word): \(passed)", probed: probed, isProblem: false)
            }
            return Resolution(path: nil, pack: nil, why: "\(key) = auto: no pack (\(passed)); espeak-ng says everything in \(lang.rawValue)", probed: probed, isProblem: false)
        }
    }
}
