// swift-tools-version:6.0
// Crier: the runtime of a kiosk order speaker. Layering (see docs/architecture.md):
//   C*            system-library shims, nothing else
//   CrierCore     every product rule, pure Swift, no C module, tested with an injected clock
//   CrierPosix    the libc pieces every adapter shares (clocks, threads, wake pipe, file I/O)
//   Crier<Adapter> one C library (or OS facility) each, thin
//   CrierRuntime  composes the adapters into the daemon and the commands
//   crier         the executable: argument parsing only
import PackageDescription

let package = Package(
    name: "Crier",
    products: [
        .executable(name: "crier", targets: ["crier"]),
    ],
    targets: [
        .systemLibrary(name: "CALSA", pkgConfig: "alsa", providers: [.apt(["libasound2-dev"])]),
        .systemLibrary(name: "CGPIOD", pkgConfig: "libgpiod", providers: [.apt(["libgpiod-dev"])]),
        .systemLibrary(name: "CEspeakNG", providers: [.apt(["libespeak-ng-dev"])]),
        .systemLibrary(name: "COpenSSL", pkgConfig: "openssl", providers: [.apt(["libssl-dev"])]),

        .target(name: "CrierCore"),
        .target(name: "CrierPosix", dependencies: ["CrierCore"]),
        .target(name: "CrierAudio", dependencies: ["CrierCore", "CrierPosix", "CALSA"]),
        .target(name: "CrierSpeech", dependencies: ["CrierCore", "CrierPosix", "CEspeakNG"]),
        .target(name: "CrierGPIO", dependencies: ["CrierCore", "CrierPosix", "CGPIOD"]),
        .target(name: "CrierLink", dependencies: ["CrierCore", "CrierPosix", "COpenSSL"]),
        .target(name: "CrierSystem", dependencies: ["CrierCore", "CrierPosix"]),
        .target(name: "CrierRuntime", dependencies: [
            "CrierCore", "CrierPosix", "CrierAudio", "CrierSpeech", "CrierGPIO", "CrierLink", "CrierSystem",
        ]),
        .executableTarget(name: "crier", dependencies: ["CrierRuntime", "CrierCore", "CrierPosix", "CrierLink"]),

        .testTarget(name: "CrierCoreTests", dependencies: ["CrierCore"]),
        .testTarget(name: "CrierAudioTests", dependencies: ["CrierAudio", "CrierCore", "CrierPosix"]),
        .testTarget(name: "CrierSpeechTests", dependencies: ["CrierSpeech", "CrierCore", "CrierPosix"]),
        .testTarget(name: "CrierGPIOTests", dependencies: ["CrierGPIO", "CrierCore", "CrierPosix"]),
        .testTarget(name: "CrierLinkTests", dependencies: ["CrierLink", "CrierCore", "CrierPosix"]),
        .testTarget(name: "CrierSystemTests", dependencies: ["CrierSystem", "CrierCore", "CrierPosix"]),
        .testTarget(name: "CrierPosixTests", dependencies: ["CrierPosix"]),
    ],
    swiftLanguageModes: [.v6]
)
