/// What the box knows about its Wi-Fi, and what it says about it (issue 19), the way the
/// payment speakers do: "Wi-Fi connected" once it has an address, and each problem once it is
/// sure of it, then again every `repeatEvery` seconds while it lasts:
/// - password wrong: the supplicant's WRONG_KEY (the 4-way handshake failed on the PSK), or
///   for WPA3-SAE the AP refusing the SAE confirm; said at once; it stays until a network
///   connects (the supplicant keeps retrying);
/// - network not found: scans found no configured network for `notFoundAfter` seconds;
/// - no IP address: associated for `noAddressAfter` seconds without an IPv4 address.
/// While one of these lasts it replaces the server link's "服务连接失败" (`suppressesLinkDown`):
/// it says what is wrong more precisely. Pure: facts and `now` come in, prompts go out.
public struct WifiMonitor: Sendable, Equatable {
    public enum State: String, Sendable, Equatable {
        case starting
        /// The supplicant's control socket does not answer.
        case noSupplicant = "no_supplicant"
        case searching
        case connecting
        case notFound = "not_found"
        case wrongPassword = "wrong_password"
        case noAddress = "no_address"
        case online
    }

    public let config: WifiConfig
    public let repeatEvery: Double
    public private(set) var state: State = .starting
    public private(set) var since: Double

    // What the supplicant said.
    public private(set) var associated = false
    public private(set) var ssid: [UInt8]?
    public private(set) var network: String?
    public private(set) var address: String?
    public private(set) var signal: Int?
    public private(set) var frequency: Int?
    var reachable: Bool?
    var wrongKeySSID: [UInt8]??
    var notFoundSince: Double?
    var associatedSince: Double?

    /// The state last said aloud (nil: none yet) and when it is due again.
    public private(set) var announced: State?
    public private(set) var nextPrompt: Double?
    var pending: Templates.Name?

    public init(config: WifiConfig, repeatEvery: Double, now: Double) {
        self.config = config
        self.repeatEvery = repeatEvery
        since = now
    }

    public static func prompt(for s: State) -> Templates.Name? {
        switch s {
        case .online: .wifiConnected
        case .wrongPassword: .wifiWrongPassword
        case .notFound: .wifiNotFound
        case .noAddress: .wifiNoAddress
        case .starting, .noSupplicant, .searching, .connecting: nil
        }
    }

    public var isProblem: Bool { state == .wrongPassword || state == .notFound || state == .noAddress }

    /// The network "Wi-Fi connected" has been said for, while that is the last thing said (and
    /// not merely chosen): what a reload hands to the new image. nil: not said, or a problem
    /// was said after it.
    public var connectedSaidFor: [UInt8]? {
        guard announced == .online, pending == nil else { return nil }
        return ssid ?? config.ssid?.bytes
    }

    /// After a reload: the image before said "Wi-Fi connected" for `network`. If this
    /// configuration still names that network, the monitor starts as having said it, so finding
    /// the Wi-Fi online says nothing (a problem first, then online, says it as always). A
    /// network the reload changed is said when it connects.
    public mutating func reloaded(connectedSaidFor network: [UInt8]) {
        guard announced == nil, [config.ssid, config.backupSSID].contains(where: { $0?.bytes == network }) else { return }
        announced = .online
    }

    /// While Wi-Fi says what is wrong, the order server's link-down prompt stays quiet.
    public var suppressesLinkDown: Bool { config.prompts && isProblem }

    // MARK: facts

    public mutating func observe(_ e: WpaEvent, now: Double) {
        reachable = true
        switch e {
        case .connected(let id):
            associated = true
            if associatedSince == nil { associatedSince = now }
            if let id { network = id }
            wrongKeySSID = nil
            notFoundSince = nil
        case .disconnected:
            associated = false
            associatedSince = nil
            address = nil
            signal = nil
        case .wrongKey(let s):
            wrongKeySSID = .some(s)
            associated = false
            associatedSince = nil
            address = nil
        case .authReject:
            if e.isSAEConfirmRejected {
                wrongKeySSID = .some(nil)
                associated = false
                associatedSince = nil
                address = nil
            }
        case .tempDisabled:
            break
        case .networkNotFound:
            if !associated && notFoundSince == nil { notFoundSince = now }
        case .attempt:
            notFoundSince = nil
        case .terminating:
            reachable = false
            associated = false
            associatedSince = nil
            address = nil
            signal = nil
        }
    }

