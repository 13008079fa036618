import Synchronization

/// A value behind a lock, as a class (Mutex itself cannot be copied into closures).
final class MutexBox<Value: Sendable>: Sendable {
    private let mutex: Mutex<Value>

    init(_ value: Value) { mutex = Mutex(value) }

    func get() -> Value { mutex.withLock { $0 } }

    func set(_ value: Value) { mutex.withLock { $0 = value } }
}
