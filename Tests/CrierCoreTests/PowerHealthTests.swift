import Testing
@testable import CrierCore

@Suite("Power and heat: the firmware's throttled word, the watch, the prompt (issue 35)")
struct PowerHealthTests {
    @Test("the throttled word: sysfs hex, vcgencmd's form, each documented bit; garbage refused")
    func decode() {
        #expect(ThrottledFlags.parse("50005\n")?.raw == 0x50005)
        #expect(ThrottledFlags.parse("throttled=0x50005")?.raw == 0x50005)
        #expect(ThrottledFlags.parse("0")?.raw == 0)
        for bad in ["", "\n", "zz", "0x", "123456789", "-1", "1 2"] { #expect(ThrottledFlags.parse(bad) == nil, "\(bad)") }
        let f = ThrottledFlags(raw: 0x50005)  // under-voltage and throttled now, both occurred
        #expect(f.now == [.underVoltage, .throttled])
        #expect(f.occurred == [.underVoltage, .throttled])
        #expect(ThrottledFlags(raw: 0x80008).now == [.softTemperatureLimit])
        #expect(ThrottledFlags(raw: 0x20000).now.isEmpty)
        #expect(ThrottledFlags(raw: 0x20000).occurred == [.frequencyCapped])
        #expect(ThrottledFlags(raw: 0xF000F).now.count == 4)
        #expect(PowerReading.parseTemperature("48312\n") == 48312)
        #expect(PowerReading.parseTemperature("-5000") == -5000)
        #expect(PowerReading.parseTemperature("hot") == nil)
        #expect(PowerReading.parseTemperature("999999999") == nil)
    }

    @Test("the watch logs what changes: first reading, began, ended, came-and-went between polls, temperature bands with hysteresis")
    func watch() {
        let w = Ref(PowerWatch())
        #expect(w.observe(PowerReading(source: .firmware, flags: ThrottledFlags(raw: 0), milliCelsius: 45000)) == [.first(PowerReading(source: .firmware, flags: ThrottledFlags(raw: 0), milliCelsius: 45000))])
        #expect(w.observe(PowerReading(source: .firmware, flags: ThrottledFlags(raw: 0), milliCelsius: 46000)).isEmpty)
        #expect(w.observe(PowerReading(source: .firmware, flags: ThrottledFlags(raw: 0x10001), milliCelsius: 46000)) == [.began(.underVoltage)])
        #expect(w.observe(PowerReading(source: .firmware, flags: ThrottledFlags(raw: 0x10001), milliCelsius: 46000)).isEmpty)
        #expect(w.observe(PowerReading(source: .firmware, flags: ThrottledFlags(raw: 0x10000), milliCelsius: 46000)) == [.ended(.underVoltage)])
        // Throttling that began and ended between two polls: only its "occurred" bit.
        #expect(w.observe(PowerReading(source: .firmware, flags: ThrottledFlags(raw: 0x40000), milliCelsius: 46000)) == [.occurredBetweenPolls(.throttled)])
        #expect(w.observe(PowerReading(source: .firmware, flags: ThrottledFlags(raw: 0x40000), milliCelsius: 46000)).isEmpty)
        #expect(w.v.status?.seen == ["under_voltage", "throttled"])
        #expect(w.v.status?.now == [])
        // Temperature: 60 up, wobbling on the edge is quiet, down only 2 °C below it.
        #expect(w.observe(PowerReading(source: .firmware, flags: ThrottledFlags(raw: 0), milliCelsius: 60500)) == [.temperature(band: 1, milliCelsius: 60500, rising: true)])
        #expect(w.observe(PowerReading(source: .firmware, flags: ThrottledFlags(raw: 0), milliCelsius: 59500)).isEmpty)
        #expect(w.observe(PowerReading(source: .firmware, flags: ThrottledFlags(raw: 0), milliCelsius: 60100)).isEmpty)
        #expect(w.observe(PowerReading(source: .firmware, flags: ThrottledFlags(raw: 0), milliCelsius: 57900)) == [.temperature(band: 0, milliCelsius: 57900, rising: false)])
        #expect(w.observe(PowerReading(source: .firmware, flags: ThrottledFlags(raw: 0), milliCelsius: 86000)) == [.temperature(band: 4, milliCelsius: 86000, rising: true)])
        #expect(w.v.status?.maxCelsius == 86)
        let (level, message, _) = PowerWatch.line(.temperature(band: 4, milliCelsius: 86000, rising: true))
        #expect(level == .warning)
        #expect(message == "temperature up: at or above 85 °C; the SoC throttles here: give the box air, keep it out of the sun")
        let uv = PowerWatch.line(.began(.underVoltage))
        #expect(uv.0 == .warning)
        #expect(uv.1.hasPrefix("under-voltage now; the power supply sags below 4.63 V: use a 5.1 V supply"))
    }

    @Test("seeded readings: 'seen' is exactly the union of what was read; began and ended alternate per condition")
    func watchInvariants() {
        for seed in 1...30 {
            var rng = SplitMix64(seed: UInt64(seed))
            let w = Ref(PowerWatch())
            var union: Set<PowerCondition> = []
            var state: [PowerCondition: Bool] = [:]
            for _ in 0..<300 {
                let raw = UInt32(truncatingIfNeeded: rng.next()) & 0x000F_000F
                let r = PowerReading(source: .firmware, flags: ThrottledFlags(raw: raw), milliCelsius: Int(rng.next() % 100_000))
                union.formUnion(r.occurred)
                for e in w.observe(r) {
                    switch e {
                    case .began(let c): #expect(state[c] != true); state[c] = true
                    case .ended(let c): #expect(state[c] == true); state[c] = false
                    case .first(let f): for c in f.active { state[c] = true }
                    default: break
                    }
                }
                for c in PowerCondition.allCases { #expect((state[c] ?? false) == r.active.contains(c)) }
            }
            #expect(w.v.status?.seen == union.sorted().map(\.rawValue))
        }
    }

    @Test("status: text, summary for the server, JSON")
    func status() {
        let w = Ref(PowerWatch())
        _ = w.observe(PowerReading(source: .firmware, flags: ThrottledFlags(raw: 0x50005), milliCelsius: 61234))
        let s = w.v.status!
        #expect(s.line == "under-voltage, throttled now; seen since start: under-voltage, throttled; 61.2 °C (max 61.2 °C)")
        #expect(s.summary == "under_voltage,throttled")
        #expect(PowerStatus(source: "none", now: [], seen: [], celsius: nil, maxCelsius: nil).line == "under-voltage unknown (no get_throttled, no rpi_volt hwmon)")
        #expect(PowerStatus(source: "none", now: [], seen: [], celsius: 40, maxCelsius: 41).summary == "unknown")
        #expect(PowerStatus(source: "hwmon", now: [], seen: [], celsius: nil, maxCelsius: nil).line == "ok; under-voltage only (hwmon)")
        var snap = StatusSnapshot(version: "1", deviceID: "d", time: WallTime(unixMillis: 0), uptime: 1, components: [],
                                  link: LinkStatus(state: "off"), volume: 1, volumeMax: 10, muted: false, queueLength: 0)
        snap.power = s
        snap.lastStart = .powerLoss
        #expect(StatusFormat.json(snap).hasSuffix(#""wifi":null,"power":{"source":"firmware","summary":"under_voltage,throttled","now":["under_voltage","throttled"],"seen":["under_voltage","throttled"],"temp_c":61.2,"temp_max_c":61.2},"last_start":"power_loss"}"#))
        #expect(StatusFormat.human(snap).contains("power: under-voltage, throttled now;"))
        #expect(StatusFormat.human(snap).contains("last start: after a power cut or hard reset (the board went down without stopping crier)\n"))
        #expect(StatusFormat.systemdLine(snap) == "link off; volume 1/10; 0 queued; power under_voltage,throttled")
        var hello = JSONObject()
        DeviceHealth(s, lastStart: .crash).add(to: &hello)
        #expect(String(decoding: JSON.write(.object(hello)), as: UTF8.self) == #"{"power":"under_voltage,throttled","temp_c":61,"last_start":"crash"}"#)
    }

    @Test("the hello and the MQTT status carry the health as extra fields; a hello without them decodes as before")
    func wire() {
        var h = Hello(device: "box", token: nil)
        h.health = DeviceHealth(power: "under_voltage", tempC: 71, lastStart: "power_loss")
        let line = String(decoding: ProtocolCodec.line(.hello(h)), as: UTF8.self)
        #expect(line == #"{"type":"hello","protocol":1,"device":"box","power":"under_voltage","temp_c":71,"last_start":"power_loss"}"# + "\n")
        guard case .success(.hello(let back)) = ProtocolCodec.decode(Array(line.utf8).dropLast()) else {
            Issue.record("hello does not decode")
            return
        }
        #expect(back == h)
        guard case .success(.hello(let old)) = ProtocolCodec.decode(Array(#"{"type":"hello","protocol":1,"device":"box"}"#.utf8)) else {
            Issue.record("old hello does not decode")
            return
        }
        #expect(old.health == DeviceHealth())
        let status = String(decoding: MQTTTopics.statusPayload(online: true, device: "box", version: "1", volume: 5, protocolVersion: "5", health: h.health), as: UTF8.self)
        #expect(status == #"{"type":"status","state":"online","device":"box","version":"1","volume":5,"mqtt":"5","power":"under_voltage","temp_c":71,"last_start":"power_loss"}"#)
    }

    @Test("the under-voltage prompt: once, only after 5 s of quiet, never while busy, never twice in a boot, off when switched off")
    func prompt() {
        let p = Ref(UnderVoltagePrompt())
        let fine = PowerReading(source: .firmware, flags: ThrottledFlags(raw: 0))
        let weak = PowerReading(source: .firmware, flags: ThrottledFlags(raw: 0x10000))  // occurred between polls counts
        #expect(!p.observe(fine))
        #expect(p.due(now: 100, lastSaid: 0, busy: false) == nil)
        #expect(p.observe(weak))
        #expect(!p.observe(weak))  // already pending
        #expect(p.v.nextCheck(lastSaid: 98, now: 100) == 103)
        #expect(p.v.nextCheck(lastSaid: 98, now: 103.5) == nil)  // past: no timer that would fire again and again
        #expect(p.due(now: 100, lastSaid: 98, busy: false) == nil)  // said something 2 s ago
        #expect(p.due(now: 104, lastSaid: 98, busy: true) == nil)   // an order waits
        #expect(p.due(now: 104, lastSaid: 98, busy: false) == .powerWeak)
        #expect(p.v.said)
        #expect(p.due(now: 200, lastSaid: 98, busy: false) == nil)
        #expect(!p.observe(weak))
        #expect(p.v.nextCheck(lastSaid: 98, now: 100) == nil)
        let again = Ref(UnderVoltagePrompt(saidThisBoot: true))
        #expect(!again.observe(weak))
        let off = Ref(UnderVoltagePrompt(enabled: false))
        #expect(!off.observe(weak))
        #expect(off.due(now: 1000, lastSaid: 0, busy: false) == nil)
        #expect(Templates()[.zh, .powerWeak] == "电源电压不足，请更换电源")
        #expect(Templates()[.en, .powerWeak] == "The power supply is too weak")
    }

    @Test("how the last run ended: no record, stopped, running in this boot, running in another boot, with the watchdog's flag")
    func lastStart() {
        let running = RunRecord(state: .running, bootID: "b1")
        #expect(LastStart.classify(previous: nil, bootID: "b1", watchdogBootstatus: nil) == .first)
        #expect(LastStart.classify(previous: RunRecord(state: .stopped, bootID: "b0"), bootID: "b1", watchdogBootstatus: 0x20) == .clean)
        #expect(LastStart.classify(previous: running, bootID: "b1", watchdogBootstatus: 0x20) == .crash)
        #expect(LastStart.classify(previous: running, bootID: "b2", watchdogBootstatus: 0x20) == .watchdog)
        #expect(LastStart.classify(previous: running, bootID: "b2", watchdogBootstatus: 0) == .powerLoss)
        #expect(LastStart.classify(previous: running, bootID: "b2", watchdogBootstatus: nil) == .powerLoss)
    }

    @Test("the run record: round trip, torn or garbage files are no record, a reload keeps its start, a new boot forgets the prompt")
    func runRecord() {
        let r = RunRecord(state: .running, bootID: "0f1e", lastStart: .powerLoss, powerPromptSaid: true, underVoltageSeen: true)
        #expect(r.encoded() == "state=running\nboot=0f1e\nstarted=power_loss\npower_prompt=said\nunder_voltage=seen\n")
        #expect(RunRecord.decode(r.encoded()) == r)
        for bad in ["", "state=run", "state=running\n", "boot=x\n", "\u{0}\u{0}\u{0}", "state=stopped\nboot=" + String(repeating: "x", count: 65)] {
            #expect(RunRecord.decode(bad) == nil, "\(bad)")
        }
        // A reload (same boot, crier re-executed in place): the start it had.
        let reload = RunRecord.starting(previous: r, bootID: "0f1e", watchdogBootstatus: nil, reload: true)
        #expect(reload.lastStart == .powerLoss)
        #expect(reload.record.powerPromptSaid)
        // A crash in the same boot: a crash, and the prompt stays said.
        let crash = RunRecord.starting(previous: r, bootID: "0f1e", watchdogBootstatus: nil, reload: false)
        #expect(crash.lastStart == .crash)
        #expect(crash.record.powerPromptSaid && crash.record.state == .running && crash.record.lastStart == .crash)
        // The next boot: the prompt may be said again, under-voltage not yet seen.
        let next = RunRecord.starting(previous: r, bootID: "1a2b", watchdogBootstatus: nil, reload: false)
        #expect(next.lastStart == .powerLoss)
        #expect(!next.record.powerPromptSaid && !next.record.underVoltageSeen && next.record.bootID == "1a2b")
    }
}

/// Lets #expect call mutating methods (its closure gets values, not variables).
private final class Ref<T> {
    var v: T
    init(_ v: T) { self.v = v }
}

extension Ref where T == PowerWatch {
    func observe(_ r: PowerReading) -> [PowerEvent] { v.observe(r) }
}

extension Ref where T == UnderVoltagePrompt {
    func observe(_ r: PowerReading) -> Bool { v.observe(r) }
    func due(now: Double, lastSaid: Double, busy: Bool) -> Templates.Name? { v.due(now: now, lastSaid: lastSaid, busy: busy) }
}
