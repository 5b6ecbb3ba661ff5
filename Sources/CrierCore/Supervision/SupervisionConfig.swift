/// Supervision settings from crier.conf (`supervisor.*`).
public struct SupervisionConfig: Sendable, Equatable {
    public var policy = RestartPolicy.standard
    /// Seconds a stalled component gets to return before it is abandoned and restarted anyway.
    public var stallGrace = 1.0

    public init() {}

    public var options: Supervisor.Options { Supervisor.Options(policy: policy, stallGrace: stallGrace) }

    static let keys: [ConfigKey] = [
        ConfigKey("supervisor.max_restarts", section: "supervisor", default: "5",
                  doc: "Restarts of one component allowed within supervisor.restart_window; one more failure and crier exits so systemd restarts it whole.",
                  apply: { c, v throws(ConfigValueError) in c.supervision.policy.maxRestarts = try ConfigValue.int(v, 1...1000) },
                  render: { String($0.supervision.policy.maxRestarts) }),
        ConfigKey("supervisor.restart_window", section: "supervisor", default: "60",
                  doc: "Seconds over which supervisor.max_restarts is counted.",
                  apply: { c, v throws(ConfigValueError) in c.supervision.policy.window = try ConfigValue.number(v, 1...86400) },
                  render: { ConfigValue.fmt($0.supervision.policy.window) }),
        ConfigKey("supervisor.backoff_initial", section: "supervisor", default: "0.1",
                  doc: "Seconds before the first restart of a failed component; doubles with each restart within the window.",
                  apply: { c, v throws(ConfigValueError) in c.supervision.policy.initialBackoff = try ConfigValue.number(v, 0.01...60) },
                  render: { ConfigValue.fmt($0.supervision.policy.initialBackoff) }),
        ConfigKey("supervisor.backoff_max", section: "supervisor", default: "5",
                  doc: "Longest wait in seconds before restarting a failed component.",
                  apply: { c, v throws(ConfigValueError) in c.supervision.policy.maxBackoff = try ConfigValue.number(v, 0.01...600) },
                  render: { ConfigValue.fmt($0.supervision.policy.maxBackoff) }),
        ConfigKey("supervisor.stall_grace", section: "supervisor", default: "1",
                  doc: "Seconds a stalled component gets to give up by itself before a new one is started anyway.",
                  apply: { c, v throws(ConfigValueError) in c.supervision.stallGrace = try ConfigValue.number(v, 0.1...30) },
                  render: { ConfigValue.fmt($0.supervision.stallGrace) }),
    ]
}
