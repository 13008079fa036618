import NIOCore

/// Copies response content read over TLS into 64 KiB buffers of its own, for the reader: used by
/// ``HTTP2Stream`` and by ``HTTP1ConnectionHandler`` over TLS.
///
/// Why copy: content arrives as slices of NIOSSL's plaintext buffer, which NIOSSL decrypts its next read
/// into. While a reader still holds a slice, that write copies NIOSSL's buffer whole (its capacity,
/// which grows to hold a loop turn's reads, not just the bytes left): 20–30 % of the CPU samples of a
/// 1 GiB https download went to that memmove. Copying just the content, once, while it is in the cache,
/// leaves NIOSSL's buffer unshared. Four interleaved runs of 1 GiB from nginx over h2: `ferry get` into
/// tmpfs 0.53–0.64 s of user CPU copying against 0.97–1.14 s with slices (curl 0.48–0.63 s), discarded
/// 0.57–0.69 s against 0.75–0.91 s. (An earlier try kept the copier in a struct copied out of a
/// dictionary, so every write to its buffer copied that too, and measured no gain: keep it where it is
/// changed in place.)
struct ContentCopier {
    static let bufferSize = 64 << 10
    private var buffer: ByteBuffer?

    /// Whether nothing is held.
    var isEmpty: Bool { buffer == nil }

    /// Copies `content` (nothing for an empty one). Returns the buffer it filled when `content` did not fit, for the reader. A new
    /// buffer is no larger than `remaining` (the bytes still to come, when known) needs.
    mutating func copy(_ content: ByteBuffer, allocator: ByteBufferAllocator, remaining: Int? = nil) -> ByteBuffer? {
        let count = content.readableBytes
        guard count > 0 else { return nil }
        var full: ByteBuffer?
        if buffer != nil, buffer!.writableBytes < count {
            full = buffer
            buffer = nil
        }
        if buffer == nil {
            buffer = allocator.buffer(capacity: max(count, min(Self.bufferSize, remaining ?? Self.bufferSize)))
        }
        buffer!.writeImmutableBuffer(content)
        return full
    }

    /// What is held, for the reader; nothing is held after.
    mutating func take() -> ByteBuffer? {
        defer { buffer = nil }
        return buffer
    }
}
