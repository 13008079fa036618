/// A value kept in one shared box, copied when it is changed while shared: a struct with several
/// fields that hold references (strings, arrays, URLs, closures) costs one retain to copy instead of one
/// per such field. ``Request`` and ``SessionConfiguration`` keep their fields this way (the engine's
/// `TransportResponse` in a box of its own, the same way: this generic one ran unspecialised from
/// FerryEngine); each is copied many times on a request's way through the layers, and the retains and
/// releases of those copies were a tenth of a small request's CPU (perf, `ferry-bench layers`).
///
/// Everything is inlinable: a generic type's accessors called from another module would otherwise run
/// unspecialised, through the value's metadata.
package struct CopyOnWrite<Value> {
    @usableFromInline
    package final class Storage {
        // Changed only through `CopyOnWrite.value`'s modify, once the box is one value's alone: no
        // dynamic exclusivity check is needed on top of that.
        @exclusivity(unchecked) @usableFromInline package var value: Value

        @inlinable package init(_ value: Value) { self.value = value }
    }

    @usableFromInline package var storage: Storage

    /// A box holding `value`.
    @inlinable package init(_ value: Value) {
        storage = Storage(value)
    }

    /// The value; changing it copies it first when the box is shared. Read in place (`_read`): reading
    /// one field does not copy the others.
    @inlinable package var value: Value {
        _read { yield storage.value }
        _modify {
            if !isKnownUniquelyReferenced(&storage) { storage = Storage(storage.value) }
            yield &storage.value
        }
    }
}

// A box is never changed while shared (above), so sharing it across tasks is as safe as its value.
extension CopyOnWrite: @unchecked Sendable where Value: Sendable {}

extension CopyOnWrite: Equatable where Value: Equatable {
    @inlinable package static func == (a: Self, b: Self) -> Bool {
        a.storage === b.storage || a.storage.value == b.storage.value
    }
}

extension CopyOnWrite: Hashable where Value: Hashable {
    @inlinable package func hash(into hasher: inout Hasher) {
        storage.value.hash(into: &hasher)
    }
}
