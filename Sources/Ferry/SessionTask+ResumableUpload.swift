import FerryEngine
import Foundation
import NIOCore

extension SessionTask {
    /// An upload's transfer with the resumable-upload protocol (`Request/resumableUpload`): nil when it
    /// does not apply (a streamed body, the option off) or the server does not speak the protocol, and
    /// the plain upload runs instead. An interruption the engine cannot resume by itself fails the task
    /// with resume data for ``Session/uploadTask(withResumeData:)`` (file uploads).
    func transferResumableUpload(_ request: Request, deadline: NIODeadline) async throws -> TransferResult? {
        guard request.resumableUpload, case .upload(let source) = work else { return nil }
        let body: ResumableUploader.Body
        var resumption: UploadResumption?
        var filePath = ""
        switch source {
        case .data(let data):
            body = .bytes(ByteBuffer(bytes: data))
        case .file(let url, let saved):
            // The same checks (and errors) as a plain file upload.
            guard case .stream(let length?, _) = try TransportRequestBody.file(path: url.path) else { return nil }
            body = .file(path: url.path, length: length)
            resumption = saved
            filePath = url.path
        case .stream:
            return nil
        }
        let session = self.session
        locked.withLock { $0.bytesExpectedToSend = body.length }
        let progress = uploadProgress()
        var events = ResumableUploader.Events()
        events.gate = gate
        events.didSend = { [self] delta, total, expected in
            locked.withLock { $0.bytesSent = total }
            progress?.report(delta: delta, total: total, expected: expected)
        }
        let uploader = ResumableUploader(transport: session.transport)
        let outcome: ResumableUploader.Outcome
        do {
            outcome = try await uploader.upload(
                request,
                body: body,
                resumingFrom: resumption,
                filePath: filePath,
                deadline: deadline,
                events: events
            )
        } catch let error as FerryError {
            // Cancelled for good (no resume data asked for): the server may free the upload (DELETE).
            if error.code == .cancelled, let state = error.resumeData?.upload,
                locked.withLock({ $0.machine.isDiscarding })
            {
                // This task is cancelled, so the DELETE goes from a task of its own.
                await Task.detached { await uploader.cancel(state, deadline: .now() + .seconds(5)) }.value
            }
            throw error
        }
        guard case .finished(let result) = outcome else { return nil }
        let response = received(status: result.status, headers: result.headers, request: result.finalRequest)
        locked.withLock { $0.bytesReceived += Int64(result.body.readableBytes) }
        if let dataDelegate = dataDelegate(), let dataTask = self as? DataTask {
            let disposition = await session.queue.perform {
                await dataDelegate.session(session, dataTask: dataTask, didReceive: response)
            }
            if case .cancel = disposition {
                throw FerryError(.cancelled, "the delegate cancelled the task at its response")
            }
            if result.body.readableBytes > 0 {
                let bytes = Data(result.body.readableBytesView)
                await session.queue.perform {
                    await dataDelegate.session(session, dataTask: dataTask, didReceive: bytes)
                }
            }
        }
        return .data(result)
    }
}
