import Testing
@testable import CrierCore

private func nc(_ id: String, _ n: Int, lang: Lang? = nil, priority: Int = 0, ttl: Double? = nil, text: String? = nil) -> Order {
    Order(id: id, kind: .newCustomer(number: n), lang: lang, text: text, priority: priority, ttl: ttl)
}

private func tx(_ id: String, _ t: String, priority: Int = 0, ttl: Double? = nil) -> Order {
    Order(id: id, kind: .text(t), priority: priority, ttl: ttl)
}

/// Says whatever is next and finishes it; returns the alert and its acks.
private func sayNext(_ q: inout AlertQueue, now: Double) -> (Alert?, [Ack]) {
    guard let a = q.next(now: now).alert else { return (nil, []) }
    return (a, q.finished(a, now: now))
}

@Suite("Alert queue")
struct OrdersQueueTests {
    @Test("priority first, then arrival")
    func ordering() {
        var q = AlertQueue(config: AlertConfig(coalesceMax: 1))
        #expect(q.add(tx("a", "a"), now: 0) == .queued)
        #expect(q.add(tx("b", "b", priority: 5), now: 1) == .queued)
        #expect(q.add(tx("c", "c"), now: 2) == .queued)
        #expect(q.add(tx("d", "d", priority: 5), now: 3) == .queued)
        #expect(q.add(tx("e", "e", priority: -1), now: 4) == .queued)
        var said: [String] = []
        while let a = q.next(now: 10).alert {
            said += a.orderIDs
            #expect(q.finished(a, now: 10) == a.orderIDs.map { .spoken($0) })
        }
        #expect(said == ["b", "d", "a", "c", "e"])
    }

    @Test("the alert carries what the announcer needs")
    func content() {
        var q = AlertQueue(defaultLang: .zh)
        _ = q.add(Order(id: "p", kind: .payment(amount: "100.50"), lang: .en), now: 0)
        let a = q.next(now: 0).alert!
        #expect(a.content == .payment(amount: "100.50"))
        #expect(a.lang == .en)
        #expect(a.overrideText == nil)
        _ = q.finished(a, now: 1)
        _ = q.add(nc("v", 8, text: "贵宾到店"), now: 1)
        let b = q.next(now: 1).alert!
        #expect(b.content == .newCustomer(number: 8))
        #expect(b.lang == .zh)
        #expect(b.overrideText == "贵宾到店")
        _ = q.finished(b, now: 1)
        _ = q.add(tx("t", "请到前台"), now: 1)
        #expect(q.next(now: 1).alert?.content == .text("请到前台"))
    }

    @Test("waiting new_customer orders of one language and priority are said together, each acked")
    func coalescing() {
        var q = AlertQueue(config: AlertConfig(coalesceMax: 3))
        _ = q.add(nc("41", 41), now: 0)
        _ = q.add(nc("e1", 7, lang: .en), now: 0.1)
        _ = q.add(nc("42", 42), now: 0.2)
        _ = q.add(nc("v", 99, text: "贵宾"), now: 0.3)  // own text: said alone
        _ = q.add(nc("43", 43), now: 0.4)
        _ = q.add(nc("44", 44), now: 0.5)
        _ = q.add(nc("hi", 5, priority: 1), now: 0.6)

        let (first, acks1) = sayNext(&q, now: 1)
        #expect(first?.orderIDs == ["hi"])
        #expect(acks1 == [.spoken("hi")])

        let (a, acks) = sayNext(&q, now: 2)
        #expect(a?.content == .newCustomers(numbers: [41, 42, 43]))
        #expect(a?.lang == .zh)
        #expect(acks == [.spoken("41"), .spoken("42"), .spoken("43")])

        #expect(sayNext(&q, now: 3).0?.content == .newCustomer(number: 7))
        let v = sayNext(&q, now: 4).0
        #expect(v?.orderIDs == ["v"])
        #expect(v?.overrideText == "贵宾")
        #expect(sayNext(&q, now: 5).0?.content == .newCustomer(number: 44))
        #expect(q.next(now: 6).alert == nil)
    }

