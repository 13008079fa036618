/// The decoding side of QPACK (RFC 9204) with a dynamic table: the server's encoder stream inserts
/// entries, its field sections refer to them, and this side's decoder stream tells it what has been
/// received (Section Acknowledgment, Stream Cancellation, Insert Count Increment).
///
/// Everything a server can make it hold is bounded:
/// - the table, by the capacity this side advertised (SETTINGS_QPACK_MAX_TABLE_CAPACITY);
/// - an encoder instruction waiting for its end, by that capacity (a string longer than the table
///   could hold is refused when its length arrives);
/// - sections waiting for inserts, by the number of blocked streams advertised
///   (SETTINGS_QPACK_BLOCKED_STREAMS): one more is QPACK_DECOMPRESSION_FAILED;
/// - the fields a section expands to, by ``maximumFieldSectionSize`` (a short section may refer to a
///   large entry many times).
public struct QPACKDecoder: Sendable {
    /// What a field section gives.
    public enum Outcome: Sendable {
        /// Its fields, in order.
        case fields([(name: String, value: String)])
        /// It refers to entries not inserted yet: decode it again once ``insertCount`` reaches
        /// `requiredInsertCount` (``encoderStream(_:)`` says which streams it unblocked).
        case blocked(requiredInsertCount: UInt64)
    }

    /// The table capacity this side allows the server (its SETTINGS_QPACK_MAX_TABLE_CAPACITY).
    public let maximumCapacity: Int
    /// How many streams may wait for inserts at once (SETTINGS_QPACK_BLOCKED_STREAMS).
    public let maximumBlockedStreams: Int
    /// The most bytes (names and values) a section may expand to.
    public let maximumFieldSectionSize: Int

    /// The table's capacity as the server set it.
    public private(set) var capacity = 0
    /// Entries ever inserted (the absolute index of the next one).
    public private(set) var insertCount: UInt64 = 0
    /// The entries still in the table, oldest first: `entries[0]` has absolute index
    /// `insertCount - entries.count`.
    private var entries: [(name: String, value: String)] = []
    private var size = 0
    /// Inserts the server knows this side received (RFC 9204 §2.1.4).
    private var knownReceivedCount: UInt64 = 0
    /// Encoder stream bytes of an instruction not complete yet.
    private var partial: [UInt8] = []
    /// Streams whose section waits for inserts, with the insert count it needs.
    public private(set) var blockedStreams: [UInt64: UInt64] = [:]
    /// Decoder stream bytes to send.
    private var instructions: [UInt8] = []

    public init(maximumCapacity: Int, maximumBlockedStreams: Int, maximumFieldSectionSize: Int = 256 << 10) {
        self.maximumCapacity = maximumCapacity
        self.maximumBlockedStreams = maximumBlockedStreams
        self.maximumFieldSectionSize = maximumFieldSectionSize
    }

    /// The entry size RFC 9204 §3.2.1 counts: the name's and value's bytes and 32.
    static func entrySize(_ name: String, _ value: String) -> Int { name.utf8.count + value.utf8.count + 32 }

    // MARK: The encoder stream (RFC 9204 §4.3)

    /// Bytes of the server's encoder stream: every complete instruction is applied (an incomplete one
    /// waits for the rest). Returns the streams whose sections can now be decoded. Throws
    /// (QPACK_ENCODER_STREAM_ERROR) for a capacity past the advertised one, a reference to an entry
    /// not in the table, or an entry larger than the table.
    public mutating func encoderStream(_ bytes: [UInt8]) throws(QUICError) -> [UInt64] {
        partial += bytes
        var reader = QUICReader(partial)
        var applied = reader.offset
        while !reader.isAtEnd {
            do {
                try instruction(&reader)
            } catch .truncated {
                break
            }
            applied = reader.offset
        }
        partial.removeFirst(applied)
        if insertCount > knownReceivedCount {
            // Insert Count Increment: the server may refer to these without blocking.
            QPACK.appendInteger(insertCount - knownReceivedCount, prefixBits: 6, flags: 0x00, to: &instructions)
            knownReceivedCount = insertCount
        }
        let unblocked = blockedStreams.filter { $0.value <= insertCount }.map(\.key).sorted()
        for id in unblocked { blockedStreams[id] = nil }
        return unblocked
    }

