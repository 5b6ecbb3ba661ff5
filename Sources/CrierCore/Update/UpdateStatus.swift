/// The update part of `crier status`: which slot runs, what each slot holds, what was installed
/// and how the last update ended. nil in a snapshot when the box has none of it (not booted
/// through the A/B boot script and no update records): a development machine.
public struct UpdateStatus: Sendable, Equatable {
    /// `rauc.slot=` from the kernel command line.
    public var bootedSlot: String?
    /// RAUC's view of the root slots; empty when it could not be asked (`slotsError` says why).
    public var slots: [RaucStatus.Slot]
    public var slotsError: String?
    public var pending: PendingUpdate?
    public var last: UpdateOutcome?
    /// A `crier update` or server offer in progress: "installing 40%", "installed; reboot at a
    /// quiet moment", or its failure.
    public var activity: String?

    public init(bootedSlot: String? = nil, slots: [RaucStatus.Slot] = [], slotsError: String? = nil,
                pending: PendingUpdate? = nil, last: UpdateOutcome? = nil, activity: String? = nil) {
        self.bootedSlot = bootedSlot
        self.slots = slots
        self.slotsError = slotsError
        self.pending = pending
        self.last = last
        self.activity = activity
    }

    public var isEmpty: Bool { bootedSlot == nil && slots.isEmpty && pending == nil && last == nil && activity == nil }

    /// The version in the booted slot, as RAUC recorded it (nil for the slot the image was
    /// flashed with: RAUC never installed it).
    public var bootedVersion: String? { slots.first { $0.bootname == bootedSlot }?.version }

    func json() -> JSONValue {
        func str(_ v: String?) -> JSONValue { v.map(JSONValue.string) ?? .null }
        let slots: [JSONValue] = self.slots.map { s in
            .object(JSONObject([
                ("bootname", str(s.bootname)), ("name", .string(s.name)), ("state", str(s.state)),
                ("boot_status", str(s.bootStatus)), ("version", str(s.version)), ("install_status", str(s.installStatus)),
            ]))
        }
        let pending: JSONValue = self.pending.map { p in
            .object(JSONObject([
                ("version", .string(p.version)), ("slot", .string(p.slot)), ("from_slot", .string(p.fromSlot)),
                ("from_version", .string(p.fromVersion)), ("installed_at", p.installedAt.map { .number(JSONNumber($0)) } ?? .null),
            ]))
        } ?? .null
        let last: JSONValue = self.last.map { o in
            .object(JSONObject([
                ("outcome", .string(o.kind.rawValue)), ("version", .string(o.version)), ("from_version", .string(o.fromVersion)),
                ("slot", .string(o.slot)), ("at", o.at.map { .number(JSONNumber($0)) } ?? .null), ("announced", .bool(o.announced)),
            ]))
        } ?? .null
        return .object(JSONObject([
            ("booted_slot", str(bootedSlot)), ("slots", .array(slots)), ("slots_error", str(slotsError)),
            ("pending", pending), ("last", last), ("activity", str(activity)),
        ]))
    }

    /// `crier status`'s lines.
    func human() -> String {
        var out = "update: " + (bootedSlot.map { "booted slot \($0)" } ?? "not an A/B boot")
        for s in slots {
            out += "; slot \(s.bootname ?? s.name) " + (s.version.map { "version \(LogRecord.escape($0))" } ?? "version unknown (never installed by RAUC)")
            var marks = [s.state, s.bootStatus].compactMap { $0 }
            if let i = s.installStatus, i != "ok" { marks.append("install: \(LogRecord.escape(i))") }
            if !marks.isEmpty { out += " (\(marks.joined(separator: ", ")))" }
        }
        if let e = slotsError { out += "; slots unknown: \(LogRecord.escape(e))" }
        out += "\n"
        if let p = pending {
            out += "  pending: version \(LogRecord.escape(p.version)) in slot \(p.slot), tried at the next boot\n"
        }
        if let o = last {
            let when = o.at.map { " at " + WallTime(unixMillis: Int64($0) * 1000).iso8601 } ?? ""
            switch o.kind {
            case .updated:
                out += "  last update: updated to \(LogRecord.escape(o.version)) from \(LogRecord.escape(o.fromVersion)), slot \(o.slot)\(when)\n"
            case .rolledBack:
                out += "  last update: version \(LogRecord.escape(o.version)) ROLLED BACK; running \(LogRecord.escape(o.fromVersion)) in slot \(o.slot)\(when)\n"
            }
        }
        if let a = activity { out += "  now: \(LogRecord.escape(a))\n" }
        return out
    }
}