    @Test("ttl: an order that waited too long is acked expired, never said")
    func expiry() {
        var q = AlertQueue()
        _ = q.add(tx("long", "long text"), now: 0)
        _ = q.add(nc("short", 1, ttl: 5), now: 0)
        _ = q.add(nc("later", 2, ttl: 5), now: 3)
        let a = q.next(now: 0).alert!
        #expect(a.orderIDs == ["long"])
        #expect(q.nextExpiry == 5)
        // While "long" plays, the owner's timer calls expire at the earliest ttl.
        #expect(q.expire(now: 4.9).isEmpty)
        let exp = q.expire(now: 5)
        #expect(exp.map(\.id) == ["short"])
        #expect(exp.first?.status == .expired)
        #expect(exp.first?.message == "ttl 5 s passed before it could be said")
        _ = q.finished(a, now: 7)
        let n = q.next(now: 8.5)
        #expect(n.alert == nil)
        #expect(n.expired.map(\.id) == ["later"])
        // A redelivery of an expired order is acked expired again.
        #expect(q.add(nc("short", 1, ttl: 5), now: 9).ack?.status == .expired)
    }

    @Test("bounded: overflow is rejected with a reason, never lost silently")
    func bounded() {
        var q = AlertQueue(config: AlertConfig(queueMax: 2))
        #expect(q.add(tx("1", "a"), now: 0) == .queued)
        #expect(q.add(tx("2", "b"), now: 0) == .queued)
        let r = q.add(tx("3", "c"), now: 0)
        #expect(r.ack?.status == .rejected)
        #expect(r.ack?.reason == "queue_full")
        #expect(r.ack?.message?.contains("queue.max = 2") == true)
        // Rejected is not final: once there is room a redelivery is accepted.
        _ = sayNext(&q, now: 1)
        #expect(q.add(tx("3", "c"), now: 2) == .queued)
    }

    @Test("dedupe: a spoken id is acked spoken again without being said; a queued one is ignored")
    func dedupe() {
        var q = AlertQueue()
        #expect(q.add(nc("A", 1), now: 0) == .queued)
        #expect(q.add(nc("A", 1), now: 0.1) == .alreadyQueued)
        let a = q.next(now: 1).alert!
        #expect(q.add(nc("A", 1), now: 1.5) == .alreadyQueued)  // while being said
        #expect(q.finished(a, now: 2) == [.spoken("A")])
        let again = q.add(nc("A", 1), now: 3)
        #expect(again.ack?.id == "A")
        #expect(again.ack?.status == .spoken)
        #expect(q.waitingCount == 0)
        #expect(q.next(now: 4).alert == nil)
    }

    @Test("remembers at least the last 1024 spoken ids")
    func memory() {
        var q = AlertQueue(config: AlertConfig(coalesceMax: 1), remember: 10)
        #expect(q.remember == 1024)
        for i in 0..<1100 {
            _ = q.add(nc("id\(i)", i), now: Double(i))
            _ = sayNext(&q, now: Double(i))
        }
        #expect(q.add(nc("id76", 76), now: 2000).ack?.status == .spoken)
        #expect(q.add(nc("id1099", 1), now: 2000).ack?.status == .spoken)
        #expect(q.add(nc("id75", 75), now: 2000) == .queued)  // forgotten: 1100 - 1024 = 76
    }

    @Test("cancel: waiting, playing, already said, never seen")
    func cancel() {
        var q = AlertQueue(config: AlertConfig(coalesceMax: 1))
        _ = q.add(tx("w", "w"), now: 0)
        _ = q.add(tx("p", "p", priority: 1), now: 0)
        let playing = q.next(now: 1).alert!
        #expect(playing.orderIDs == ["p"])

        let c1 = q.cancel(id: "w", now: 2)
        #expect(c1 == .init(ack: Ack(id: "w", status: .cancelled), wasPlaying: false, stoppedRepeats: false))
        let c2 = q.cancel(id: "p", now: 2)
        #expect(c2.ack.status == .cancelled)
        #expect(c2.wasPlaying)
        #expect(q.finished(playing, now: 3).isEmpty, "a cancelled alert is not acked spoken afterwards")
        #expect(q.history.isEmpty)

        _ = q.add(tx("s", "s"), now: 4)
        _ = sayNext(&q, now: 4)
        #expect(q.cancel(id: "s", now: 5).ack.status == .spoken, "the server learns the truth")

        let c3 = q.cancel(id: "future", now: 6)
        #expect(c3.ack.status == .cancelled)
        #expect(q.add(tx("future", "x"), now: 7).ack?.status == .cancelled, "a late delivery of a cancelled order is not said")
        #expect(q.add(tx("w", "w"), now: 8).ack?.status == .cancelled)
        #expect(q.next(now: 9).alert == nil)
    }

