/// Something to say: one order, several coalesced `new_customer` orders, a repeat or a replay.
public struct Alert: Sendable, Equatable, CustomStringConvertible {
    public enum Occasion: Sendable, Equatable {
        /// Said for the first time; finishing it acks its orders `spoken`.
        case first
        /// The n-th repeat (1-based) of an alert nobody acknowledged yet; never acks.
        case repetition(Int)
        /// Asked for again with the replay button; never acks.
        case replay
    }

    /// The orders it covers, in the order they are said.
    public var orderIDs: [String] { orders.map(\.id) }
    public var orders: [Order]
    public var content: AnnouncementContent
    public var lang: Lang
    /// An order's own `text`, which replaces the template (`Announcer.announce(_:lang:overrideText:)`).
    public var overrideText: String?
    public var priority: Int
    public var occasion: Occasion

    init(orders: [Order], lang: Lang, occasion: Occasion) {
        precondition(!orders.isEmpty)
        self.orders = orders
        self.lang = lang
        self.priority = orders[0].priority
        self.occasion = occasion
        if orders.count > 1 {
            let spec = orders[0].kind.spec
            precondition(spec.coalescing != nil && orders.allSatisfy { $0.kind.spec == spec }, "only orders of one kind that coalesces are said together")
            content = .coalesced(spec, orders.map(\.kind.value))
            overrideText = nil
        } else {
            content = .order(orders[0].kind)
            overrideText = orders[0].text
        }
    }

    public var description: String {
        let occ: String = switch occasion {
        case .first: "first"
        case .repetition(let n): "repeat \(n)"
        case .replay: "replay"
        }
        return "alert ids=\(orderIDs.joined(separator: ",")) lang=\(lang.rawValue) (\(occ))"
    }
}

/// The box's list of things to say. Pure: every rule is here, every time is passed in (`now`,
/// monotonic seconds), every outcome the server must hear about is returned as an `Ack`; the
/// queue does no I/O and keeps no clock.
///
/// Rules (docs/protocol.md, "Client behaviour"):
/// - Order: waiting orders by priority (higher first); within a priority an interrupted alert
///   first, then replays, then arrival order; due repeats last (a reminder never delays a new
///   order).
/// - Interruption (`preempts`): a waiting order of strictly higher priority interrupts the first
///   saying of an alert; any waiting order interrupts a repeat or a replay. Equal priority never
///   interrupts. The cut alert is put back (`finished(_:heard:now:)`) and said again later from
///   the start of its first unheard part.
/// - A coalesced alert cut short acks `spoken` only the orders whose part was heard; the rest
///   are put back, unacked.
/// - Waiting orders of a kind that coalesces (`new_customer`) of the same language and priority
///   without their own `text` are said together (up to `AlertConfig.coalesceMax`) in arrival order.
/// - Bounded by `AlertConfig.queueMax` waiting orders: more are `rejected` (`queue_full`).
/// - An order whose `ttl` passes while it waits is acked `expired`; one already being said is
///   finished.
/// - Ids with a final outcome (spoken, expired, cancelled) are remembered (the last
///   `remember`, ≥ 1024): a redelivery is acked again with the same status and never said
///   again. A redelivery of an id still waiting or being said is ignored (its ack comes later).
/// - `cancel` acks `cancelled` (or `spoken` if it was already said) and stops its repeats; a
///   cancel for an id never seen is acked `cancelled` and remembered, so a late delivery of that
///   order is not said.
public struct AlertQueue: Sendable {
    public private(set) var config: AlertConfig
    public let defaultLang: Lang
    /// How many final outcomes are remembered for dedupe.
    public let remember: Int
    public let historyMax: Int

    struct Entry: Sendable {
        var order: Order
        var lang: Lang
        var seq: UInt64
        var receivedAt: Double
        var expiresAt: Double?
        /// Put back after an interruption: said before anything else.
        var front = false
    }

    struct Repeating: Sendable {
        var orders: [Order]
        var lang: Lang
        var done: Int
        var nextAt: Double
        var playing = false
        var expiresAt: Double?
    }

