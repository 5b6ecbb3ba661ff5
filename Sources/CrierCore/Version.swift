/// The version printed by `crier --version` and sent nowhere else.
public enum CrierVersion {
    public static let string = "0.1.0"
}
