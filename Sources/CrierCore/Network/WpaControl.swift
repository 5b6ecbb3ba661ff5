/// wpa_supplicant's control interface text protocol (hostap 2.10, wpa_ctrl.h / ctrl_iface.c):
/// unsolicited events `<LEVEL>NAME args` on an ATTACHed socket, and the replies of STATUS and
/// SIGNAL_POLL (`key=value` lines). Pure parsing; the socket is CrierSystem's `WpaControl`.
public enum WpaEvent: Sendable, Equatable {
    /// CTRL-EVENT-CONNECTED: the 4-way handshake (or open association) completed.
    case connected(idStr: String?)
    /// CTRL-EVENT-DISCONNECTED bssid=… reason=N [locally_generated=1].
    case disconnected(reason: Int?)
    /// CTRL-EVENT-SSID-TEMP-DISABLED … reason=WRONG_KEY: the 4-way handshake failed on the
    /// PSK (message 3 never came, or its MIC was wrong), i.e. the password is wrong.
    case wrongKey(ssid: [UInt8]?)
    /// CTRL-EVENT-SSID-TEMP-DISABLED with another reason (CONN_FAILED, AUTH_FAILED…).
    case tempDisabled(ssid: [UInt8]?, reason: String)
    /// CTRL-EVENT-AUTH-REJECT bssid auth_type=N auth_transaction=N status_code=N: the AP
    /// refused an authentication frame. For WPA3's SAE (auth_type 3) a refused confirm
    /// (transaction 2) means the commit exchange worked but the password-derived confirm did
    /// not verify: the password is wrong (`isSAEConfirmRejected`). Seen against hostapd: with
    /// SAE a wrong password never gives WRONG_KEY, only this and then TEMP-DISABLED CONN_FAILED.
    case authReject(authType: Int?, transaction: Int?, status: Int?)
    /// CTRL-EVENT-NETWORK-NOT-FOUND: a scan found none of the configured networks.
    case networkNotFound
    /// An association attempt (SME "Trying to authenticate", "Trying to associate",
    /// "Associated with"): a network is in reach.
    case attempt
    /// CTRL-EVENT-TERMINATING: the supplicant is exiting.
    case terminating

    /// nil for lines that say nothing about the state (scan results, BSS additions…).
    public static func parse(_ raw: String) -> WpaEvent? {
        var line = Substring(raw)
        if line.hasPrefix("<"), let close = line.firstIndex(of: ">") { line = line[line.index(after: close)...] }
        if line.hasPrefix("CTRL-EVENT-CONNECTED") {
            return .connected(idStr: field("id_str", in: line).map { String(decoding: $0, as: UTF8.self) })
        }
        if line.hasPrefix("CTRL-EVENT-DISCONNECTED") {
            return .disconnected(reason: field("reason", in: line).flatMap { Int(String(decoding: $0, as: UTF8.self)) })
        }
        if line.hasPrefix("CTRL-EVENT-SSID-TEMP-DISABLED") {
            let reason = field("reason", in: line).map { String(decoding: $0, as: UTF8.self) } ?? ""
            let ssid = field("ssid", in: line)
            return reason == "WRONG_KEY" ? .wrongKey(ssid: ssid) : .tempDisabled(ssid: ssid, reason: reason)
        }
        if line.hasPrefix("CTRL-EVENT-AUTH-REJECT") {
            func int(_ k: String) -> Int? { field(k, in: line).flatMap { Int(String(decoding: $0, as: UTF8.self)) } }
            return .authReject(authType: int("auth_type"), transaction: int("auth_transaction"), status: int("status_code"))
        }
        if line.hasPrefix("CTRL-EVENT-NETWORK-NOT-FOUND") { return .networkNotFound }
        if line.hasPrefix("CTRL-EVENT-TERMINATING") { return .terminating }
        if line.hasPrefix("SME: Trying to authenticate") || line.hasPrefix("Trying to associate") || line.hasPrefix("Associated with") {
            return .attempt
        }
        return nil
    }

    public var isSAEConfirmRejected: Bool {
        if case .authReject(3, 2, _) = self { return true }
        return false
    }

