import Testing
@testable import CrierGPIO
