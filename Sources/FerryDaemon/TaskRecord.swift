import FerryCore
import FerryEngine
import FerryStore
import Foundation

/// What a running transfer may write about its own task, handed to it by the ``Scheduler`` that owns the
/// task: its progress checkpoints (D1), its response, its final request and a resumable upload's
/// state. Never the task's state: only the Scheduler changes that, from the transfer's outcome.
struct TaskRecord: CheckpointSink {
    private let store: FerryStore
    let session: String
    let identifier: Int

    init(store: FerryStore, session: String, identifier: Int) {
        self.store = store
        self.session = session
        self.identifier = identifier
    }

    /// The task as stored now.
    func stored() throws -> StoredTask {
        try store.task(session: session, identifier: identifier)
    }

    /// A durable checkpoint: the partial file at `resumeData`'s path holds what it says (D1).
    func durable(_ resumeData: ResumeData) throws {
        try progress(
            at: resumeData.partialFilePath,
            bytes: resumeData.bytesReceived,
            expected: resumeData.expectedLength,
            entityTag: resumeData.entityTag,
            lastModified: resumeData.lastModified,
            segments: resumeData.segments
        )
    }

    /// Where the task's file is and how much of it counts.
    func progress(
        at path: String,
        bytes: Int64,
        expected: Int64?,
        entityTag: String?,
        lastModified: String?,
        segments: SegmentPlan? = nil
    ) throws {
        try store.recordProgress(
            session: session,
            identifier: identifier,
            partialPath: path,
            bytesReceived: bytes,
            expectedLength: expected,
            entityTag: entityTag,
            lastModified: lastModified,
            segments: segments
        )
    }

    /// The final response, and the request that got it (after redirects).
    func response(status: Int, headers: Headers, request: Request, bytesSent: Int64? = nil, protocolName: String? = nil) throws {
        try store.recordResponse(
            session: session,
            identifier: identifier,
            status: status,
            headers: headers,
            bytesSent: bytesSent,
            protocolName: protocolName
        )
        try store.setCurrentRequest(session: session, identifier: identifier, request: request)
    }

    /// An upload in tus chunks: the chunks the server has stored so far.
    func chunkedUpload(_ progress: ChunkedUploadProgress) throws {
        try store.recordChunkedUpload(session: session, identifier: identifier, progress: progress)
    }

    /// A resumable upload's state as the server confirmed it; nil: start a new upload next time.
    func uploadState(_ state: UploadResumption?) throws {
        try store.recordUploadState(session: session, identifier: identifier, state: state)
    }
}
