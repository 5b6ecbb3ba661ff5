import Testing
@testable import CrierCore
