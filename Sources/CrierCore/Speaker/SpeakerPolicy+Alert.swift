/// An alert's outcome: what its synthesis said, which of its orders were heard, the acks and
/// the log lines that follow (docs/protocol.md, "Partial alerts").
extension SpeakerPolicy {
    mutating func synthesisEnded(_ clip: SpeakerClip, _ s: SynthesisEnd, now: Double) {
        guard var a = alertPlay, a.clip == clip, a.synthesis == nil else { return }
        let ids = a.alert.orderIDs.joined(separator: ",")
        if a.end == nil {
            switch s.outcome {
            case .done(let total, let first):
                var fields: [(String, String)] = [("ids", ids), ("seconds", Format.fixed(Double(s.frames) / Double(rate), 1)),
                                                  ("synth_ms", Format.fixed(total * 1000, 1))]
                if let f = first { fields.append(("first_ms", Format.fixed(f * 1000, 2))) }
                log(.info, "alert", "synthesized", fields)
            case .cancelled:
                if s.full { log(.warning, "alert", "speech longer than \(config.speech.maxSeconds) s; cut there (speech.max_seconds)", [("ids", ids)]) }
            case .failed(let e):
                a.failure = e
                out.append(.stopClip(clip))
            }
        } else if case .failed(let e) = s.outcome, a.failure == nil {
            a.failure = e
        }
        a.synthesis = s
        alertPlay = a
        if a.end != nil { finishAlert(now: now) }
    }

    /// Both the clip and its synthesis have ended: ack what was heard.
    mutating func finishAlert(now: Double) {
        guard let a = alertPlay, let end = a.end, let s = a.synthesis else { return }
        alertPlay = nil
        lastSaid = now
        let (alert, parts) = (a.alert, a.parts)
        let ids = alert.orderIDs.joined(separator: ",")
        if let error = a.failure {
            log(.error, "alert", "could not synthesize; rejecting", [("ids", ids), ("error", error)])
            for ack in queue.failed(alert, reason: "speech_failed", message: error, now: now) { report(ack) }
            return
        }
        let heard = Self.ordersHeard(alert: alert, parts: parts.count, end: end, synthesis: s)
        let acks = queue.finished(alert, heard: heard, now: now)
        let spokenIDs = Set(acks.filter { $0.status == .spoken }.map(\.id))
        for ack in acks {
            let i = alert.orders.firstIndex { $0.id == ack.id }
            let text = i.map { parts.count == alert.orders.count ? parts[$0].text : parts.map(\.text).joined() } ?? ""
            report(ack, [("text", text)])
        }
        if alert.occasion == .first {
            let said = alert.orders.filter { spokenIDs.contains($0.id) }
            if !said.isEmpty { out.append(.spoken(ids: said.map(\.id), lang: alert.lang, text: parts.map(\.text).joined())) }
        } else if heard == alert.orders.count {
            log(.info, "alert", "said again", [("ids", ids), ("occasion", alert.description)])
        }
        if heard < alert.orders.count {
            let unheard = alert.orders[heard...].map(\.id).filter { queue.inFlightIDs.contains($0) || queue.isWaiting($0) }
            if !unheard.isEmpty {
                let why = stopping ? "stopping; not acked, the server redelivers them"
                    : a.interrupting ? "interrupted by a more urgent order; said again after it"
                    : "cut short; said again"
                log(.info, "alert", "not heard in full", [("ids", unheard.joined(separator: ",")),
                                                          ("heard_s", Format.fixed(Double(end.heardFrames) / Double(rate), 1)), ("why", why)])
            }
        }
    }

    /// How many of the alert's orders were heard in full. A part is heard when its end left
    /// the device (`heardFrames`); parts not synthesized when the clip was cut have no end:
    /// not heard. A clip that could not be cut per order (one part for several orders) is
    /// heard whole or not at all.
    public static func ordersHeard(alert: Alert, parts: Int, end: SpeakerClipEnd, synthesis s: SynthesisEnd) -> Int {
        var ends = s.partEnds
        // Cut at speech.max_seconds: the part being synthesized ends where the clip does. With
        // no end for it, playing the clip through counted it as not heard, and the alert was
        // said again, cut again, for ever, never acked, holding up every order behind it.
        if s.full, ends.count < parts { ends.append(s.frames) }
        let partsHeard = end.outcome == .played && ends.count == parts ? parts : ends.prefix { $0 <= end.heardFrames }.count
        return parts == alert.orders.count ? partsHeard : (partsHeard == parts ? alert.orders.count : 0)
    }
}
