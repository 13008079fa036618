/// A test server that could not start, with what happened and what to do.
public struct TestServerError: Error, CustomStringConvertible, Sendable {
    /// What happened and what to do about it.
    public var description: String

    /// Creates an error with a message.
    public init(_ description: String) {
        self.description = description
    }
}
