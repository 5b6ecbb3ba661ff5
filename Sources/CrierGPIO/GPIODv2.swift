// The libgpiod v2 API (libgpiod 2.x: Debian 13, bookworm-backports; written against the calls
// 2.1 and 2.2 share). Built when Package.swift finds libgpiod 2.x (it defines CRIER_GPIOD_V2);
// GPIODv1.swift is the other one. GPIODInput holds everything both have in common.
#if CRIER_GPIOD_V2
import CGPIOD
import CrierCore
import Glibc

/// The calls GPIODInput needs, for libgpiod 2.
enum GPIOD {
    static let api = 2
    static var version: String { String(cString: gpiod_api_version()) }

    /// Line settings for `plan` (the caller frees them with gpiod_line_settings_free), nil
    /// when out of memory or the library refuses a value.
    static func settings(for plan: LineRequestPlan) -> OpaquePointer? {
        guard let s = gpiod_line_settings_new() else { return nil }
        let bias: gpiod_line_bias = switch plan.bias {
        case .pullUp: GPIOD_LINE_BIAS_PULL_UP
        case .pullDown: GPIOD_LINE_BIAS_PULL_DOWN
        case .disabled: GPIOD_LINE_BIAS_DISABLED
        case nil: GPIOD_LINE_BIAS_AS_IS
        }
        let ok = gpiod_line_settings_set_direction(s, GPIOD_LINE_DIRECTION_INPUT) == 0
            && gpiod_line_settings_set_edge_detection(s, plan.bothEdges ? GPIOD_LINE_EDGE_BOTH : GPIOD_LINE_EDGE_NONE) == 0
            && gpiod_line_settings_set_bias(s, bias) == 0
            && gpiod_line_settings_set_event_clock(s, plan.monotonicTimestamps ? GPIOD_LINE_CLOCK_MONOTONIC : GPIOD_LINE_CLOCK_REALTIME) == 0
        gpiod_line_settings_set_active_low(s, plan.activeLow)
        gpiod_line_settings_set_debounce_period_us(s, UInt(plan.debounceMicros))
        guard ok else {
            gpiod_line_settings_free(s)
            return nil
        }
        return s
    }

    /// The gpiochip devices in /dev, sorted by name (the order libgpiod 1.6 searched them in).
    static func chipPaths() -> [String] {
        guard let d = opendir("/dev") else { return [] }
        defer { closedir(d) }
        var out: [String] = []
        while let ent = readdir(d) {
            let name = withUnsafeBytes(of: ent.pointee.d_name) { raw in
                String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
            }
            guard name.hasPrefix("gpiochip") else { continue }
            let path = "/dev/" + name
            if gpiod_is_gpiochip_device(path) { out.append(path) }
        }
        return out.sorted()
    }

    /// Opens the chip a `chip:offset` names: `gpiochip0`, `0`, `/dev/gpiochip0`, or a label
    /// (`pinctrl-bcm2835`), as libgpiod 1.6's gpiod_chip_open_lookup took them.
    static func openChip(_ c: String, ref: LineRef) -> Result<OpaquePointer, ButtonLineError> {
        var path: String?
        if !c.isEmpty, c.allSatisfy(\.isASCII), c.allSatisfy(\.isNumber) {
            path = "/dev/gpiochip" + c
        } else if c.hasPrefix("/") {
            path = c
        } else if gpiod_is_gpiochip_device("/dev/" + c) {
            path = "/dev/" + c
        } else {
            for p in chipPaths() {
                guard let ch = gpiod_chip_open(p) else { continue }
                let label = gpiod_chip_get_info(ch).map { info in
                    defer { gpiod_chip_info_free(info) }
                    return String(cString: gpiod_chip_info_get_label(info))
                }
                if label == c { return .success(ch) }
                gpiod_chip_close(ch)
            }
        }
        guard let path else { return .failure(.chipNotFound(c)) }
        errno = 0
        guard let ch = gpiod_chip_open(path) else {
            return .failure(.opening(chip: c, line: ref.description, call: "gpiod_chip_open", errno: errno))
        }
        return .success(ch)
    }

    /// The chip and offset of the first line called `name` on any chip.
    static func find(_ name: String) -> Result<(OpaquePointer, UInt32), ButtonLineError> {
        var denied = false
        for p in chipPaths() {
            errno = 0
            guard let ch = gpiod_chip_open(p) else {
                if errno == EACCES || errno == EPERM { denied = true }
                continue
            }
            let off = gpiod_chip_get_line_offset_from_name(ch, name)
            if off >= 0 { return .success((ch, UInt32(off))) }
            gpiod_chip_close(ch)
        }
        return .failure(denied ? .permissionDenied(name) : .lineNotFound(name))
    }

