/// What each kind of announcement says, per language. `{number}`, `{numbers}`, `{amount}` and
/// `{text}` are filled in; numbers are then spelled out by `NumberWords`. The orders' templates
/// come from the table of order kinds (`OrderKindSpec.all`); the prompts' are here.
public struct Templates: Sendable, Equatable {
    /// A template's name: `template.<lang>.<name>` in crier.conf.
    public struct Name: RawRepresentable, Hashable, Sendable, ExpressibleByStringLiteral {
        public var rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }

        /// The prompts (what the box says about itself; their defaults are in `prompts`).
        public static let started: Name = "started", linkUp: Name = "link_up", linkDown: Name = "link_down"
        public static let volumeMax: Name = "volume_max", volumeMin: Name = "volume_min", muteEnded: Name = "mute_ended", noOrders: Name = "no_orders"
        public static let wifiConnected: Name = "wifi_connected", wifiWrongPassword: Name = "wifi_wrong_password"
        public static let wifiNotFound: Name = "wifi_not_found", wifiNoAddress: Name = "wifi_no_address"
        public static let updated: Name = "updated", updateFailed: Name = "update_failed"
        public static let powerWeak: Name = "power_weak"
        public static let setupHotspot: Name = "setup_hotspot"

        /// Shorthands for code and tests; a new order kind needs none.
        public static let newCustomer = Name(kind: .newCustomer), payment = Name(kind: .payment), text = Name(kind: .text)
        public static let newCustomers = Name(rawValue: OrderKindSpec.newCustomer.coalescing!.name)

        /// An order kind's own template.
        public init(kind: OrderKindSpec) { rawValue = kind.name }
        public init(stringLiteral s: String) { rawValue = s }

        /// Orders' templates (table order), then the prompts': the order of the config keys.
        public static let allCases: [Name] = OrderKindSpec.templates.map { Name(rawValue: $0.name) } + prompts.map(\.name)
    }

    public var table: [Lang: [Name: String]] = Templates.defaults

    public init() {}

    /// The prompts: what the box says about itself, with their placeholders.
    static let prompts: [(name: Name, placeholders: [String], defaults: [Lang: String])] = [
        (.started, [], [.zh: "音箱已启动", .en: "Speaker ready"]),
        (.linkUp, [], [.zh: "服务器已连接", .en: "Server connected"]),
        (.linkDown, [], [.zh: "服务连接失败，请检查网络", .en: "Server connection failed, please check the network"]),
        (.volumeMax, [], [.zh: "音量最大", .en: "Maximum volume"]),
        (.volumeMin, [], [.zh: "音量最小", .en: "Minimum volume"]),
        (.muteEnded, [], [.zh: "静音已结束", .en: "Mute ended"]),
        (.noOrders, [], [.zh: "暂无订单", .en: "No orders yet"]),
        (.wifiConnected, [], [.zh: "无线网络已连接", .en: "Wi-Fi connected"]),
        (.wifiWrongPassword, [], [.zh: "无线网络密码错误", .en: "Wi-Fi password wrong"]),
        (.wifiNotFound, [], [.zh: "未找到无线网络", .en: "Wi-Fi network not found"]),
        (.wifiNoAddress, [], [.zh: "无线网络未获取到地址", .en: "Wi-Fi connected, but no IP address"]),
        (.powerWeak, [], [.zh: "电源电压不足，请更换电源", .en: "The power supply is too weak"]),
        (.updated, ["version"], [.zh: "已更新到版本{version}", .en: "Updated to version {version}"]),
        (.updateFailed, ["version", "from_version"],
         [.zh: "更新到版本{version}失败，已恢复版本{from_version}", .en: "Update to version {version} failed; back on version {from_version}"]),
        (.setupHotspot, ["code"], [.zh: "请用手机连接 Crier {code} 设置网络", .en: "Connect your phone to Crier {code} to set up the network"]),
    ]

    public static let defaults: [Lang: [Name: String]] = {
        var d: [Lang: [Name: String]] = [:]
        for lang in Lang.allCases {
            for t in OrderKindSpec.templates { d[lang, default: [:]][Name(rawValue: t.name)] = t.defaults[lang] }
            for p in prompts { d[lang, default: [:]][p.name] = p.defaults[lang] }
        }
        return d
    }()

    /// The placeholders each template may have (an order's template: exactly its one).
    static let placeholders: [Name: [String]] = {
        var p: [Name: [String]] = [:]
        for t in OrderKindSpec.templates { p[Name(rawValue: t.name)] = [t.placeholder] }
        for t in prompts where !t.placeholders.isEmpty { p[t.name] = t.placeholders }
        return p
    }()

    /// The configured words, else the default; a name with neither (a kind not in
    /// `OrderKindSpec.all`) has no words, so its order is rejected `nothing_to_say`.
    public subscript(lang: Lang, name: Name) -> String { table[lang]?[name] ?? Templates.defaults[lang]?[name] ?? "" }

    static let keys: [ConfigKey] = {
        var keys: [ConfigKey] = []
        for lang in Lang.allCases {
            for name in Name.allCases {
                let d = defaults[lang]?[name] ?? ""  // none: OrderKindsTests says which kind lacks it
                let allowed = placeholders[name] ?? []
                keys.append(ConfigKey(
                    "template.\(lang.rawValue).\(name.rawValue)", section: "templates", default: d,
                    doc: "What the box says (\(lang.rawValue)) for \(name.rawValue.replacingAll("_", with: " "))"
                        + (allowed.isEmpty ? "." : "; " + allowed.map { "{\($0)}" }.joined(separator: ", ") + " is filled in."),
                    apply: { c, v throws(ConfigValueError) in
                        let v = try ConfigValue.nonEmpty(v, what: "the words to say")
                        for p in Templates.placeholderNames(in: v) where !allowed.contains(p) {
                            throw ConfigValueError("unknown placeholder {\(ConfigValue.short(p))}; this template takes "
                                + (allowed.isEmpty ? "none" : allowed.map { "{\($0)}" }.joined(separator: ", ")))
                        }
                        c.templates.table[lang, default: [:]][name] = v
                    },
                    render: { $0.templates[lang, name] }))
            }
        }
        return keys
    }()

    static func placeholderNames(in s: String) -> [String] {
        var names: [String] = []
        var current: String?
        for c in s {
            if c == "{" { current = "" } else if c == "}", let n = current { names.append(n); current = nil } else { current?.append(c) }
        }
        return names
    }

    /// Fills `{key}` placeholders; an unknown placeholder is left as written.
    public static func fill(_ template: String, _ values: [String: String]) -> String {
        var out = ""
        var current: String?
        for c in template {
            if c == "{" {
                if let pending = current { out += "{" + pending }
                current = ""
            } else if c == "}", let name = current {
                out += values[name] ?? "{\(name)}"
                current = nil
            } else if current != nil {
                current!.append(c)
            } else {
                out.append(c)
            }
        }
        if let pending = current { out += "{" + pending }
        return out
    }
}