    /// The value of ` key=value` in an event line; a quoted value (`ssid="…"`, printf-encoded
    /// by wpa_ssid_txt) is decoded to its bytes.
    static func field(_ key: String, in line: Substring) -> [UInt8]? {
        let b = Array(line.utf8)
        let k = Array((key + "=").utf8)
        var i = 0
        while i + k.count <= b.count {
            if (i == 0 || b[i - 1] == 0x20 || b[i - 1] == 0x5B) && Array(b[i..<(i + k.count)]) == k {
                var j = i + k.count
                if j < b.count && b[j] == 0x22 {  // quoted: to the closing unescaped quote
                    j += 1
                    var raw: [UInt8] = []
                    while j < b.count && b[j] != 0x22 {
                        if b[j] == 0x5C && j + 1 < b.count { raw.append(b[j]); j += 1 }
                        raw.append(b[j])
                        j += 1
                    }
                    return WpaText.decode(raw)
                }
                var out: [UInt8] = []
                while j < b.count && b[j] != 0x20 && b[j] != 0x5D { out.append(b[j]); j += 1 }
                return out
            }
            i += 1
        }
        return nil
    }
}

/// The reply to STATUS: what the supplicant is doing and, once associated, with which network
/// and address (it reads the interface's IPv4 address itself: `ip_address=`).
public struct WpaStatus: Sendable, Equatable {
    public var wpaState = ""
    public var ssid: [UInt8]?
    public var idStr: String?
    public var bssid: String?
    public var frequency: Int?
    public var ipAddress: String?
    public var keyMgmt: String?

    public init() {}

    public var completed: Bool { wpaState == "COMPLETED" }
    /// Authenticating or associating with a network that is in reach.
    public var attempting: Bool { ["AUTHENTICATING", "ASSOCIATING", "ASSOCIATED", "4WAY_HANDSHAKE", "GROUP_HANDSHAKE"].contains(wpaState) }

    public static func parse(_ text: String) -> WpaStatus {
        var s = WpaStatus()
        for line in text.split(whereSeparator: { $0 == "\n" || $0 == "\r" }) {
            guard let eq = line.firstIndex(of: "=") else { continue }
            let k = line[..<eq], v = String(line[line.index(after: eq)...])
            switch k {
            case "wpa_state": s.wpaState = v
            case "ssid": s.ssid = WpaText.decode(Array(v.utf8))
            case "id_str": s.idStr = v
            case "bssid": s.bssid = v
            case "freq": s.frequency = Int(v)
            case "ip_address": s.ipAddress = v.isEmpty ? nil : v
            case "key_mgmt": s.keyMgmt = v
            default: break
            }
        }
        return s
    }

    /// RSSI in dBm from a SIGNAL_POLL reply (`RSSI=-52`); nil when not associated (`FAIL`).
    public static func rssi(fromSignalPoll text: String) -> Int? {
        for line in text.split(whereSeparator: { $0 == "\n" || $0 == "\r" }) where line.hasPrefix("RSSI=") {
            if let v = Int(line.dropFirst(5)), (-150...20).contains(v) { return v }
        }
        return nil
    }
}

/// hostap's printf_encode, undone: `\\`, `\"`, `\e`, `\n`, `\r`, `\t` and `\xHH`.
public enum WpaText {
    public static func decode(_ b: [UInt8]) -> [UInt8] {
        var out: [UInt8] = []
        var i = 0
        while i < b.count {
            let c = b[i]
            guard c == 0x5C, i + 1 < b.count else { out.append(c); i += 1; continue }
            let n = b[i + 1]
            switch n {
            case 0x5C, 0x22: out.append(n); i += 2
            case UInt8(ascii: "n"): out.append(0x0A); i += 2
            case UInt8(ascii: "r"): out.append(0x0D); i += 2
            case UInt8(ascii: "t"): out.append(0x09); i += 2
            case UInt8(ascii: "e"): out.append(0x1B); i += 2
            case UInt8(ascii: "x") where i + 3 < b.count:
                if let v = Hex.decode(String(decoding: b[(i + 2)...(i + 3)], as: UTF8.self)), v.count == 1 {
                    out.append(v[0]); i += 4
                } else {
                    out.append(c); i += 1
                }
            default: out.append(c); i += 1
            }
        }
        return out
    }
}