    private var waiting: [Entry] = []
    /// The ids in `waiting`, for O(1) dedupe during a burst.
    private var waitingIDs: Set<String> = []
    private var inFlight: [String: Entry] = [:]
    private var repeating: [Repeating] = []
    private var replays: [Alert] = []
    private var outcomes = RecentOutcomes<Ack.Status>(capacity: 1024)
    /// Final rejections (not `queue_full`): a cancel of one is answered with it.
    private var rejections = RecentOutcomes<Ack>(capacity: 1024)
    private var seq: UInt64 = 0
    /// The last `historyMax` alerts said for the first time, newest last.
    public private(set) var history: [Alert] = []

    public init(config: AlertConfig = AlertConfig(), defaultLang: Lang = .zh, remember: Int = 1024, historyMax: Int = 10) {
        self.config = config
        self.defaultLang = defaultLang
        self.remember = max(remember, 1024)
        self.historyMax = historyMax
        outcomes = RecentOutcomes(capacity: self.remember)
        rejections = RecentOutcomes(capacity: self.remember)
    }

    /// Orders waiting to be said (not counting one being said).
    public var waitingCount: Int { waiting.count }
    /// Whether `id` waits to be said.
    public func isWaiting(_ id: String) -> Bool { waitingIDs.contains(id) }
    /// Ids handed out by `next` and not yet finished or interrupted.
    public var inFlightIDs: Set<String> { Set(inFlight.keys) }
    /// Ids whose alerts will be repeated until acknowledged.
    public var repeatingIDs: [String] { repeating.flatMap { $0.orders.map(\.id) } }

    // MARK: arrivals

    public enum Admission: Sendable, Equatable {
        /// Queued; it will be said.
        case queued
        /// A redelivery of an id already waiting or being said: ignored.
        case alreadyQueued
        /// A redelivery of an id with a final outcome: acked again, not said again.
        case alreadyDone(Ack)
        /// Not queued; the ack says why.
        case rejected(Ack)

        /// The ack to send now, if any.
        public var ack: Ack? {
            switch self {
            case .queued, .alreadyQueued: nil
            case .alreadyDone(let a), .rejected(let a): a
            }
        }
    }

    /// Outcomes from before a restart (the acks still in the link's outbox, docs/protocol.md):
    /// a redelivery of one of them is acked again with the same status, never said again.
    /// Rejections are not remembered, as in `add`: `queue_full` invites the server to try again.
    /// `acks` oldest first (the last of an id wins). Restored outcomes only fill the room left:
    /// a later `restore` never pushes out what an earlier one kept, so the ack outbox's (its
    /// unconfirmed acks last, restored first) survive the MQTT inbox's 1 024 done outcomes.
    /// Soak finding: two full journals of nearly the same ids, restored one after the other,
    /// pushed one another out in a chain that ended on the outbox's unconfirmed acks, and
    /// the inbox's replay of their orders had them said again.
    public mutating func restore(_ acks: [Ack]) {
        var room = outcomes.capacity - outcomes.count
        var seen = Set<String>()
        var kept: [Ack] = []
        for a in acks.reversed() where a.status != .rejected && seen.insert(a.id).inserted {
            if outcomes[a.id] != nil { continue }  // an earlier restore's, newer
            guard room > 0 else { break }
            room -= 1
            kept.append(a)
        }
        for a in kept.reversed() { outcomes[a.id] = a.status }
    }

    /// An order rejected for good (any reason but `queue_full`, which invites the server to
    /// send it again): a later cancel of it is answered with this same rejection (docs/protocol.md
    /// section 5: the server learns the truth). In memory only, like the other outcomes the
    /// outbox file does not hold.
    public mutating func rememberRejection(_ ack: Ack) {
        guard ack.status == .rejected, ack.reason != Ack.Reason.queueFull else { return }
        rejections[ack.id] = ack
    }

