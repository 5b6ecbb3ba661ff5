import CrierCore
import CrierMosquitto
import Glibc
import Testing

/// libmosquitto's return codes (MOSQ_ERR_*, stable across 2.0.x) and the broker's DISCONNECT
/// reason codes, as the log names them (issue 31): only a broker that does not answer on TCP
/// is "cannot reach MQTT broker".
@Suite("libmosquitto codes to log lines")
struct MosquittoProblemTests {
    func p(_ code: Int32, errno e: Int32 = 0, connecting: Bool = true) -> MQTTProblem {
        MosquittoClient.problem(code: code, errno: e, host: "broker.lan", clientID: "box1", connecting: connecting)
    }

    @Test("each code its own problem")
    func codes() {
        #expect(p(14, errno: ECONNREFUSED) == .unreachable("Connection refused"), "MOSQ_ERR_ERRNO")
        #expect(p(14, errno: ECONNRESET, connecting: false) == .lost("Connection reset by peer"))
        #expect(p(15) == .nameResolution(host: "broker.lan"), "MOSQ_ERR_EAI")
        #expect(p(1) == .outOfMemory, "MOSQ_ERR_NOMEM: an incoming packet allocated whole")
        #expect(p(1, connecting: false) == .outOfMemory)
        guard case .tls = p(8) else { Issue.record("MOSQ_ERR_TLS"); return }
        guard case .protocolError = p(2) else { Issue.record("MOSQ_ERR_PROTOCOL"); return }
        guard case .protocolError = p(21) else { Issue.record("MOSQ_ERR_MALFORMED_PACKET"); return }
        guard case .packetTooLarge = p(25) else { Issue.record("MOSQ_ERR_OVERSIZE_PACKET"); return }
        #expect(p(0x8E, connecting: false) == .sessionTakenOver(clientID: "box1"), "DISCONNECT reason 0x8E")
        #expect(p(0x8B, connecting: false) == .brokerDisconnect(code: 0x8B, text: "Server shutting down"))
        guard case .packetTooLarge = p(0x95, connecting: false) else { Issue.record("DISCONNECT 0x95"); return }
        for code: Int32 in [1, 2, 8, 15, 21, 25, 0x8E, 0x95] {
            #expect(p(code).headline(connecting: true) != "cannot reach MQTT broker", "code \(code)")
        }
    }
}
