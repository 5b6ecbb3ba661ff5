import Testing
@testable import CrierLink
