import CrierCore
import CrierLink
import CrierPosix

/// The order link: its events go to the speaker policy; the link is built, watched and
/// replaced here.
extension Daemon {
    func handle(_ e: LinkEvent) {
        switch e {
        case .connected:
            feed(.linkUp)
        case .disconnected:
            feed(.linkDown)
        case .order(let o):
            feed(.order(o))
        case .updateOffer(let offer):
            offerUpdate(offer)
            feed(.tick)
        case .rejected(let ack, answered: true):
            feed(.rejectionAnswered(ack))
        case .rejected(let ack, answered: false):
            feed(.refused(ack))
        case .cancel(let id):
            feed(.cancel(id: id))
        }
    }

    func makeLink() -> any OrderLinking {
        let cont = linkEvents
        let l: any OrderLinking
        // TEST ONLY (scripts/soak.sh): CRIER_TEST_LINK_SPEED compresses the reconnect backoff.
        let testSpeed = LinkTestSpeed(value: FileIO.env(LinkTestSpeed.variable), server: config.link.server)
        if let m = testSpeed.message {
            if testSpeed.refused { log.error(m) } else { log.warning(m) }
        }
        if config.link.server?.isMQTT == true {
            var options = MQTTLink.Options()
            options.backoff = testSpeed.backoff(options.backoff)
            options.ackStore = ackStore
            options.inbox = inboxStore
            l = MQTTLink(config: config.link, deviceID: config.deviceID, log: hub.logger("link"), options: options) { cont?($0) }
        } else {
            var options = OrderLink.Options()
            options.backoff = testSpeed.backoff(options.backoff)
            options.ackStore = ackStore
            options.software = CrierVersion.string
            options.waitPriority = config.speech.startPriority
            l = OrderLink(config: config.link, deviceID: config.deviceID, log: hub.logger("link"), options: options) { cont?($0) }
        }
        // Before the link starts: the first hello / retained status already says it.
        l.deviceChanged(slot: update?.bootedSlot, lastUpdate: lastUpdateSummary)
        l.healthChanged(power.health)
        return l
    }

    /// The link thread's progress mark, for the supervisor (now when there is no link).
    public func linkProgress() -> Double { link?.lastProgress ?? Monotonic.now() }

    /// The supervisor saw the link thread stall: a new link takes over, the old one is
    /// abandoned (a thread stuck in a name lookup cannot be interrupted). Unacked orders are
    /// redelivered by the server; the queue (in the policy) keeps everything already received.
    public func replaceLink() {
        guard let old = link else { return }
        log.error("order link thread stalled; starting a new link (the old thread is abandoned)")
        old.abandon()
        feed(.linkDown)  // the schedule ignores it when the link was not up
        let fresh = makeLink()
        link = fresh
        fresh.start()
    }
}
