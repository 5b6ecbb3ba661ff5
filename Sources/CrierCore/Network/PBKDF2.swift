/// WPA's passphrase-to-PSK function (IEEE 802.11-2020 J.4: PBKDF2-HMAC-SHA1, 4096 rounds,
/// the SSID as salt, 32 bytes), for passphrases that wpa_supplicant's file format cannot
/// carry quoted (`WpaSupplicantConf`). Pure Swift: CrierCore imports no C module.
public enum WpaKeyDerivation {
    public static func psk(passphrase: String, ssid: [UInt8]) -> [UInt8] {
        pbkdf2SHA1(password: Array(passphrase.utf8), salt: ssid, iterations: 4096, length: 32)
    }

    public static func pbkdf2SHA1(password: [UInt8], salt: [UInt8], iterations: Int, length: Int) -> [UInt8] {
        let hmac = HMACSHA1(key: password)
        var out: [UInt8] = []
        var block: UInt32 = 1
        while out.count < length {
            var u = hmac.mac(salt + [UInt8(block >> 24), UInt8(block >> 16 & 0xFF), UInt8(block >> 8 & 0xFF), UInt8(block & 0xFF)])
            var t = u
            if iterations > 1 {
                for _ in 2...iterations {
                    u = hmac.mac20(u)
                    for i in 0..<20 { t[i] ^= u[i] }
                }
            }
            out += t
            block += 1
        }
        return Array(out.prefix(length))
    }
}

/// HMAC-SHA1 (RFC 2104) with its key pads hashed once.
struct HMACSHA1 {
    let inner: SHA1.State
    let outer: SHA1.State

    init(key: [UInt8]) {
        var k = key.count > 64 ? SHA1.hash(key) : key
        k += [UInt8](repeating: 0, count: 64 - k.count)
        var i = SHA1.initial
        SHA1.compress(&i, k.map { $0 ^ 0x36 }, 0)
        var o = SHA1.initial
        SHA1.compress(&o, k.map { $0 ^ 0x5C }, 0)
        inner = i
        outer = o
    }

    func mac(_ message: [UInt8]) -> [UInt8] {
        var i = SHA1(state: inner, length: 64)
        i.update(message)
        var o = SHA1(state: outer, length: 64)
        o.update(i.finish())
        return o.finish()
    }

    /// `mac` of a 20-byte message (PBKDF2's inner loop): two compressions, one block each.
    func mac20(_ m: [UInt8]) -> [UInt8] {
        // one padded block: 20 bytes, 0x80, zeros, the bit length of 64 + 20 bytes (672)
        var block = [UInt8](repeating: 0, count: 64)
        for j in 0..<20 { block[j] = m[j] }
        block[20] = 0x80
        block[62] = 0x02
        block[63] = 0xA0
        var i = inner
        SHA1.compress(&i, block, 0)
        let d = SHA1.bytes(i)
        for j in 0..<20 { block[j] = d[j] }
        var o = outer
        SHA1.compress(&o, block, 0)
        return SHA1.bytes(o)
    }
}

/// SHA-1 (FIPS 180-4). Only for PBKDF2 above, where WPA prescribes it.
struct SHA1 {
    typealias State = (UInt32, UInt32, UInt32, UInt32, UInt32)
    static let initial: State = (0x67452301, 0xEFCDAB89, 0x98BADCFE, 0x10325476, 0xC3D2E1F0)
    var h: State = SHA1.initial
    var pending: [UInt8] = []
    var length: UInt64 = 0

    init() {}
    init(state: State, length: UInt64) {
        h = state
        self.length = length
    }

    static func hash(_ data: [UInt8]) -> [UInt8] {
        var s = SHA1()
        s.update(data)
        return s.finish()
    }

    mutating func update(_ data: [UInt8]) {
        length &+= UInt64(data.count)
        pending += data
        var offset = 0
        while pending.count - offset >= 64 {
            Self.compress(&h, pending, offset)
            offset += 64
        }
        if offset > 0 { pending.removeFirst(offset) }
    }

    mutating func finish() -> [UInt8] {
        let bits = length &* 8
        var tail: [UInt8] = [0x80]
        while (pending.count + tail.count) % 64 != 56 { tail.append(0) }
        for i in (0..<8).reversed() { tail.append(UInt8(truncatingIfNeeded: bits >> (UInt64(i) * 8))) }
        update(tail)
        return Self.bytes(h)
    }

    static func bytes(_ h: State) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(20)
        for v in [h.0, h.1, h.2, h.3, h.4] {
            out += [UInt8(v >> 24), UInt8(v >> 16 & 0xFF), UInt8(v >> 8 & 0xFF), UInt8(v & 0xFF)]
        }
        return out
    }

    static func compress(_ h: inout State, _ b: [UInt8], _ o: Int) {
        withUnsafeTemporaryAllocation(of: UInt32.self, capacity: 80) { w in
            b.withUnsafeBufferPointer { p in
                for i in 0..<16 {
                    w[i] = UInt32(p[o + 4 * i]) << 24 | UInt32(p[o + 4 * i + 1]) << 16 | UInt32(p[o + 4 * i + 2]) << 8 | UInt32(p[o + 4 * i + 3])
                }
            }
            for i in 16..<80 {
                let x = w[i - 3] ^ w[i - 8] ^ w[i - 14] ^ w[i - 16]
                w[i] = x << 1 | x >> 31
            }
            var (a, bb, c, d, e) = h
            for i in 0..<80 {
                let f: UInt32, k: UInt32
                if i < 20 {
                    f = (bb & c) | (~bb & d); k = 0x5A827999
                } else if i < 40 {
                    f = bb ^ c ^ d; k = 0x6ED9EBA1
                } else if i < 60 {
                    f = (bb & c) | (bb & d) | (c & d); k = 0x8F1BBCDC
                } else {
                    f = bb ^ c ^ d; k = 0xCA62C1D6
                }
                let t = (a << 5 | a >> 27) &+ f &+ e &+ k &+ w[i]
                e = d
                d = c
                c = bb << 30 | bb >> 2
                bb = a
                a = t
            }
            h = (h.0 &+ a, h.1 &+ bb, h.2 &+ c, h.3 &+ d, h.4 &+ e)
        }
    }
}
