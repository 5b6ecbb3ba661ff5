/// When the box says the order-server status prompts (the payment-speaker habit): "server
/// connected" on each connection, "服务连接失败" once the link has been down `linkDownAfter`
/// seconds, then every `linkDownRepeat` seconds while it stays down. Start-up counts as down.
/// Pure: times are passed in.
public struct LinkPromptSchedule: Sendable, Equatable {
    public let config: StatusPromptConfig
    public private(set) var up = false
    public private(set) var downSince: Double?
    /// When the next failure prompt is due (nil while up or switched off).
    public private(set) var nextDownPrompt: Double?

    public init(config: StatusPromptConfig, startedAt now: Double) {
        self.config = config
        downSince = now
        nextDownPrompt = config.onLinkDown ? now + config.linkDownAfter : nil
    }

    /// The link came up: returns the prompt to say, if any.
    public mutating func connected() -> Templates.Name? {
        up = true
        downSince = nil
        nextDownPrompt = nil
        return config.onLinkUp ? .linkUp : nil
    }

    public mutating func disconnected(now: Double) {
        guard up else { return }
        up = false
        downSince = now
        nextDownPrompt = config.onLinkDown ? now + config.linkDownAfter : nil
    }

    /// The network under the link has just come back (Wi-Fi connected): the link needs a
    /// moment to reconnect, so a failure prompt due before `now + linkDownAfter` waits until
    /// then (said only if the link is still down). Nothing changes while the link is up.
    public mutating func networkReturned(now: Double) {
        guard !up, let next = nextDownPrompt else { return }
        nextDownPrompt = max(next, now + config.linkDownAfter)
    }

    /// The failure prompt when it is due at `now` (and schedules the repeat).
    public mutating func due(now: Double) -> Templates.Name? {
        guard !up, let next = nextDownPrompt, now >= next else { return nil }
        nextDownPrompt = now + config.linkDownRepeat
        return .linkDown
    }
}
