import Testing
@testable import CrierCore

/// `server = ...` is parsed once into `ServerAddress.Transport`; the links and the daemon ask it.
@Suite struct ServerTransportTests {
    @Test func eachSchemeParsesToItsTransportPortAndEncryption() throws {
        let rows: [(String, ServerAddress.Transport, Int, mqtt: Bool, encrypted: Bool)] = [
            ("tcp://h", .tcp, 7700, false, false),
            ("TLS://h", .tls, 7700, false, true),
            ("mqtt://h", .mqtt, 1883, true, false),
            ("mqtts://h", .mqtts, 8883, true, true),
            ("mqtts://[::1]:9000", .mqtts, 9000, true, true),
        ]
        for (text, transport, port, mqtt, encrypted) in rows {
            let a = try ServerAddress(parsing: text)
            #expect(a.transport == transport, "\(text)")
            #expect(a.port == port, "\(text)")
            #expect(a.isMQTT == mqtt && a.isEncrypted == encrypted, "\(text)")
            // What check-config prints reads back as the same address.
            #expect(try ServerAddress(parsing: a.description) == a, "\(text)")
            #expect(a.scheme == transport.rawValue)
        }
        #expect(throws: ConfigValueError.self) { try ServerAddress(parsing: "http://h") }
        #expect(throws: ConfigValueError.self) { try ServerAddress(parsing: "mqtt5://h") }
    }
}
