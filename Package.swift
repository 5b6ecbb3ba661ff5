// swift-tools-version:6.0
// Crier: the runtime of a kiosk order speaker. Layering (see docs/architecture.md):
//   C*            system-library shims, nothing else
//   CrierCore     every product rule, pure Swift, no C module, tested with an injected clock
//   CrierPosix    the libc pieces every adapter shares (clocks, threads, wake pipe, file I/O)
//   Crier<Adapter> one C library (or OS facility) each, thin
//   CrierRuntime  composes the adapters into the daemon and the commands
//   crier         the executable: argument parsing only
//   CrierSim      the reference servers and the demo (order-sim, mqtt-fleet, demo), for
//                 integrators and tests; never linked into `crier` (the box's binary)
//   crier-sim     their executable (its own .deb, not on the box)
import PackageDescription
#if canImport(Glibc)
import Glibc
#endif

// Which libgpiod API CrierGPIO is built for: 1 (libgpiod 1.6, Debian 12 and Raspberry Pi OS
// bookworm) or 2 (libgpiod 2.x, Debian 13; bookworm-backports). The two APIs share no calls
// and one system has one of them, so the choice is made here, from what pkg-config finds (it
// honours PKG_CONFIG_PATH: scripts/gpiod2-prefix.sh). CRIER_GPIOD_API=1|2 overrides it.
// See docs/buttons.md ("Which libgpiod").
func gpiodAPI() -> Int {
    #if canImport(Glibc)
    if let v = getenv("CRIER_GPIOD_API").map({ String(cString: $0) }), let n = Int(v), n == 1 || n == 2 {
        return n
    }
    func firstLine(_ command: String) -> String? {
        guard let p = popen(command, "r") else { return nil }
        defer { pclose(p) }
        var buf = [CChar](repeating: 0, count: 256)
        guard fgets(&buf, Int32(buf.count), p) != nil else { return nil }
        return String(decoding: buf.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
    if let v = firstLine("pkg-config --modversion libgpiod 2>/dev/null"), let major = Int(v.prefix { $0 != "." }) {
        return major >= 2 ? 2 : 1
    }
    // No pkg-config: the v2 header is the one that declares gpiod_line_settings_new.
    if firstLine("grep -l gpiod_line_settings_new /usr/include/gpiod.h 2>/dev/null") != nil { return 2 }
    #endif
    return 1
}
let gpiodSettings: [SwiftSetting] = gpiodAPI() == 2 ? [.define("CRIER_GPIOD_V2")] : []

let package = Package(
    name: "Crier",
    products: [
        .executable(name: "crier", targets: ["crier"]),
        .executable(name: "crier-sim", targets: ["crier-sim"]),
    ],
    targets: [
        .systemLibrary(name: "CALSA", pkgConfig: "alsa", providers: [.apt(["libasound2-dev"])]),
        .systemLibrary(name: "CGPIOD", pkgConfig: "libgpiod", providers: [.apt(["libgpiod-dev"])]),
        .systemLibrary(name: "CEspeakNG", providers: [.apt(["libespeak-ng-dev"])]),
        .systemLibrary(name: "COpenSSL", pkgConfig: "openssl", providers: [.apt(["libssl-dev"])]),
        .systemLibrary(name: "CMosquitto", pkgConfig: "libmosquitto", providers: [.apt(["libmosquitto-dev"])]),
        // Background music (docs/music.md): one shim and one thin adapter per library.
        .systemLibrary(name: "CSndfile", pkgConfig: "sndfile", providers: [.apt(["libsndfile1-dev"])]),
        .systemLibrary(name: "CSoxr", pkgConfig: "soxr", providers: [.apt(["libsoxr-dev"])]),
        // No pkgConfig: Debian 13's libcurl.pc adds `-isystem /usr/include/mit-krb5`, a flag SwiftPM
        // refuses with a warning; curl/curl.h is on the default include path anyway.
        .systemLibrary(name: "CCurl", providers: [.apt(["libcurl4-openssl-dev"])]),
        .systemLibrary(name: "CMpg123", pkgConfig: "libmpg123", providers: [.apt(["libmpg123-dev"])]),
        // The local page for phones (docs/setup.md): libmicrohttpd, one shim, one thin adapter.
        // No pkgConfig: libmicrohttpd.pc has `Requires.private: gnutls`, so its cflags need
        // gnutls.pc (and add p11-kit's include dir) for nothing; microhttpd.h is on the default path.
        .systemLibrary(name: "CMicroHTTPD", providers: [.apt(["libmicrohttpd-dev"])]),
        // Voice packs (docs/voice.md): EBU R128 loudness of the clips.
        .systemLibrary(name: "CEbur128", pkgConfig: "libebur128", providers: [.apt(["libebur128-dev"])]),

        .target(name: "CrierCore"),
        .target(name: "CrierPosix", dependencies: ["CrierCore"]),
        .target(name: "CrierAudio", dependencies: ["CrierCore", "CrierPosix", "CALSA"]),
        .target(name: "CrierSpeech", dependencies: ["CrierCore", "CrierPosix", "CEspeakNG"]),
        .target(name: "CrierGPIO", dependencies: ["CrierCore", "CrierPosix", "CGPIOD"], swiftSettings: gpiodSettings),
        // libmosquitto, thin; the MQTT link's rules (journal, acks, TLS checks) are in CrierLink.
        .target(name: "CrierMosquitto", dependencies: ["CrierCore", "CMosquitto"]),
        .target(name: "CrierLink", dependencies: ["CrierCore", "CrierPosix", "COpenSSL", "CrierMosquitto"]),
        .target(name: "CrierSystem", dependencies: ["CrierCore", "CrierPosix"]),
        .target(name: "CrierMusicFile", dependencies: ["CrierCore", "CSndfile"]),
        .target(name: "CrierSoxr", dependencies: ["CSoxr"]),
        .target(name: "CrierHTTP", dependencies: ["CrierCore", "CrierPosix", "CCurl"]),
        .target(name: "CrierMP3", dependencies: ["CMpg123"]),
        .target(name: "CrierWeb", dependencies: ["CrierCore", "CrierPosix", "CMicroHTTPD"]),
        .target(name: "CrierLoudness", dependencies: ["CEbur128"]),
        .target(name: "CrierMusic", dependencies: ["CrierCore", "CrierPosix", "CrierMusicFile", "CrierSoxr", "CrierHTTP", "CrierMP3"]),
        .target(name: "CrierRuntime", dependencies: [
            "CrierCore", "CrierPosix", "CrierAudio", "CrierSpeech", "CrierGPIO", "CrierLink", "CrierSystem", "CrierMusic", "CrierHTTP",
            "CrierMusicFile", "CrierWeb", "CrierLoudness", "CrierSoxr",
        ]),
        .executableTarget(name: "crier", dependencies: ["CrierRuntime", "CrierCore", "CrierPosix", "CrierLink"]),
        // The reference order servers, the MQTT fleet bench and the demo: not in the box's binary.
        .target(name: "CrierSim", dependencies: ["CrierRuntime", "CrierCore", "CrierPosix", "CrierLink", "CrierSystem", "CrierAudio", "CrierMosquitto"]),
        .executableTarget(name: "crier-sim", dependencies: ["CrierSim", "CrierRuntime", "CrierCore", "CrierPosix", "CrierLink"]),
        // Benchmarks (scripts/bench.sh), apart from the tests: they print tables, never pass/fail.
        .executableTarget(name: "crier-textpath-bench", dependencies: ["CrierCore", "CrierPosix", "CrierSpeech"],
                          path: "Benchmarks/textpath"),

        .testTarget(name: "CrierCoreTests", dependencies: ["CrierCore"]),
        .testTarget(name: "CrierAudioTests", dependencies: ["CrierAudio", "CrierCore", "CrierPosix"]),
        .testTarget(name: "CrierSpeechTests", dependencies: ["CrierSpeech", "CrierCore", "CrierPosix"]),
        .testTarget(name: "CrierGPIOTests", dependencies: ["CrierGPIO", "CrierCore", "CrierPosix", "CGPIOD"], swiftSettings: gpiodSettings),
        .testTarget(name: "CrierLinkTests", dependencies: ["CrierLink", "CrierSim", "CrierCore", "CrierPosix", "CrierMosquitto"]),
        .testTarget(name: "CrierSystemTests", dependencies: ["CrierSystem", "CrierCore", "CrierPosix"]),
        .testTarget(name: "CrierPosixTests", dependencies: ["CrierPosix", "CrierCore"]),
        .testTarget(name: "CrierWebTests", dependencies: ["CrierWeb", "CrierCore", "CrierPosix"]),
        .testTarget(name: "CrierLoudnessTests", dependencies: ["CrierLoudness"]),
        .testTarget(name: "CrierMusicTests", dependencies: ["CrierMusic", "CrierMusicFile", "CrierAudio", "CrierCore", "CrierPosix"]),
    ],
    swiftLanguageModes: [.v6]
)
