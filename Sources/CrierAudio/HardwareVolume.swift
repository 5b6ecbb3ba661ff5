import CALSA
import CrierCore
import Glibc
import Synchronization

/// An ALSA simple-mixer element (`audio.mixer = NAME`) used as the volume control instead of the
/// engine's software gain: better resolution on DACs with an analogue stage, and what shows in
/// `alsamixer`. Calls are short ioctls; a lock keeps the handle to one caller at a time.
public final class HardwareVolume: Sendable {
    public let card: String
    public let element: String
    // @unchecked: the raw pointers are only dereferenced by snd_mixer_* calls made inside
    // `lock.withLock`, so one thread at a time uses them; nothing else keeps a copy after init.
    private struct Handle: @unchecked Sendable {
        let mixer: OpaquePointer
        let elem: OpaquePointer
        let minRaw: Int
        let maxRaw: Int
        let minDb: Int?  // hundredths of a dB
        let maxDb: Int?
    }
    private let lock: Mutex<Handle>

    public struct Failure: Error, CustomStringConvertible, Sendable {
        public var message: String
        public var description: String { message }
    }

    /// The card a PCM name refers to: `hw:1,0` / `plughw:CARD=Headphones` → `hw:1` / `hw:Headphones`.
    public static func card(forDevice d: String) -> String {
        for prefix in ["plughw:", "hw:"] where d.hasPrefix(prefix) {
            var rest = String(d.dropFirst(prefix.count))
            if rest.hasPrefix("CARD=") { rest = String(rest.dropFirst(5)) }
            let card = rest.split(separator: ",").first.map(String.init) ?? rest
            return "hw:" + card
        }
        return "default"
    }

    public init(card: String, element: String) throws(Failure) {
        self.card = card
        self.element = element
        var m: OpaquePointer?
        guard snd_mixer_open(&m, 0) >= 0, let mixer = m else { throw Failure(message: "cannot open an ALSA mixer") }
        func fail(_ what: String) -> Failure {
            snd_mixer_close(mixer)
            return Failure(message: what)
        }
        var rc = snd_mixer_attach(mixer, card)
        guard rc >= 0 else { throw fail("mixer card '\(card)' not found (\(String(cString: snd_strerror(rc)))); check audio.device / audio.mixer in crier.conf") }
        rc = snd_mixer_selem_register(mixer, nil, nil)
        guard rc >= 0 else { throw fail("cannot register the simple mixer on '\(card)'") }
        rc = snd_mixer_load(mixer)
        guard rc >= 0 else { throw fail("cannot load the mixer of '\(card)' (\(String(cString: snd_strerror(rc))))") }
        var sid: OpaquePointer?
        snd_mixer_selem_id_malloc(&sid)
        defer { snd_mixer_selem_id_free(sid) }
        snd_mixer_selem_id_set_index(sid, 0)
        snd_mixer_selem_id_set_name(sid, element)
        guard let elem = snd_mixer_find_selem(mixer, sid), snd_mixer_selem_has_playback_volume(elem) != 0 else {
            var names: [String] = []
            var e = snd_mixer_first_elem(mixer)
            while let el = e {
                if snd_mixer_selem_has_playback_volume(el) != 0 { names.append(String(cString: snd_mixer_selem_get_name(el))) }
                e = snd_mixer_elem_next(el)
            }
            throw fail("mixer element '\(element)' with a playback volume not found on '\(card)' (available: \(names.isEmpty ? "none" : names.joined(separator: ", "))); check audio.mixer in crier.conf")
        }
        var lo = 0, hi = 0
        snd_mixer_selem_get_playback_volume_range(elem, &lo, &hi)
        var dlo = 0, dhi = 0
        let hasDb = snd_mixer_selem_get_playback_dB_range(elem, &dlo, &dhi) == 0 && dhi > dlo
        lock = Mutex(Handle(mixer: mixer, elem: elem, minRaw: lo, maxRaw: hi, minDb: hasDb ? dlo : nil, maxDb: hasDb ? dhi : nil))
    }

    deinit {
        _ = lock.withLock { snd_mixer_close($0.mixer) }
    }

    /// Sets the element to a linear gain (1 = the element's maximum). Uses the element's dB scale
    /// when it has one, else its raw range proportionally to the gain in dB over 60 dB.
    public func set(gain: Double) {
        lock.withLock { h in
            let db = gain <= 0 ? -9999.0 : 20 * log10(gain)
            if let lo = h.minDb, let hi = h.maxDb {
                let v = max(lo, min(hi, hi + Int((db * 100).rounded())))
                snd_mixer_selem_set_playback_dB_all(h.elem, v, -1)
            } else {
                let frac = max(0, min(1, 1 + db / 60))
                snd_mixer_selem_set_playback_volume_all(h.elem, h.minRaw + Int((Double(h.maxRaw - h.minRaw) * frac).rounded()))
            }
        }
    }

    /// The element's current raw value (left channel), for status and tests.
    public var raw: Int {
        lock.withLock { h in
            var v = 0
            snd_mixer_handle_events(h.mixer)
            snd_mixer_selem_get_playback_volume(h.elem, SND_MIXER_SCHN_FRONT_LEFT, &v)
            return v
        }
    }
}
