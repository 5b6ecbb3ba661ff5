/// Clips: a prompt started (or dropped), a clip's words, its end, and the shutdown's cut.
extension SpeakerPolicy {
    /// Starts a prompt, or says why not (false: look for the next thing).
    mutating func startPrompt(_ name: Templates.Name, now: Double) -> Bool {
        guard promptGain > 0 else {  // muted: prompts are silent (an update's is said at the next start)
            lastSaid = now
            return false
        }
        wifiTick(now: now)
        if let w = wifi, !w.stillTrue(name, linkUp: linkUp, linkDownAfter: config.status.linkDownAfter, now: now) {
            log(.info, "runtime", "prompt dropped: no longer true", [("prompt", name.rawValue), ("wifi", w.state.rawValue), ("link", linkUp ? "up" : "down")])
            lastSaid = now
            return false
        }
        // A setup prompt chosen before the hotspot closed (joined, closed on the page, idle).
        if name == .setupHotspot, setup?.promptStillTrue != true {
            log(.info, "runtime", "prompt dropped: no longer true", [("prompt", name.rawValue), ("setup", setup?.phase.rawValue ?? "off")])
            lastSaid = now
            return false
        }
        let clip = newClip()
        promptPlay = PromptPlay(clip: clip, name: name)
        out.append(.startPrompt(clip, name, gain: promptGain))
        return true
    }

    mutating func started(_ clip: SpeakerClip, parts: [Utterance]) {
        if var a = alertPlay, a.clip == clip {
            a.parts = parts
            alertPlay = a
            log(.info, "alert", "saying", [("ids", a.alert.orderIDs.joined(separator: ",")), ("parts", "\(parts.count)")])
        } else if var p = promptPlay, p.clip == clip {
            p.text = parts.map(\.text).joined()
            promptPlay = p
        }
    }

    mutating func clipEnded(_ clip: SpeakerClip, _ end: SpeakerClipEnd, now: Double) {
        if var a = alertPlay, a.clip == clip, a.end == nil {
            a.end = end
            alertPlay = a
            out.append(.release(clip))
            if a.synthesis != nil { finishAlert(now: now) }
        } else if let p = promptPlay, p.clip == clip {
            promptPlay = nil
            lastSaid = now
            // Not waited for: a cut prompt's synthesis stops at its next chunk, and the order
            // that cut it is synthesized right after it on the speech thread.
            out.append(.release(clip))
            log(.info, "runtime", end.outcome == .played ? "said" : "prompt cut short", [("prompt", p.name.rawValue), ("text", p.text)])
            if p.name == .updated || p.name == .updateFailed {
                // Heard in full, or said again after what cut it.
                if end.outcome == .played {
                    out.append(.updateAnnounced(p.name))
                } else if !stopping && !statusPrompts.contains(p.name) {
                    statusPrompts.append(p.name)
                }
            }
        } else if let r = requestPlay, r.clip == clip {
            requestPlay = nil
            lastSaid = now
            out.append(.release(clip))
            // The local page's pairing code is said, never logged.
            log(.info, "runtime", "said on request", [("text", r.utterance.secret ? "(not logged)" : r.utterance.text)])
        }
    }

    /// Ends whatever the speaker waits for. An alert on an open device is faded out and its
    /// outcome (`stopped`) ends the wait; anything else (a prompt, a request, a clip on a
    /// device that is not open and would wait forever) ends as `shutdown` at once: an alert
    /// then stays unacked and the server redelivers it after the restart.
    mutating func abandon(deviceOpen: Bool, now: Double) {
        if let a = currentAlert, deviceOpen {
            log(.warning, "runtime", "current alert still playing at the end of the grace period; cutting it",
                [("ids", a.alert.orderIDs.joined(separator: ","))])
            out.append(.stopClip(a.clip))
            return
        }
        guard let c = playingClip else { return }
        out.append(.stopClip(c))
        clipEnded(c, SpeakerClipEnd(.shutdown, heardFrames: 0), now: now)
    }
}