    private mutating func instruction(_ reader: inout QUICReader) throws(QUICError) {
        let first = reader.bytes[reader.offset]
        if first & 0x80 != 0 {
            // Insert with Name Reference: 1 T index(6), value.
            let isStatic = first & 0x40 != 0
            let index = try QPACK.readInteger(&reader, prefixBits: 6)
            let value = try QPACK.readString(&reader, prefixBits: 7, maximumLength: maximumCapacity)
            let name = isStatic ? try QPACK.staticEntry(index).name : try entry(relative: index).name
            try insert(name, value)
        } else if first & 0x40 != 0 {
            // Insert with Literal Name: 01 H length(5) name, value.
            let name = try QPACK.readString(&reader, prefixBits: 5, maximumLength: maximumCapacity)
            let value = try QPACK.readString(&reader, prefixBits: 7, maximumLength: maximumCapacity)
            try insert(name, value)
        } else if first & 0x20 != 0 {
            // Set Dynamic Table Capacity: 001 capacity(5).
            let value = try QPACK.readInteger(&reader, prefixBits: 5)
            guard value <= UInt64(maximumCapacity) else {
                throw .malformed("a QPACK table capacity of \(value), past the \(maximumCapacity) allowed")
            }
            capacity = Int(value)
            evict(toFit: 0)
        } else {
            // Duplicate: 000 index(5).
            let entry = try entry(relative: QPACK.readInteger(&reader, prefixBits: 5))
            try insert(entry.name, entry.value)
        }
    }

    /// The entry `index` places before the newest (an encoder instruction's relative index).
    private func entry(relative index: UInt64) throws(QUICError) -> (name: String, value: String) {
        guard index < UInt64(entries.count) else { throw .malformed("a QPACK reference to relative index \(index), not in the table") }
        return entries[entries.count - 1 - Int(index)]
    }

    private mutating func insert(_ name: String, _ value: String) throws(QUICError) {
        let needed = Self.entrySize(name, value)
        guard needed <= capacity else { throw .malformed("a QPACK entry of \(needed) bytes in a table of \(capacity)") }
        evict(toFit: needed)
        entries.append((name, value))
        size += needed
        insertCount += 1
    }

    private mutating func evict(toFit needed: Int) {
        var drop = 0
        while size + needed > capacity, drop < entries.count {
            size -= Self.entrySize(entries[drop].name, entries[drop].value)
            drop += 1
        }
        entries.removeFirst(drop)
    }

    // MARK: Field sections (RFC 9204 §4.5)

    /// The fields of stream `stream`'s `section`, or ``Outcome/blocked(requiredInsertCount:)`` when it
    /// needs inserts not received yet. Throws (QPACK_DECOMPRESSION_FAILED) for a malformed section, a
    /// reference outside the table or past its Required Insert Count, more blocked streams than allowed,
    /// or fields past ``maximumFieldSectionSize``.
    public mutating func decode(_ section: [UInt8], stream: UInt64) throws(QUICError) -> Outcome {
        var reader = QUICReader(section)
        let required = try requiredInsertCount(QPACK.readInteger(&reader, prefixBits: 8))
        guard reader.remaining > 0 else { throw .truncated }
        let negative = reader.bytes[reader.offset] & 0x80 != 0
        let delta = try QPACK.readInteger(&reader, prefixBits: 7)
        if required > insertCount {
            if blockedStreams[stream] == nil {
                guard blockedStreams.count < maximumBlockedStreams else {
                    throw .malformed("more QPACK-blocked streams than the \(maximumBlockedStreams) allowed")
                }
            }
            blockedStreams[stream] = required
            return .blocked(requiredInsertCount: required)
        }
        blockedStreams[stream] = nil
        let base: UInt64
        if negative {
            guard delta < required else { throw .malformed("a QPACK base below 0") }
            base = required - delta - 1
        } else {
            base = required + delta
        }
        var fields: [(name: String, value: String)] = []
        var total = 0
        while !reader.isAtEnd {
            let first = reader.bytes[reader.offset]
            let field: (name: String, value: String)
            if first & 0x80 != 0 {
                // Indexed field line: 1 T index(6).
                let index = try QPACK.readInteger(&reader, prefixBits: 6)
                field = first & 0x40 != 0 ? try QPACK.staticEntry(index) : try entry(absolute: base, minus: index, required: required)
            } else if first & 0x40 != 0 {
                // Literal with name reference: 01 N T index(4), value.
                let index = try QPACK.readInteger(&reader, prefixBits: 4)
                let name = first & 0x10 != 0 ? try QPACK.staticEntry(index).name : try entry(absolute: base, minus: index, required: required).name
                field = (name, try QPACK.readString(&reader, prefixBits: 7))
            } else if first & 0x20 != 0 {
                // Literal with literal name: 001 N H length(3), value.
                let name = try QPACK.readString(&reader, prefixBits: 3)
                field = (name, try QPACK.readString(&reader, prefixBits: 7))
            } else if first & 0x10 != 0 {
                // Indexed field line with post-base index: 0001 index(4).
                field = try entry(absolute: base, plus: QPACK.readInteger(&reader, prefixBits: 4), required: required)
            } else {
                // Literal with post-base name reference: 0000 N index(3), value.
                let name = try entry(absolute: base, plus: QPACK.readInteger(&reader, prefixBits: 3), required: required).name
                field = (name, try QPACK.readString(&reader, prefixBits: 7))
            }
            total += field.name.utf8.count + field.value.utf8.count
            guard total <= maximumFieldSectionSize else {
                throw .malformed("a field section past \(maximumFieldSectionSize) bytes once decoded")
            }
            fields.append(field)
        }
        if required > 0 {
            // Section Acknowledgment: the server learns these entries arrived.
            QPACK.appendInteger(stream, prefixBits: 7, flags: 0x80, to: &instructions)
            knownReceivedCount = max(knownReceivedCount, required)
        }
        return .fields(fields)
    }

