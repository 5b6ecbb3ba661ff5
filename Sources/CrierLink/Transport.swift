import COpenSSL
import CrierCore
import CrierPosix
import Glibc

/// The byte stream under protocol lines: a plain TCP socket, or TLS (OpenSSL) over one. Both
/// are non-blocking; the owner polls `fd` for `pollEvents` and calls `read`/`flush`. Used on one
/// thread only.
package protocol LinkTransport: AnyObject {
    var fd: Int32 { get }
    /// As much as is available now, up to the buffer's size.
    func read(into buf: inout [UInt8]) -> Sock.ReadResult
    /// Writes what the connection takes now and removes it from `out`. nil on success.
    func flush(_ out: inout [UInt8]) -> String?
    /// What to poll `fd` for.
    func pollEvents(hasOutput: Bool) -> Int16
    /// Decrypted bytes are waiting inside the transport: read again without polling.
    var hasBufferedInput: Bool { get }
    func close()
}

package final class PlainTransport: LinkTransport {
    package let fd: Int32
    private var closed = false
    package init(fd: Int32) { self.fd = fd }
    package func read(into buf: inout [UInt8]) -> Sock.ReadResult { Sock.read(fd, into: &buf) }
    package func flush(_ out: inout [UInt8]) -> String? { Sock.flush(fd, &out) }
    package func pollEvents(hasOutput: Bool) -> Int16 { Int16(POLLIN) | (hasOutput ? Int16(POLLOUT) : 0) }
    package var hasBufferedInput: Bool { false }
    package func close() {
        guard !closed else { return }
        closed = true
        Glibc.close(fd)
    }
    deinit { close() }
}

/// A TLS failure worded for the log, with what to check.
package struct TLSFailure: Error, Sendable, CustomStringConvertible {
    /// The certificate was refused (or the pin did not match): a configuration or attack
    /// problem, not a network one.
    var verification: Bool
    package var message: String
    package var description: String { message }
}

/// Settings shared by every connection of one side (an `SSL_CTX`).
package final class TLSContext: @unchecked Sendable {
    // @unchecked: an SSL_CTX is safe to share once configured (OpenSSL locks it internally);
    // it is never changed after init.
    package let ctx: OpaquePointer

    private init(_ ctx: OpaquePointer) { self.ctx = ctx }
    deinit { SSL_CTX_free(ctx) }

    /// The device side: TLS ≥ 1.2, the peer verified against `caFile` (PEM) or the system store.
    static func client(caFile: String?) -> Result<TLSContext, TLSFailure> {
        ignoreSIGPIPE()
        guard let ctx = SSL_CTX_new(TLS_client_method()) else {
            return .failure(TLSFailure(verification: false, message: "cannot create a TLS context: \(opensslErrors())"))
        }
        let c = TLSContext(ctx)
        c.common()
        SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, nil)
        if let ca = caFile {
            guard SSL_CTX_load_verify_locations(ctx, ca, nil) == 1 else {
                let why = fileProblem(ca)
                return .failure(TLSFailure(verification: true, message: "TLS setup failed: cannot load server.ca \(ca): \(why)"))
            }
        } else if SSL_CTX_set_default_verify_paths(ctx) != 1 {
            return .failure(TLSFailure(verification: true, message: "TLS setup failed: cannot load the system CA store: \(opensslErrors()); set server.ca in crier.conf"))
        }
        return .success(c)
    }

    /// The server side (`crier-sim order-sim --tls-cert F --tls-key F`).
    package static func server(certFile: String, keyFile: String) -> Result<TLSContext, TLSFailure> {
        ignoreSIGPIPE()
        guard let ctx = SSL_CTX_new(TLS_server_method()) else {
            return .failure(TLSFailure(verification: false, message: "cannot create a TLS context: \(opensslErrors())"))
        }
        let c = TLSContext(ctx)
        c.common()
        guard SSL_CTX_use_certificate_chain_file(ctx, certFile) == 1 else {
            return .failure(TLSFailure(verification: false, message: "cannot load certificate \(certFile): \(fileProblem(certFile))"))
        }
        guard SSL_CTX_use_PrivateKey_file(ctx, keyFile, SSL_FILETYPE_PEM) == 1 else {
            return .failure(TLSFailure(verification: false, message: "cannot load private key \(keyFile): \(fileProblem(keyFile))"))
        }
        guard SSL_CTX_check_private_key(ctx) == 1 else {
            return .failure(TLSFailure(verification: false, message: "private key \(keyFile) does not match certificate \(certFile)"))
        }
        return .success(c)
    }

    private func common() {
        // SSL_CTX_set_min_proto_version and SSL_CTX_set_mode are macros over SSL_CTX_ctrl.
        _ = SSL_CTX_ctrl(ctx, SSL_CTRL_SET_MIN_PROTO_VERSION, Int(TLS1_2_VERSION), nil)
        _ = SSL_CTX_ctrl(ctx, SSL_CTRL_MODE, Int(SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER), nil)
    }

    /// OpenSSL writes to sockets with write(2): a peer that closed would kill the process with
    /// SIGPIPE. Every other write in Crier uses MSG_NOSIGNAL; TLS needs the signal ignored.
    private static func ignoreSIGPIPE() {
        signal(SIGPIPE, SIG_IGN)
    }
}

