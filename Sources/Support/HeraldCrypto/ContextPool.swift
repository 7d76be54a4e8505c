import COpenSSL

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// A small lock-protected free list of reusable OpenSSL contexts (`EVP_PKEY_CTX`, `EVP_MAC_CTX`, `EVP_CIPHER_CTX`).
///
/// Creating these contexts costs more than using them (P-256 key generation with a fresh context is about twice
/// as slow as with a reused one), so hot paths borrow a context, use it on one thread, and give it back. A context
/// is only ever used by the thread that borrowed it; contexts whose operation failed are freed, not returned.
///
/// `@unchecked Sendable`: all mutable state (`free`) is guarded by `mutex`.
final class ContextPool: @unchecked Sendable {
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>
    private var free: [OpaquePointer] = []
    private let capacity: Int
    private let make: @Sendable () -> OpaquePointer?
    private let destroy: @Sendable (OpaquePointer) -> Void

    init(
        capacity: Int = 32, make: @escaping @Sendable () -> OpaquePointer?,
        destroy: @escaping @Sendable (OpaquePointer) -> Void
    ) {
        mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
        mutex.initialize(to: pthread_mutex_t())
        pthread_mutex_init(mutex, nil)
        self.capacity = capacity
        self.make = make
        self.destroy = destroy
    }

    deinit {
        for context in free { destroy(context) }
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
    }

    /// Borrows a context (a pooled one or a new one); `nil` only if creating one fails.
    func take() -> OpaquePointer? {
        pthread_mutex_lock(mutex)
        let pooled = free.popLast()
        pthread_mutex_unlock(mutex)
        return pooled ?? make()
    }

    /// Returns a context after a successful operation.
    func give(_ context: OpaquePointer) {
        pthread_mutex_lock(mutex)
        let keep = free.count < capacity
        if keep { free.append(context) }
        pthread_mutex_unlock(mutex)
        if !keep { destroy(context) }
    }

    /// Frees a context after a failed operation instead of pooling it.
    func discard(_ context: OpaquePointer) {
        destroy(context)
    }
}
