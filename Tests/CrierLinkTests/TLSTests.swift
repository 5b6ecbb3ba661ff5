import CrierCore
import Foundation
import Glibc
import Testing
@testable import CrierLink
@testable import CrierSim

/// A throwaway PKI made with the `openssl` CLI (OpenSSL 3.0: `openssl ca -startdate/-enddate`
/// backdates the expired certificate; `req -x509 -days` cannot go negative):
/// ca (TestCA) signs valid (localhost + 127.0.0.1), wronghost (orders.example) and expired
/// (localhost, 2020-2025); other-ca (OtherCA) signs otherca (localhost).
enum TestPKI {
    static let dir: String = {
        let d = NSTemporaryDirectory() + "crier-tls-\(getpid())"
        let script = #"""
        set -e
        mkdir -p "$1" && cd "$1"
        k() { openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout $1.key -out $1.pem -subj /CN=$2 -days 3650 2>/dev/null; }
        k ca TestCA
        k other-ca OtherCA
        mkdir -p db; : > db/index; echo 01 > db/serial
        printf '[ca]\ndefault_ca = d\n[d]\ndir = .\ndatabase = db/index\nserial = db/serial\nnew_certs_dir = db\ndefault_md = sha256\npolicy = p\nunique_subject = no\ncopy_extensions = copy\n[p]\ncommonName = supplied\n' > ca.cnf
        leaf() {
          openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout $1.key -out $1.csr -subj /CN=$2 -addext "subjectAltName=$3" 2>/dev/null
          openssl ca -config ca.cnf -batch -notext -cert $4.pem -keyfile $4.key -in $1.csr -out $1.pem -startdate $5 -enddate $6 2>/dev/null
        }
        leaf valid localhost DNS:localhost,IP:127.0.0.1 ca 20240101000000Z 20991231000000Z
        leaf wronghost orders.example DNS:orders.example ca 20240101000000Z 20991231000000Z
        leaf expired localhost DNS:localhost ca 20200101000000Z 20250101000000Z
        leaf otherca localhost DNS:localhost other-ca 20240101000000Z 20991231000000Z
        openssl x509 -in valid.pem -pubkey -noout | openssl pkey -pubin -outform der | openssl dgst -sha256 -binary | openssl base64 > valid.pin
        """#
        let rc = run("/bin/bash", ["-c", script, "pki", d])
        precondition(rc == 0, "making test certificates with the openssl CLI failed (apt install openssl)")
        return d
    }()

    static func path(_ name: String) -> String { dir + "/" + name }

    /// `sha256/…` of valid.pem's key, as printed by the openssl pipeline in docs/security.md.
    static var validPin: String {
        "sha256/" + ((try? String(contentsOfFile: path("valid.pin"), encoding: .utf8)) ?? "").trimmingCharacters(in: .whitespacesAndNewlines)
    }

    @discardableResult
    static func run(_ exe: String, _ args: [String]) -> Int32 {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: exe)
        p.arguments = args
        do { try p.run() } catch { return -1 }
        p.waitUntilExit()
        return p.terminationStatus
    }
}

private func tlsServer(_ cert: String, lines: Lines, key: String? = nil) throws -> (OrderServer, Int) {
    var sc = simConfig()
    sc.tlsCert = TestPKI.path(cert + ".pem")
    sc.tlsKey = TestPKI.path((key ?? cert) + ".key")
    let s = OrderServer(config: sc, output: lines.add)
    let port = try s.start()
    return (s, port)
}

private func tlsConfig(host: String = "localhost", port: Int, ca: String? = "ca", pins: [[UInt8]] = []) -> LinkConfig {
    var c = CrierConfig().link
    c.server = ServerAddress(.tls, host: host, port: port)
    c.ca = ca.map { TestPKI.path($0 + ".pem") }
    c.pins = pins
    return c
}

@Suite("TLS link against a real local TLS server", .serialized)
struct TLSLinkTests {
    @Test("verified: order over TLS, ack back; the pin printed by openssl matches; token stays out of the log")
    func verified() throws {
        let lines = Lines()
        let (server, port) = try tlsServer("valid", lines: lines)
        defer { server.stop() }
        #expect(lines.all.first?.contains("tls=yes") == true)
        let (log, logs) = makeLog()
        let events = EventSink()
        var config = tlsConfig(port: port, pins: try SecretValue.pins(TestPKI.validPin))
        config.token = "tls-t0ken"
        let link = OrderLink(config: config, deviceID: "tls-box", log: log, options: fastOptions(), onEvent: events.add)
        link.start()
        defer { link.stop() }
        #expect(eventually { events.connects == 1 }, "\(logs.lines)")
        server.submit("42")
        #expect(eventually { events.orders.map(\.id) == ["T-1"] })
        link.send(.spoken("T-1"))
        #expect(eventually { lines.has("ack id=T-1 status=spoken device=tls-box") })
        #expect(logs.lines.contains { $0.contains("INFO link: connected server=tls://localhost:\(port)") })
        #expect(!logs.lines.joined().contains("tls-t0ken"))
    }

    @Test("by IP address: the certificate's IP SAN is checked (no SNI)")
    func byIP() throws {
        let lines = Lines()
        let (server, port) = try tlsServer("valid", lines: lines)
        defer { server.stop() }
        let (log, logs) = makeLog()
        let events = EventSink()
        let link = OrderLink(config: tlsConfig(host: "127.0.0.1", port: port), deviceID: "b", log: log, options: fastOptions(), onEvent: events.add)
        link.start()
        defer { link.stop() }
        #expect(eventually { events.connects == 1 }, "\(logs.lines)")
    }

    /// Starts a link that must fail, returns the first TLS error line, and checks it retries
    /// (TLS again, never plain).
    private func refused(cert: String, config: (Int) -> LinkConfig) throws -> String {
        let lines = Lines()
        let (server, port) = try tlsServer(cert, lines: lines)
        defer { server.stop() }
        let (log, logs) = makeLog()
        let events = EventSink()
        let link = OrderLink(config: config(port), deviceID: "b", log: log, options: fastOptions(), onEvent: events.add)
        link.start()
        defer { link.stop() }
        #expect(eventually { logs.lines.contains { $0.contains("ERROR link: TLS") } && logs.lines.contains { $0.contains("TLS still failing") } })
        #expect(events.connects == 0)
        #expect(!lines.has("device connected"))
        let first = logs.lines.first { $0.contains("ERROR link: TLS") } ?? ""
        print("TLS refusal logged: \(first)")
        return first
    }

    @Test("wrong CA: refused, naming the issuer")
    func wrongCA() throws {
        let line = try refused(cert: "otherca") { tlsConfig(port: $0) }
        #expect(line.contains("ERROR link: TLS verification failed for localhost: unable to get local issuer certificate (issuer /CN=OtherCA)"), "\(line)")
        #expect(line.contains("retry_in="))
        #expect(line.contains("hint=\"check the server certificate, server.ca and server.pin in crier.conf; the box never falls back to plain TCP\""))
    }

    @Test("wrong host: refused, naming the certificate's subject")
    func wrongHost() throws {
        let line = try refused(cert: "wronghost") { tlsConfig(port: $0) }
        #expect(line.contains("TLS verification failed for localhost: hostname mismatch (the certificate is for /CN=orders.example)") || line.contains("Hostname mismatch (the certificate is for /CN=orders.example)"), "\(line)")
    }

    @Test("expired: refused with its notAfter")
    func expired() throws {
        let line = try refused(cert: "expired") { tlsConfig(port: $0) }
        #expect(line.contains("TLS verification failed for localhost: certificate has expired (notAfter 2025-01-01 00:00 UTC)"), "\(line)")
    }

    @Test("system store (no server.ca) does not know the test CA: refused")
    func systemStore() throws {
        let line = try refused(cert: "valid") { tlsConfig(port: $0, ca: nil) }
        #expect(line.contains("TLS verification failed for localhost: unable to get local issuer certificate"), "\(line)")
    }

    @Test("pin mismatch: refused even though the chain verifies")
    func pinMismatch() throws {
        let line = try refused(cert: "valid") { tlsConfig(port: $0, pins: [Array(repeating: 1, count: 32)]) }
        #expect(line.contains("ERROR link: TLS pin mismatch for localhost: the server's key \(TestPKI.validPin)"), "\(line)")
    }

    @Test("unreadable server.ca: refused with the path")
    func missingCA() throws {
        let line = try refused(cert: "valid") { tlsConfig(port: $0, ca: "nope") }
        #expect(line.contains("cannot load server.ca \(TestPKI.path("nope.pem")): no such file or directory"), "\(line)")
    }

    @Test("tls:// to a plain TCP server: only a TLS ClientHello is ever sent, never a plaintext hello")
    func neverPlaintext() {
        let raw = RawServer()
        defer { raw.close() }
        let (log, logs) = makeLog()
        var o = fastOptions()
        o.connectTimeout = 0.3
        let link = OrderLink(config: tlsConfig(port: raw.port), deviceID: "b", log: log, options: o, onEvent: { _ in })
        link.start()
        defer { link.stop() }
        for _ in 0..<2 {
            #expect(raw.accept())
            var buf = [UInt8](repeating: 0, count: 4096)
            var p = [pollfd(fd: raw.fd, events: Int16(POLLIN), revents: 0)]
            _ = poll(&p, 1, 2000)
            let n = recv(raw.fd, &buf, buf.count, 0)
            #expect(n > 5)
            #expect(buf[0] == 0x16 && buf[1] == 0x03, "not a TLS handshake record")  // handshake, TLS
            #expect(!String(decoding: buf.prefix(max(0, n)), as: UTF8.self).contains("hello\""))
            raw.write("{\"type\":\"welcome\"}\n")  // a plaintext answer must not be accepted
        }
        #expect(eventually { logs.lines.contains { $0.contains("TLS handshake with localhost") } }, "\(logs.lines)")
    }

    @Test("server.ca or server.pin with tcp:// is called out as not encrypted")
    func pinWithTCP() {
        let raw = RawServer()
        defer { raw.close() }
        let (log, logs) = makeLog()
        var c = linkConfig(port: raw.port)
        c.ca = "/x.pem"
        let link = OrderLink(config: c, deviceID: "b", log: log, options: fastOptions(), onEvent: { _ in })
        link.start()
        link.stop()
        #expect(logs.lines.contains { $0.contains("ERROR link: server.ca and server.pin only apply to tls:// servers; this link is NOT encrypted or verified") })
    }

    @Test("interop: a Python ssl server speaking protocol v1 (docs/protocol.md §12 over TLS)")
    func pythonServer() throws {
        let script = #"""
        import json, socket, ssl, sys
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(sys.argv[1], sys.argv[2])
        srv = socket.create_server(("127.0.0.1", 0))
        print(srv.getsockname()[1], flush=True)
        conn, _ = srv.accept()
        f = ctx.wrap_socket(conn, server_side=True).makefile("rwb")
        hello = json.loads(f.readline())
        assert hello["type"] == "hello"
        f.write(b'{"type":"welcome"}\n'); f.flush()
        f.write(json.dumps({"type": "order", "id": "py-1", "kind": "new_customer", "number": 42}).encode() + b"\n"); f.flush()
        for line in f:
            msg = json.loads(line)
            if msg["type"] == "ack":
                print("ACK", msg["id"], msg["status"], flush=True)
                break
        """#
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
        p.arguments = ["-c", script, TestPKI.path("valid.pem"), TestPKI.path("valid.key")]
        let out = Pipe()
        p.standardOutput = out
        try p.run()
        defer { if p.isRunning { p.terminate() }; p.waitUntilExit() }
        let reader = out.fileHandleForReading
        var text = ""
        while !text.contains("\n"), let c = try reader.read(upToCount: 1), !c.isEmpty { text += String(decoding: c, as: UTF8.self) }
        let port = Int(text.trimmingCharacters(in: .whitespacesAndNewlines)) ?? 0
        #expect(port > 0)
        let (log, logs) = makeLog()
        let events = EventSink()
        let link = OrderLink(config: tlsConfig(port: port), deviceID: "py", log: log, options: fastOptions(), onEvent: events.add)
        link.start()
        defer { link.stop() }
        #expect(eventually { events.orders.map(\.id) == ["py-1"] }, "\(logs.lines)")
        link.send(.spoken("py-1"))
        let rest = String(decoding: reader.readDataToEndOfFile(), as: UTF8.self)
        #expect(rest.contains("ACK py-1 spoken"))
    }
}