    /// An order that cannot be said (malformed, nothing to say): the answer it gets, decided
    /// against what this id already has, so an id never gets two different final statuses
    /// (chaos seed 34641: a cancel sent before its malformed order was acked `cancelled`, and
    /// the link's own `rejected` went out beside it). Already final (cancelled before it
    /// arrived, said under an earlier valid copy): that outcome again. Waiting or being said:
    /// ignored, the valid copy will be answered. Otherwise the rejection, remembered.
    public mutating func refuse(_ ack: Ack) -> Admission {
        if let status = outcomes[ack.id] {
            return .alreadyDone(Ack(id: ack.id, status: status, message: "already \(status.rawValue)"))
        }
        if inFlight[ack.id] != nil || waitingIDs.contains(ack.id) { return .alreadyQueued }
        rememberRejection(ack)
        return .rejected(ack)
    }

    public mutating func add(_ order: Order, now: Double) -> Admission {
        if let status = outcomes[order.id] {
            if status == .rejected, let r = rejections[order.id] { return .alreadyDone(r) }
            return .alreadyDone(Ack(id: order.id, status: status, message: "already \(status.rawValue); not said again"))
        }
        if inFlight[order.id] != nil || waitingIDs.contains(order.id) {
            return .alreadyQueued
        }
        guard waiting.count < config.queueMax else {
            return .rejected(Ack(id: order.id, status: .rejected, reason: Ack.Reason.queueFull,
                                 message: "\(waiting.count) alerts already waiting (alerts queue.max = \(config.queueMax))"))
        }
        seq += 1
        waiting.append(Entry(order: order, lang: order.lang ?? defaultLang, seq: seq, receivedAt: now,
                             expiresAt: order.ttl.map { now + $0 }))
        waitingIDs.insert(order.id)
        return .queued
    }

    public struct Cancellation: Sendable, Equatable {
        public var ack: Ack
        /// It was being said: the owner may cut the sound (if the alert covers only this id).
        public var wasPlaying: Bool
        /// Its repeats were stopped.
        public var stoppedRepeats: Bool
    }

    public mutating func cancel(id: String, now: Double) -> Cancellation {
        let stopped = dropFromRepeats(id)
        if waitingIDs.contains(id), let i = waiting.firstIndex(where: { $0.order.id == id }) {
            waiting.remove(at: i)
            waitingIDs.remove(id)
            releaseSpareStorage()
            outcomes[id] = .cancelled
            return Cancellation(ack: Ack(id: id, status: .cancelled), wasPlaying: false, stoppedRepeats: stopped)
        }
        if inFlight.removeValue(forKey: id) != nil {
            outcomes[id] = .cancelled
            return Cancellation(ack: Ack(id: id, status: .cancelled), wasPlaying: true, stoppedRepeats: stopped)
        }
        if let status = outcomes[id], status != .rejected || rejections[id] == nil {
            return Cancellation(ack: Ack(id: id, status: status, message: status == .cancelled ? nil : "already \(status.rawValue)"),
                                wasPlaying: false, stoppedRepeats: stopped)
        }
        // Rejected for good (malformed, nothing to say): the server learns that again, not a
        // second, different final status (found by the chaos run, seed 75107).
        if let r = rejections[id] {
            return Cancellation(ack: r, wasPlaying: false, stoppedRepeats: stopped)
        }
        outcomes[id] = .cancelled
        return Cancellation(ack: Ack(id: id, status: .cancelled, message: "not received before the cancel; it will not be said"),
                            wasPlaying: false, stoppedRepeats: stopped)
    }

    // MARK: saying

    /// Acks `expired` for every waiting order whose ttl has passed. `next` calls it too; call it
    /// on its own at `nextWakeup` so expiries are reported while something long is playing.
    public mutating func expire(now: Double) -> [Ack] {
        var acks: [Ack] = []
        waiting.removeAll { e in
            guard let t = e.expiresAt, t <= now else { return false }
            outcomes[e.order.id] = .expired
            waitingIDs.remove(e.order.id)
            acks.append(Ack(id: e.order.id, status: .expired,
                            message: "ttl \(ProtocolCodec.formatSeconds(e.order.ttl ?? 0)) s passed before it could be said"))
            return true
        }
        repeating.removeAll { r in !r.playing && (r.expiresAt.map { $0 <= now } ?? false) }
        if !acks.isEmpty { releaseSpareStorage() }
        return acks
    }

