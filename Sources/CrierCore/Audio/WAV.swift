/// Minimal RIFF/WAVE for 16-bit PCM: what `crier say --output` writes and what tests read back
/// from ALSA's file plugin.
public enum WAV {
    public struct Decoded: Sendable, Equatable {
        public var rate: Int
        public var channels: Int
        public var samples: [Int16]  // interleaved
        public var frames: Int { channels == 0 ? 0 : samples.count / channels }

        /// One channel as floats in −1...1.
        public func channel(_ c: Int) -> [Float] {
            stride(from: c, to: samples.count, by: channels).map { Float(samples[$0]) / 32768 }
        }
    }

    public enum DecodeError: Error, Equatable {
        case notRIFF, noFormat, unsupported(String), noData
    }

    public static func header(rate: Int, channels: Int, dataBytes: Int) -> [UInt8] {
        var h: [UInt8] = []
        func u32(_ v: Int) { for i in 0..<4 { h.append(UInt8((v >> (8 * i)) & 0xff)) } }
        func u16(_ v: Int) { for i in 0..<2 { h.append(UInt8((v >> (8 * i)) & 0xff)) } }
        h += Array("RIFF".utf8); u32(36 + dataBytes); h += Array("WAVE".utf8)
        h += Array("fmt ".utf8); u32(16); u16(1); u16(channels); u32(rate); u32(rate * channels * 2); u16(channels * 2); u16(16)
        h += Array("data".utf8); u32(dataBytes)
        return h
    }

    public static func encode(rate: Int, channels: Int, samples: [Int16]) -> [UInt8] {
        var out = header(rate: rate, channels: channels, dataBytes: samples.count * 2)
        out.reserveCapacity(out.count + samples.count * 2)
        for s in samples {
            let u = UInt16(bitPattern: s)
            out.append(UInt8(u & 0xff)); out.append(UInt8(u >> 8))
        }
        return out
    }

    /// Reads S16 PCM. A data chunk whose size field was never patched (a stream cut off, as
    /// ALSA's file plugin leaves it while still writing) is read to the end of the bytes.
    public static func decode(_ bytes: [UInt8]) throws(DecodeError) -> Decoded {
        func u32(_ o: Int) -> Int { Int(bytes[o]) | Int(bytes[o + 1]) << 8 | Int(bytes[o + 2]) << 16 | Int(bytes[o + 3]) << 24 }
        func u16(_ o: Int) -> Int { Int(bytes[o]) | Int(bytes[o + 1]) << 8 }
        guard bytes.count >= 12, bytes[0..<4].elementsEqual("RIFF".utf8), bytes[8..<12].elementsEqual("WAVE".utf8) else {
            throw .notRIFF
        }
        var o = 12
        var rate = 0, channels = 0, bits = 0
        while o + 8 <= bytes.count {
            let id = String(decoding: bytes[o..<o + 4], as: UTF8.self)
            let size = u32(o + 4)
            if id == "fmt " {
                guard o + 24 <= bytes.count else { throw .noFormat }
                guard u16(o + 8) == 1 else { throw .unsupported("format tag \(u16(o + 8))") }
                channels = u16(o + 10); rate = u32(o + 12); bits = u16(o + 22)
                guard bits == 16 else { throw .unsupported("\(bits)-bit samples") }
            } else if id == "data" {
                guard channels > 0 else { throw .noFormat }
                let start = o + 8
                var end = size == 0 || size == 0xFFFF_FFFF || start + size > bytes.count ? bytes.count : start + size
                end -= (end - start) % (2 * channels)
                var s = [Int16](); s.reserveCapacity((end - start) / 2)
                var i = start
                while i + 1 < end { s.append(Int16(bitPattern: UInt16(bytes[i]) | UInt16(bytes[i + 1]) << 8)); i += 2 }
                return Decoded(rate: rate, channels: channels, samples: s)
            }
            o += 8 + size + (size & 1)
        }
        throw .noData
    }
}

/// Measurements tests and benchmarks make on decoded audio.
public enum Signal {
    public static func rms(_ x: ArraySlice<Float>) -> Double {
        guard !x.isEmpty else { return 0 }
        var s = 0.0
        for v in x { s += Double(v) * Double(v) }
        return (s / Double(x.count)).squareRoot()
    }

    public static func peak(_ x: ArraySlice<Float>) -> Float { x.reduce(0) { max($0, abs($1)) } }

    /// Index of the first sample whose magnitude exceeds `threshold`, or nil.
    public static func firstLoud(_ x: [Float], threshold: Float) -> Int? { x.firstIndex { abs($0) > threshold } }
    public static func lastLoud(_ x: [Float], threshold: Float) -> Int? { x.lastIndex { abs($0) > threshold } }

    /// Largest jump between neighbouring samples in `range`.
    public static func maxStep(_ x: [Float], in range: Range<Int>) -> Float {
        var m: Float = 0
        for i in range.dropFirst() where i < x.count { m = max(m, abs(x[i] - x[i - 1])) }
        return m
    }
}
