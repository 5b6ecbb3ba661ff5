import CrierCore
print("crier \(CrierVersion.string)")
