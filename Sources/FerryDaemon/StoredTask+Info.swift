import FerryCore
import FerryStore

extension StoredTask {
    /// The task as the control API shows it.
    var info: BackgroundTaskInfo {
        var info = BackgroundTaskInfo(
            session: session,
            taskIdentifier: taskIdentifier,
            kind: kind,
            state: state,
            originalRequest: originalRequest,
            currentRequest: currentRequest,
            taskDescription: taskDescription,
            priority: priority,
            isDiscretionary: isDiscretionary,
            bytesReceived: bytesReceived,
            expectedLength: expectedLength,
            bytesSent: bytesSent,
            statusCode: responseStatus,
            responseHeaders: responseHeaders,
            error: error,
            destination: options.destination
        )
        info.allowsMeteredNetwork = allowsMetered
        info.allowsConstrainedNetwork = allowsConstrained
        info.bandwidthLimit = bandwidthLimit
        info.earliestBeginTime = earliestBegin?.timeIntervalSince1970
        info.httpVersion = networkProtocol.map(BackgroundTaskInfo.httpVersion(ofProtocol:))
        return info
    }

    /// The host the task's next request goes to (the policy's loopback rule).
    var host: String? { (currentRequest ?? originalRequest).url.host }

    var key: TaskKey { TaskKey(session: session, identifier: taskIdentifier) }

    /// Resume data for the bytes recorded on disk, when a validator makes continuing safe; for a
    /// resumable upload, its upload resource and offset.
    var resumeData: ResumeData? {
        if kind == .upload {
            guard let uploadState, let bodyFile else { return nil }
            return ResumeData(
                originalRequest: originalRequest,
                currentRequest: currentRequest ?? originalRequest,
                bytesReceived: uploadState.offset,
                expectedLength: uploadState.length,
                entityTag: nil,
                lastModified: nil,
                partialFilePath: bodyFile,
                upload: uploadState
            )
        }
        guard let partialPath, bytesReceived > 0,
            RangeResumption.validator(entityTag: entityTag, lastModified: lastModified) != nil
        else { return nil }
        return ResumeData(
            originalRequest: originalRequest,
            currentRequest: currentRequest ?? originalRequest,
            bytesReceived: bytesReceived,
            expectedLength: expectedLength,
            entityTag: entityTag,
            lastModified: lastModified,
            partialFilePath: partialPath,
            segments: segments
        )
    }
}
