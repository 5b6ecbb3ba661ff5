import COpenSSL
import CrierCore

/// libcrypto's primitives, for the pure rules in CrierCore (`OrderSigning`, `SignatureVerifier`).
public enum Crypto {
    /// HMAC-SHA256 through libcrypto.
    public static let hmacSHA256: MACFunction = { key, message in
        var out = [UInt8](repeating: 0, count: Int(EVP_MAX_MD_SIZE))
        var len: UInt32 = 0
        let ok = key.withUnsafeBytes { k in
            message.withUnsafeBytes { m in
                HMAC(EVP_sha256(), k.baseAddress, Int32(k.count), m.bindMemory(to: UInt8.self).baseAddress, m.count, &out, &len)
            }
        }
        // HMAC only fails when libcrypto cannot allocate; an empty MAC never matches a signature.
        guard ok != nil else { return [] }
        return Array(out[0..<Int(len)])
    }

    public static func sha256(_ data: [UInt8]) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: Int(EVP_MAX_MD_SIZE))
        var len: UInt32 = 0
        let ok = data.withUnsafeBytes { d in EVP_Digest(d.baseAddress, d.count, &out, &len, EVP_sha256(), nil) }
        guard ok == 1 else { return [] }
        return Array(out[0..<Int(len)])
    }

    /// Unix seconds from the wall clock (what `ts` is compared with).
    public static func unixNow() -> Int64 { wallMillis() / 1000 }
}
