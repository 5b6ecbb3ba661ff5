/// What a button's GPIO line is requested with, for either libgpiod API (v1: a request config
/// plus flags; v2: line settings). Both backends take it from here, so they cannot drift apart.
///
/// The line is requested with *electrical* levels, no kernel debouncing and both edges, so
/// both backends report the same raw edges; the active level and the debouncing are the
/// `GestureRecognizer`'s (`ButtonSpec.activeLow`, `debounceMs`), one rule for every input
/// (libgpiod v1, v2, FIFO, keyboard). Kernel debouncing (v2 only) would also move the edge
/// timestamps to the end of the debounce period and debounce twice.
public struct LineRequestPlan: Sendable, Equatable, CustomStringConvertible {
    /// nil: leave the line's bias as it is (the retry on kernels that cannot set bias).
    public var bias: LineBias?
    /// Whether the kernel is asked to invert the line. Always false: see the type's comment.
    public var activeLow: Bool
    /// Kernel debounce period (v2 `debounce_period_us`). Always 0: see the type's comment.
    public var debounceMicros: UInt
    /// Both edges: a press and its release are both needed for press/hold/repeat.
    public var bothEdges: Bool
    /// Edge timestamps on CLOCK_MONOTONIC, the clock the recognizer runs on (v2 lets a
    /// request pick REALTIME or HTE; v1 has used MONOTONIC since Linux 5.7).
    public var monotonicTimestamps: Bool

    public init(spec: ButtonSpec) {
        bias = spec.bias
        activeLow = false
        debounceMicros = 0
        bothEdges = true
        monotonicTimestamps = true
    }

    /// The same request without touching the bias: for kernels (before 5.5) or line drivers
    /// that refuse to set one.
    public var withoutBias: LineRequestPlan {
        var p = self
        p.bias = nil
        return p
    }

    /// The electrical level of a value the kernel reported for a line requested with this
    /// plan (the kernel inverts it when the request is active-low).
    public func electricalLevel(reported: Bool) -> Bool { activeLow ? !reported : reported }

    /// The time to give the recognizer for an edge the kernel stamped at `kernel` seconds,
    /// read at `now` (both monotonic). A stamp more than 1 s away from now is on another clock
    /// (v1 on kernels before 5.7 stamps with CLOCK_REALTIME): the time of reading is used
    /// then. A stamp is never later than its reading.
    public static func eventTime(kernel: Double, now: Double) -> Double {
        abs(kernel - now) < 1 ? min(kernel, now) : now
    }

    public var description: String {
        "bias=\(bias?.rawValue ?? "as-is") active_low=\(activeLow) debounce_us=\(debounceMicros) edges=\(bothEdges ? "both" : "none") clock=\(monotonicTimestamps ? "monotonic" : "realtime")"
    }
}
