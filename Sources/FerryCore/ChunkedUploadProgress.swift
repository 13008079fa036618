/// Where a background upload in tus chunks stands (``ControlAPI/TaskCreation/chunks``): the chunks the
/// server has stored, each recorded as soon as the server confirms it, so that a restarted ferryd sends
/// only the others and then concatenates them all in file order.
public struct ChunkedUploadProgress: Sendable, Hashable, Codable {
    /// A piece of the file the server holds as a finished partial upload.
    public struct Chunk: Sendable, Hashable, Codable {
        /// Its first byte in the file.
        public var offset: Int64
        /// Its bytes.
        public var length: Int64
        /// The partial upload holding it (the server's `Location`).
        public var location: String

        /// A stored chunk.
        public init(offset: Int64, length: Int64, location: String) {
            self.offset = offset
            self.length = length
            self.location = location
        }
    }

    /// Chunks sent at once.
    public var chunksInFlight: Int
    /// The file as it was when the chunks were stored: its length and modification time (seconds since
    /// 1970). A file that differs now is sent again from the start: its stored chunks are not its bytes.
    public var fileLength: Int64?
    /// See ``fileLength``.
    public var fileModified: Double?
    /// The chunks stored so far, in the order they were stored.
    public var stored: [Chunk]

    /// An upload that has stored nothing yet.
    public init(chunksInFlight: Int) {
        self.chunksInFlight = chunksInFlight
        self.stored = []
    }

    /// Bytes of the file the server holds.
    public var storedBytes: Int64 { stored.reduce(0) { $0 + $1.length } }

    /// Whether the stored chunks belong to the file as it is now (same length and modification time).
    public func matches(fileLength length: Int64, modified: Double) -> Bool {
        fileLength == length && fileModified == modified
    }
}
