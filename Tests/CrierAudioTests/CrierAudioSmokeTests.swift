import Testing
@testable import CrierAudio
