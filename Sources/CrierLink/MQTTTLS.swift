import COpenSSL
import CrierCore
import Glibc
import Synchronization

/// The checks an mqtts:// connection makes, with the same rules as tls:// (docs/protocol.md
/// §13): chain verified against `server.ca` or the system store, the host name (or IP) in the
/// certificate, an optional SPKI pin. libmosquitto runs the handshake inside its loop and frees
/// the connection when it fails, so the reason is recorded here, from OpenSSL's verify
/// callback, for the link to log.
package final class MQTTTLSCheck: Sendable {
    let host: String
    let pins: [[UInt8]]
    private let failure = Mutex<String?>(nil)

    package init(host: String, pins: [[UInt8]]) {
        self.host = host
        self.pins = pins
    }

    func record(_ s: String) { failure.withLock { if $0 == nil { $0 = s } } }
    /// The first failure since the last call.
    package func take() -> String? { failure.withLock { f in defer { f = nil }; return f } }
}

/// The SSL_CTX handed to libmosquitto (MOSQ_OPT_SSL_CTX): TLS ≥ 1.2, verification with the
/// host name set on the context's parameters, pins checked by the callback, and the box's own
/// certificate when `mqtt.cert` is set. `check` must outlive the context (the link keeps both).
package func mqttTLSContext(config: LinkConfig, check: MQTTTLSCheck) -> Result<TLSContext, TLSFailure> {
    let c: TLSContext
    switch TLSContext.client(caFile: config.ca) {
    case .success(let ctx): c = ctx
    case .failure(let e): return .failure(e)
    }
    let ctx = c.ctx
    let param = SSL_CTX_get0_param(ctx)
    if TLSTransport.isIPAddress(check.host) {
        _ = X509_VERIFY_PARAM_set1_ip_asc(param, check.host)
    } else {
        _ = X509_VERIFY_PARAM_set1_host(param, check.host, 0)
    }
    _ = SSL_CTX_set_ex_data(ctx, 0, Unmanaged.passUnretained(check).toOpaque())
    SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, mqttVerify)
    if let cert = config.mqtt.clientCert {
        guard let key = config.mqtt.clientKey else {
            return .failure(TLSFailure(verification: true, message: "TLS setup failed: mqtt.cert is set but mqtt.cert_key is not"))
        }
        guard SSL_CTX_use_certificate_chain_file(ctx, cert) == 1 else {
            return .failure(TLSFailure(verification: true, message: "TLS setup failed: cannot load mqtt.cert \(cert): \(fileProblem(cert))"))
        }
        guard SSL_CTX_use_PrivateKey_file(ctx, key, SSL_FILETYPE_PEM) == 1 else {
            return .failure(TLSFailure(verification: true, message: "TLS setup failed: cannot load mqtt.cert_key \(key): \(fileProblem(key))"))
        }
        guard SSL_CTX_check_private_key(ctx) == 1 else {
            ERR_clear_error()
            return .failure(TLSFailure(verification: true, message: "TLS setup failed: mqtt.cert_key \(key) does not belong to mqtt.cert \(cert)"))
        }
    }
    return .success(c)
}

private func mqttVerify(_ ok: Int32, _ store: OpaquePointer?) -> Int32 {
    guard let store,
          let raw = X509_STORE_CTX_get_ex_data(store, SSL_get_ex_data_X509_STORE_CTX_idx()),
          let ctx = SSL_get_SSL_CTX(OpaquePointer(raw)),
          let p = SSL_CTX_get_ex_data(ctx, 0)
    else { return ok }
    let check = Unmanaged<MQTTTLSCheck>.fromOpaque(p).takeUnretainedValue()
    let cert = X509_STORE_CTX_get_current_cert(store)
    if ok == 0 {
        let err = X509_STORE_CTX_get_error(store)
        var why = String(cString: X509_verify_cert_error_string(Int(err)))
        switch err {
        case X509_V_ERR_CERT_HAS_EXPIRED:
            if let cert { why += " (notAfter \(TLSTransport.date(X509_get0_notAfter(cert))))" }
        case X509_V_ERR_CERT_NOT_YET_VALID:
            if let cert { why += " (notBefore \(TLSTransport.date(X509_get0_notBefore(cert)))); check this device's clock" }
        case X509_V_ERR_HOSTNAME_MISMATCH, X509_V_ERR_IP_ADDRESS_MISMATCH:
            if let cert { why += " (the certificate is for \(TLSTransport.names(cert)))" }
        case X509_V_ERR_DEPTH_ZERO_SELF_SIGNED_CERT, X509_V_ERR_SELF_SIGNED_CERT_IN_CHAIN,
             X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT_LOCALLY, X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT:
            if let cert { why += " (issuer \(TLSTransport.name(X509_get_issuer_name(cert))))" }
        default: break
        }
        check.record("TLS verification failed for \(check.host): \(why)")
        return 0
    }
    // Depth 0 comes last, with the whole chain verified: the pin may match any of it.
    guard X509_STORE_CTX_get_error_depth(store) == 0, !check.pins.isEmpty else { return 1 }
    var seen: [String] = []
    if let sk = X509_STORE_CTX_get0_chain(store) {
        let n = OPENSSL_sk_num(sk)
        for i in 0..<max(0, n) {
            guard let c = OPENSSL_sk_value(sk, i).map({ OpaquePointer($0) }) else { continue }
            let h = TLSTransport.spkiSHA256(c)
            if check.pins.contains(where: { OrderSigning.constantTimeEqual($0, h) }) { return 1 }
            seen.append("sha256/" + Base64.encode(h))
        }
    }
    check.record("TLS pin mismatch for \(check.host): the server's key \(seen.first ?? "(none)") (and its chain) is not in server.pin; if the server's key changed on purpose, update server.pin in crier.conf")
    return 0
}
