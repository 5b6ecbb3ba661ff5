/// How alerts are queued and repeated.
public struct AlertConfig: Sendable, Equatable {
    /// Most alerts waiting at once; more are rejected with a reason, never dropped silently.
    public var queueMax = 256
    /// Seconds between repeats of an unacknowledged alert; 0 = never repeat.
    public var repeatEvery = 0.0
    public var repeatMax = 3
    /// Most waiting `new_customer` orders said together in one utterance; 1 = never coalesce.
    public var coalesceMax = 10

    public init(queueMax: Int = 256, repeatEvery: Double = 0, repeatMax: Int = 3, coalesceMax: Int = 10) {
        self.queueMax = queueMax
        self.repeatEvery = repeatEvery
        self.repeatMax = repeatMax
        self.coalesceMax = coalesceMax
    }

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
        ConfigKey("alert.coalesce_max", section: "alerts", default: "10",
                  doc: "Most waiting new-customer orders said together (\"新客户来了，41号、42号\"); 1 = one at a time.",
                  apply: { c, v throws(ConfigValueError) in c.alerts.coalesceMax = try ConfigValue.int(v, 1...100) },
                  render: { String($0.alerts.coalesceMax) }),
    ]
}
