import CrierCore
import CrierPosix

/// One electrical level seen on a button's line.
public struct ButtonEvent: Sendable, Equatable {
    public var action: ButtonAction
    /// Electrical level: true = high.
    public var level: Bool
    /// Monotonic seconds (`Monotonic`).
    public var at: Double
    /// The first reading after the line was (re)opened, not an edge.
    public var initial: Bool

    public init(_ action: ButtonAction, level: Bool, at: Double, initial: Bool = false) {
        self.action = action
        self.level = level
        self.at = at
        self.initial = initial
    }
}

/// A source of button levels: libgpiod lines, a FIFO, or the keyboard. Every backend feeds
/// the same `GestureRecognizer` through `ButtonReader`.
///
/// An input lives on the reader's thread only: it is created there (by the factory given to
/// `ButtonReader`), used there and closed there, so it needs no locking.
public protocol ButtonInput: AnyObject {
    /// Blocks until levels arrive, `deadline` (monotonic seconds; nil = no deadline) passes, or
    /// `wakeFD` becomes readable (stop). Opening, reopening and retrying missing lines happen
    /// in here too, so an input never gives up.
    func wait(until deadline: Double?, wakeFD: Int32) -> [ButtonEvent]
    /// Releases lines, fds, terminal modes.
    func close()
}