    /// A STATUS (and SIGNAL_POLL) reply: the authoritative picture.
    public mutating func observe(status s: WpaStatus, signal rssi: Int?, now: Double) {
        reachable = true
        if s.completed {
            if !associated || associatedSince == nil { associatedSince = now }
            associated = true
            wrongKeySSID = nil
            notFoundSince = nil
            ssid = s.ssid
            network = s.idStr ?? network
            address = s.ipAddress
            signal = rssi
            frequency = s.frequency
        } else {
            associated = false
            associatedSince = nil
            address = nil
            signal = nil
            if s.attempting { notFoundSince = nil }
        }
    }

    /// The control socket does not answer (supplicant not started, crashed, or stopped).
    public mutating func unreachable(now: Double) {
        reachable = false
        notFoundSince = nil
        associated = false
        associatedSince = nil
        address = nil
        signal = nil
    }

    // MARK: rules

    func derived(now: Double) -> State {
        if reachable == nil { return .starting }
        if reachable == false { return .noSupplicant }
        if wrongKeySSID != nil { return .wrongPassword }
        if associated {
            if address != nil { return .online }
            if let t = associatedSince, now - t >= config.noAddressAfter { return .noAddress }
            return .connecting
        }
        if let t = notFoundSince, now - t >= config.notFoundAfter { return .notFound }
        return .searching
    }

    /// Brings the state up to `now`; returns the new state when it changed (for the log).
    public mutating func update(now: Double) -> State? {
        let s = derived(now: now)
        guard s != state else { return nil }
        state = s
        since = now
        if let p = Self.prompt(for: s) {
            // "connected" only after something else was said (or first thing): a blip that
            // never became a problem says nothing.
            if s != .online || announced != .online {
                announced = s
                pending = p
                nextPrompt = s == .online ? nil : now + repeatEvery
            }
        } else if s == .noSupplicant {
            nextPrompt = nil
        }
        return s
    }

    /// The prompt to say now, if any (the first time at the change, then the repeats).
    public mutating func due(now: Double) -> Templates.Name? {
        _ = update(now: now)
        guard config.prompts else { pending = nil; return nil }
        if let p = pending {
            pending = nil
            return p
        }
        guard isProblem, let next = nextPrompt, now >= next, let p = Self.prompt(for: state) else { return nil }
        nextPrompt = now + repeatEvery
        return p
    }

    /// When `due`/`update` must run next for a change that comes with time alone.
    public func nextDeadline(now: Double) -> Double? {
        var t: [Double] = []
        // Thresholds still ahead (one already passed has been applied by `update`).
        if reachable == true, wrongKeySSID == nil {
            if associated, address == nil, let a = associatedSince, a + config.noAddressAfter > now { t.append(a + config.noAddressAfter) }
            if !associated, let n = notFoundSince, n + config.notFoundAfter > now { t.append(n + config.notFoundAfter) }
        }
        if config.prompts, isProblem, let p = nextPrompt { t.append(p) }
        if pending != nil { t.append(now) }
        return t.min()
    }

    /// Whether a status prompt chosen earlier still says something true at `now`, checked again
    /// right before it plays (synthesis takes a while; Wi-Fi can change meanwhile: the VM test
    /// heard "server connection failed" picked 0.4 s before Wi-Fi came back and played after).
    /// A Wi-Fi prompt must match the current state; the server's link-down prompt is not said
    /// while the link is up, while a Wi-Fi problem replaces it, or within `linkDownAfter` of
    /// Wi-Fi coming back (the link is still reconnecting). Other prompts are always true.
    public func stillTrue(_ p: Templates.Name, linkUp: Bool, linkDownAfter: Double, now: Double) -> Bool {
        switch p {
        case .wifiConnected, .wifiWrongPassword, .wifiNotFound, .wifiNoAddress:
            return config.prompts && Self.prompt(for: state) == p
        case .linkDown:
            if linkUp || suppressesLinkDown { return false }
            return !(state == .online && now - since < linkDownAfter)
        default:
            return true
        }
    }

    /// For `crier status` and the log: the SSID as text (invalid UTF-8 shown as U+FFFD).
    public var ssidText: String? { ssid.map { String(decoding: $0, as: UTF8.self) } }
    public var wrongKeyNetwork: String? { (wrongKeySSID ?? nil).map { String(decoding: $0, as: UTF8.self) } }
}
