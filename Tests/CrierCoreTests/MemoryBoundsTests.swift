import Testing
@testable import CrierCore

/// Issue 16: anonymous memory grew through a 10 000-alert run. Every per-order structure must
/// stay within its bound, and its storage must not keep growing, however many orders pass.
@Suite("Memory bounds: per-order structures stay bounded over 100 000 orders")
struct MemoryBoundsTests {
    /// Ids as long as order-sim's (`O1764489242-12345`): past 15 bytes a Swift string has its
    /// own heap storage, so every id a structure keeps costs an allocation.
    static func orderID(_ n: Int) -> String { "O1764489242-\(n)" }

    @Test("the dedupe memory keeps exactly its last `capacity` ids, in fixed storage")
    func recentOutcomesRing() {
        var r = RecentOutcomes<Ack.Status>(capacity: 1024)
        var rng = SplitMix64(seed: 16)
        var slotsAfterWarmUp = (status: 0, order: 0)
        var most = (count: 0, order: 0)
        for i in 0..<100_000 {
            r[Self.orderID(i)] = Bool.random(using: &rng) ? .spoken : .expired
            if Int.random(in: 0..<10, using: &rng) == 0 {
                r[Self.orderID(max(0, i - Int.random(in: 0..<2000, using: &rng)))] = .cancelled  // updates keep their place
            }
            most = (max(most.count, r.count), max(most.order, r.orderCount))
            if i == 2048 { slotsAfterWarmUp = r.storageCapacity }
        }
        #expect(most.count == 1024)
        #expect(most.order == 1024, "ids forgotten by the map must not stay held by the insertion order")
        #expect(r.storageCapacity == slotsAfterWarmUp, "storage grew after the bound was reached")
        #expect(r[Self.orderID(99_999)] != nil)
        #expect(r[Self.orderID(90_000)] == nil)
    }

    @Test("the queue's dedupe memory stays bounded by `remember` over 100 000 seeded orders")
    func queueRemembersBoundedly() {
        var q = AlertQueue(config: AlertConfig(queueMax: 256, coalesceMax: 10))
        var rng = SplitMix64(seed: 1616)
        var now = 0.0
        var next = 0
        var slotsAfterWarmUp = 0
        var mostIDs = 0
        while next < 100_000 {
            for _ in 0..<Int.random(in: 1...40, using: &rng) where next < 100_000 {
                let id = Self.orderID(next)
                next += 1
                let order = Int.random(in: 0..<4, using: &rng) == 0
                    ? Order(id: id, kind: .text("a"), ttl: 0.5)
                    : Order(id: id, kind: .newCustomer(number: next % 1000))
                _ = q.add(order, now: now)
                if Int.random(in: 0..<50, using: &rng) == 0 { _ = q.cancel(id: Self.orderID(next + 3), now: now) }
            }
            now += 1
            while let a = q.next(now: now).alert {
                _ = q.finished(a, now: now)
                now += 0.1
            }
            mostIDs = max(mostIDs, q.rememberedFootprint.ids)
            if next > 10_000 && slotsAfterWarmUp == 0 { slotsAfterWarmUp = q.rememberedFootprint.slots }
        }
        #expect(mostIDs <= 2 * q.remember, "outcomes and rejections hold at most `remember` ids each")
        #expect(q.rememberedFootprint.slots == slotsAfterWarmUp, "the dedupe memory's storage grew after warm-up")
    }

    @Test("after a burst of 5 000 orders has been said, the waiting list gives its room back")
    func queueReleasesBurstStorage() {
        var q = AlertQueue(config: AlertConfig(queueMax: 20_000, coalesceMax: 1))
        for i in 0..<5_000 { _ = q.add(Order(id: Self.orderID(i), kind: .text("a")), now: 0) }
        #expect(q.waitingStorageCapacity.list >= 5_000)
        var said = 0
        while let a = q.next(now: 1).alert {
            #expect(q.finished(a, now: 1) == [.spoken(a.orderIDs[0])])
            said += 1
        }
        #expect(said == 5_000)
        #expect(q.waitingStorageCapacity.list <= AlertQueue.keptCapacity)
        #expect(q.waitingStorageCapacity.ids <= AlertQueue.keptCapacity)
        #expect(q.add(Order(id: Self.orderID(4_999), kind: .text("a")), now: 2).ack?.status == .spoken, "dedupe still holds")
        // The same once the last waiting orders leave by expiry or cancel instead of being said.
        for i in 5_000..<7_000 { _ = q.add(Order(id: Self.orderID(i), kind: .text("a"), ttl: 1), now: 2) }
        _ = q.cancel(id: Self.orderID(6_999), now: 2.5)
        #expect(q.expire(now: 4).count == 1_999)
        #expect(q.waitingCount == 0)
        #expect(q.waitingStorageCapacity.list <= AlertQueue.keptCapacity)
    }

    @Test("the outbox remembers at most 1024 delivered acks per connection over 100 000 acks")
    func outboxDeliveredBounded() {
        var o = AckOutbox()
        o.connectionStarted()
        var rng = SplitMix64(seed: 160)
        var n = 0
        var t = 0.0
        var most = 0
        while n < 100_000 {
            for _ in 0..<Int.random(in: 1...30, using: &rng) {
                o.add(.spoken(Self.orderID(n)))
                n += 1
            }
            _ = o.takeUnwritten()
            t += 1
            if o.needsProbe { o.pinged(now: t) }
            o.pong()
            most = max(most, o.deliveredRemembered)
        }
        #expect(o.isEmpty)
        #expect(most == AckOutbox.deliveredMemory)
        // A redelivery that crossed a recent ack is still not answered twice on this connection…
        o.add(Ack(id: Self.orderID(n - 1), status: .spoken, message: "already spoken; not said again"))
        #expect(o.isEmpty)
        // …one thousands of acks old is answered again (harmless: protocol section 6, rule 3).
        o.add(Ack(id: Self.orderID(n - 5000), status: .spoken, message: "already spoken; not said again"))
        #expect(o.count == 1)
    }
}
