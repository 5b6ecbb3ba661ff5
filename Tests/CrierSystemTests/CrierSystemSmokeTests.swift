import Testing
@testable import CrierSystem
