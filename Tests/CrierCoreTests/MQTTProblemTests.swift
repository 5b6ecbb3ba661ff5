import Testing
@testable import CrierCore

@Suite("MQTT problems: each cause its own log line; a client id taken by another client is recognised")
struct MQTTProblemTests {
    @Test("the broker's DISCONNECT reason codes: 0x8E is another client with this id, 0x95 a packet too large")
    func disconnectCodes() {
        #expect(MQTTProblem.disconnect(code: 0x8E, text: "Session taken over", clientID: "box1") == .sessionTakenOver(clientID: "box1"))
        let taken = MQTTProblem.sessionTakenOver(clientID: "box1")
        #expect(taken.headline(connecting: false).contains("another client connected with this box's client id \"box1\""))
        #expect(taken.hint?.contains("mosquitto_sub -i box1") == true)
        #expect(taken.isError)
        guard case .packetTooLarge = MQTTProblem.disconnect(code: 0x95, text: "Packet too large", clientID: "b") else {
            Issue.record("0x95 is a packet too large"); return
        }
        let other = MQTTProblem.disconnect(code: 0x8B, text: "Server shutting down", clientID: "b")
        #expect(other == .brokerDisconnect(code: 0x8B, text: "Server shutting down"))
        #expect(other.headline(connecting: false) == "connection lost")
        #expect(other.detail == "the broker sent DISCONNECT: Server shutting down (code 139)")
    }

    @Test("only an unreachable broker is 'cannot reach MQTT broker'; memory, DNS, TLS and protocol say what they are")
    func headlines() {
        #expect(MQTTProblem.unreachable("Connection refused").headline(connecting: true) == "cannot reach MQTT broker")
        let all: [MQTTProblem] = [.nameResolution(host: "broker.lan"), .tls("x"), .protocolError("x"), .outOfMemory,
                                  .packetTooLarge("x"), .sessionTakenOver(clientID: "b")]
        for p in all {
            #expect(!p.headline(connecting: true).contains("cannot reach"), "\(p)")
            #expect(p.hint != nil, "\(p)")
        }
        #expect(MQTTProblem.outOfMemory.headline(connecting: true).contains("out of memory reading a message"))
        #expect(MQTTProblem.outOfMemory.hint?.contains("max_packet_size \(MQTTLimits.maxPacketBytes)") == true)
        #expect(MQTTLimits.maxPacketBytes >= ProtocolCodec.maxLineBytes + 1024, "room for the largest order and its topic")
    }

    @Test("MQTT 3.1.1: losses within seconds of connecting, twice in a row, look like a second client with this id")
    func clash() {
        var c = ClientIDClash(window: 10, threshold: 2)
        c.connected(now: 0)
        do { let r = c.lost(now: 60); #expect(!r, "a long connection lost: nothing to say") }
        c.connected(now: 61)
        do { let r = c.lost(now: 62); #expect(!r) }
        c.connected(now: 63)
        do { let r = c.lost(now: 64); #expect(r, "the second quick loss in a row") }
        for i in 0..<9 {
            c.connected(now: 70 + Double(i) * 2)
            do { let r = c.lost(now: 71 + Double(i) * 2); #expect(!r, "not every time") }
        }
        c.connected(now: 100)
        do { let r = c.lost(now: 101); #expect(r, "then every 10th") }
        do { let r = c.lost(now: 102); #expect(!r, "a failed connect (never connected) counts for nothing") }
        c.connected(now: 200)
        do { let r = c.lost(now: 300); #expect(!r) }
        #expect(c.quickLosses == 0, "a long connection ends the streak")
    }
}
