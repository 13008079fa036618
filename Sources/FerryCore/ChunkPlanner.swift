/// The plan of a parallel chunked upload (SPEC S4.2–S4.5), without I/O: which piece of the file to send
/// next and how large it is.
///
/// - The first chunk is a fixed-size speed probe, sent alone; its throughput sizes the others.
/// - Later chunks aim at ``Options/targetChunkSeconds`` at the measured per-connection throughput (a
///   moving average of finished chunks), within ``Options/minimumChunkSize`` and
///   ``Options/maximumChunkSize``; near the end they shrink so the last round keeps every slot busy.
/// - At most ``Options/maximumChunksInFlight`` chunks are sent at once: a cap of its own, apart from the
///   connection limit (a chunk also waits for a connection).
/// - A failed chunk goes back at the end of the queue, after the chunks not yet sent; after
///   ``Options/maximumAttempts`` failures the upload fails.
/// - The upload is done when every chunk has succeeded.
public struct ChunkPlanner: Sendable {
    /// The knobs.
    public struct Options: Sendable, Hashable, Codable {
        /// The probe's size: small, because nothing else is sent while it runs (64 KiB).
        public var probeSize: Int64 = 64 << 10
        /// The smallest chunk (the last may be smaller).
        public var minimumChunkSize: Int64 = 256 << 10
        /// The largest chunk.
        public var maximumChunkSize: Int64 = 64 << 20
        /// How long a chunk should take at the measured throughput.
        public var targetChunkSeconds = 2.0
        /// Chunks sent at once.
        public var maximumChunksInFlight = 4
        /// Tries per chunk before the upload fails.
        public var maximumAttempts = 4

        /// The defaults.
        public init() {}
    }

    /// A piece of the file.
    public struct Chunk: Sendable, Hashable {
        /// Its number, in the order chunks were made (not necessarily their order in the file).
        public var index: Int
        /// The first byte.
        public var offset: Int64
        /// Bytes.
        public var length: Int64
        /// Failed tries so far.
        public var failures = 0
    }

    /// What a failure leads to.
    public enum FailureOutcome: Sendable, Hashable {
        /// Queued again, at the end.
        case requeued
        /// Tried ``Options/maximumAttempts`` times: the upload fails.
        case exhausted
    }

    /// The knobs in force.
    public let options: Options
    /// The file's length.
    public let length: Int64
    /// The bytes no chunk covers yet, in file order.
    private var gaps: [Range<Int64>]
    /// Chunks this plan made itself (the first is the probe); stored ones it was given do not count.
    private var madeHere = 0
    private var made: [Chunk] = []
    private var retryQueue: [Int] = []
    private var inFlight: Set<Int> = []
    private var succeeded: Set<Int> = []
    /// The measured throughput of one chunk's connection, bytes a second (nil until the probe is back).
    public private(set) var throughput: Double?

    /// A plan for `length` bytes.
    /// - Parameter stored: pieces the server holds already (an upload continued after a restart): they
    ///   become succeeded chunks, numbered 0 up in the given order, and only the bytes between them are
    ///   planned. Pieces that overlap or lie outside the file are all ignored: the plan starts over.
    public init(length: Int64, options: Options = Options(), stored: [Range<Int64>] = []) {
        self.length = max(0, length)
        var options = options
        options.maximumChunksInFlight = max(1, options.maximumChunksInFlight)
        options.minimumChunkSize = max(1, options.minimumChunkSize)
        options.maximumChunkSize = max(options.minimumChunkSize, options.maximumChunkSize)
        options.probeSize = max(1, options.probeSize)
        self.options = options
        let whole: Range<Int64> = 0..<self.length
        let sorted = stored.sorted { $0.lowerBound < $1.lowerBound }
        let usable = sorted.allSatisfy { !$0.isEmpty && whole.contains($0.lowerBound) && $0.upperBound <= whole.upperBound }
            && zip(sorted, sorted.dropFirst()).allSatisfy { $0.upperBound <= $1.lowerBound }
        guard usable, !stored.isEmpty else {
            gaps = whole.isEmpty ? [] : [whole]
            return
        }
        var gaps: [Range<Int64>] = []
        var position: Int64 = 0
        for piece in sorted {
            if piece.lowerBound > position { gaps.append(position..<piece.lowerBound) }
            position = piece.upperBound
        }
        if position < self.length { gaps.append(position..<self.length) }
        self.gaps = gaps
        for piece in stored {
            made.append(Chunk(index: made.count, offset: piece.lowerBound, length: Int64(piece.count)))
            succeeded.insert(made.count - 1)
        }
    }