    public struct Next: Sendable, Equatable {
        /// What to say now, if anything.
        public var alert: Alert?
        /// Orders that expired while waiting: send these acks.
        public var expired: [Ack]
    }

    /// What to say now. Call again after `finished`/`interrupted`, after an `add`, and at
    /// `nextWakeup(now:)`.
    public mutating func next(now: Double) -> Next {
        let expired = expire(now: now)
        let best = bestWaiting()
        if let i = best, waiting[i].front {
            return Next(alert: take(head: i), expired: expired)
        }
        if !replays.isEmpty, best.map({ waiting[$0].order.priority <= replays[0].priority }) ?? true {
            return Next(alert: replays.removeFirst(), expired: expired)
        }
        if let i = best {
            return Next(alert: take(head: i), expired: expired)
        }
        if let r = repeating.indices.filter({ !repeating[$0].playing && repeating[$0].nextAt <= now })
            .min(by: { repeating[$0].nextAt < repeating[$1].nextAt }) {
            repeating[r].playing = true
            repeating[r].done += 1
            return Next(alert: Alert(orders: repeating[r].orders, lang: repeating[r].lang, occasion: .repetition(repeating[r].done)),
                        expired: expired)
        }
        return Next(alert: nil, expired: expired)
    }

    /// Whether something waiting should cut `playing` short now (the interruption rule above).
    public func preempts(_ playing: Alert) -> Bool {
        guard let top = waiting.map(\.order.priority).max() else { return false }
        if case .first = playing.occasion { return top > playing.priority }
        return true
    }

    /// The alert finished playing. Returns `spoken` acks for a first saying (none for repeats and
    /// replays, and none for ids cancelled while it played).
    public mutating func finished(_ alert: Alert, now: Double) -> [Ack] {
        finished(alert, heard: alert.orders.count, now: now)
    }

    /// The alert stopped after its first `heard` orders' parts were heard in full (all of them:
    /// it played to the end). Those are finished as above; the rest are put back as
    /// `interrupted` (said again later, nothing acked). A repeat or replay not heard in full is
    /// put back whole.
    public mutating func finished(_ alert: Alert, heard: Int, now: Double) -> [Ack] {
        let heard = max(0, min(heard, alert.orders.count))
        if heard < alert.orders.count {
            if case .first = alert.occasion {
                let rest = Alert(orders: Array(alert.orders[heard...]), lang: alert.lang, occasion: .first)
                interrupted(rest, now: now)
                guard heard > 0 else { return [] }
                var said = alert
                said.orders = Array(alert.orders[..<heard])
                return finished(said, heard: heard, now: now)
            }
            interrupted(alert, now: now)
            return []
        }
        switch alert.occasion {
        case .replay:
            return []
        case .repetition:
            guard let r = repeatIndex(alert) else { return [] }
            repeating[r].playing = false
            if repeating[r].done >= config.repeatMax {
                repeating.remove(at: r)
            } else {
                repeating[r].nextAt = now + config.repeatEvery
            }
            return []
        case .first:
            var acks: [Ack] = []
            var said: [Order] = []
            var expiresAt: Double?
            for o in alert.orders {
                guard let e = inFlight.removeValue(forKey: o.id) else { continue }  // cancelled meanwhile
                outcomes[o.id] = .spoken
                acks.append(.spoken(o.id))
                said.append(o)
                if let t = e.expiresAt { expiresAt = max(expiresAt ?? t, t) }
            }
            guard !said.isEmpty else { return [] }
            let done = Alert(orders: said, lang: alert.lang, occasion: .first)
            history.append(done)
            if history.count > historyMax { history.removeFirst(history.count - historyMax) }
            if config.repeatEvery > 0, config.repeatMax > 0 {
                repeating.append(Repeating(orders: said, lang: alert.lang, done: 0, nextAt: now + config.repeatEvery,
                                           expiresAt: expiresAt))
            }
            return acks
        }
    }

