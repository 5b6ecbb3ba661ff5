/// The files the image's update scripts leave on the data partition (docs/updates.md):
///  - `update-pending`, written by RAUC's post-install handler (crier-rauc-post-install) when a
///    bundle was installed to the other slot: it is tried at the next boot.
///  - `update-outcome`, written by crier-mark-good once the trial ended: `updated` (the new slot
///    was healthy and is committed) or `rolled-back` (it did not stay up; U-Boot went back).
///    `announced=0` until crier has said it; crier rewrites the file with `announced=1` only
///    after the sentence was heard: a power cut while it is said means it is said again at the
///    next start, never that it is not said.
/// Both are `key=value` lines, renamed into place by their writers: read whole or not at all.
public enum KeyValueFile {
    /// Keys to values; the first occurrence of a key wins (the shell readers use `head -n 1`).
    /// Lines without `=` and keys with spaces are ignored: a file from another version of the
    /// scripts reads as far as it can, never as an error.
    public static func parse(_ text: String) -> [String: String] {
        var out: [String: String] = [:]
        // "\r\n" is one Character: split on any line break, not on "\n" alone.
        for line in text.split(whereSeparator: \.isNewline) {
            guard let eq = line.firstIndex(of: "=") else { continue }
            let key = String(line[..<eq])
            guard !key.isEmpty, !key.contains(" "), out[key] == nil else { continue }
            out[key] = String(line[line.index(after: eq)...])
        }
        return out
    }

    public static func render(_ pairs: [(String, String)]) -> String {
        pairs.map { "\($0.0)=\(Self.oneLine($0.1))" }.joined(separator: "\n") + "\n"
    }

    /// A value never carries a line break into the file (it would start a new key).
    static func oneLine(_ s: String) -> String {
        String(s.filter { !$0.isNewline })
    }
}

/// `update-pending`: a bundle installed to `slot`, not yet proved by a trial boot.
public struct PendingUpdate: Sendable, Equatable {
    public var version: String
    public var slot: String
    public var fromSlot: String
    public var fromVersion: String
    public var installedAt: Int?

    public init(version: String, slot: String, fromSlot: String, fromVersion: String, installedAt: Int? = nil) {
        self.version = version
        self.slot = slot
        self.fromSlot = fromSlot
        self.fromVersion = fromVersion
        self.installedAt = installedAt
    }

    /// nil for a file that names no version or no slot (not one the post-install handler wrote).
    public init?(fileText: String) {
        let kv = KeyValueFile.parse(fileText)
        guard let v = kv["version"], !v.isEmpty, let s = kv["slot"], !s.isEmpty else { return nil }
        self.init(version: v, slot: s, fromSlot: kv["from_slot"] ?? "?", fromVersion: kv["from_version"] ?? "?",
                  installedAt: kv["installed_at"].flatMap { Int($0) })
    }
}

/// `update-outcome`: how the last update ended.
public struct UpdateOutcome: Sendable, Equatable {
    public enum Kind: String, Sendable, Equatable {
        case updated
        case rolledBack = "rolled-back"
    }

    public var kind: Kind
    /// The version that was tried.
    public var version: String
    /// The version that ran before it (the one running again after a rollback).
    public var fromVersion: String
    /// The slot booted when the outcome was written (the new one after `updated`, the old one
    /// after `rolled-back`).
    public var slot: String
    /// Unix seconds.
    public var at: Int?
    public var announced: Bool

    public init(kind: Kind, version: String, fromVersion: String, slot: String, at: Int? = nil, announced: Bool = false) {
        self.kind = kind
        self.version = version
        self.fromVersion = fromVersion
        self.slot = slot
        self.at = at
        self.announced = announced
    }

    /// nil for a file with no known `outcome=`. A missing or unreadable `announced` counts as
    /// not announced: saying it once too often beats never saying it.
    public init?(fileText: String) {
        let kv = KeyValueFile.parse(fileText)
        guard let k = kv["outcome"].flatMap(Kind.init(rawValue:)) else { return nil }
        self.init(kind: k, version: kv["version"] ?? "?", fromVersion: kv["from_version"] ?? "?", slot: kv["slot"] ?? "?",
                  at: kv["at"].flatMap { Int($0) }, announced: kv["announced"] == "1")
    }

    /// The file again, in crier-mark-good's key order.
    public func fileText() -> String {
        KeyValueFile.render([("outcome", kind.rawValue), ("version", version), ("from_version", fromVersion), ("slot", slot),
                             ("at", at.map(String.init) ?? ""), ("announced", announced ? "1" : "0")])
    }

    /// The sentence for the box to say: the version as a person reads it (`UpdateOutcome.spoken`).
    public var announcement: AnnouncementContent {
        let values = ["version": Self.spoken(version), "from_version": Self.spoken(fromVersion)]
        return .filled(kind == .updated ? .updated : .updateFailed, values)
    }

    /// "0.9.0+20261203.1" → "0.9.0": the build id after `+` or `~` means nothing read aloud.
    public static func spoken(_ version: String) -> String {
        let head = version.prefix { $0 != "+" && $0 != "~" }
        return head.isEmpty ? version : String(head)
    }
}

/// The booted slot's RAUC bootname from the kernel command line (`rauc.slot=A`, set by the
/// boot script); nil when the box was not booted through the A/B boot script.
public enum BootedSlot {
    public static func fromCmdline(_ cmdline: String) -> String? {
        var found: String?
        for word in cmdline.split(whereSeparator: { $0 == " " || $0 == "\n" || $0 == "\t" }) where word.hasPrefix("rauc.slot=") {
            let v = word.dropFirst("rauc.slot=".count)
            if !v.isEmpty { found = String(v) }  // the last one wins, as for the kernel
        }
        return found
    }
}