/// Why OpenSSL could not load a PEM file: the OS error when it cannot be read, else OpenSSL's.
func fileProblem(_ path: String) -> String {
    if access(path, R_OK) != 0 {
        let e = errno
        ERR_clear_error()
        return errnoText(e)
    }
    return "not a usable PEM file (\(opensslErrors()))"
}

/// Everything OpenSSL queued on this thread's error stack, oldest first; clears it.
func opensslErrors() -> String {
    var parts: [String] = []
    while true {
        let e = ERR_get_error()
        if e == 0 { break }
        var buf = [CChar](repeating: 0, count: 256)
        ERR_error_string_n(e, &buf, buf.count)
        // "error:0A000086:SSL routines::certificate verify failed": keep the reason text.
        let s = String(decoding: buf.prefix(while: { $0 != 0 }).map { UInt8(bitPattern: $0) }, as: UTF8.self)
        let reason = String(s.split(separator: ":", omittingEmptySubsequences: false).last ?? Substring(s))
        if !parts.contains(reason) { parts.append(reason) }
    }
    return parts.isEmpty ? "unknown TLS error" : parts.joined(separator: "; ")
}

package final class TLSTransport: LinkTransport {
    package let fd: Int32
    private let ssl: OpaquePointer
    private let context: TLSContext
    private(set) var handshakeDone = false
    private var wantWriteForRead = false
    private var closed = false

    private init(fd: Int32, ssl: OpaquePointer, context: TLSContext) {
        self.fd = fd
        self.ssl = ssl
        self.context = context
    }

    deinit {
        close()
        SSL_free(ssl)
    }

    /// The server's end of an accepted socket; the handshake runs inside `read`.
    package static func accepting(fd: Int32, context: TLSContext) -> TLSTransport? {
        guard let ssl = SSL_new(context.ctx) else { return nil }
        SSL_set_fd(ssl, fd)
        SSL_set_accept_state(ssl)
        return TLSTransport(fd: fd, ssl: ssl, context: context)
    }

    /// The device's end: handshake with `host` (SNI and certificate name check), then the
    /// optional pin check. Gives up at `deadline` or when `stopping()` after a wake-up.
    static func connect(fd: Int32, host: String, context: TLSContext, pins: [[UInt8]], deadline: Double,
                        wake: WakePipe, stopping: () -> Bool) -> Result<TLSTransport, TLSFailure> {
        guard let ssl = SSL_new(context.ctx) else {
            Glibc.close(fd)
            return .failure(TLSFailure(verification: false, message: "cannot create a TLS connection: \(opensslErrors())"))
        }
        SSL_set_fd(ssl, fd)
        SSL_set_connect_state(ssl)
        let t = TLSTransport(fd: fd, ssl: ssl, context: context)
        if isIPAddress(host) {
            // No SNI for addresses (RFC 6066); the certificate must name the IP in its SAN.
            _ = X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), host)
        } else {
            // SSL_set_tlsext_host_name is a macro; OpenSSL copies the name.
            _ = host.withCString { SSL_ctrl(ssl, SSL_CTRL_SET_TLSEXT_HOSTNAME, Int(TLSEXT_NAMETYPE_host_name), UnsafeMutableRawPointer(mutating: $0)) }
            _ = SSL_set1_host(ssl, host)
        }
        while true {
            switch t.step() {
            case .done:
                if let bad = t.checkPins(pins, host: host) { return .failure(bad) }
                return .success(t)
            case .failed(let e):
                return .failure(t.describeHandshakeFailure(e, host: host))
            case .want(let events):
                let left = deadline - Monotonic.now()
                if left <= 0 {
                    return .failure(TLSFailure(verification: false, message: "TLS handshake with \(host) did not finish in time (is the server speaking TLS on this port?)"))
                }
                var fds = [pollfd(fd: fd, events: events, revents: 0), pollfd(fd: wake.readFD, events: Int16(POLLIN), revents: 0)]
                _ = poll(&fds, 2, Int32(min(left, 60) * 1000) + 1)
                if fds[1].revents != 0 {
                    wake.drain()
                    if stopping() { return .failure(TLSFailure(verification: false, message: "stopped")) }
                }
            }
        }
    }

    enum Step {
        case done
        case want(Int16)
        case failed(HandshakeError)
    }

    struct HandshakeError {
        var sslError: Int32
        var errno: Int32
        var queue: String
    }

    /// One non-blocking handshake step.
    func step() -> Step {
        if handshakeDone { return .done }
        ERR_clear_error()
        let r = SSL_do_handshake(ssl)
        if r == 1 {
            handshakeDone = true
            return .done
        }
        let e = SSL_get_error(ssl, r)
        switch e {
        case SSL_ERROR_WANT_READ: return .want(Int16(POLLIN))
        case SSL_ERROR_WANT_WRITE: return .want(Int16(POLLOUT))
        default: return .failed(HandshakeError(sslError: e, errno: errno, queue: opensslErrors()))
        }
    }

    func describeHandshakeFailure(_ e: HandshakeError, host: String) -> TLSFailure {
        let vr = SSL_get_verify_result(ssl)
        if vr != X509_V_OK {
            var why = String(cString: X509_verify_cert_error_string(vr))
            let leaf = peerChain().first
            switch Int32(vr) {
            case X509_V_ERR_CERT_HAS_EXPIRED:
                if let c = leaf { why += " (notAfter \(Self.date(X509_get0_notAfter(c))))" }
            case X509_V_ERR_CERT_NOT_YET_VALID:
                if let c = leaf { why += " (notBefore \(Self.date(X509_get0_notBefore(c)))); check this device's clock" }
            case X509_V_ERR_HOSTNAME_MISMATCH, X509_V_ERR_IP_ADDRESS_MISMATCH:
                if let c = leaf { why += " (the certificate is for \(Self.names(c)))" }
            case X509_V_ERR_DEPTH_ZERO_SELF_SIGNED_CERT, X509_V_ERR_SELF_SIGNED_CERT_IN_CHAIN,
                 X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT_LOCALLY, X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT:
                if let c = peerChain().last { why += " (issuer \(Self.name(X509_get_issuer_name(c))))" }
            default: break
            }
            return TLSFailure(verification: true, message: "TLS verification failed for \(host): \(why)")
        }
        switch e.sslError {
        case SSL_ERROR_SYSCALL:
            let detail = e.errno != 0 ? errnoText(e.errno) : "the server closed the connection"
            return TLSFailure(verification: false, message: "TLS handshake with \(host) failed: \(detail) (is the server speaking TLS on this port?)")
        case SSL_ERROR_ZERO_RETURN:
            return TLSFailure(verification: false, message: "TLS handshake with \(host) failed: the server closed the connection")
        default:
            let q = e.queue
            let hint = q.contains("wrong version number") || q.contains("packet length too long") || q.contains("record layer failure")
                ? " (the server does not speak TLS on this port: use tcp:// or fix the port)" : ""
            return TLSFailure(verification: false, message: "TLS handshake with \(host) failed: \(q)\(hint)")
        }
    }

    /// The certificates the server sent, leaf first (available even when verification failed).
    private func peerChain() -> [OpaquePointer] {
        guard let sk = SSL_get_peer_cert_chain(ssl) else { return [] }
        let n = OPENSSL_sk_num(sk)
        return (0..<max(0, n)).compactMap { OPENSSL_sk_value(sk, $0).map { OpaquePointer($0) } }
    }

    /// SHA-256 of each verified certificate's SubjectPublicKeyInfo; one must be pinned.
    func checkPins(_ pins: [[UInt8]], host: String) -> TLSFailure? {
        guard !pins.isEmpty else { return nil }
        var seen: [String] = []
        if let sk = SSL_get0_verified_chain(ssl) {
            let n = OPENSSL_sk_num(sk)
            for i in 0..<max(0, n) {
                guard let cert = OPENSSL_sk_value(sk, i).map({ OpaquePointer($0) }) else { continue }
                let h = Self.spkiSHA256(cert)
                if pins.contains(where: { OrderSigning.constantTimeEqual($0, h) }) { return nil }
                seen.append("sha256/" + Base64.encode(h))
            }
        }
        return TLSFailure(verification: true, message: "TLS pin mismatch for \(host): the server's key \(seen.first ?? "(none)") (and its chain) is not in server.pin; if the server's key changed on purpose, update server.pin in crier.conf")
    }

    static func spkiSHA256(_ cert: OpaquePointer) -> [UInt8] {
        guard let pub = X509_get_X509_PUBKEY(cert) else { return [] }
        let n = i2d_X509_PUBKEY(pub, nil)
        guard n > 0 else { return [] }
        var der = [UInt8](repeating: 0, count: Int(n))
        der.withUnsafeMutableBufferPointer { b in
            var p: UnsafeMutablePointer<UInt8>? = b.baseAddress
            _ = i2d_X509_PUBKEY(pub, &p)
        }
        return Crypto.sha256(der)
    }

    static func date(_ t: UnsafePointer<ASN1_TIME>?) -> String {
        var tm = tm()
        guard let t, ASN1_TIME_to_tm(t, &tm) == 1 else { return "?" }
        func two(_ v: Int32) -> String { v < 10 ? "0\(v)" : "\(v)" }
        return "\(tm.tm_year + 1900)-\(two(tm.tm_mon + 1))-\(two(tm.tm_mday)) \(two(tm.tm_hour)):\(two(tm.tm_min)) UTC"
    }

    static func name(_ n: OpaquePointer?) -> String {
        guard let n else { return "?" }
        var buf = [CChar](repeating: 0, count: 256)
        guard X509_NAME_oneline(n, &buf, Int32(buf.count)) != nil else { return "?" }
        return String(decoding: buf.prefix(while: { $0 != 0 }).map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// The subject's CN; good enough to tell the integrator which certificate the server sent.
    static func names(_ cert: OpaquePointer) -> String { name(X509_get_subject_name(cert)) }

    static func isIPAddress(_ host: String) -> Bool {
        var a4 = in_addr(), a6 = in6_addr()
        return inet_pton(AF_INET, host, &a4) == 1 || inet_pton(AF_INET6, host, &a6) == 1
    }

    // MARK: LinkTransport

    package func read(into buf: inout [UInt8]) -> Sock.ReadResult {
        if !handshakeDone {
            switch step() {
            case .done: break
            case .want: return .wouldBlock
            case .failed(let e):
                let v = SSL_get_verify_result(ssl)
                return .failed("TLS handshake failed: \(v != X509_V_OK ? String(cString: X509_verify_cert_error_string(v)) : e.queue)")
            }
        }
        wantWriteForRead = false
        var total = 0
        let cap = buf.count
        while total < cap {
            ERR_clear_error()
            let n = buf.withUnsafeMutableBytes { SSL_read(ssl, $0.baseAddress! + total, Int32(cap - total)) }
            if n > 0 { total += Int(n); continue }
            let e = SSL_get_error(ssl, n)
            switch e {
            case SSL_ERROR_WANT_READ: return total > 0 ? .data(total) : .wouldBlock
            case SSL_ERROR_WANT_WRITE:
                wantWriteForRead = true
                return total > 0 ? .data(total) : .wouldBlock
            case SSL_ERROR_ZERO_RETURN: return total > 0 ? .data(total) : .eof
            case SSL_ERROR_SYSCALL:
                let en = errno
                if total > 0 { return .data(total) }
                return en == 0 ? .eof : .failed(errnoText(en))
            default:
                if total > 0 { return .data(total) }
                let q = opensslErrors()
                // A peer that closes without close_notify: an EOF, as for plain TCP.
                return q.contains("unexpected eof") ? .eof : .failed("TLS: \(q)")
            }
        }
        return .data(total)
    }

    package func flush(_ out: inout [UInt8]) -> String? {
        guard handshakeDone else { return nil }  // queued until the handshake is done
        while !out.isEmpty {
            ERR_clear_error()
            let n = out.withUnsafeBytes { SSL_write(ssl, $0.baseAddress, Int32(min($0.count, 1 << 20))) }
            if n > 0 {
                out.removeFirst(Int(n))
                continue
            }
            let e = SSL_get_error(ssl, n)
            switch e {
            case SSL_ERROR_WANT_WRITE, SSL_ERROR_WANT_READ: return nil
            case SSL_ERROR_SYSCALL:
                let en = errno
                return en == 0 ? "connection closed" : errnoText(en)
            default: return "TLS: \(opensslErrors())"
            }
        }
        return nil
    }

    package func pollEvents(hasOutput: Bool) -> Int16 {
        if !handshakeDone {
            // SSL_want: what the last step was waiting for.
            return SSL_want(ssl) == SSL_WRITING ? Int16(POLLOUT) : Int16(POLLIN)
        }
        return Int16(POLLIN) | (hasOutput || wantWriteForRead ? Int16(POLLOUT) : 0)
    }

    package var hasBufferedInput: Bool { handshakeDone && SSL_pending(ssl) > 0 }

    package func close() {
        guard !closed else { return }
        closed = true
        if handshakeDone {
            ERR_clear_error()
            _ = SSL_shutdown(ssl)  // best effort close_notify; non-blocking
        }
        ERR_clear_error()
        Glibc.close(fd)
    }
}
