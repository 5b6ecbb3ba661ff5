import Glibc

/// A failed system call, worded for the log: `open /dev/serial0: No such file or directory (errno 2)`.
public struct SystemError: Error, Sendable, Equatable, CustomStringConvertible {
    public var operation: String
    public var path: String?
    public var code: Int32

    public init(_ operation: String, path: String? = nil, code: Int32 = errno) {
        self.operation = operation
        self.path = path
        self.code = code
    }

    public var description: String {
        let what = path.map { "\(operation) \($0)" } ?? operation
        return "\(what): \(errnoText(code)) (errno \(code))"
    }
}

/// strerror's text for an errno value.
public func errnoText(_ e: Int32) -> String { String(cString: strerror(e)) }