    /// The alert could not be synthesized (`speech_failed`): the orders of a first saying are
    /// final as `rejected` for `reason`, remembered like any final outcome, so a redelivery or
    /// a cancel is answered with that same rejection. Before, the runtime acked `rejected` while
    /// the queue remembered them as `spoken` (and repeated them): a redelivery was acked
    /// `spoken`, a second final status for an order never heard (SpeakerPolicyModelTests).
    /// A repeat or replay that fails is finished as if said; nothing is acked.
    public mutating func failed(_ alert: Alert, reason: String, message: String, now: Double) -> [Ack] {
        guard case .first = alert.occasion else {
            _ = finished(alert, now: now)
            return []
        }
        var acks: [Ack] = []
        for o in alert.orders {
            guard inFlight.removeValue(forKey: o.id) != nil else { continue }  // cancelled meanwhile
            let ack = Ack(id: o.id, status: .rejected, reason: reason, message: message)
            outcomes[o.id] = .rejected
            rejections[o.id] = ack
            acks.append(ack)
        }
        return acks
    }

    /// The alert was cut off (audio device lost, speech failed): it is said again from its
    /// start, before anything else. Nothing is acked.
    public mutating func interrupted(_ alert: Alert, now: Double) {
        switch alert.occasion {
        case .replay:
            replays.insert(alert, at: 0)
        case .repetition:
            guard let r = repeatIndex(alert) else { return }
            repeating[r].playing = false
            repeating[r].done -= 1
            repeating[r].nextAt = now
        case .first:
            for o in alert.orders {
                guard var e = inFlight.removeValue(forKey: o.id) else { continue }
                e.front = true
                waiting.append(e)
                waitingIDs.insert(e.order.id)
            }
        }
    }

    /// The acknowledge button: stops every pending repeat. Returns the ids that were repeating.
    @discardableResult
    public mutating func acknowledge(now: Double) -> [String] {
        let ids = repeatingIDs
        repeating.removeAll()
        return ids
    }

    /// The replay button: queues the alert said `stepsBack` alerts ago (0 = the last one) to be
    /// said next. Returns it, or nil when nothing was said yet.
    @discardableResult
    public mutating func replay(stepsBack: Int = 0) -> Alert? {
        guard stepsBack >= 0, stepsBack < history.count else { return nil }
        var a = history[history.count - 1 - stepsBack]
        a.occasion = .replay
        replays.append(a)
        return a
    }

    /// When `next`/`expire` should be called again even if nothing arrives: `now` if something
    /// is ready, the earliest ttl or repeat time otherwise, nil when there is nothing to wait for.
    public func nextWakeup(now: Double) -> Double? {
        if !waiting.isEmpty || !replays.isEmpty { return now }
        return repeating.filter { !$0.playing }.map(\.nextAt).min()
    }

    /// Earliest ttl among waiting orders (for a timer that reports expiries during a long alert).
    public var nextExpiry: Double? { waiting.compactMap(\.expiresAt).min() }

    // MARK: internals

    private func bestWaiting() -> Int? {
        guard !waiting.isEmpty else { return nil }
        var best = 0
        for i in waiting.indices.dropFirst() {
            let a = waiting[i], b = waiting[best]
            if a.order.priority != b.order.priority {
                if a.order.priority > b.order.priority { best = i }
            } else if a.front != b.front {
                if a.front { best = i }
            } else if a.seq < b.seq {
                best = i
            }
        }
        return best
    }

    private static func coalescable(_ e: Entry) -> Bool {
        e.order.kind.spec.coalescing != nil && e.order.text == nil
    }

    /// Moves the head (and whatever coalesces with it) in flight and returns its alert.
    private mutating func take(head: Int) -> Alert {
        let h = waiting[head]
        var picked = [head]
        if Self.coalescable(h), config.coalesceMax > 1 {
            let others = waiting.indices
                .filter { $0 != head && Self.coalescable(waiting[$0]) && waiting[$0].order.kind.spec == h.order.kind.spec
                    && waiting[$0].lang == h.lang && waiting[$0].order.priority == h.order.priority }
                .sorted { (waiting[$0].front ? 0 : 1, waiting[$0].seq) < (waiting[$1].front ? 0 : 1, waiting[$1].seq) }
            picked += others.prefix(config.coalesceMax - 1)
        }
        let entries = picked.map { waiting[$0] }
        for i in picked.sorted(by: >) { waiting.remove(at: i) }
        for var e in entries {
            waitingIDs.remove(e.order.id)
            e.front = false
            inFlight[e.order.id] = e
        }
        releaseSpareStorage()
        return Alert(orders: entries.map(\.order), lang: h.lang, occasion: .first)
    }

