import FerryCore
import Foundation

/// A background task's side of the daemon's events: counters, progress to the delegate, the delivered
/// file and the completion.
extension SessionTask {
    /// Takes the daemon's view of a task made by an earlier process.
    func adopt(_ info: BackgroundTaskInfo) {
        locked.withLock { state in
            state.taskDescription = info.taskDescription
            state.currentRequest = info.currentRequest ?? info.originalRequest
            state.bytesReceived = info.bytesReceived
            state.bytesExpectedToReceive = info.expectedLength ?? Session.transferSizeUnknown
            state.bytesSent = info.bytesSent
            state.priority = Float(info.priority)
            switch info.state {
            case .running, .pending: _ = state.machine.resume()
            case .suspended: break
            case .completed: state.machine.finishedElsewhere()
            }
            if let status = info.statusCode {
                let url = (info.currentRequest ?? info.originalRequest).url
                state.response = Response(url: url, statusCode: status, headers: info.responseHeaders ?? Headers())
            }
        }
    }

    /// A progress event: counters, then the delegate (in order, after earlier events).
    func progressFromDaemon(_ event: BackgroundEvent) {
        let session = self.session
        switch event.kind {
        case .didWriteData:
            let total = event.totalBytes ?? 0
            let expected = event.totalBytesExpected ?? Session.transferSizeUnknown
            locked.withLock { state in
                state.bytesReceived = total
                state.bytesExpectedToReceive = expected
            }
            guard let download = self as? DownloadTask, let delegate = downloadDelegate() else { return }
            session.queue.enqueue {
                await delegate.session(
                    session,
                    downloadTask: download,
                    didWriteData: event.bytes ?? 0,
                    totalBytesWritten: total,
                    totalBytesExpectedToWrite: expected
                )
            }
        case .didSendBodyData:
            let total = event.totalBytes ?? 0
            let expected = event.totalBytesExpected ?? Session.transferSizeUnknown
            locked.withLock { state in
                state.bytesSent = total
                state.bytesExpectedToSend = expected
            }
            guard let delegate = taskDelegateForEvents() else { return }
            session.queue.enqueue {
                await delegate.session(
                    session,
                    task: self,
                    didSendBodyData: event.bytes ?? 0,
                    totalBytesSent: total,
                    totalBytesExpectedToSend: expected
                )
            }
        case .didResume:
            guard let download = self as? DownloadTask, let delegate = downloadDelegate() else { return }
            session.queue.enqueue {
                await delegate.session(
                    session,
                    downloadTask: download,
                    didResumeAtOffset: event.totalBytes ?? 0,
                    expectedTotalBytes: event.totalBytesExpected ?? Session.transferSizeUnknown
                )
            }
        default:
            return
        }
    }

    /// The task completed in the daemon (or cannot go on): the delegate hears didCompleteWithError once.
    func completeFromDaemon(error: FerryError?, info: BackgroundTaskInfo?) async {
        let first = locked.withLock { state -> Bool in
            if let info {
                state.bytesReceived = info.bytesReceived
                state.bytesSent = info.bytesSent
                if let status = info.statusCode {
                    let url = (info.currentRequest ?? info.originalRequest).url
                    state.currentRequest = info.currentRequest ?? state.currentRequest
                    state.response = Response(url: url, statusCode: status, headers: info.responseHeaders ?? Headers())
                }
            }
            guard !state.finished else { return false }
            state.machine.finishedElsewhere()
            return true
        }
        guard first else { return }
        markEnded(error: error)
        await deliverCompletion(error: error, result: nil, metrics: nil)
        finishSilently()
    }
}

extension DownloadTask {
    /// The daemon delivered the finished file: the delegate may move it during the call; whatever is
    /// left is removed when the event is acknowledged (S2.7, D2).
    func finishDownloadFromDaemon(info: BackgroundTaskInfo, location: URL) async {
        let session = self.session
        locked.withLock { state in
            state.bytesReceived = info.bytesReceived
            state.bytesExpectedToReceive = info.expectedLength ?? info.bytesReceived
            if let status = info.statusCode {
                let url = (info.currentRequest ?? info.originalRequest).url
                state.currentRequest = info.currentRequest ?? state.currentRequest
                state.response = Response(url: url, statusCode: status, headers: info.responseHeaders ?? Headers())
            }
        }
        let delegate = downloadDelegate()
        await session.queue.perform { [self] in
            await delegate?.session(session, downloadTask: self, didFinishDownloadingTo: location)
        }
    }
}
