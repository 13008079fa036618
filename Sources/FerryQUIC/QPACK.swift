import NIOCore
import NIOHPACK

/// QPACK field sections (RFC 9204) with the static table only: what this side sends (it keeps no
/// encoder table, which RFC 9204 allows, so the server's decoder never waits), and ``decode(_:maximumSize:)``
/// for a section that may refer to no dynamic entry. The server's sections, which may, go through a
/// ``QPACKDecoder``. The integer and string codings here serve both.
public enum QPACK {
    /// A field section for `fields` (names in lower case): exact static matches indexed, other static
    /// names referred to, everything else literal (without Huffman coding).
    public static func encode(_ fields: [(name: String, value: String)]) -> [UInt8] {
        var bytes: [UInt8] = [0x00, 0x00]  // Required Insert Count 0, Delta Base 0
        for (name, value) in fields {
            if let index = QPACKStaticTable.exact[name + "\u{0}" + value] {
                appendInteger(UInt64(index), prefixBits: 6, flags: 0xC0, to: &bytes)  // indexed, static
            } else if let index = QPACKStaticTable.names[name] {
                appendInteger(UInt64(index), prefixBits: 4, flags: 0x50, to: &bytes)  // literal, static name
                appendString(value, prefixBits: 7, to: &bytes)
            } else {
                appendInteger(UInt64(name.utf8.count), prefixBits: 3, flags: 0x20, to: &bytes)  // literal name
                bytes += name.utf8
                appendString(value, prefixBits: 7, to: &bytes)
            }
        }
        return bytes
    }

    /// The fields of a field section. Throws for a reference to the dynamic table (which this side
    /// never allows), an index past the static table, a string past the end, or bad Huffman coding.
    public static func decode(_ section: [UInt8], maximumSize: Int = 64 << 10) throws(QUICError) -> [(name: String, value: String)] {
        guard section.count <= maximumSize else { throw .malformed("a field section of \(section.count) bytes") }
        var reader = QUICReader(section)
        let requiredInsertCount = try readInteger(&reader, prefixBits: 8)
        _ = try readInteger(&reader, prefixBits: 7)
        guard requiredInsertCount == 0 else { throw .malformed("a field section that needs the dynamic table") }
        var fields: [(name: String, value: String)] = []
        while !reader.isAtEnd {
            let first = reader.bytes[reader.offset]
            if first & 0x80 != 0 {
                guard first & 0x40 != 0 else { throw .malformed("a reference to the dynamic table") }
                fields.append(try staticEntry(readInteger(&reader, prefixBits: 6)))
            } else if first & 0x40 != 0 {
                guard first & 0x10 != 0 else { throw .malformed("a name from the dynamic table") }
                let name = try staticEntry(readInteger(&reader, prefixBits: 4)).name
                fields.append((name, try readString(&reader, prefixBits: 7)))
            } else if first & 0x20 != 0 {
                let name = try readString(&reader, prefixBits: 3)
                fields.append((name, try readString(&reader, prefixBits: 7)))
            } else {
                throw .malformed("a post-base reference to the dynamic table")
            }
        }
        return fields
    }

    static func staticEntry(_ index: UInt64) throws(QUICError) -> (name: String, value: String) {
        guard index < UInt64(QPACKStaticTable.entries.count) else { throw .malformed("static table index \(index)") }
        return QPACKStaticTable.entries[Int(index)]
    }

    // MARK: Integers and strings (RFC 7541 §5.1, §5.2, as RFC 9204 §4.1 uses them)

    static func appendInteger(_ value: UInt64, prefixBits: Int, flags: UInt8, to bytes: inout [UInt8]) {
        let limit = UInt64(1 << prefixBits) - 1
        guard value >= limit else { return bytes.append(flags | UInt8(value)) }
        bytes.append(flags | UInt8(limit))
        var rest = value - limit
        while rest >= 128 {
            bytes.append(UInt8(rest & 0x7F) | 0x80)
            rest >>= 7
        }
        bytes.append(UInt8(rest))
    }

    static func readInteger(_ reader: inout QUICReader, prefixBits: Int) throws(QUICError) -> UInt64 {
        let limit = UInt64(1 << prefixBits) - 1
        var value = UInt64(try reader.readByte()) & limit
        guard value == limit else { return value }
        var shift: UInt64 = 0
        while true {
            let byte = try reader.readByte()
            guard shift <= 56 else { throw .malformed("a QPACK integer too large") }
            value += UInt64(byte & 0x7F) << shift
            shift += 7
            if byte & 0x80 == 0 { return value }
        }
    }

    private static func appendString(_ value: String, prefixBits: Int, to bytes: inout [UInt8]) {
        appendInteger(UInt64(value.utf8.count), prefixBits: prefixBits, flags: 0, to: &bytes)
        bytes += value.utf8
    }

    /// A string literal whose length has a `prefixBits`-bit prefix, the bit above it saying Huffman;
    /// one announced longer than `maximumLength` is refused before its bytes are waited for.
    static func readString(_ reader: inout QUICReader, prefixBits: Int, maximumLength: Int = .max) throws(QUICError) -> String {
        guard reader.remaining > 0 else { throw .truncated }
        let huffman = reader.bytes[reader.offset] & UInt8(1 << prefixBits) != 0
        let length = try readInteger(&reader, prefixBits: prefixBits)
        guard length <= UInt64(maximumLength) else { throw .malformed("a QPACK string of \(length) bytes, past \(maximumLength)") }
        guard length <= UInt64(reader.remaining) else { throw .truncated }
        let raw = try reader.readBytes(Int(length))
        return huffman ? try huffmanDecoded(raw) : String(decoding: raw, as: UTF8.self)
    }

    /// Huffman-coded bytes decoded with HPACK's code (RFC 7541 Appendix B, which QPACK uses too),
    /// through NIOHPACK's public decoder: the bytes go in as the value of a literal HPACK field (NIOHPACK
    /// keeps its Huffman decoder internal; this way no second copy of the code table exists here).
    private static func huffmanDecoded(_ coded: [UInt8]) throws(QUICError) -> String {
        var block = ByteBuffer()
        block.writeBytes([0x00, 0x01, 0x78])  // literal without indexing, name "x"
        var length: [UInt8] = []
        appendInteger(UInt64(coded.count), prefixBits: 7, flags: 0x80, to: &length)  // Huffman-coded value
        block.writeBytes(length)
        block.writeBytes(coded)
        var decoder = HPACKDecoder(allocator: ByteBufferAllocator())
        do {
            let headers = try decoder.decodeHeaders(from: &block)
            guard let value = headers.first?.value else { throw QUICError.malformed("bad Huffman coding") }
            return value
        } catch {
            throw .malformed("bad Huffman coding")
        }
    }
}