    @Test("interrupted: said again from the start, before anything of its priority or lower, after higher ones; acked once")
    func interrupted() {
        var q = AlertQueue()
        _ = q.add(nc("1", 1), now: 0)
        _ = q.add(nc("2", 2), now: 0)
        let a = q.next(now: 0).alert!
        #expect(a.orderIDs == ["1", "2"])
        _ = q.add(tx("urgent", "!", priority: 9), now: 1)
        _ = q.add(tx("early", "e"), now: 1)
        _ = q.add(nc("3", 3), now: 1)
        q.interrupted(a, now: 2)
        #expect(q.inFlightIDs.isEmpty)
        #expect(q.next(now: 3).alert?.orderIDs == ["urgent"], "a higher priority goes first (it is what cut it)")
        let again = q.next(now: 3).alert!
        #expect(again.orderIDs == ["1", "2", "3"], "put back ahead of its priority; a newcomer of the same kind joins it")
        #expect(q.finished(again, now: 4) == [.spoken("1"), .spoken("2"), .spoken("3")])
        #expect(q.next(now: 4).alert?.orderIDs == ["early"])
    }

    @Test("cut short: only the orders whose part was heard are acked; the rest are said again, each acked once")
    func partiallyHeard() {
        var q = AlertQueue()
        for n in 1...5 { _ = q.add(nc("\(n)", n), now: 0) }
        let a = q.next(now: 0).alert!
        #expect(a.orderIDs == ["1", "2", "3", "4", "5"])
        #expect(q.finished(a, heard: 2, now: 1) == [.spoken("1"), .spoken("2")])
        #expect(q.inFlightIDs.isEmpty)
        #expect(q.waitingCount == 3)
        let rest = q.next(now: 2).alert!
        #expect(rest.orderIDs == ["3", "4", "5"])
        #expect(rest.content == .newCustomers(numbers: [3, 4, 5]))
        #expect(q.finished(rest, heard: 0, now: 3) == [], "nothing heard: nothing acked")
        let last = q.next(now: 4).alert!
        #expect(q.finished(last, now: 5) == [.spoken("3"), .spoken("4"), .spoken("5")])
        #expect(q.add(nc("1", 1), now: 6).ack == Ack(id: "1", status: .spoken, message: "already spoken; not said again"))
    }

    @Test("interruption rule: strictly higher priority cuts a first saying; equal never; any order cuts a repeat")
    func preemption() {
        var q = AlertQueue(config: AlertConfig(repeatEvery: 10, repeatMax: 2))
        _ = q.add(tx("long", "....", priority: 1), now: 0)
        let a = q.next(now: 0).alert!
        #expect(!q.preempts(a))
        _ = q.add(tx("same", "s", priority: 1), now: 1)
        #expect(!q.preempts(a), "equal priority waits")
        _ = q.add(tx("low", "l", priority: 0), now: 1)
        #expect(!q.preempts(a))
        _ = q.add(tx("high", "h", priority: 2), now: 2)
        #expect(q.preempts(a))
        #expect(q.finished(a, heard: 0, now: 3) == [])
        #expect(q.next(now: 3).alert?.orderIDs == ["high"])
        // Everything said; then a repeat plays and any new order cuts it.
        var said = ["high"]
        while let n = q.next(now: 4).alert, n.occasion == .first {
            _ = q.finished(n, now: 4)
            said += n.orderIDs
        }
        #expect(said == ["high", "long", "same", "low"])
        let r = q.next(now: 20).alert!
        #expect(r.occasion == .repetition(1))
        #expect(!q.preempts(r))
        _ = q.add(tx("new", "n", priority: -5), now: 21)
        #expect(q.preempts(r))
    }

    @Test("repeats until acknowledged, never acking twice, new orders first")
    func repeats() {
        var q = AlertQueue(config: AlertConfig(repeatEvery: 10, repeatMax: 2))
        _ = q.add(nc("A", 1), now: 0)
        let (a, acks) = sayNext(&q, now: 0)
        #expect(acks == [.spoken("A")])
        #expect(q.nextWakeup(now: 1) == 10)
        #expect(q.next(now: 9.9).alert == nil)

        _ = q.add(nc("B", 2), now: 10)
        let b = q.next(now: 10).alert!
        #expect(b.orderIDs == ["B"], "a due repeat never delays a new order")
        #expect(q.finished(b, now: 11) == [.spoken("B")])

        let r1 = q.next(now: 11).alert!
        #expect(r1.orderIDs == ["A"])
        #expect(r1.occasion == .repetition(1))
        #expect(r1.content == a?.content)
        #expect(q.finished(r1, now: 12).isEmpty, "a repeat never acks")

        #expect(q.acknowledge(now: 13) == ["A", "B"])
        #expect(q.next(now: 100).alert == nil)
        #expect(q.nextWakeup(now: 100) == nil)
    }