    /// Finds and requests one line for both-edge events as `plan` says.
    static func request(_ ref: LineRef, plan: LineRequestPlan, consumer: String) -> Result<GPIODLine, ButtonLineError> {
        let chip: OpaquePointer
        let offset: UInt32
        switch ref {
        case .name(let n):
            switch find(n) {
            case .success(let (c, o)): (chip, offset) = (c, o)
            case .failure(let e): return .failure(e)
            }
        case .chip(let c, let off):
            switch openChip(c, ref: ref) {
            case .success(let ch): chip = ch
            case .failure(let e): return .failure(e)
            }
            let count = gpiod_chip_get_info(chip).map { info in
                defer { gpiod_chip_info_free(info) }
                return Int(gpiod_chip_info_get_num_lines(info))
            } ?? 0
            guard off < count else {
                gpiod_chip_close(chip)
                return .failure(.offsetOutOfRange(chip: c, offset: off, lines: count))
            }
            offset = UInt32(off)
        }
        // A v2 request lives on after its chip is closed: the chip is only needed until then.
        defer { gpiod_chip_close(chip) }
        let chipName = gpiod_chip_get_info(chip).map { info in
            defer { gpiod_chip_info_free(info) }
            return String(cString: gpiod_chip_info_get_name(info))
        } ?? "?"
        let location = "\(chipName):\(offset)"
        let oom = ButtonLineError.system(line: ref.description, call: "allocating the line request", errno: ENOMEM)
        guard let settings = settings(for: plan) else { return .failure(oom) }
        defer { gpiod_line_settings_free(settings) }
        guard let lineCfg = gpiod_line_config_new() else { return .failure(oom) }
        defer { gpiod_line_config_free(lineCfg) }
        guard let reqCfg = gpiod_request_config_new() else { return .failure(oom) }
        defer { gpiod_request_config_free(reqCfg) }
        var off = offset
        guard gpiod_line_config_add_line_settings(lineCfg, &off, 1, settings) == 0 else {
            return .failure(.system(line: ref.description, call: "gpiod_line_config_add_line_settings", errno: errno))
        }
        gpiod_request_config_set_consumer(reqCfg, consumer)
        errno = 0
        guard let req = gpiod_chip_request_lines(chip, reqCfg, lineCfg) else {
            let e = errno
            return .failure(.requesting(line: ref.description, call: "gpiod_chip_request_lines", errno: e) {
                gpiod_chip_get_line_info(chip, offset).flatMap { info in
                    defer { gpiod_line_info_free(info) }
                    return gpiod_line_info_get_consumer(info).map { String(cString: $0) }
                }
            })
        }
        let v = gpiod_line_request_get_value(req, offset)
        let fd = gpiod_line_request_get_fd(req)
        guard v != GPIOD_LINE_VALUE_ERROR, fd >= 0, let buffer = gpiod_edge_event_buffer_new(GPIODLine.capacity) else {
            let e = errno
            gpiod_line_request_release(req)
            let call = v == GPIOD_LINE_VALUE_ERROR ? "gpiod_line_request_get_value" : fd < 0 ? "gpiod_line_request_get_fd" : "gpiod_edge_event_buffer_new"
            return .failure(.system(line: ref.description, call: call, errno: e))
        }
        return .success(GPIODLine(request: req, offset: offset, buffer: buffer, fd: fd, location: location,
                                  initialValue: v == GPIOD_LINE_VALUE_ACTIVE))
    }
}

/// One requested line (v2: a line request of one offset, its fd, an edge event buffer).
final class GPIODLine {
    /// Events read per call: the kernel queues 16 per line by default, as in v1.
    static let capacity = 16
    let request: OpaquePointer
    let offset: UInt32
    let buffer: OpaquePointer
    let fd: Int32
    /// "gpiochip0:17".
    let location: String
    /// The value read right after the request.
    let initialValue: Bool
    private var released = false

    init(request: OpaquePointer, offset: UInt32, buffer: OpaquePointer, fd: Int32, location: String, initialValue: Bool) {
        self.request = request
        self.offset = offset
        self.buffer = buffer
        self.fd = fd
        self.location = location
        self.initialValue = initialValue
    }

    /// The value now, nil if it cannot be read.
    func value() -> Bool? {
        let v = gpiod_line_request_get_value(request, offset)
        return v == GPIOD_LINE_VALUE_ERROR ? nil : v == GPIOD_LINE_VALUE_ACTIVE
    }

    /// The edges queued on the fd (call when poll says it is readable: the read blocks
    /// otherwise), or the errno.
    func readEdges() -> Result<[GPIODEdge], GPIODErrno> {
        let n = gpiod_line_request_read_edge_events(request, buffer, GPIODLine.capacity)
        guard n >= 0 else { return .failure(GPIODErrno(code: errno)) }
        var out: [GPIODEdge] = []
        for i in 0..<Int(n) {
            guard let ev = gpiod_edge_event_buffer_get_event(buffer, UInt(i)) else { continue }
            let rising = gpiod_edge_event_get_event_type(ev) == GPIOD_EDGE_EVENT_RISING_EDGE
            let s = Double(gpiod_edge_event_get_timestamp_ns(ev)) / 1e9
            out.append(GPIODEdge(rising: rising, seconds: s))
        }
        return .success(out)
    }

    func release() {
        guard !released else { return }
        released = true
        gpiod_line_request_release(request)
        gpiod_edge_event_buffer_free(buffer)
    }

    deinit { release() }
}
#endif
