import Testing
@testable import CrierCore

@Suite("Reconnect backoff, heartbeat, line framing")
struct OrdersLinkPolicyTests {
    @Test("exponential ceiling 0.5 s doubling to a 30 s cap, full jitter below it")
    func backoff() {
        var b = ReconnectBackoff()
        var rng = SplitMix64(seed: 7)
        var ceilings: [Double] = []
        for _ in 0..<10 {
            let c = b.currentCeiling
            ceilings.append(c)
            let d = b.nextDelay(using: &rng)
            #expect(d >= 0 && d <= c)
        }
        #expect(ceilings == [0.5, 1, 2, 4, 8, 16, 30, 30, 30, 30])
        // Many attempts: never overflows.
        for _ in 0..<200 { _ = b.nextDelay(using: &rng) }
        #expect(b.currentCeiling == 30)
    }

    @Test("the jitter spreads over the whole range")
    func jitterSpread() {
        var rng = SplitMix64(seed: 1)
        var b = ReconnectBackoff()
        for _ in 0..<8 { _ = b.nextDelay(using: &rng) }
        let ds = (0..<1000).map { _ in
            var c = b
            return c.nextDelay(using: &rng)
        }
        #expect(ds.allSatisfy { $0 >= 0 && $0 <= 30 })
        #expect(ds.min()! < 3)
        #expect(ds.max()! > 27)
    }

    @Test("reset only after a connection stayed healthy for 10 s")
    func reset() {
        var b = ReconnectBackoff()
        var rng = SplitMix64(seed: 3)
        for _ in 0..<5 { _ = b.nextDelay(using: &rng) }
        b.connected(now: 100)
        b.disconnected(now: 109.9)
        #expect(b.attempt == 5, "a flapping connection keeps backing off")
        b.connected(now: 200)
        b.disconnected(now: 210)
        #expect(b.attempt == 0)
        #expect(b.currentCeiling == 0.5)
        b.disconnected(now: 300)
        #expect(b.attempt == 0)
    }

    @Test("heartbeat: ping after `interval` with nothing received, dead after 2× with nothing received")
    func heartbeat() {
        var h = LinkHeartbeat(interval: 15, now: 0)
        #expect(h.action(now: 14.9) == .none)
        #expect(h.nextDeadline == 15)
        #expect(h.action(now: 15) == .ping)
        h.pinged(now: 15)
        #expect(h.action(now: 20) == .none)
        #expect(h.nextDeadline == 30)
        #expect(h.action(now: 30) == .dead(silentFor: 30))
    }

    @Test("heartbeat: sending (acks) never postpones the ping; only what is received does")
    func heartbeatTraffic() {
        var h = LinkHeartbeat(interval: 10, now: 0)
        h.received(now: 8)
        #expect(h.action(now: 17) == .none)
        #expect(h.action(now: 18) == .ping)
        h.pinged(now: 18)
        #expect(h.action(now: 27) == .none)
        #expect(h.action(now: 28) == .dead(silentFor: 20))
        h.received(now: 28.5)  // the pong
        #expect(h.action(now: 30) == .none)
        #expect(h.nextDeadline == 38.5)
    }

    /// The issue-13 backlog: the box acks all the time and the server only answers pings.
    /// Whatever the box sends and whenever, a peer that answers every ping within the interval
    /// is never declared dead, and one that stops answering is declared dead within 2 ×
    /// interval of the last message heard (never earlier).
    @Test("heartbeat invariant over seeded random traffic: an answering peer is never dead, a silent one is within 2×")
    func heartbeatInvariant() {
        for seed in UInt64(1)...200 {
            var rng = SplitMix64(seed: seed)
            let interval = Double.random(in: 0.5...30, using: &rng)
            var h = LinkHeartbeat(interval: interval, now: 0)
            var now = 0.0
            var pongDue: [Double] = []
            var peerHeardAt = 0.0
            let silentFrom = Double.random(in: 5 * interval...20 * interval, using: &rng)
            var declaredDead: Double?
            // The peer also sends on its own at random (orders), but not after `silentFrom`.
            var nextPeerMessage = Double.random(in: 0...(3 * interval), using: &rng)
            while now < silentFrom + 3 * interval {
                // Our own sends (acks) come at random and must not matter: the struct is not told.
                let step = Double.random(in: 0.001...(interval / 4), using: &rng)
                let next = min(now + step, h.nextDeadline, pongDue.min() ?? .infinity, nextPeerMessage)
                now = max(now, next)
                if let i = pongDue.firstIndex(where: { $0 <= now }) {
                    pongDue.remove(at: i)
                    if now < silentFrom { h.received(now: now); peerHeardAt = now }
                }
                if nextPeerMessage <= now {
                    if now < silentFrom { h.received(now: now); peerHeardAt = now }
                    nextPeerMessage = now + Double.random(in: 0...(3 * interval), using: &rng)
                }
                switch h.action(now: now) {
                case .none: break
                case .ping:
                    h.pinged(now: now)
                    pongDue.append(now + Double.random(in: 0...(interval * 0.9), using: &rng))
                case .dead(let silent):
                    declaredDead = now
                    #expect(silent >= 2 * interval - 1e-9, "seed \(seed)")
                }
                if declaredDead != nil { break }
            }
            let dead = declaredDead ?? .infinity
            #expect(dead >= silentFrom, "seed \(seed): answering peer declared dead at \(dead), silent only from \(silentFrom)")
            #expect(dead <= peerHeardAt + 2 * interval + 1e-9, "seed \(seed): silent peer not declared dead in time")
        }
    }

    @Test("framing: \\n and \\r\\n, split anywhere, empty lines skipped")
    func framing() {
        var f = LineFramer(maxLine: 10)
        var got: [LineFramer.Item] = []
        for b in Array("ab\r\n\ncd\nef".utf8) { got += f.push([b]) }
        #expect(got == [.line(Array("ab".utf8)), .line(Array("cd".utf8))])
        #expect(f.pending == 2)
        #expect(f.push(Array("\r\n".utf8)) == [.line(Array("ef".utf8))])
    }

    @Test("framing: exactly the limit passes, one more byte is too long, then nothing more")
    func framingLimit() {
        var f = LineFramer(maxLine: 4)
        #expect(f.push(Array("1234\r\n".utf8)) == [.line(Array("1234".utf8))])
        #expect(f.push(Array("1234\r".utf8)) == [])
        #expect(f.push(Array("\n".utf8)) == [.line(Array("1234".utf8))])
        #expect(f.push(Array("12345\n".utf8)) == [.tooLong(5)])
        #expect(f.push(Array("ok\n".utf8)) == [])
        var g = LineFramer(maxLine: 4)
        #expect(g.push(Array("ok\n".utf8) + Array(repeating: UInt8(ascii: "x"), count: 6)) == [.line(Array("ok".utf8)), .tooLong(6)])
    }
}
