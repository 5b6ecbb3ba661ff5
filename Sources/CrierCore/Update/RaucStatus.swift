/// What `rauc status --detailed --output-format=json` says about the slots (RAUC 1.8 and 1.13
/// print the same shape): `booted`, and `slots`, an array of one-key objects
/// `{"rootfs.0": {"bootname": "A", "state": "booted", "boot_status": "good",
///   "slot_status": {"bundle": {"version": "…"}, "status": "ok"}}}`; unset fields are null.
public struct RaucStatus: Sendable, Equatable {
    public struct Slot: Sendable, Equatable {
        /// RAUC's slot name, "rootfs.0".
        public var name: String
        /// The bootloader's name for it, "A".
        public var bootname: String?
        /// "booted", "active" or "inactive".
        public var state: String?
        /// "good" or "bad" (the bootloader's mark).
        public var bootStatus: String?
        /// The version of the bundle last installed into it; nil for a slot never written by
        /// RAUC (the fresh image's A slot, the empty B slot).
        public var version: String?
        /// RAUC's record of that installation: "ok", or what went wrong.
        public var installStatus: String?

        public init(name: String, bootname: String? = nil, state: String? = nil, bootStatus: String? = nil,
                    version: String? = nil, installStatus: String? = nil) {
            self.name = name
            self.bootname = bootname
            self.state = state
            self.bootStatus = bootStatus
            self.version = version
            self.installStatus = installStatus
        }
    }

    public var booted: String?
    public var compatible: String?
    public var slots: [Slot]

    public init(booted: String? = nil, compatible: String? = nil, slots: [Slot] = []) {
        self.booted = booted
        self.compatible = compatible
        self.slots = slots
    }

    public struct ParseError: Error, Sendable, Equatable, CustomStringConvertible {
        public var message: String
        public var description: String { message }
    }

    public static func parse(_ bytes: [UInt8]) -> Result<RaucStatus, ParseError> {
        let v: JSONValue
        switch JSON.parse(bytes, limits: JSON.Limits(maxDepth: 16, maxBytes: 1 << 20)) {
        case .success(let x): v = x
        case .failure(let e): return .failure(ParseError(message: "rauc status printed no JSON (\(e))"))
        }
        guard case .object(let top) = v else { return .failure(ParseError(message: "rauc status printed \(v.typeName), not an object")) }
        var status = RaucStatus(booted: top["booted"]?.stringValue, compatible: top["compatible"]?.stringValue)
        guard case .array(let slots)? = top["slots"] else {
            return .failure(ParseError(message: "rauc status JSON has no \"slots\" array"))
        }
        for entry in slots {
            guard case .object(let one) = entry else { continue }
            for (name, body) in one.pairs {
                guard case .object(let o) = body else { continue }
                var slot = Slot(name: name, bootname: o["bootname"]?.stringValue, state: o["state"]?.stringValue,
                                bootStatus: o["boot_status"]?.stringValue)
                if case .object(let ss)? = o["slot_status"] {
                    if case .object(let bundle)? = ss["bundle"] { slot.version = bundle["version"]?.stringValue }
                    slot.installStatus = ss["status"]?.stringValue
                }
                status.slots.append(slot)
            }
        }
        return .success(status)
    }

    /// The root file system slots (RAUC's class "rootfs"; the ones with a bootname), A before B.
    public var rootSlots: [Slot] {
        slots.filter { $0.bootname != nil }.sorted { ($0.bootname ?? "") < ($1.bootname ?? "") }
    }
}

extension JSONValue {
    var stringValue: String? {
        if case .string(let s) = self { return s }
        return nil
    }
}
