import CrierCore
import CrierPosix
import Glibc
import Synchronization

/// The terminal settings to put back, for the atexit handler.
private let savedTerminal = Mutex<(fd: Int32, attrs: termios)?>(nil)

private func restoreTerminal() {
    savedTerminal.withLock { s in
        if let s { var a = s.attrs; _ = tcsetattr(s.fd, TCSANOW, &a) }
        s = nil
    }
}

/// `input = keyboard`, for laptops: single keys on the terminal (raw mode, no Enter needed),
/// each giving a press and a release through the same recognizer as GPIO:
///
///     +  (or =)  volume up        -  (or _)  volume down
///     m          mute             r          replay (the latest alert)
///     a          acknowledge
///     M R A      the same, held (a press as long as hold_ms): R steps back through history
///
/// A terminal has no key-up events: holding a key gives one press, a pause (the autorepeat
/// delay) and then a stream of presses, so a real hold cannot be told from it. A key that
/// repeats within `tap` keeps the button down, which makes a held + or - step on.
/// Only when stdin is a terminal; the terminal is restored on close and at exit. Ctrl-C still
/// works (signals stay enabled).
public final class KeyboardInput: ButtonInput {
    let fd: Int32
    let log: Logger
    let config: ButtonsConfig
    let clock: @Sendable () -> Double
    /// How long a key tap holds the button down.
    let tap: Double
    /// Synthetic releases due: action -> time.
    var releases: [ButtonAction: Double] = [:]
    var usable = false

    public init(config: ButtonsConfig, log: Logger, fd: Int32 = STDIN_FILENO,
                clock: @escaping @Sendable () -> Double = Monotonic.now) {
        self.fd = fd
        self.log = log
        self.config = config
        self.clock = clock
        let longestDebounce = config.fitted.map { Double($0.1.debounceMs) / 1000 }.max() ?? 0.02
        tap = longestDebounce + 0.08
        guard isatty(fd) == 1 else {
            log.error("input = keyboard needs a terminal on stdin, and stdin is not one; buttons are off (use input = fifo:/PATH for scripts)")
            return
        }
        var attrs = termios()
        guard tcgetattr(fd, &attrs) == 0 else {
            log.error("cannot read terminal settings: \(errnoText(errno)); buttons are off")
            return
        }
        let first = savedTerminal.withLock { s -> Bool in
            let first = s == nil
            if first { s = (fd, attrs) }
            return first
        }
        if first { atexit { restoreTerminal() } }
        var raw = attrs
        raw.c_lflag &= ~tcflag_t(ICANON | ECHO)
        withUnsafeMutableBytes(of: &raw.c_cc) { cc in
            cc[Int(VMIN)] = 1
            cc[Int(VTIME)] = 0
        }
        _ = tcsetattr(fd, TCSANOW, &raw)
        usable = true
        log.notice("keyboard input: + - volume, m mute, r replay, a acknowledge, b music on/off; M R A = hold")
    }

    static func key(_ c: UInt8) -> (ButtonAction, hold: Bool)? {
        switch c {
        case UInt8(ascii: "+"), UInt8(ascii: "="): (.volumeUp, false)
        case UInt8(ascii: "-"), UInt8(ascii: "_"): (.volumeDown, false)
        case UInt8(ascii: "m"): (.mute, false)
        case UInt8(ascii: "M"): (.mute, true)
        case UInt8(ascii: "r"): (.replay, false)
        case UInt8(ascii: "R"): (.replay, true)
        case UInt8(ascii: "a"): (.acknowledge, false)
        case UInt8(ascii: "A"): (.acknowledge, true)
        case UInt8(ascii: "b"): (.music, false)
        default: nil
        }
    }

    public func wait(until deadline: Double?, wakeFD: Int32) -> [ButtonEvent] {
        let due = [deadline, releases.values.min()].compactMap { $0 }.min()
        var out: [ButtonEvent] = []
        if usable {
            let rev = pollFDs([fd], wake: wakeFD, until: due)[0]
            if rev != 0 {
                var buf = [UInt8](repeating: 0, count: 64)
                let n = read(fd, &buf, buf.count)
                if n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR) {
                    log.warning("the terminal closed; keyboard input is off")
                    close()
                } else if n > 0 {
                    let now = clock()
                    // Releases that were due before these keys came (this thread was late)
                    // happen first, so a second tap is a second press.
                    out += releasesDue(by: now)
                    for c in buf[..<n] {
                        guard let (a, hold) = Self.key(c), let spec = config.buttons[a], spec.line != nil else { continue }
                        let length = hold ? Double(spec.holdMs) / 1000 + tap : tap
                        if releases[a] == nil { out.append(ButtonEvent(a, level: spec.pressedLevel, at: now)) }
                        releases[a] = max(releases[a] ?? 0, now + length)
                    }
                }
            }
        } else {
            idle(wake: wakeFD, until: due)
        }
        return out + releasesDue(by: clock())
    }

    /// Synthetic releases due by `t`, in time order.
    func releasesDue(by t: Double) -> [ButtonEvent] {
        var out: [ButtonEvent] = []
        for (a, at) in releases.sorted(by: { $0.value < $1.value }) where at <= t {
            releases[a] = nil
            out.append(ButtonEvent(a, level: !(config.buttons[a]?.pressedLevel ?? false), at: at))
        }
        return out
    }

    public func close() {
        if usable { restoreTerminal() }
        usable = false
    }

    deinit { close() }
}
