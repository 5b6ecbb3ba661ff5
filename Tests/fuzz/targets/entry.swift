// The one libFuzzer entry point of the fuzz binary; CRIER_FUZZ_TARGET picks the target
// (scripts/fuzz.sh sets it). One binary for all targets: CrierCore is compiled once.
import Glibc

enum FuzzTarget: String, Sendable {
    case `protocol`, config, text, speech
}

let fuzzTarget: FuzzTarget = {
    guard let p = getenv("CRIER_FUZZ_TARGET"), let t = FuzzTarget(rawValue: String(cString: p)) else {
        fatalError("set CRIER_FUZZ_TARGET to protocol, config, text or speech (scripts/fuzz.sh does)")
    }
    return t
}()

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzEntry(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
    switch fuzzTarget {
    case .protocol: fuzzProtocol(data, size)
    case .config: fuzzConfig(data, size)
    case .text: fuzzText(data, size)
    case .speech: fuzzSpeech(data, size)
    }
}
