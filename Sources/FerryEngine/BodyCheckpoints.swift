import FerryCore
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix

/// The checkpoints of one body as it is written (``Downloader/Checkpoint``): when each falls due, which
/// ones are only recorded and which are made durable, and the one sync at a time that runs beside the
/// transfer.
///
/// A checkpoint's fdatasync and record run on a pool thread while the body goes on arriving (waiting for
/// the disk stalled the transfer by about a fifth at 1 GB/s). D1 holds: what is recorded was written
/// before the sync began. One checkpoint at a time, in order, and none outlives the body
/// (``finish()``: a late record must not overwrite what the caller records next).
struct BodyCheckpoints {
    private let checkpoint: Downloader.Checkpoint
    private var last: (bytes: Int64, time: NIODeadline)
    private var lastDurable: NIODeadline
    private var syncing: Task<Void, any Error>?
    private let syncs = NIOLockedValueBox(CheckpointSyncs())

    /// Checkpoints for a body whose sink holds `bytes` already.
    init(_ checkpoint: Downloader.Checkpoint, startingAt bytes: Int64) {
        self.checkpoint = checkpoint
        let now = NIODeadline.now()
        last = (bytes, now)
        lastDurable = now
    }

    /// Bytes went into `sink`: takes a checkpoint if one is due. `snapshot` is the resume data that
    /// describes the sink now.
    mutating func wrote(to sink: FileSink, snapshot: () -> ResumeData?) async throws {
        let now = NIODeadline.now()
        guard sink.bytesAccepted - last.bytes >= checkpoint.everyBytes
            || now - last.time >= .nanoseconds(Int64(checkpoint.everySeconds * 1e9))
        else { return }
        last = (sink.bytesAccepted, now)
        if now - lastDurable < .nanoseconds(Int64(checkpoint.durableEverySeconds * 1e9)),
            let recordWritten = checkpoint.recordWritten
        {
            try sink.flush()
            if let snapshot = snapshot() { try recordWritten(snapshot) }
            return
        }
        lastDurable = now
        let pending = CheckpointSyncs.Pending(point: try sink.durabilityPoint(), snapshot: snapshot())
        // The disk is still busy with the last one: the body goes on (waiting here held a 1 GB/s
        // transfer to disk speed) and this checkpoint is handed to the running sync, which makes it
        // durable next, so a body that pauses now does not leave it unrecorded.
        guard syncs.withLockedValue({ $0.start(pending) }) else { return }
        try await syncing?.value
        let (syncs, checkpoint) = (syncs, checkpoint)
        syncing = Task {
            var next: CheckpointSyncs.Pending? = pending
            while let current = next {
                do {
                    try await NIOThreadPool.singleton.runIfActive {
                        try checkpoint.synchronize(current.point, current.snapshot)
                    }
                } catch {
                    syncs.withLockedValue { $0.stop() }
                    throw error
                }
                next = syncs.withLockedValue { $0.next() }
            }
        }
    }

    /// Waits for the running sync, if any; its error, if it failed.
    func finish() async throws {
        try await syncing?.value
    }
}
