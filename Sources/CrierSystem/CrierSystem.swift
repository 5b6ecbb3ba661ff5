// CrierSystem: see docs/architecture.md for what lives here.
import CrierCore