    /// Stream `stream` was reset or abandoned before its section was decoded: the server is told
    /// (Stream Cancellation) when it may have referred to the table, and the stream stops counting as
    /// blocked.
    public mutating func cancel(stream: UInt64) {
        blockedStreams[stream] = nil
        guard maximumCapacity > 0 else { return }
        QPACK.appendInteger(stream, prefixBits: 6, flags: 0x40, to: &instructions)
    }

    /// The decoder stream's bytes to send since the last call.
    public mutating func takeInstructions() -> [UInt8] {
        defer { instructions = [] }
        return instructions
    }

    /// The Required Insert Count an encoded one stands for (RFC 9204 §4.5.1.1).
    private func requiredInsertCount(_ encoded: UInt64) throws(QUICError) -> UInt64 {
        guard encoded != 0 else { return 0 }
        let maximumEntries = UInt64(maximumCapacity / 32)
        let fullRange = 2 * maximumEntries
        guard encoded <= fullRange else { throw .malformed("a QPACK Required Insert Count past the table's range") }
        let maximumValue = insertCount + maximumEntries
        let maximumWrapped = (maximumValue / fullRange) * fullRange
        var required = maximumWrapped + encoded - 1
        if required > maximumValue {
            guard required > fullRange else { throw .malformed("a QPACK Required Insert Count that cannot be") }
            required -= fullRange
        }
        guard required != 0 else { throw .malformed("a QPACK Required Insert Count of 0 encoded as another") }
        return required
    }

    /// The entry at absolute index `base - 1 - index` (a relative reference in a section).
    private func entry(absolute base: UInt64, minus index: UInt64, required: UInt64) throws(QUICError) -> (name: String, value: String) {
        guard index < base else { throw .malformed("a QPACK reference below the table's start") }
        return try entry(absolute: base - 1 - index, required: required)
    }

    /// The entry at absolute index `base + index` (a post-base reference).
    private func entry(absolute base: UInt64, plus index: UInt64, required: UInt64) throws(QUICError) -> (name: String, value: String) {
        let (absolute, overflow) = base.addingReportingOverflow(index)
        guard !overflow else { throw .malformed("a QPACK post-base reference too large") }
        return try entry(absolute: absolute, required: required)
    }

    private func entry(absolute: UInt64, required: UInt64) throws(QUICError) -> (name: String, value: String) {
        let oldest = insertCount - UInt64(entries.count)
        guard absolute < required else { throw .malformed("a QPACK reference to entry \(absolute), past the section's Required Insert Count \(required)") }
        guard absolute >= oldest, absolute < insertCount else { throw .malformed("a QPACK reference to entry \(absolute), not in the table") }
        return entries[Int(absolute - oldest)]
    }
}
