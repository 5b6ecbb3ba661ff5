/// What each kind of announcement says, per language. `{number}`, `{numbers}`, `{amount}` and
/// `{text}` are filled in; numbers are then spelled out by `NumberWords`.
public struct Templates: Sendable, Equatable {
    public enum Name: String, Sendable, CaseIterable {
        case newCustomer = "new_customer"
        case newCustomers = "new_customers"
        case payment
        case text
        case started
        case linkUp = "link_up"
        case linkDown = "link_down"
        case volumeMax = "volume_max"
        case volumeMin = "volume_min"
        case muteEnded = "mute_ended"
        case noOrders = "no_orders"
        case wifiConnected = "wifi_connected"
        case wifiWrongPassword = "wifi_wrong_password"
        case wifiNotFound = "wifi_not_found"
        case wifiNoAddress = "wifi_no_address"
        case updated
        case updateFailed = "update_failed"
    }

    public var table: [Lang: [Name: String]] = Templates.defaults

    public init() {}

    public static let defaults: [Lang: [Name: String]] = [
        .zh: [
            .newCustomer: "新客户来了，{number}号",
            .newCustomers: "新客户来了，{numbers}",
            .payment: "收款{amount}元",
            .text: "{text}",
            .started: "音箱已启动",
            .linkUp: "服务器已连接",
            .linkDown: "服务连接失败，请检查网络",
            .volumeMax: "音量最大",
            .volumeMin: "音量最小",
            .muteEnded: "静音已结束",
            .noOrders: "暂无订单",
            .wifiConnected: "无线网络已连接",
            .wifiWrongPassword: "无线网络密码错误",
            .wifiNotFound: "未找到无线网络",
            .wifiNoAddress: "无线网络未获取到地址",
            .updated: "已更新到版本{version}",
            .updateFailed: "更新到版本{version}失败，已恢复版本{from_version}",
        ],
        .en: [
            .newCustomer: "New customer, number {number}",
            .newCustomers: "New customers: {numbers}",
            .payment: "Payment received, {amount}",
            .text: "{text}",
            .started: "Speaker ready",
            .linkUp: "Server connected",
            .linkDown: "Server connection failed, please check the network",
            .volumeMax: "Maximum volume",
            .volumeMin: "Minimum volume",
            .muteEnded: "Mute ended",
            .noOrders: "No orders yet",
            .wifiConnected: "Wi-Fi connected",
            .wifiWrongPassword: "Wi-Fi password wrong",
            .wifiNotFound: "Wi-Fi network not found",
            .wifiNoAddress: "Wi-Fi connected, but no IP address",
            .updated: "Updated to version {version}",
            .updateFailed: "Update to version {version} failed; back on version {from_version}",
        ],
    ]

    static let placeholders: [Name: [String]] = [
        .newCustomer: ["number"], .newCustomers: ["numbers"], .payment: ["amount"], .text: ["text"],
        .updated: ["version"], .updateFailed: ["version", "from_version"],
    ]

    public subscript(lang: Lang, name: Name) -> String { table[lang]?[name] ?? Templates.defaults[lang]![name]! }

    static let keys: [ConfigKey] = {
        var keys: [ConfigKey] = []
        for lang in Lang.allCases {
            for name in Name.allCases {
                let d = defaults[lang]![name]!
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
