/// Spoken status, like the payment speakers shops know. Each prompt can be switched off.
public struct StatusPromptConfig: Sendable, Equatable {
    public init() {}
    public var onStart = true
    public var onLinkUp = true
    public var onLinkDown = true
    /// Seconds the link must be down before "服务连接失败" is said.
    public var linkDownAfter = 30.0
    /// Seconds between repeats while it stays down.
    public var linkDownRepeat = 60.0
    /// Say "电源电压不足，请更换电源" once per boot when the Pi's firmware reports under-voltage.
    public var onUnderVoltage = true

    static let keys: [ConfigKey] = [
        ConfigKey("status.on_start", section: "status prompts", default: "on",
                  doc: "Say \"音箱已启动\" / \"Speaker ready\" when the box starts.",
                  apply: { c, v throws(ConfigValueError) in c.status.onStart = try ConfigValue.bool(v) },
                  render: { $0.status.onStart ? "on" : "off" }),
        ConfigKey("status.on_link_up", section: "status prompts", default: "on",
                  doc: "Say \"服务器已连接\" / \"Server connected\" when the order server link comes up.",
                  apply: { c, v throws(ConfigValueError) in c.status.onLinkUp = try ConfigValue.bool(v) },
                  render: { $0.status.onLinkUp ? "on" : "off" }),
        ConfigKey("status.on_link_down", section: "status prompts", default: "on",
                  doc: "Say \"服务连接失败，请检查网络\" while the server link is down.",
                  apply: { c, v throws(ConfigValueError) in c.status.onLinkDown = try ConfigValue.bool(v) },
                  render: { $0.status.onLinkDown ? "on" : "off" }),
        ConfigKey("status.link_down_after", section: "status prompts", default: "30",
                  doc: "Seconds the link must be down before the failure prompt is said.",
                  apply: { c, v throws(ConfigValueError) in c.status.linkDownAfter = try ConfigValue.number(v, 1...3600) },
                  render: { ConfigValue.fmt($0.status.linkDownAfter) }),
        ConfigKey("status.link_down_repeat", section: "status prompts", default: "60",
                  doc: "Seconds between repeats of the failure prompt while the link stays down.",
                  apply: { c, v throws(ConfigValueError) in c.status.linkDownRepeat = try ConfigValue.number(v, 10...3600) },
                  render: { ConfigValue.fmt($0.status.linkDownRepeat) }),
        ConfigKey("status.on_under_voltage", section: "status prompts", default: "on",
                  doc: "Say \"电源电压不足，请更换电源\" / \"The power supply is too weak\" once per boot, at a quiet moment, when the Pi's firmware reports under-voltage.",
                  apply: { c, v throws(ConfigValueError) in c.status.onUnderVoltage = try ConfigValue.bool(v) },
                  render: { $0.status.onUnderVoltage ? "on" : "off" }),
    ]
}
