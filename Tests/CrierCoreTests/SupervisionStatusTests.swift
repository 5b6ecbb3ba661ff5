import Testing
@testable import CrierCore

@Suite struct StatusFormatTests {
    let snapshot = StatusSnapshot(
        version: "0.1.0", deviceID: "kiosk-1", time: WallTime(unixMillis: 1_795_000_000_000), uptime: 90061,
        components: [
            ComponentStatus(name: "audio", state: .running, sinceProgress: 0.02, detail: "hw:1 open"),
            ComponentStatus(name: "link", state: .restarting, restarts: 2, lastFailure: "error: connection refused"),
        ],
        link: LinkStatus(state: "down", server: "tcp://10.0.0.5:7700", since: 42, detail: "connection refused"),
        lastError: LogRecord(time: WallTime(unixMillis: 1_794_999_999_000), level: .error, component: "link",
                             message: "connect failed", fields: [("error", "ECONNREFUSED")]),
        volume: 6, volumeMax: 10, muted: true, queueLength: 1,
        lastAlerts: [AlertSummary(time: WallTime(unixMillis: 1_794_999_990_000), id: "A1", lang: "zh",
                                  text: "新订单 \"42\" 号\n", state: "acked")])

    @Test func jsonIsOneStableLine() {
        #expect(StatusFormat.json(snapshot) == #"{"version":"0.1.0","device":"kiosk-1","time":"2026-11-18T11:06:40.000Z","uptime_s":90061,"healthy":false,"components":[{"name":"audio","state":"running","restarts":0,"last_failure":null,"since_progress_s":0.0,"detail":"hw:1 open"},{"name":"link","state":"restarting","restarts":2,"last_failure":"error: connection refused","since_progress_s":null,"detail":null}],"link":{"state":"down","server":"tcp://10.0.0.5:7700","since_s":42,"detail":"connection refused"},"last_error":{"time":"2026-11-18T11:06:39.000Z","component":"link","message":"connect failed","line":"2026-11-18T11:06:39.000Z ERROR link: connect failed error=ECONNREFUSED"},"volume":6,"volume_max":10,"muted":true,"queue_length":1,"last_alerts":[{"time":"2026-11-18T11:06:30.000Z","id":"A1","lang":"zh","text":"新订单 \"42\" 号\n","state":"acked"}],"wifi":null}"#)
    }

    @Test func wifiInJSONHumanAndSystemdLine() {
        var s = snapshot
        s.wifi = WifiStatus(state: "online", ssid: "Café \"1\"", network: "backup", signalDbm: -61, address: "10.1.2.3", frequency: 2412, since: 65)
        #expect(StatusFormat.json(s).hasSuffix(#","wifi":{"state":"online","ssid":"Café \"1\"","network":"backup","signal_dbm":-61,"ip_address":"10.1.2.3","frequency_mhz":2412,"since_s":65}}"#))
        #expect(StatusFormat.human(s).contains("wifi: online \"Café \"1\"\" (backup), signal -61 dBm, 2412 MHz, IP 10.1.2.3 for 1m 5s\n"))
        #expect(StatusFormat.systemdLine(s).hasPrefix("wifi online; link down;"))
        s.wifi = WifiStatus(state: "wrong_password", ssid: nil)
        #expect(StatusFormat.json(s).hasSuffix(#","wifi":{"state":"wrong_password","ssid":null,"network":null,"signal_dbm":null,"ip_address":null,"frequency_mhz":null,"since_s":null}}"#))
        #expect(StatusFormat.human(s).contains("wifi: wrong_password, IP none\n"))
    }

    @Test func numbersAreRoundedLiterals() {
        #expect(StatusFormat.fixed(3.14159, 2) == "3.14")
        #expect(StatusFormat.fixed(0.05, 2) == "0.05")
        #expect(StatusFormat.fixed(-2.26, 1) == "-2.3")
        #expect(StatusFormat.fixed(42.4, 0) == "42")
        #expect(Format.fixed(-0.04, 1) == "0.0")
        #expect(Format.fixed(1e300, 2) == "1e+300")
        #expect(Format.fixed(.infinity, 1) == "inf")
        #expect(Format.fixed(.nan, 1) == "nan")
        var odd = snapshot
        odd.uptime = .nan
        #expect(StatusFormat.json(odd).contains("\"uptime_s\":null"))
    }

    @Test func jsonParsesBack() throws {
        let v = try JSON.parse(Array(StatusFormat.json(snapshot).utf8)).get()
        guard case .object(let o) = v, case .string(let text)? = o["last_alerts"].flatMap({ a -> JSONValue? in
            if case .array(let xs) = a, case .object(let first)? = xs.first { return first["text"] }
            return nil
        }) else {
            Issue.record("not an object with last_alerts: \(v)")
            return
        }
        #expect(text == "新订单 \"42\" 号\n")
        #expect(o["healthy"] == .bool(false))
    }

    @Test func humanText() {
        #expect(StatusFormat.human(snapshot) == """
            crier 0.1.0 on kiosk-1, up 1d 1h, NOT healthy
            link: down tcp://10.0.0.5:7700 for 42s (connection refused)
            volume: 6/10 (muted)
            queue: 1 waiting
            components:
              audio  running     restarts 0  hw:1 open
              link   restarting  restarts 2  last failure: error: connection refused
            last error: 2026-11-18T11:06:39.000Z link: connect failed
            last alerts:
              2026-11-18T11:06:30.000Z  acked     A1  zh  新订单 "42" 号\\n

            """)
    }

    @Test func audioThreadPolicyInJSONAndText() {
        var s = snapshot
        #expect(!StatusFormat.json(s).contains("audio_thread"))
        #expect(!StatusFormat.human(s).contains("audio thread"))
        s.audioThread = ThreadPolicy(kind: .fifo, priority: 30)
        #expect(StatusFormat.json(s).hasSuffix(#""wifi":null,"audio_thread":{"policy":"SCHED_FIFO","priority":30,"detail":null}}"#))
        #expect(StatusFormat.human(s).contains("queue: 1 waiting\naudio thread: SCHED_FIFO 30\ncomponents:\n"))
        s.audioThread = ThreadPolicy(kind: .other, detail: "real-time refused: EPERM Operation not permitted")
        #expect(StatusFormat.json(s).hasSuffix(#""audio_thread":{"policy":"SCHED_OTHER","priority":0,"detail":"real-time refused: EPERM Operation not permitted"}}"#))
        #expect(StatusFormat.human(s).contains("audio thread: SCHED_OTHER (real-time refused: EPERM Operation not permitted)\n"))
    }

    @Test func systemdStatusLine() {
        #expect(StatusFormat.systemdLine(snapshot) == "link down; volume 6/10 muted; 1 queued; down: link")
        var ok = snapshot
        ok.components[1].state = .running
        ok.link.state = "up"
        ok.muted = false
        ok.queueLength = 0
        #expect(StatusFormat.systemdLine(ok) == "link up; volume 6/10; 0 queued")
    }

    @Test func durations() {
        #expect([0, 42, 312, 7380, 90061, 864000].map { StatusFormat.duration(Double($0)) }
                == ["0s", "42s", "5m 12s", "2h 3m", "1d 1h", "10d 0h"])
    }

    @Test func lastErrorSinkKeepsTheLatestError() {
        let hub = LogHub(clock: { WallTime(unixMillis: 5) })
        let sink = LastErrorSink()
        hub.add(sink)
        let log = hub.logger("audio")
        #expect(sink.lastError == nil)
        log.error("device vanished")
        log.warning("retrying")
        #expect(sink.lastError?.message == "device vanished")
    }
}
