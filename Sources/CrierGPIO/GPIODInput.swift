import CGPIOD
import CrierCore
import CrierPosix
import Glibc

/// Why a button's line could not be used. Each is retried; `hint` says what to check.
public enum ButtonLineError: Error, Sendable, Equatable, CustomStringConvertible {
    case lineNotFound(String)
    case chipNotFound(String)
    case offsetOutOfRange(chip: String, offset: Int, lines: Int)
    case busy(line: String, consumer: String?)
    case permissionDenied(String)
    case system(line: String, call: String, errno: Int32)

    public var description: String {
        switch self {
        case .lineNotFound(let n): "line \(n) not found on any gpiochip"
        case .chipNotFound(let c): "\(c) not found (no such gpiochip)"
        case .offsetOutOfRange(let c, let o, let n): "\(c) has no line \(o) (it has \(n) lines, 0...\(n - 1))"
        case .busy(let l, let c): "line \(l) is busy" + (c.map { " (used by \"\($0)\")" } ?? " (used by another program or driver)")
        case .permissionDenied(let l): "no permission to open the gpiochip of line \(l)"
        case .system(let l, let call, let e): "line \(l): \(call) failed: \(errnoText(e))"
        }
    }

    public var hint: String {
        switch self {
        case .lineNotFound, .chipNotFound, .offsetOutOfRange: "check button.%s in crier.conf"
        case .busy: "stop the other user of the line (gpioinfo shows it) or pick another line in button.%s"
        case .permissionDenied: "run crier in the gpio group (or as root)"
        case .system: "check button.%s in crier.conf"
        }
    }

    /// `button volume_up: line GPIO17 not found on any gpiochip; retrying every 5 s; check
    /// button.volume_up in crier.conf`
    public func message(button: ButtonAction, retryEvery: Double) -> String {
        "button \(button.rawValue): \(description); retrying every \(ConfigValue.fmt(retryEvery)) s; "
            + hint.replacingOccurrencesOfPercentS(with: button.rawValue)
    }
}

extension String {
    fileprivate func replacingOccurrencesOfPercentS(with s: String) -> String {
        var out = ""
        var rest = Substring(self)
        while let r = rest.firstRange(of: "%s") {
            out += rest[..<r.lowerBound] + s
            rest = rest[r.upperBound...]
        }
        return out + rest
    }
}

/// Buttons on GPIO lines through libgpiod, the v1 API (libgpiod 1.6: Debian 12, Raspberry Pi OS
/// bookworm) or the v2 API (libgpiod 2.x: Debian 13), whichever this build links (`GPIOD`, see
/// GPIODv1.swift / GPIODv2.swift and Package.swift). Each line is requested with both-edge
/// events and its bias (`LineRequestPlan`); the event fds are polled together with the wake fd.
/// A line that cannot be opened is logged (once per distinct error) and retried every
/// `retryEvery` seconds while the other buttons keep working. Everything here is the same for
/// both APIs; only the calls that request a line and read it differ.
public final class GPIODInput: ButtonInput {
    struct Slot {
        let action: ButtonAction
        let spec: ButtonSpec
        let ref: LineRef
        let plan: LineRequestPlan
        var line: GPIODLine?
        var error: ButtonLineError?
        var attempts = 0
        var retryAt = 0.0
        /// Last level seen (initial reading or edge), for resynchronising after lost events.
        var level = true
    }

    var slots: [Slot]
    let log: Logger
    let retryEvery: Double
    let consumer: String
    let clock: @Sendable () -> Double
    var pending: [ButtonEvent] = []
    /// When the levels are next compared with what the edges said: shortly after the last
    /// edges were read (see `resync`).
    var resyncAt: Double?
    /// How long after the last edges the levels are checked: long enough that a bounce still in
    /// flight has reached the queue (read as edges, not mistaken for a loss).
    static let settle = 0.05

    /// The libgpiod this build runs with, e.g. "1.6.3" or "2.1.3" (the library's own answer).
    public static var libraryVersion: String { GPIOD.version }

    public init(config: ButtonsConfig, log: Logger, retryEvery: Double = 5, consumer: String = "crier",
                clock: @escaping @Sendable () -> Double = Monotonic.now) {
        slots = config.fitted.map { Slot(action: $0.0, spec: $0.1, ref: $0.1.line!, plan: LineRequestPlan(spec: $0.1)) }
        self.log = log
        self.retryEvery = retryEvery
        self.consumer = consumer
        self.clock = clock
    }

    /// Lines currently open, and the error of each that is not.
    public var status: [(ButtonAction, ButtonLineError?)] { slots.map { ($0.action, $0.line == nil ? $0.error : nil) } }
    var attempts: [ButtonAction: Int] { Dictionary(uniqueKeysWithValues: slots.map { ($0.action, $0.attempts) }) }

    /// The earliest retry of a missing line.
    var nextRetry: Double? { slots.filter { $0.line == nil }.map(\.retryAt).min() }

    /// Tries every missing line whose retry time has come.
    func openMissing(now: Double) {
        for i in slots.indices where slots[i].line == nil && now >= slots[i].retryAt {
            slots[i].attempts += 1
            switch open(slots[i]) {
            case .success(let line):
                let s = slots[i]
                let level = s.plan.electricalLevel(reported: line.initialValue)
                if s.error != nil || s.attempts > 1 {
                    log.notice("button \(s.action.rawValue): line \(s.ref) ready", ["at": line.location, "tries": s.attempts])
                } else {
                    log.info("button \(s.action.rawValue): line \(s.ref) ready", ["at": line.location, "bias": s.spec.bias.rawValue])
                }
                slots[i].line = line
                slots[i].error = nil
                slots[i].attempts = 0
                slots[i].level = level
                pending.append(ButtonEvent(s.action, level: level, at: clock(), initial: true))
            case .failure(let e):
                if slots[i].error != e {
                    log.error(e.message(button: slots[i].action, retryEvery: retryEvery))
                } else {
                    log.debug("button \(slots[i].action.rawValue): still unavailable", ["error": e.description, "tries": slots[i].attempts])
                }
                slots[i].error = e
                slots[i].retryAt = now + retryEvery
            }
        }
    }