    /// Swift arrays and sets never give back capacity: after a burst of 10 000 orders the
    /// waiting list kept room for 10 000 entries (~2 MB) for the rest of the process (issue 16).
    /// Once the burst has been said, that room goes back to the allocator. Only when empty:
    /// shrinking while it drains would copy what is left into new blocks, which glibc then keeps
    /// as free space in its arenas (measured: the process's anonymous memory did not go down).
    private mutating func releaseSpareStorage() {
        guard waiting.isEmpty, waiting.capacity > Self.keptCapacity || waitingIDs.capacity > Self.keptCapacity else { return }
        waiting = []
        waitingIDs = []
    }

    /// Room for waiting orders not worth giving back: what ordinary traffic needs.
    static let keptCapacity = 64

    /// Ids the dedupe memory keeps alive, and the room its storage holds (for tests: bounded by
    /// `remember` whatever the traffic).
    var rememberedFootprint: (ids: Int, slots: Int) {
        (outcomes.orderCount + rejections.orderCount,
         outcomes.storageCapacity.status + outcomes.storageCapacity.order
            + rejections.storageCapacity.status + rejections.storageCapacity.order)
    }

    /// Room the waiting list and its id set hold (for tests: it must follow the queue down).
    var waitingStorageCapacity: (list: Int, ids: Int) { (waiting.capacity, waitingIDs.capacity) }

    private func repeatIndex(_ alert: Alert) -> Int? {
        let ids = alert.orderIDs
        return repeating.firstIndex { r in r.orders.contains { ids.contains($0.id) } }
    }

    private mutating func dropFromRepeats(_ id: String) -> Bool {
        var stopped = false
        for i in repeating.indices.reversed() {
            guard repeating[i].orders.contains(where: { $0.id == id }) else { continue }
            stopped = true
            repeating[i].orders.removeAll { $0.id == id }
            if repeating[i].orders.isEmpty { repeating.remove(at: i) }
        }
        return stopped
    }
}

/// The last `capacity` final outcomes by id (insertion order; an update keeps its place).
///
/// Insertion order is a ring of exactly `capacity` ids: the slot at `oldest` is overwritten
/// (and its id forgotten) by the next new id. An append-and-compact list here kept up to 4096
/// forgotten ids alive past the bound, and a count-then-reset map elsewhere grew to 10 000, so
/// anonymous memory climbed through a 10 000-alert run (issue 16); a ring holds what it claims.
struct RecentOutcomes<Value: Sendable>: Sendable {
    let capacity: Int
    private var status: [String: Value] = [:]
    private var ring: [String] = []
    /// Index in `ring` of the oldest id once the ring is full.
    private var oldest = 0

    init(capacity: Int) { self.capacity = max(1, capacity) }

    var count: Int { status.count }
    /// Ids kept alive by the insertion order (equal to `count`: nothing forgotten is held).
    var orderCount: Int { ring.count }
    /// Slots the storage has room for (for tests: it must not grow past the bound).
    var storageCapacity: (status: Int, order: Int) { (status.capacity, ring.capacity) }

    /// Oldest first, with their values (for the ack outbox's file).
    var inOrder: [(id: String, value: Value)] {
        let ids = ring.count < capacity ? ring : Array(ring[oldest...] + ring[..<oldest])
        return ids.compactMap { id in status[id].map { (id, $0) } }
    }

    subscript(id: String) -> Value? {
        get { status[id] }
        set {
            guard let newValue, status.updateValue(newValue, forKey: id) == nil else { return }
            if ring.count < capacity {
                ring.append(id)
                return
            }
            status[ring[oldest]] = nil
            ring[oldest] = id
            oldest = (oldest + 1) % capacity
        }
    }
}