    /// Bytes no chunk covers yet.
    private var unplanned: Int64 { gaps.reduce(0) { $0 + Int64($1.count) } }

    /// Chunks being sent.
    public var inFlightCount: Int { inFlight.count }

    /// Whether every chunk has succeeded (an empty file has one empty chunk).
    public var isComplete: Bool {
        gaps.isEmpty && inFlight.isEmpty && retryQueue.isEmpty && !made.isEmpty
    }

    /// The chunks in file order, once complete (their results are concatenated in this order).
    public var chunksInFileOrder: [Chunk] { made.sorted { $0.offset < $1.offset } }

    /// The chunk numbered `index` (by ``next()`` or from the stored ones).
    public func chunk(_ index: Int) -> Chunk { made[index] }

    /// The next chunk to send now, or nil: the cap is reached, the probe is not back yet, or nothing is
    /// left to start.
    public mutating func next() -> Chunk? {
        guard inFlight.count < options.maximumChunksInFlight else { return nil }
        if throughput == nil && madeHere > 0 {
            // The probe is out (nothing else starts before its throughput is known), or failed: again.
            return inFlight.isEmpty ? retry() : nil
        }
        if let gap = gaps.first {
            let size = madeHere == 0 ? min(options.probeSize, Int64(gap.count)) : nextSize(in: gap)
            let chunk = Chunk(index: made.count, offset: gap.lowerBound, length: size)
            made.append(chunk)
            madeHere += 1
            if size == gap.count { gaps.removeFirst() } else { gaps[0] = (gap.lowerBound + size)..<gap.upperBound }
            inFlight.insert(chunk.index)
            return chunk
        }
        if made.isEmpty {
            // An empty file: one empty chunk.
            let chunk = Chunk(index: 0, offset: 0, length: 0)
            made.append(chunk)
            madeHere += 1
            inFlight.insert(0)
            return chunk
        }
        return retry()
    }

    /// The first chunk of the retry queue, now in flight.
    private mutating func retry() -> Chunk? {
        guard !retryQueue.isEmpty else { return nil }
        let index = retryQueue.removeFirst()
        inFlight.insert(index)
        return made[index]
    }

    /// A chunk was stored by the server, `seconds` after it started.
    public mutating func succeeded(_ index: Int, seconds: Double) {
        inFlight.remove(index)
        succeeded.insert(index)
        guard seconds > 0, made[index].length > 0 else { return }
        let sample = Double(made[index].length) / seconds
        throughput = throughput.map { 0.5 * $0 + 0.5 * sample } ?? sample
    }

    /// A chunk failed: it goes back at the end of the queue, or the upload fails.
    public mutating func failed(_ index: Int) -> FailureOutcome {
        inFlight.remove(index)
        made[index].failures += 1
        guard made[index].failures < options.maximumAttempts else { return .exhausted }
        retryQueue.append(index)
        return .requeued
    }

    /// The size of the next chunk, which starts `gap`.
    private func nextSize(in gap: Range<Int64>) -> Int64 {
        let remaining = unplanned
        let here = Int64(gap.count)
        let wanted = Int64((throughput ?? 0) * options.targetChunkSeconds)
        var size = max(options.minimumChunkSize, min(options.maximumChunkSize, wanted))
        // The last round: share what is left among the slots, so no chunk runs alone at the end.
        let share = (remaining + Int64(options.maximumChunksInFlight) - 1) / Int64(options.maximumChunksInFlight)
        size = min(size, max(options.minimumChunkSize, share))
        // Do not leave a sliver smaller than the minimum behind in this gap.
        if here - size < options.minimumChunkSize { size = here }
        return min(size, here)
    }
}
