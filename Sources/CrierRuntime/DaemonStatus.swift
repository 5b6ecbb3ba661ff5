import CrierCore
import CrierPosix

/// `crier status`: what the daemon and its policy know.
extension Daemon {
    func remember(_ ids: [String], lang: Lang, text: String) {
        for id in ids {
            lastSpoken.append(AlertSummary(time: WallClock.now(), id: id, lang: lang.rawValue, text: text, state: "spoken"))
        }
        if lastSpoken.count > 10 { lastSpoken.removeFirst(lastSpoken.count - 10) }
    }

    func musicStatus() -> MusicStatus? {
        guard let m = music else { return nil }
        let now = m.nowPlaying
        return MusicStatus(kind: now.kind, state: now.state, title: now.title, location: now.location,
                           levelDb: config.music.levelDb, silenced: policy.musicLevel == 0, ducked: engine.stats.musicDucked)
    }

    public func snapshot(components: [ComponentStatus], lastError: LogRecord?) async -> StatusSnapshot {
        let state = await buttons?.state
        let link = LinkStatus(state: config.link.server == nil ? "off" : (policy.linkUp ? "up" : "down"),
                              server: config.link.server?.description,
                              since: policy.linkPrompts.downSince.map { Self.now() - $0 })
        var snap = StatusSnapshot(version: CrierVersion.string, deviceID: config.deviceID, time: WallClock.now(),
                                  uptime: Self.now() - started, components: components, link: link, lastError: lastError,
                                  volume: state?.volume ?? config.buttons.volumeDefault, volumeMax: config.buttons.volumeSteps,
                                  muted: state?.muted ?? false, queueLength: policy.queue.waitingCount, lastAlerts: lastSpoken,
                                  wifi: policy.wifi.map { w in
                                      WifiStatus(state: w.state.rawValue, ssid: w.ssidText, network: w.associated ? w.network : nil,
                                                 signalDbm: w.signal, address: w.address, frequency: w.associated ? w.frequency : nil,
                                                 since: Self.now() - w.since)
                                  })
        snap.music = musicStatus()
        snap.audioThread = engine.threadPolicy
        snap.speechThread = pipeline.speech.threadPolicy
        snap.eventThread = events.policy
        if let u = update, !u.isEmpty { snap.update = u }
        return snap
    }
}
