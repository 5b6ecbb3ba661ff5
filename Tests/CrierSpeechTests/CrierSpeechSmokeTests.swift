import Testing
@testable import CrierSpeech
