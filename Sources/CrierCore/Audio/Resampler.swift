/// Band-limited sample-rate conversion for speech (espeak-ng produces 22050 Hz; DACs want 44.1
/// or 48 kHz). A windowed-sinc interpolator with a precomputed table of `phases` sub-sample
/// positions: cheap enough per utterance, and without the imaging hiss of linear interpolation.
public struct Resampler: Sendable {
    public let inputRate: Int
    public let outputRate: Int
    let halfTaps: Int
    let phases: Int
    let table: [Float]  // phases+1 rows of 2*halfTaps coefficients

    public init(from inputRate: Int, to outputRate: Int, halfTaps: Int = 8, phases: Int = 256) {
        self.inputRate = inputRate
        self.outputRate = outputRate
        // When decimating, the kernel widens with the ratio so the stop band stays as steep.
        let ratio = max(1.0, Double(inputRate) / Double(outputRate))
        let halfTaps = Int((Double(halfTaps) * ratio).rounded(.up))
        self.halfTaps = halfTaps
        self.phases = phases
        // Cut off a little below the lower Nyquist so the transition band stays inside it.
        let cutoff = 0.92 * Double(min(inputRate, outputRate)) / Double(inputRate)  // relative to input Nyquist*2
        var t = [Float](repeating: 0, count: (phases + 1) * 2 * halfTaps)
        for p in 0...phases {
            let frac = Double(p) / Double(phases)
            var sum = 0.0
            var row = [Double](repeating: 0, count: 2 * halfTaps)
            for k in 0..<(2 * halfTaps) {
                let x = Double(k - halfTaps + 1) - frac  // distance from the output point, in input samples
                let s = x == 0 ? cutoff : Resampler.sin(Double.pi * cutoff * x) / (Double.pi * x)
                let w = Resampler.blackman(x / Double(halfTaps))
                row[k] = s * w
                sum += row[k]
            }
            for k in 0..<(2 * halfTaps) { t[p * 2 * halfTaps + k] = Float(row[k] / sum) }
        }
        table = t
    }

    public func process(_ input: [Float]) -> [Float] {
        if inputRate == outputRate || input.isEmpty { return input }
        let outCount = Int((Int64(input.count) * Int64(outputRate) + Int64(inputRate) - 1) / Int64(inputRate))
        var out = [Float](repeating: 0, count: outCount)
        let step = Double(inputRate) / Double(outputRate)
        let taps = 2 * halfTaps
        input.withUnsafeBufferPointer { inp in
            table.withUnsafeBufferPointer { tab in
                out.withUnsafeMutableBufferPointer { o in
                    for i in 0..<outCount {
                        let pos = Double(i) * step
                        let base = Int(pos)
                        let phase = Int(((pos - Double(base)) * Double(phases)).rounded())
                        let row = phase * taps
                        var acc: Float = 0
                        let first = base - halfTaps + 1
                        if first >= 0 && first + taps <= inp.count {
                            for k in 0..<taps { acc += inp[first + k] * tab[row + k] }
                        } else {
                            for k in 0..<taps {
                                let j = first + k
                                if j >= 0 && j < inp.count { acc += inp[j] * tab[row + k] }
                            }
                        }
                        o[i] = acc
                    }
                }
            }
        }
        return out
    }

    static func blackman(_ x: Double) -> Double {
        if abs(x) >= 1 { return 0 }
        let t = Double.pi * (x + 1)  // 0...2π across the window
        return 0.42 - 0.5 * cos(t) + 0.08 * cos(2 * t)
    }

    // Pure-Swift sin/cos (CrierCore imports no C math); only used to build the table.
    static func sin(_ x: Double) -> Double {
        var r = x.truncatingRemainder(dividingBy: 2 * Double.pi)
        if r > Double.pi { r -= 2 * Double.pi } else if r < -Double.pi { r += 2 * Double.pi }
        var term = r, sum = r
        let r2 = r * r
        for n in stride(from: 3, to: 40, by: 2) {
            term *= -r2 / Double(n * (n - 1))
            sum += term
        }
        return sum
    }

    static func cos(_ x: Double) -> Double { sin(x + Double.pi / 2) }
}
