import FerryEngine
import Foundation
import NIOCore
import Synchronization

extension SessionTask {
    /// How this task uses the session's HTTP cache: a data task under its request's cache policy (the
    /// configuration's `requestCachePolicy` when the request keeps the default), asking its delegate's
    /// willCacheResponse before storing; other tasks do not read or fill the cache, as with URLSession.
    func cacheUse() -> CacheUse? {
        guard case .data = work, session.transport.cache != nil, let request = originalRequest else { return nil }
        let policy =
            request.cachePolicy == .useProtocolCachePolicy
            ? session.configuration.requestCachePolicy : request.cachePolicy
        guard let delegate = dataDelegate(), let dataTask = self as? DataTask else { return CacheUse(policy: policy) }
        let session = self.session
        return CacheUse(policy: policy) { proposed in
            await session.queue.perform {
                await delegate.session(session, dataTask: dataTask, willCacheResponse: proposed)
            }
        }
    }

    /// A data or upload task's transfer: the body is sent, the response goes to the delegate (or is
    /// collected for an async call), and the delegate may turn it into a download. `request` asks for
    /// compressed bodies already (``transfer()`` adds Accept-Encoding).
    func transferData(_ request: Request, deadline: NIODeadline) async throws -> TransferResult {
        let session = self.session
        if let resumable = try await transferResumableUpload(request, deadline: deadline) { return resumable }
        let body = try await uploadBody()
        let dataDelegate = dataDelegate()
        let becameDownload = Mutex<DownloadTask?>(nil)

        var hooks = DataLoader.Hooks()
        hooks.decodesContent = true
        hooks.gate = gate
        hooks.willRedirect = redirectDecision()
        hooks.didReceiveChallenge = challengeAnswer()
        if body != nil {
            // Sent again (a 307 or 308 redirect, an answered 401): bytes and files are read again from
            // the start, a stream is asked of the delegate again (URLSession's needNewBodyStream).
            hooks.newBodyStream = { [self] in try? await uploadBody(again: true) }
        }
        if case .handler = route { hooks.collect = true } else { hooks.collect = false }
        hooks.didReceiveResponse = { [self] status, headers, finalRequest in
            let response = received(status: status, headers: headers, request: finalRequest)
            guard let dataDelegate, let dataTask = self as? DataTask else { return .allow }
            let disposition = await session.queue.perform {
                await dataDelegate.session(session, dataTask: dataTask, didReceive: response)
            }
            switch disposition {
            case .allow:
                return .allow
            case .cancel:
                return .cancel
            case .becomeStream:
                guard case .delegates = route else {
                    throw FerryError(
                        .invalidOperation,
                        "becomeStream needs a task whose events go to a delegate; an async call or a completion handler cannot receive a stream task",
                        failingURL: finalRequest.url.absoluteString
                    )
                }
                return .becomeStream
            case .becomeDownload:
                let download = session.adoptAsDownload(self)
                becameDownload.withLock { $0 = download }
                await session.queue.perform {
                    await dataDelegate.session(session, dataTask: dataTask, didBecome: download)
                }
                return .becomeDownload(path: download.reserveFilePath(), events: download.downloadEvents())
            }
        }
        let coalescer = dataDelegate.flatMap { delegate in
            (self as? DataTask).map { dataTask in
                DataCoalescer(queue: session.queue) { data in
                    await delegate.session(session, dataTask: dataTask, didReceive: data)
                }
            }
        }
        hooks.didReceive = { [self] chunk in
            locked.withLock { $0.bytesReceived += Int64(chunk.readableBytes) }
            await coalescer?.append(chunk)
        }

        var loader = DataLoader(transport: session.transport)
        loader.maximumRedirects = Session.maximumRedirects
        // transfer() checked the request before it waited for the network.
        loader.validatesRequest = false
        switch try await loader.perform(request, body: body, deadline: deadline, hooks: hooks) {
        case .loaded(let loaded):
            return .data(loaded)
        case .downloaded(let downloaded):
            guard let download = becameDownload.withLock({ $0 }) else {
                preconditionFailure("a download result without a download task")
            }
            return .handedOver(download, downloaded)
        case .stream(let connection, let head):
            let stream = session.adoptAsStream(self, url: head.finalRequest.url)
            if let dataDelegate, let dataTask = self as? DataTask {
                await session.queue.perform {
                    await dataDelegate.session(session, dataTask: dataTask, didBecome: stream)
                }
            }
            return .handedOverToStream(stream, connection)
        }
    }

    /// Delivers upload progress to the delegate (didSendBodyData), coalesced; nil without a delegate.
    func uploadProgress() -> ProgressCoalescer? {
        let session = self.session
        return taskDelegateForEvents().map { delegate in
            ProgressCoalescer(queue: session.queue) { [self] pending in
                await delegate.session(
                    session,
                    task: self,
                    didSendBodyData: pending.delta,
                    totalBytesSent: pending.total,
                    totalBytesExpectedToSend: pending.expected
                )
            }
        }
    }

    /// The request body of an upload, counted for progress (didSendBodyData).
    /// `again`: for sending the request again; the count of bytes sent starts over.
    private func uploadBody(again: Bool = false) async throws -> TransportRequestBody? {
        guard case .upload(let source) = work else { return nil }
        let session = self.session
        let raw: (length: Int64?, stream: TransportBodyStream)
        switch source {
        case .data(let data):
            raw = (Int64(data.count), TransportBodyStream(DataChunks(data: data)))
        case .file(let url, _):
            guard case .stream(let length, let stream) = try TransportRequestBody.file(path: url.path) else {
                preconditionFailure("a file body is a stream")
            }
            raw = (length, stream)
        case .stream:
            let delegate = taskDelegateForEvents()
            let provided = await session.queue.perform { [self] in
                await delegate?.session(session, needNewBodyStreamFor: self)
            }
            guard let provided else {
                throw FerryError(
                    .invalidOperation,
                    "uploadTask(withStreamedRequest:) needs a delegate that returns a body from needNewBodyStreamFor",
                    failingURL: originalRequest?.url.absoluteString
                )
            }
            raw = (provided.length, provided.stream)
        }
        let expected = raw.length ?? Session.transferSizeUnknown
        locked.withLock { state in
            state.bytesExpectedToSend = expected
            if again { state.bytesSent = 0 }
        }
        let progress = uploadProgress()
        let counted = raw.stream.map { @Sendable [self] (chunk: ByteBuffer) -> ByteBuffer in
            let delta = Int64(chunk.readableBytes)
            let total = locked.withLock { state in
                state.bytesSent += delta
                return state.bytesSent
            }
            progress?.report(delta: delta, total: total, expected: expected)
            return chunk
        }
        return .stream(length: raw.length, TransportBodyStream(counted))
    }
}
