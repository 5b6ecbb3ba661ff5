// swift-tools-version:6.0
// Crier: the runtime of a kiosk order speaker. Layering (see docs/architecture.md):
//   C*            system-library shims, nothing else
//   CrierCore     every product rule, pure Swift, no C module, tested with an injected clock
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
        .target(name: "CrierAudio", dependencies: ["CrierCore", "CALSA"]),
        .target(name: "CrierSpeech", dependencies: ["CrierCore", "CEspeakNG"]),
        .target(name: "CrierGPIO", dependencies: ["CrierCore", "CGPIOD"]),
        .target(name: "CrierLink", dependencies: ["CrierCore", "COpenSSL"]),
        .target(name: "CrierSystem", dependencies: ["CrierCore"]),
        .target(name: "CrierRuntime", dependencies: [
            "CrierCore", "CrierAudio", "CrierSpeech", "CrierGPIO", "CrierLink", "CrierSystem",
        ]),
        .executableTarget(name: "crier", dependencies: ["CrierRuntime", "CrierCore", "CrierLink"]),

        .testTarget(name: "CrierCoreTests", dependencies: ["CrierCore"]),
        .testTarget(name: "CrierAudioTests", dependencies: ["CrierAudio", "CrierCore"]),
        .testTarget(name: "CrierSpeechTests", dependencies: ["CrierSpeech", "CrierCore"]),
        .testTarget(name: "CrierGPIOTests", dependencies: ["CrierGPIO", "CrierCore"]),
        .testTarget(name: "CrierLinkTests", dependencies: ["CrierLink", "CrierCore"]),
        .testTarget(name: "CrierSystemTests", dependencies: ["CrierSystem", "CrierCore"]),
    ],
    swiftLanguageModes: [.v6]
)
