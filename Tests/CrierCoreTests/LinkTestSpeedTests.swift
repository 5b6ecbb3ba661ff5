import Testing
@testable import CrierCore

/// The test-only reconnect pacing of scripts/soak.sh (`CRIER_TEST_LINK_SPEED`): what is
/// accepted, what is refused (any server not on loopback), and that it divides the backoff's
/// times and changes nothing else about it.
@Suite struct LinkTestSpeedTests {
    static let local = ServerAddress(.tcp, host: "127.0.0.1", port: 7700)

    @Test func unsetIsRealPaceAndSilent() {
        for v in [nil, "", "  "] as [String?] {
            let s = LinkTestSpeed(value: v, server: Self.local)
            #expect(s.factor == 1 && s.message == nil && !s.refused)
            #expect(s.backoff() == ReconnectBackoff())
        }
    }

    @Test(arguments: ["127.0.0.1", "127.1.2.3", "localhost", "LOCALHOST", "::1"])
    func acceptedOnLoopbackAndLoggedLoudly(host: String) {
        let s = LinkTestSpeed(value: " 10 ", server: ServerAddress(.mqtt, host: host, port: 1883))
        #expect(s.factor == 10 && !s.refused)
        #expect(s.message?.hasPrefix("TEST ONLY: CRIER_TEST_LINK_SPEED=10: the reconnect backoff runs 10.0x faster") == true)
        #expect(s.message?.contains("reset after 1.00 s up") == true)
    }

    @Test(arguments: ["10.0.0.5", "orders.example.com", "192.168.1.127", "127.0.0.1.example.com", "127.0.0", "fe80::1"])
    func refusedForAServerNotOnLoopback(host: String) {
        let s = LinkTestSpeed(value: "10", server: ServerAddress(.tcp, host: host))
        #expect(s.factor == 1 && s.refused, "\(host)")
        #expect(s.message?.contains("refused for a server that is not on loopback ('\(host)')") == true)
        #expect(s.backoff() == ReconnectBackoff())
    }

    @Test func refusedWithoutAServer() {
        let s = LinkTestSpeed(value: "10", server: nil)
        #expect(s.factor == 1 && s.refused && s.message?.contains("none configured") == true)
    }

    @Test(arguments: ["0", "0.5", "-4", "101", "nan", "inf", "fast", "10x"])
    func refusedOutOfRange(value: String) {
        let s = LinkTestSpeed(value: value, server: Self.local)
        #expect(s.factor == 1 && s.refused, "\(value)")
        #expect(s.message?.contains("not a speed factor from 1 to 100") == true)
    }

    /// The same backoff, its clock divided: the same draws give delays a tenth as long, the
    /// ceiling doubles per failure up to a tenth of the cap, and a connection resets it after a
    /// tenth of the time up (a shorter one keeps backing off, as at real pace).
    @Test func dividesTheBackoffsTimesOnly() {
        let s = LinkTestSpeed(value: "10", server: Self.local)
        var fast = s.backoff()
        var real = ReconnectBackoff()
        #expect(fast.base == 0.05 && fast.cap == 3 && fast.healthyAfter == 1)
        var r1 = SplitMix(state: 7), r2 = SplitMix(state: 7)
        for _ in 0..<12 {
            let f = fast.nextDelay(using: &r1), d = real.nextDelay(using: &r2)
            #expect(abs(f * 10 - d) < 1e-9)
        }
        #expect(fast.currentCeiling == 3 && real.currentCeiling == 30)
        fast.connected(now: 100)
        fast.disconnected(now: 100.9)
        #expect(fast.attempt == 12)
        fast.connected(now: 200)
        fast.disconnected(now: 201)
        #expect(fast.attempt == 0)
    }
}
