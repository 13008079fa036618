import FerryEngine
public import Foundation
import NIOCore

#if canImport(Glibc)
import Glibc
#endif

extension SessionTask {
    /// A download's transfer: to a temporary file (or the partial file of the resume data), or to a
    /// destination (its part file, or the device or FIFO itself).
    func transferDownload(
        _ request: Request,
        resumeData: ResumeData?,
        destination: DownloadDestination?,
        deadline: NIODeadline
    ) async throws
        -> TransferResult
    {
        let path = resumeData?.partialFilePath ?? destination?.writePath ?? reserveFilePath()
        // One writer per part file, held until the file is in place. Taken before the path is this
        // task's to clean up: a download refused here must not remove the holder's part file.
        var lock: PartFileLock?
        if let destination, !destination.isSpecial { lock = try await PartFileLock.acquire(path) }
        defer { lock?.release() }
        locked.withLock { $0.filePath = path }
        if resumeData == nil, let destination, !destination.isSpecial {
            truncate(path, 0)
        }
        // The engine's one driver, as ferryd and the CLI use it: no tries again (URLSession has none),
        // no checkpoints, delivery to the destination if there is one.
        var driver = DownloadDriver(transport: session.transport)
        driver.downloader.maximumRedirects = Session.maximumRedirects
        var plan = DownloadDriver.Plan(request: request, path: path, deadline: deadline, events: downloadEvents())
        plan.resumeData = resumeData
        plan.destination = destination
        let result: Downloader.Result
        switch try await driver.run(plan) {
        case .finished(let finished):
            result = finished
        case .refused(_, let error), .tryLater(_, let error):
            throw error
        }
        if destination != nil { locked.withLock { $0.filePath = nil } }
        _ = received(status: result.status, headers: result.headers, request: result.finalRequest)
        locked.withLock { state in
            state.bytesReceived = result.length
            state.bytesExpectedToReceive = result.length
        }
        return .download(result)
    }

    /// A new temporary file for this task's download, remembered for clean-up.
    func reserveFilePath() -> String {
        let path = session.newDownloadPath()
        locked.withLock { $0.filePath = path }
        return path
    }

    /// The engine's download callbacks, wired to this task's counters and delegate.
    func downloadEvents() -> Downloader.Events {
        let session = self.session
        var events = Downloader.Events()
        events.gate = gate
        events.willRedirect = redirectDecision()
        events.didReceiveChallenge = challengeAnswer()
        guard let download = self as? DownloadTask else { return events }
        let delegate = downloadDelegate()
        let progress = delegate.map { delegate in
            ProgressCoalescer(queue: session.queue) { pending in
                await delegate.session(
                    session,
                    downloadTask: download,
                    didWriteData: pending.delta,
                    totalBytesWritten: pending.total,
                    totalBytesExpectedToWrite: pending.expected
                )
            }
        }
        events.didResume = { offset, total in
            guard let delegate else { return }
            session.queue.enqueue {
                await delegate.session(
                    session,
                    downloadTask: download,
                    didResumeAtOffset: offset,
                    expectedTotalBytes: total ?? Session.transferSizeUnknown
                )
            }
        }
        events.didWrite = { [self] written, total, expected in
            let expected = expected ?? Session.transferSizeUnknown
            locked.withLock { state in
                state.bytesReceived = total
                state.bytesExpectedToReceive = expected
            }
            progress?.report(delta: written, total: total, expected: expected)
        }
        return events
    }

    /// Marks this (new) download task as running the transfer its data task started.
    func adoptRunningTransfer(from dataTask: SessionTask) {
        let (transfer, start, delegate) = dataTask.locked.withLock { ($0.transfer, $0.startDate, $0.delegate) }
        locked.withLock { state in
            _ = state.machine.resume()
            state.transfer = transfer
            state.startDate = start
            state.delegate = delegate
        }
    }
}

/// A data task (URLSessionDataTask): the response body goes to the delegate's didReceive data, or to
/// the caller of an async call.
public class DataTask: SessionTask, @unchecked Sendable {}

/// An upload task (URLSessionUploadTask): a data task with a request body from data, a file or a stream.
public final class UploadTask: DataTask, @unchecked Sendable {
    /// Cancels a resumable upload of a file (`Request/resumableUpload`) and returns resume data for
    /// ``Session/uploadTask(withResumeData:)`` (also after the process restarts), or nil when it cannot
    /// be continued: not started, finished, not a file, or the server does not speak the protocol.
    public func cancelByProducingResumeData() async -> Data? {
        cancel(produceResumeData: true)
        await waitUntilEnded()
        guard let resumeData = error?.resumeData, resumeData.upload != nil, !resumeData.partialFilePath.isEmpty else {
            return nil
        }
        return resumeData.encoded()
    }

    /// ``cancelByProducingResumeData()`` with a completion handler, called from another task.
    public func cancel(byProducingResumeData completionHandler: @escaping @Sendable (Data?) -> Void) {
        Task { completionHandler(await cancelByProducingResumeData()) }
    }
}

/// A download task (URLSessionDownloadTask): the body goes to a temporary file handed to
/// didFinishDownloadingTo.
public final class DownloadTask: SessionTask, @unchecked Sendable {
    /// Cancels the download and returns resume data for ``Session/downloadTask(withResumeData:)`` (also
    /// after the process restarts), or nil when it cannot be continued: not started, already finished,
    /// or the server gave no validator (ETag or Last-Modified) to make continuing safe.
    public func cancelByProducingResumeData() async -> Data? {
        cancel(produceResumeData: true)
        await waitUntilEnded()
        return error?.resumeData?.encoded()
    }

    /// ``cancelByProducingResumeData()`` with a completion handler, called from another task.
    public func cancel(byProducingResumeData completionHandler: @escaping @Sendable (Data?) -> Void) {
        Task { completionHandler(await cancelByProducingResumeData()) }
    }
}
