import CrierCore

/// Why the output device could not be used, worded for the person reading the log.
public struct AudioError: Error, Sendable, CustomStringConvertible, Equatable {
    public enum Kind: Sendable, Equatable {
        /// The device does not exist (now): unplugged USB DAC, wrong name, missing driver.
        case notFound
        /// Another program holds it.
        case busy
        /// It exists but refused our format.
        case unsupported
        /// It went away while open (ENODEV, EIO, EBADFD).
        case lost
        case other
    }

    public var kind: Kind
    public var device: String
    public var operation: String
    public var code: Int32
    /// ALSA's own words, when it gave some.
    public var detail: String

    public var description: String {
        let what: String
        switch kind {
        case .notFound: what = "audio device '\(device)' not found"
        case .busy: what = "audio device '\(device)' is busy (another program is using it)"
        case .unsupported: what = "audio device '\(device)' refused the format"
        case .lost: what = "audio device '\(device)' went away"
        case .other: what = "audio device '\(device)' failed"
        }
        return "\(what) (\(operation): \(detail.isEmpty ? "error \(code)" : detail))"
    }

    /// What to check, for the log line.
    public var hint: String {
        switch kind {
        case .notFound: "check audio.device in crier.conf and `aplay -L`"
        case .busy: "stop the other program or use a dmix device"
        case .unsupported: "check audio.rate / audio.channels in crier.conf, or use a plughw: device"
        case .lost, .other: "check the cable / DAC"
        }
    }
}