    @Test("repeats stop after repeat_max; an interrupted repeat keeps its number")
    func repeatMax() {
        var q = AlertQueue(config: AlertConfig(repeatEvery: 5, repeatMax: 2))
        _ = q.add(nc("A", 1), now: 0)
        _ = sayNext(&q, now: 0)
        let r1 = q.next(now: 5).alert!
        #expect(r1.occasion == .repetition(1))
        q.interrupted(r1, now: 6)
        let r1again = q.next(now: 6).alert!
        #expect(r1again.occasion == .repetition(1))
        _ = q.finished(r1again, now: 7)
        let r2 = q.next(now: 12).alert!
        #expect(r2.occasion == .repetition(2))
        #expect(q.finished(r2, now: 13).isEmpty)
        #expect(q.next(now: 1000).alert == nil)
    }

    @Test("cancel stops the repeats of its id only")
    func cancelRepeats() {
        var q = AlertQueue(config: AlertConfig(repeatEvery: 5, repeatMax: 3))
        _ = q.add(nc("1", 1), now: 0)
        _ = q.add(nc("2", 2), now: 0)
        _ = sayNext(&q, now: 0)
        let c = q.cancel(id: "1", now: 1)
        #expect(c.stoppedRepeats)
        #expect(c.ack.status == .spoken)
        let r = q.next(now: 5).alert!
        #expect(r.content == .newCustomer(number: 2))
        _ = q.finished(r, now: 6)
        _ = q.cancel(id: "2", now: 7)
        #expect(q.next(now: 100).alert == nil)
    }

    @Test("repeats end with the order's ttl")
    func repeatTTL() {
        var q3 = AlertQueue(config: AlertConfig(repeatEvery: 5, repeatMax: 10))
        _ = q3.add(nc("A", 1, ttl: 12), now: 0)
        _ = sayNext(&q3, now: 0)
        let r = q3.next(now: 5).alert!
        _ = q3.finished(r, now: 6)
        #expect(q3.next(now: 12).alert == nil, "past its ttl a reminder is pointless")
    }

    @Test("history keeps the last 10 spoken alerts; replay says one again without acking")
    func history() {
        var q = AlertQueue(config: AlertConfig(coalesceMax: 1))
        #expect(q.replay() == nil)
        for i in 0..<12 {
            _ = q.add(nc("\(i)", i), now: Double(i))
            _ = sayNext(&q, now: Double(i))
        }
        #expect(q.history.count == 10)
        #expect(q.history.first?.orderIDs == ["2"])
        #expect(q.history.last?.orderIDs == ["11"])
        #expect(q.replay(stepsBack: 1)?.orderIDs == ["10"])
        _ = q.add(nc("new", 50), now: 20)
        let r = q.next(now: 20).alert!
        #expect(r.occasion == .replay)
        #expect(r.orderIDs == ["10"])
        q.interrupted(r, now: 21)
        let r2 = q.next(now: 21).alert!
        #expect(r2 == r)
        #expect(q.finished(r2, now: 22).isEmpty)
        #expect(q.history.count == 10 && q.history.last?.orderIDs == ["11"])
        #expect(q.next(now: 22).alert?.orderIDs == ["new"])
    }

    @Test("a burst of 10 000: every id gets exactly one outcome")
    func burst() {
        var q = AlertQueue()
        var outcomes: [String: [Ack.Status]] = [:]
        var now = 0.0
        for i in 0..<10_000 {
            if let ack = q.add(nc("b\(i)", i % 100), now: now).ack { outcomes[ack.id, default: []].append(ack.status) }
        }
        while true {
            let n = q.next(now: now)
            guard let a = n.alert else { break }
            now += 2
            for ack in q.finished(a, now: now) { outcomes[ack.id, default: []].append(ack.status) }
        }
        #expect(outcomes.count == 10_000)
        #expect(outcomes.values.allSatisfy { $0.count == 1 })
        #expect(outcomes.values.filter { $0 == [.spoken] }.count == 256)
        #expect(outcomes.values.filter { $0 == [.rejected] }.count == 10_000 - 256)
        #expect(q.history.last?.orderIDs.count == 6)  // 256 = 25 × 10 + 6
    }
}
