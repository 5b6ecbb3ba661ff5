// The libgpiod v1 API (libgpiod 1.6: Debian 12, Raspberry Pi OS bookworm). Built when
// Package.swift finds libgpiod 1.x (no CRIER_GPIOD_V2); GPIODv2.swift is the other one.
#if !CRIER_GPIOD_V2
import CGPIOD
import CrierCore
import Glibc

/// The calls GPIODInput needs, for libgpiod 1.6.
enum GPIOD {
    static let api = 1
    static var version: String { String(cString: gpiod_version_string()) }

    /// The request type and flags for `plan`. v1 has no kernel debounce and no clock choice
    /// (MONOTONIC since Linux 5.7): the plan asks for neither.
    static func requestConfig(for plan: LineRequestPlan) -> (type: Int32, flags: Int32) {
        var flags: Int32 = 0
        switch plan.bias {
        case .pullUp: flags |= Int32(GPIOD_LINE_REQUEST_FLAG_BIAS_PULL_UP)
        case .pullDown: flags |= Int32(GPIOD_LINE_REQUEST_FLAG_BIAS_PULL_DOWN)
        case .disabled: flags |= Int32(GPIOD_LINE_REQUEST_FLAG_BIAS_DISABLE)
        case nil: break
        }
        if plan.activeLow { flags |= Int32(GPIOD_LINE_REQUEST_FLAG_ACTIVE_LOW) }
        let type = Int32(plan.bothEdges ? GPIOD_LINE_REQUEST_EVENT_BOTH_EDGES : GPIOD_LINE_REQUEST_DIRECTION_INPUT)
        return (type, flags)
    }

    /// Finds and requests one line for both-edge events as `plan` says.
    static func request(_ ref: LineRef, plan: LineRequestPlan, consumer: String) -> Result<GPIODLine, ButtonLineError> {
        var line: OpaquePointer?
        var chip: OpaquePointer?
        switch ref {
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
                return .failure(.opening(chip: c, line: ref.description, call: "gpiod_chip_open_lookup", errno: errno))
            }
            let count = Int(gpiod_chip_num_lines(ch))
            guard off < count, let l = gpiod_chip_get_line(ch, UInt32(off)) else {
                gpiod_chip_close(ch)
                return .failure(.offsetOutOfRange(chip: c, offset: off, lines: count))
            }
            line = l
        }
        let l = line!
        // A line found by name owns the chip gpiod_line_find opened; chip:offset opened it here.
        func closeChip() { if let chip { gpiod_chip_close(chip) } else { gpiod_line_close_chip(l) } }

        let chipName = gpiod_line_get_chip(l).flatMap { gpiod_chip_name($0) }.map { String(cString: $0) } ?? "?"
        let location = "\(chipName):\(gpiod_line_offset(l))"
        let (type, flags) = requestConfig(for: plan)
        let rc = consumer.withCString { c in
            var cfg = gpiod_line_request_config(consumer: c, request_type: type, flags: flags)
            return gpiod_line_request(l, &cfg, 0)
        }
        if rc != 0 {
            let e = errno
            defer { closeChip() }
            return .failure(.requesting(line: ref.description, call: "gpiod_line_request", errno: e) {
                gpiod_line_consumer(l).map { String(cString: $0) }
            })
        }
        let v = gpiod_line_get_value(l)
        let fd = gpiod_line_event_get_fd(l)
        guard v >= 0, fd >= 0 else {
            let e = errno
            gpiod_line_release(l)
            closeChip()
            return .failure(.system(line: ref.description, call: v < 0 ? "gpiod_line_get_value" : "gpiod_line_event_get_fd", errno: e))
        }
        return .success(GPIODLine(line: l, chip: chip, fd: fd, location: location, initialValue: v == 1))
    }
}

/// One requested line (v1: a line handle, its chip, the event fd).
final class GPIODLine {
    let line: OpaquePointer
    /// Set when the chip was opened for chip:offset; else the line owns its chip.
    let chip: OpaquePointer?
    let fd: Int32
    /// "gpiochip0:17".
    let location: String
    /// The value read right after the request.
    let initialValue: Bool
    private var released = false

    init(line: OpaquePointer, chip: OpaquePointer?, fd: Int32, location: String, initialValue: Bool) {
        self.line = line
        self.chip = chip
        self.fd = fd
        self.location = location
        self.initialValue = initialValue
    }

    /// The value now, nil if it cannot be read.
    func value() -> Bool? {
        let v = gpiod_line_get_value(line)
        return v < 0 ? nil : v == 1
    }

    /// The edges queued on the fd (call when poll says it is readable), or the errno.
    func readEdges() -> Result<[GPIODEdge], GPIODErrno> {
        var evs = [gpiod_line_event](repeating: gpiod_line_event(), count: 16)
        let n = gpiod_line_event_read_fd_multiple(fd, &evs, UInt32(evs.count))
        guard n > 0 else { return .failure(GPIODErrno(code: errno)) }
        // The v1 uAPI stamps with CLOCK_MONOTONIC since Linux 5.7 (REALTIME before): the
        // plan's eventTime tells the two apart.
        let rising = Int32(GPIOD_LINE_EVENT_RISING_EDGE)
        var out: [GPIODEdge] = []
        for ev in evs[..<Int(n)] {
            let s = Double(ev.ts.tv_sec) + Double(ev.ts.tv_nsec) / 1e9
            out.append(GPIODEdge(rising: ev.event_type == rising, seconds: s))
        }
        return .success(out)
    }

    func release() {
        guard !released else { return }
        released = true
        gpiod_line_release(line)
        if let chip { gpiod_chip_close(chip) } else { gpiod_line_close_chip(line) }
    }

    deinit { release() }
}
#endif
