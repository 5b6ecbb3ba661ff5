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

/// Buttons on GPIO lines through libgpiod 1.6 (the v1 API of Debian 12 and Raspberry Pi OS
/// bookworm): each line requested with both-edge events and its bias; the event fds are
/// polled together with the wake fd. A line that cannot be opened is logged (once per distinct
/// error) and retried every `retryEvery` seconds while the other buttons keep working.
public final class GPIODInput: ButtonInput {
    struct Slot {
        let action: ButtonAction
        let spec: ButtonSpec
        let ref: LineRef
        var line: OpaquePointer?
        /// Set when the chip was opened by us (chip:offset); else the line owns its chip.
        var chip: OpaquePointer?
        var fd: Int32 = -1
        var error: ButtonLineError?
        var attempts = 0
        var retryAt = 0.0
        var where_ = ""
        /// Last level seen (initial reading or edge), for resynchronising after lost events.
        var level = true
    }

    var slots: [Slot]
    let log: Logger
    let retryEvery: Double
    let consumer: String
    let clock: @Sendable () -> Double
    var pending: [ButtonEvent] = []

    public init(config: ButtonsConfig, log: Logger, retryEvery: Double = 5, consumer: String = "crier",
                clock: @escaping @Sendable () -> Double = Monotonic.now) {
        slots = config.fitted.map { Slot(action: $0.0, spec: $0.1, ref: $0.1.line!) }
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
            switch open(&slots[i]) {
            case .success(let level):
                let s = slots[i]
                if s.error != nil || s.attempts > 1 {
                    log.notice("button \(s.action.rawValue): line \(s.ref) ready", ["at": s.where_, "tries": s.attempts])
                } else {
                    log.info("button \(s.action.rawValue): line \(s.ref) ready", ["at": s.where_, "bias": s.spec.bias.rawValue])
                }
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

    func open(_ s: inout Slot) -> Result<Bool, ButtonLineError> {
        var line: OpaquePointer?
        var chip: OpaquePointer?
        switch s.ref {
        case .name(let n):
            errno = 0
            line = gpiod_line_find(n)
            guard line != nil else {
                let e = errno
                if e == EACCES || e == EPERM { return .failure(.permissionDenied(n)) }
                if e == 0 || e == ENOENT || e == ENODEV { return .failure(.lineNotFound(n)) }
                return .failure(.system(line: n, call: "gpiod_line_find", errno: e))
            }
        case .chip(let c, let off):
            errno = 0
            chip = gpiod_chip_open_lookup(c)
            guard let ch = chip else {
                let e = errno
                if e == EACCES || e == EPERM { return .failure(.permissionDenied(s.ref.description)) }
                if e == ENOENT || e == ENODEV || e == ENOTTY || e == 0 { return .failure(.chipNotFound(c)) }
                return .failure(.system(line: s.ref.description, call: "gpiod_chip_open_lookup", errno: e))
            }
            let count = Int(gpiod_chip_num_lines(ch))
            guard off < count, let l = gpiod_chip_get_line(ch, UInt32(off)) else {
                gpiod_chip_close(ch)
                return .failure(.offsetOutOfRange(chip: c, offset: off, lines: count))
            }
            line = l
        }
        let l = line!
        func closeAll() { if let chip { gpiod_chip_close(chip) } else { gpiod_line_close_chip(l) } }

        let chipName = gpiod_line_get_chip(l).flatMap { gpiod_chip_name($0) }.map { String(cString: $0) } ?? "?"
        s.where_ = "\(chipName):\(gpiod_line_offset(l))"
        var rc = request(l, bias: s.spec.bias)
        if rc != 0, errno == EINVAL || errno == EOPNOTSUPP {
            // Kernels before 5.5 cannot set bias: take the line as it is and say so.
            rc = request(l, bias: nil)
            if rc == 0 {
                log.warning("button \(s.action.rawValue): this kernel cannot set bias \(s.spec.bias.rawValue) on \(s.ref); using the line as it is (fit an external resistor)")
            }
        }
        if rc != 0 {
            let e = errno
            defer { closeAll() }
            if e == EBUSY {
                let c = gpiod_line_consumer(l).map { String(cString: $0) }
                return .failure(.busy(line: s.ref.description, consumer: c))
            }
            if e == EACCES || e == EPERM { return .failure(.permissionDenied(s.ref.description)) }
            return .failure(.system(line: s.ref.description, call: "gpiod_line_request", errno: e))
        }
        let v = gpiod_line_get_value(l)
        let fd = gpiod_line_event_get_fd(l)
        guard v >= 0, fd >= 0 else {
            let e = errno
            gpiod_line_release(l)
            closeAll()
            return .failure(.system(line: s.ref.description, call: v < 0 ? "gpiod_line_get_value" : "gpiod_line_event_get_fd", errno: e))
        }
        s.line = l
        s.chip = chip
        s.fd = fd
        return .success(v == 1)
    }

    func request(_ l: OpaquePointer, bias: LineBias?) -> Int32 {
        var flags: Int32 = 0
        switch bias {
        case .pullUp: flags = Int32(GPIOD_LINE_REQUEST_FLAG_BIAS_PULL_UP)
        case .pullDown: flags = Int32(GPIOD_LINE_REQUEST_FLAG_BIAS_PULL_DOWN)
        case .disabled: flags = Int32(GPIOD_LINE_REQUEST_FLAG_BIAS_DISABLE)
        case nil: flags = 0
        }
        return consumer.withCString { c in
            var cfg = gpiod_line_request_config(consumer: c, request_type: Int32(GPIOD_LINE_REQUEST_EVENT_BOTH_EDGES), flags: flags)
            return gpiod_line_request(l, &cfg, 0)
        }
    }

    func closeSlot(_ i: Int) {
        guard let l = slots[i].line else { return }
        gpiod_line_release(l)
        if let c = slots[i].chip { gpiod_chip_close(c) } else { gpiod_line_close_chip(l) }
        slots[i].line = nil
        slots[i].chip = nil
        slots[i].fd = -1
    }

    public func wait(until deadline: Double?, wakeFD: Int32) -> [ButtonEvent] {
        openMissing(now: clock())
        if !pending.isEmpty {
            defer { pending = [] }
            return pending
        }
        let open = slots.indices.filter { slots[$0].line != nil }
        let wakeAt = [deadline, nextRetry].compactMap { $0 }.min()
        let revents = pollFDs(open.map { slots[$0].fd }, wake: wakeFD, until: wakeAt)
        var out: [ButtonEvent] = []
        for (k, i) in open.enumerated() where revents[k] != 0 {
            out += readEvents(i)
        }
        if out.isEmpty { out = resync() }
        return out
    }

    /// The kernel keeps a few events per line; if some were lost (overflow), the level we
    /// believe in is wrong and a released button could look held for good. At each timeout
    /// (the recognizer's deadlines come often while a button is down) the real levels are
    /// read and any difference is fed as an edge.
    func resync() -> [ButtonEvent] {
        var out: [ButtonEvent] = []
        let now = clock()
        for i in slots.indices {
            guard let l = slots[i].line else { continue }
            let v = gpiod_line_get_value(l)
            guard v >= 0, (v == 1) != slots[i].level else { continue }
            slots[i].level = v == 1
            log.debug("button \(slots[i].action.rawValue): level resynchronised (events were lost)", ["level": v])
            out.append(ButtonEvent(slots[i].action, level: v == 1, at: now))
        }
        return out
    }

    func readEvents(_ i: Int) -> [ButtonEvent] {
        var evs = [gpiod_line_event](repeating: gpiod_line_event(), count: 16)
        let n = gpiod_line_event_read_fd_multiple(slots[i].fd, &evs, UInt32(evs.count))
        let now = clock()
        guard n > 0 else {
            let e = errno
            if e == EAGAIN || e == EINTR { return [] }
            // The chip went away (unbound driver, unplugged expander): reopen later.
            let err = ButtonLineError.system(line: slots[i].ref.description, call: "reading events", errno: e)
            log.error(err.message(button: slots[i].action, retryEvery: retryEvery))
            closeSlot(i)
            slots[i].error = err
            slots[i].retryAt = now + retryEvery
            return []
        }
        let out = evs[..<Int(n)].map { ev in
            // The v1 uAPI stamps events with CLOCK_MONOTONIC since Linux 5.7 (REALTIME before):
            // use the kernel's time when it is plausibly ours, else the time of reading.
            let ts = Double(ev.ts.tv_sec) + Double(ev.ts.tv_nsec) / 1e9
            let at = abs(ts - now) < 1 ? min(ts, now) : now
            return ButtonEvent(slots[i].action, level: ev.event_type == Int32(GPIOD_LINE_EVENT_RISING_EDGE), at: at)
        }
        slots[i].level = out.last!.level
        return out
    }

    public func close() {
        for i in slots.indices { closeSlot(i) }
    }

    deinit { close() }
}
