import FerryCore

/// The durable checkpoints of one download body (``Downloader/Checkpoint``): at most one sync runs at a
/// time, and a checkpoint that falls due while one runs waits for it, the latest replacing an earlier
/// one, instead of being dropped. A pure value, kept under the downloader's lock.
struct CheckpointSyncs: Sendable {
    /// A checkpoint taken and not yet durable: the file's bytes up to a length, and what to record.
    struct Pending: Sendable {
        let point: DurabilityPoint
        let snapshot: ResumeData?
    }

    private(set) var isSyncing = false
    private(set) var waiting: Pending?

    /// A checkpoint falls due. True: no sync runs, so the caller starts one for it. False: it waits for
    /// the running sync (replacing, and closing, one that waited already).
    mutating func start(_ pending: Pending) -> Bool {
        guard isSyncing else {
            isSyncing = true
            return true
        }
        waiting?.point.discard()
        waiting = pending
        return false
    }

    /// The running sync is done: the checkpoint to make durable next, if one waits; otherwise syncing
    /// stops.
    mutating func next() -> Pending? {
        guard let pending = waiting else {
            isSyncing = false
            return nil
        }
        waiting = nil
        return pending
    }

    /// The running sync failed: nothing more is synchronized (the download fails with its error).
    mutating func stop() {
        waiting?.point.discard()
        waiting = nil
        isSyncing = false
    }
}
