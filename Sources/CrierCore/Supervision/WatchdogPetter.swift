/// systemd's watchdog, the rule part: with `WatchdogSec=` set, systemd passes
/// `$WATCHDOG_USEC` and kills the service unless `WATCHDOG=1` arrives within that time. Crier
/// pets at half the interval, and only while every supervised component is healthy: a wedged
/// supervisor, a starved executor or a component that stays down gets the whole process
/// restarted. Health is checked every `checkInterval` (an eighth of the timeout), so a component
/// that is down for a moment (a quick restart) delays a pet instead of losing it.
public struct WatchdogPetter: Sendable, Equatable {
    /// Seconds between pets while healthy: half of `$WATCHDOG_USEC`.
    public let petInterval: Double
    /// Seconds between health checks.
    public let checkInterval: Double
    public private(set) var lastPet: Double?

    /// nil when the watchdog is off: `$WATCHDOG_USEC` unset, unparsable or zero, or
    /// `$WATCHDOG_PID` set to another process (the variable was inherited, not meant for us).
    public init?(watchdogUSec: String?, watchdogPID: String?, ownPID: Int) {
        guard let text = watchdogUSec, let usec = UInt64(text), usec > 0 else { return nil }
        if let pidText = watchdogPID, !pidText.isEmpty, Int(pidText) != ownPID { return nil }
        self.init(timeout: Double(usec) / 1_000_000)
    }

    /// `timeout` is systemd's WatchdogSec in seconds.
    public init(timeout: Double) {
        petInterval = timeout / 2
        checkInterval = timeout / 8
    }

    public enum Action: Sendable, Equatable {
        /// Send `WATCHDOG=1`.
        case pet
        /// Nothing to do yet.
        case wait
        /// A pet is due but these components are down: withhold it.
        case withhold(down: [String])
    }

    /// The start of the petting. systemd's timer runs from the service's start, so the start
    /// counts as a pet (the components get a moment to come up). Not after a reload: crier
    /// re-executes itself in place (same PID, same unit), systemd's timer keeps running from the
    /// last `WATCHDOG=1` before the reload, and the first pet half an interval after the new
    /// image's start can come too late: up to 4.4 s since the last pet + the stop, exec and
    /// start-up (2.5 s under TCG) + 4.4 s > WatchdogSec=10 (the amd64 boot test saw crier
    /// restarted 5 s after a save from the local page reloaded it, last_start=crash). So a
    /// re-executed crier pets at once: true = send `WATCHDOG=1` now.
    public mutating func start(now: Double, reloaded: Bool) -> Bool {
        lastPet = now
        return reloaded
    }

    /// Called every `checkInterval` with the supervisor's health.
    public mutating func check(now: Double, health: SupervisorHealth) -> Action {
        let due = lastPet.map { now - $0 >= petInterval - checkInterval / 2 } ?? true
        guard due else { return .wait }
        guard health.healthy else { return .withhold(down: health.down) }
        lastPet = now
        return .pet
    }

    /// Runs until the task is cancelled: checks health, pets, logs when pets stop and resume.
    /// `reloaded`: this process image was started by a reload's re-exec (`start`).
    public static func run(_ petter: WatchdogPetter, clock: any SupervisionClock, reloaded: Bool = false,
                           health: @escaping @Sendable () -> SupervisorHealth,
                           pet: @escaping @Sendable () -> Void, log: Logger) async {
        var petter = petter
        if petter.lastPet == nil, petter.start(now: clock.now(), reloaded: reloaded) { pet() }
        var withheld: [String]? = nil
        log.info("watchdog on", ["timeout": formatSeconds(petter.petInterval * 2), "pet_every": formatSeconds(petter.petInterval)])
        var next = clock.now()
        while !Task.isCancelled {
            switch petter.check(now: clock.now(), health: health()) {
            case .pet:
                pet()
                if let down = withheld {
                    log.notice("watchdog pets resumed", ["was_down": down.joined(separator: ",")])
                    withheld = nil
                }
            case .withhold(let down):
                if withheld != down {
                    log.warning("watchdog pets withheld while components are down", ["down": down.joined(separator: ",")])
                    withheld = down
                }
            case .wait:
                break
            }
            next = max(next + petter.checkInterval, clock.now())
            do { try await clock.sleep(until: next) } catch { return }
        }
    }
}
