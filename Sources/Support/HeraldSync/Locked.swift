#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// A value guarded by a POSIX mutex: Herald's one lock type.
///
/// Why not the standard library's `Synchronization.Mutex`: on Linux it locks with raw futex
/// system calls, which ThreadSanitizer does not see, so `make test-tsan` reported every access
/// guarded by it as a race (a two-thread counter under `Mutex` counted exactly, and TSan still
/// reported it). `pthread_mutex_lock` is intercepted by every sanitizer, so the code that runs in
/// production is the code TSan checks, with no suppression. Uncontended, both cost about the same.
public final class Locked<Value>: @unchecked Sendable {
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>
    /// The value lives in its own allocation, not in a stored property: a zero-sized `Value`
    /// (`Locked<Void>`, a plain lock) would otherwise share its address with the object's header,
    /// which Swift reads without the lock, and TSan would report that as a race.
    private let storage: UnsafeMutablePointer<Value>

    /// Creates the lock around `value`.
    /// - Parameter value: The initial value.
    public init(_ value: Value) {
        storage = .allocate(capacity: 1)
        storage.initialize(to: value)
        mutex = .allocate(capacity: 1)
        mutex.initialize(to: pthread_mutex_t())
        pthread_mutex_init(mutex, nil)
    }

    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deinitialize(count: 1)
        mutex.deallocate()
        storage.deinitialize(count: 1)
        storage.deallocate()
    }

    /// Runs `body` with exclusive access to the value.
    /// - Parameter body: Reads or changes the value; must not call `withLock` on the same lock.
    /// - Returns: What `body` returns.
    public func withLock<Result, E: Error>(_ body: (inout sending Value) throws(E) -> sending Result) throws(E)
        -> sending Result
    {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body(&storage.pointee)
    }
}
