import Testing

/// A test trait: every ``FakeHTTPServer`` a test starts, directly or through a harness, is stopped
/// when the test ends (passing, failing or throwing), and the test waits for the stops.
///
/// Use ``Testing/Trait/stopsFakeHTTPServers`` on a suite or a test.
public struct StopsFakeHTTPServers: TestTrait, SuiteTrait, TestScoping {
    /// Creates the trait; ``Testing/Trait/stopsFakeHTTPServers`` reads better.
    public init() {}

    /// Applies to every test of a suite it is given to.
    public var isRecursive: Bool { true }

    /// The scope is provided per test case (each argument of a parameterized test gets its own).
    /// - Parameters:
    ///   - test: The test or suite.
    ///   - testCase: The test case, `nil` for a suite or for a test as a whole.
    /// - Returns: This trait for a test case, otherwise `nil`.
    public func scopeProvider(for test: Test, testCase: Test.Case?) -> StopsFakeHTTPServers? {
        testCase == nil ? nil : self
    }

    /// Runs the test case, then stops the servers it started.
    /// - Parameters:
    ///   - test: The test.
    ///   - testCase: The test case.
    ///   - function: The test case's body.
    /// - Throws: What the body throws.
    public func provideScope(
        for test: Test, testCase: Test.Case?, performing function: @Sendable () async throws -> Void
    ) async throws {
        try await FakeHTTPServerScope().run { try await function() }
    }
}

extension Trait where Self == StopsFakeHTTPServers {
    /// Stops every ``FakeHTTPServer`` a test starts when the test ends, and waits for the stops.
    public static var stopsFakeHTTPServers: StopsFakeHTTPServers { StopsFakeHTTPServers() }
}
