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
        let outCount = outputCount(forInput: input.count)
        var out = [Float](repeating: 0, count: outCount)
        input.withUnsafeBufferPointer { inp in
            table.withUnsafeBufferPointer { tab in
                out.withUnsafeMutableBufferPointer { o in
                    for i in 0..<outCount { o[i] = output(i, inp, start: 0, end: inp.count, tab) }
                }
            }
        }
        return out
    }

    /// Output samples a whole input of `n` samples gives.
    func outputCount(forInput n: Int) -> Int {
        Int((Int64(n) * Int64(outputRate) + Int64(inputRate) - 1) / Int64(inputRate))
    }

    /// Position of output sample `i` in input samples (whole part: the base input index).
    @inline(__always)
    func inputPosition(_ i: Int) -> Double { Double(i) * (Double(inputRate) / Double(outputRate)) }

    /// Output sample `i`. `inp[0]` is input sample `start`; input samples at or past `end` (and
    /// before 0) count as zero. Whole and streamed resampling both go through here, so they
    /// give the same samples bit for bit.
    @inline(__always)
    func output(_ i: Int, _ inp: UnsafeBufferPointer<Float>, start: Int, end: Int, _ tab: UnsafeBufferPointer<Float>) -> Float {
        let taps = 2 * halfTaps
        let pos = inputPosition(i)
        let base = Int(pos)
        let phase = Int(((pos - Double(base)) * Double(phases)).rounded())
        let row = phase * taps
        var acc: Float = 0
        let first = base - halfTaps + 1
        if first >= 0 && first + taps <= end {
            let at = first - start
            for k in 0..<taps { acc += inp[at + k] * tab[row + k] }
        } else {
            for k in 0..<taps {
                let j = first + k
                if j >= 0 && j < end { acc += inp[j - start] * tab[row + k] }
            }
        }
        return acc
    }

    /// Resampling chunk by chunk, as synthesis hands them out. The filter's state (the last
    /// input samples and the output phase) carries over from chunk to chunk, so a chunk edge
    /// is no edge: `push` of any split followed by `finish` gives exactly `process` of the whole.
    public struct Stream: Sendable {
        public let resampler: Resampler
        /// Input samples from input index `bufStart` on: what outputs still to come need.
        var buf: [Float] = []
        var bufStart = 0
        var total = 0
        var next = 0

        public init(_ resampler: Resampler) { self.resampler = resampler }

        /// Input samples taken so far.
        public var inputCount: Int { total }

        /// Takes a chunk; returns every output sample that no later input can change.
        public mutating func push(_ input: [Float]) -> [Float] {
            if resampler.inputRate == resampler.outputRate {
                total += input.count
                return input
            }
            buf += input
            total += input.count
            var out: [Float] = []
            let r = resampler
            let (start, end) = (bufStart, total)
            var i = next
            buf.withUnsafeBufferPointer { inp in
                r.table.withUnsafeBufferPointer { tab in
                    // Output i needs input up to floor(pos) + halfTaps.
                    while Int(r.inputPosition(i)) + r.halfTaps < end {
                        out.append(r.output(i, inp, start: start, end: end, tab))
                        i += 1
                    }
                }
            }
            next = i
            // Keep only what the next output still reads.
            let keepFrom = Int(r.inputPosition(next)) - r.halfTaps + 1
            let drop = min(buf.count, keepFrom - bufStart)
            if drop > 4096 || (drop > 0 && drop == buf.count) {
                buf.removeFirst(drop)
                bufStart += drop
            }
            return out
        }

        /// The input has ended: the outputs that read past its end (as zeros).
        public mutating func finish() -> [Float] {
            if resampler.inputRate == resampler.outputRate { return [] }
            let r = resampler
            let count = total == 0 ? 0 : r.outputCount(forInput: total)
            var out: [Float] = []
            let (start, end) = (bufStart, total)
            var i = next
            buf.withUnsafeBufferPointer { inp in
                r.table.withUnsafeBufferPointer { tab in
                    while i < count {
                        out.append(r.output(i, inp, start: start, end: end, tab))
                        i += 1
                    }
                }
            }
            next = i
            return out
        }
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
