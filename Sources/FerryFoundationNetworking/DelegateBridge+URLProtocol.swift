import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The delegate calls of a task loaded by a `URLProtocol` (``URLProtocolLoader``): the same calls, on the
/// same queue, as the engine's tasks get, made from Apple's types directly.
extension DelegateBridge {
    /// The response's head: the data delegate's disposition (allow when there is none to ask).
    func protocolResponse(_ task: URLSessionTask, _ response: URLResponse) async -> URLSession.ResponseDisposition {
        guard !hasCompletion(task), let delegate = dataDelegate(of: task), let dataTask = task as? URLSessionDataTask else { return .allow }
        let owner = task.owner
        return await delegate.urlSession(owner, dataTask: dataTask, didReceive: response)
    }

    /// Some of a data task's body, for its delegate.
    func protocolData(_ task: URLSessionTask, _ data: Data) async {
        guard let dataTask = task as? URLSessionDataTask else { return }
        await handOver(data, of: dataTask)
    }

    /// A download's progress, for its delegate.
    func protocolWrote(_ task: URLSessionTask, _ written: Int64, _ total: Int64, _ expected: Int64) async {
        guard let delegate = downloadDelegate(of: task), let download = task as? URLSessionDownloadTask else { return }
        let owner = task.owner
        let carried = Carried(value: (delegate, download))
        await onQueue(owner) {
            carried.value.0.urlSession(owner, downloadTask: carried.value.1, didWriteData: written, totalBytesWritten: total, totalBytesExpectedToWrite: expected)
        }
    }

    /// A redirect: the request to load next (nil: the delegate refused, and the redirect is the answer).
    /// Without a delegate, or for a response that is not HTTP, the redirect is followed.
    func protocolRedirect(_ task: URLSessionTask, _ response: URLResponse, _ request: URLRequest) async -> URLRequest? {
        guard let delegate = delegate(of: task), let http = response as? HTTPURLResponse else { return request }
        let owner = task.owner
        return await delegate.urlSession(owner, task: task, willPerformHTTPRedirection: http, newRequest: request)
    }

    /// A challenge from the protocol: the delegate's answer goes to the challenge's sender, as Apple's
    /// loader passes it on (default handling when there is no delegate).
    func protocolChallenge(_ task: URLSessionTask, _ challenge: URLAuthenticationChallenge) async {
        var disposition = URLSession.AuthChallengeDisposition.performDefaultHandling
        var credential: URLCredential?
        if let delegate = delegate(of: task) {
            let owner = task.owner
            (disposition, credential) = await delegate.urlSession(owner, task: task, didReceive: challenge)
        }
        guard let sender = challenge.sender else { return }
        switch disposition {
        case .useCredential:
            if let credential { sender.use(credential, for: challenge) } else { sender.continueWithoutCredential(for: challenge) }
        case .performDefaultHandling: sender.performDefaultHandling(for: challenge)
        case .cancelAuthenticationChallenge: sender.cancel(challenge)
        case .rejectProtectionSpace: sender.rejectProtectionSpaceAndContinue(with: challenge)
        @unknown default: sender.performDefaultHandling(for: challenge)
        }
    }

    /// A streamed upload's body from the delegate's `needNewBodyStream`.
    func needNewBodyStream(_ task: URLSessionTask) async -> InputStream? {
        guard let delegate = delegate(of: task) else { return nil }
        let owner = task.owner
        return await delegate.urlSession(owner, needNewBodyStreamForTask: task)
    }
}