    func open(_ s: Slot) -> Result<GPIODLine, ButtonLineError> {
        let r = GPIOD.request(s.ref, plan: s.plan, consumer: consumer)
        // Kernels before 5.5 (and some line drivers) cannot set bias: take the line as it is
        // and say so.
        if case .failure(.system(_, _, let e)) = r, e == EINVAL || e == EOPNOTSUPP, s.plan.bias != nil {
            let r2 = GPIOD.request(s.ref, plan: s.plan.withoutBias, consumer: consumer)
            if case .success = r2 {
                log.warning("button \(s.action.rawValue): this kernel cannot set bias \(s.spec.bias.rawValue) on \(s.ref); using the line as it is (fit an external resistor)")
            }
            return r2
        }
        return r
    }

    func closeSlot(_ i: Int) {
        slots[i].line?.release()
        slots[i].line = nil
    }

    public func wait(until deadline: Double?, wakeFD: Int32) -> [ButtonEvent] {
        openMissing(now: clock())
        if !pending.isEmpty {
            defer { pending = [] }
            return pending
        }
        let open = slots.indices.filter { slots[$0].line != nil }
        let wakeAt = [deadline, nextRetry, resyncAt].compactMap { $0 }.min()
        let revents = pollFDs(open.map { slots[$0].line!.fd }, wake: wakeFD, until: wakeAt)
        var out: [ButtonEvent] = []
        for (k, i) in open.enumerated() where revents[k] != 0 {
            out += readEvents(i)
        }
        if !out.isEmpty {
            resyncAt = clock() + Self.settle
        } else {
            out = resync()
            resyncAt = nil
        }
        return out
    }

    /// The kernel keeps a few events per line (16); a burst while crier was not reading (stopped,
    /// starved of CPU) overflows it and the newest edges are dropped, so the level we believe in
    /// can be wrong and a released button look held for good, or the next press be misread.
    /// The real levels are read and any difference fed as an edge: at each timeout with no
    /// events, and always `settle` after the last edges were read, even when nothing else is
    /// due (a burst that ends with no button believed down sets no recognizer deadline, and
    /// the loss was then found only by the next press; seen 1 run in 3 in the VM tier).
    func resync() -> [ButtonEvent] {
        var out: [ButtonEvent] = []
        let now = clock()
        for i in slots.indices {
            guard let l = slots[i].line, let v = l.value() else { continue }
            let level = slots[i].plan.electricalLevel(reported: v)
            guard level != slots[i].level else { continue }
            slots[i].level = level
            log.debug("button \(slots[i].action.rawValue): level resynchronised (events were lost)", ["level": level ? 1 : 0])
            out.append(ButtonEvent(slots[i].action, level: level, at: now))
        }
        return out
    }

    func readEvents(_ i: Int) -> [ButtonEvent] {
        let r = slots[i].line!.readEdges()
        let now = clock()
        switch r {
        case .failure(let f):
            let e = f.code
            if e == EAGAIN || e == EINTR { return [] }
            // The chip went away (unbound driver, unplugged expander): reopen later.
            let err = ButtonLineError.system(line: slots[i].ref.description, call: "reading events", errno: e)
            log.error(err.message(button: slots[i].action, retryEvery: retryEvery))
            closeSlot(i)
            slots[i].error = err
            slots[i].retryAt = now + retryEvery
            return []
        case .success(let edges):
            guard !edges.isEmpty else { return [] }
            let plan = slots[i].plan
            let out = edges.map { e in
                ButtonEvent(slots[i].action, level: plan.electricalLevel(reported: e.rising),
                            at: LineRequestPlan.eventTime(kernel: e.seconds, now: now))
            }
            slots[i].level = out.last!.level
            return out
        }
    }

    public func close() {
        for i in slots.indices { closeSlot(i) }
    }

    deinit { close() }
}

/// An errno from reading a line's events.
struct GPIODErrno: Error, Equatable {
    var code: Int32
}

/// One edge as the kernel reported it: the reported value after it, and its timestamp
/// (CLOCK_MONOTONIC seconds when the plan asked for that and the kernel could).
struct GPIODEdge: Equatable {
    var rising: Bool
    var seconds: Double
}

extension ButtonLineError {
    /// The error for an errno of opening a chip (shared by both APIs).
    static func opening(chip: String, line: String, call: String, errno e: Int32) -> ButtonLineError {
        if e == EACCES || e == EPERM { return .permissionDenied(line) }
        if e == ENOENT || e == ENODEV || e == ENOTTY || e == 0 { return .chipNotFound(chip) }
        return .system(line: line, call: call, errno: e)
    }

    /// The error for an errno of requesting a line (shared by both APIs).
    static func requesting(line: String, call: String, errno e: Int32, consumer: () -> String?) -> ButtonLineError {
        if e == EBUSY { return .busy(line: line, consumer: consumer()) }
        if e == EACCES || e == EPERM { return .permissionDenied(line) }
        return .system(line: line, call: call, errno: e)
    }
}
