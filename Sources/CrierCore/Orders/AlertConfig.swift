/// How alerts are queued and repeated.
public struct AlertConfig: Sendable, Equatable {
    public init() {}
    /// Most alerts waiting at once; more are rejected with a reason, never dropped silently.
    public var queueMax = 256
    /// Seconds between repeats of an unacknowledged alert; 0 = never repeat.
    public var repeatEvery = 0.0
    public var repeatMax = 3

    static let keys: [ConfigKey] = [
        ConfigKey("queue.max", section: "alerts", default: "256",
                  doc: "Most alerts waiting at once; further orders are rejected (acked \"rejected\", reason queue_full).",
                  apply: { c, v throws(ConfigValueError) in c.alerts.queueMax = try ConfigValue.int(v, 1...100_000) },
                  render: { String($0.alerts.queueMax) }),
        ConfigKey("alert.repeat_every", section: "alerts", default: "0",
                  doc: "Seconds between repeats of an alert until someone presses acknowledge; 0 = say it once.",
                  apply: { c, v throws(ConfigValueError) in c.alerts.repeatEvery = try ConfigValue.number(v, 0...3600) },
                  render: { ConfigValue.fmt($0.alerts.repeatEvery) }),
        ConfigKey("alert.repeat_max", section: "alerts", default: "3",
                  doc: "Most repeats of one alert (after the first time it is said).",
                  apply: { c, v throws(ConfigValueError) in c.alerts.repeatMax = try ConfigValue.int(v, 0...100) },
                  render: { String($0.alerts.repeatMax) }),
    ]
}
