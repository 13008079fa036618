// One set of URLSession programs, compiled twice: against FoundationNetworking (SamenessOnFoundation)
// and against FerryFoundationNetworking (SamenessOnFerry, built with FERRY). Each program talks to a
// ferry-testserver and returns a transcript of what URLSession delivered: delegate calls in order with
// their arguments, completion-handler results, error codes, bytes and headers. The sameness tests
// (Tests/FerryFoundationNetworkingTests) compare the two transcripts.
import Foundation
#if FERRY
import FerryFoundationNetworking
#elseif canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Synchronization

/// The programs, by name; each takes the test server's plain origin (`http://127.0.0.1:PORT`).
public enum SamenessPrograms {
    public typealias Program = @Sendable (_ origin: String) async -> [String]

    public static let all: [(name: String, program: Program)] = core + urlProtocolPrograms + policyPrograms + matrixPrograms + responsePrograms

    static let core: [(name: String, program: Program)] = [
        ("a GET with a completion handler", getWithCompletionHandler),
        ("a 404 is a response, not an error", notFoundIsAResponse),
        ("a refused connection is cannotConnectToHost with the failing URL", refusedConnection),
        ("an unsupported scheme is unsupportedURL", unsupportedScheme),
        ("a POST with httpBody sends it", postWithHTTPBody),
        ("an upload from data with a completion handler", uploadFromData),
        ("an upload from a file with a completion handler", uploadFromFile),
        ("redirects are followed to the end", redirectsAreFollowed),
        ("a delegate that refuses a redirect gets the 302", refusedRedirect),
        ("a delegate that changes a redirect's request", changedRedirect),
        ("a data task's delegate calls, in order", dataTaskDelegateOrder),
        ("a response the delegate cancels ends with cancelled", responseDispositionCancel),
        ("a download task's delegate calls, in order", downloadTaskDelegateOrder),
        ("a download with a completion handler", downloadWithCompletionHandler),
        ("a Basic challenge answered by the delegate", basicChallengeAnswered),
        ("a Basic challenge without a delegate is the 401", basicChallengeWithoutDelegate),
        ("a cancelled running task ends with cancelled", cancelRunningTask),
        ("a stalled server is timedOut", stalledServerTimesOut),
        ("async data(from:)", asyncData),
        ("async download(from:)", asyncDownload),
        ("async data(from:) whose caller is cancelled ends with cancelled", asyncDataCancelled),
        ("a HEAD has no body", headHasNoBody),
        ("httpAdditionalHeaders reach the server", additionalHeaders),
        ("finishTasksAndInvalidate ends with didBecomeInvalid", finishAndInvalidate),
        ("delegate calls run on the delegate queue", delegateQueueIsUsed),
        ("task state, identifiers and byte counts", taskStateAndCounts),
        ("cookies set by a response are sent by the next request", cookiesGoBack),
        ("a request's own headers win over httpAdditionalHeaders", requestHeadersWin),
        ("a cancelled task's error carries the failing URL", cancelledErrorInfo),
        ("a download cancelled with resume data continues where it stopped", resumeData),
        ("a POST with httpBodyStream sends the stream", postWithBodyStream),
        ("a failed download's error carries resume data", failedDownloadResumeData),
        ("an ephemeral session's cookie storage shows and sends its cookies", cookieStorageOfASession),
        ("sessions made from one ephemeral configuration share its cookies", cookieStorageShared),
    ]

    // MARK: Helpers

    /// Lines appended from any thread.
    final class Transcript: @unchecked Sendable {
        private let lines = Mutex<[String]>([])
        func add(_ line: String) { lines.withLock { $0.append(line) } }
        var all: [String] { lines.withLock { $0 } }
    }

    /// Waits for a completion handler's call (the first: later ones are ignored).
    public final class Waiter<T: Sendable>: @unchecked Sendable {
        private let state = Mutex<(value: T?, waiter: CheckedContinuation<T, Never>?)>((nil, nil))
        public init() {}

        public func finish(_ value: T) {
            let waiter = state.withLock { state -> CheckedContinuation<T, Never>? in
                guard state.value == nil else { return nil }
                state.value = value
                defer { state.waiter = nil }
                return state.waiter
            }
            waiter?.resume(returning: value)
        }
        public func value() async -> T {
            await withCheckedContinuation { continuation in
                let ready = state.withLock { state -> T? in
                    if let value = state.value { return value }
                    state.waiter = continuation
                    return nil
                }
                if let ready { continuation.resume(returning: ready) }
            }
        }
    }

    static func describe(_ error: (any Error)?) -> String {
        guard let error else { return "error nil" }
        let ns = error as NSError
        return "error \(ns.domain) \(ns.code)"
    }

    static func describe(_ response: URLResponse?) -> String {
        guard let http = response as? HTTPURLResponse else { return response == nil ? "response nil" : "response not HTTP" }
        let length = http.value(forHTTPHeaderField: "Content-Length") ?? "-"
        return "status \(http.statusCode) path \(http.url?.path ?? "-") length \(length) expected \(http.expectedContentLength)"
    }

    /// A short digest of bytes: their count and a sum.
    static func describe(_ data: Data?) -> String {
        guard let data else { return "data nil" }
        var sum: UInt64 = 1469598103934665603
        for byte in data { sum = (sum ^ UInt64(byte)) &* 1099511628211 }
        return "data \(data.count) bytes fnv \(String(sum, radix: 16))"
    }

    /// One field of the test server's /echo or /upload JSON.
    static func field(_ name: String, _ data: Data?) -> String {
        guard let data, let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any] else { return "\(name) ?" }
        if name.hasPrefix("header:") {
            // /echo lists the fields as [name, value] pairs.
            let header = String(name.dropFirst(7)).lowercased()
            let pairs = object["headers"] as? [[String]] ?? []
            let values = pairs.filter { $0.first?.lowercased() == header }.compactMap { $0.last }
            return "\(name) \(values.isEmpty ? "-" : values.joined(separator: ", "))"
        }
        return "\(name) \(object[name].map { "\($0)" } ?? "-")"
    }

    static func ephemeralSession(delegate: (any URLSessionDelegate)? = nil, queue: OperationQueue? = nil) -> URLSession {
        URLSession(configuration: .ephemeral, delegate: delegate, delegateQueue: queue)
    }

    /// Whether the file a download handed over at `location` is still there once the handler that got
    /// it has returned: checked in the next operation of the session's (serial) delegate queue, and
    /// removed if it is. Apple removes it as the handler returns; FoundationNetworking leaves it in the
    /// temporary directory, a file per download (a test run left 52 there before this cleaned up).
    static func removeIfKept(_ location: URL?, after session: URLSession, _ kept: (@Sendable (Bool) -> Void)? = nil) {
        guard let location else { return }
        session.delegateQueue.addOperation {
            let there = FileManager.default.fileExists(atPath: location.path)
            if there { try? FileManager.default.removeItem(at: location) }
            kept?(there)
        }
    }

    static func dataTask(_ session: URLSession, _ request: URLRequest) async -> (Data?, URLResponse?, (any Error)?) {
        let waiter = Waiter<(Data?, URLResponse?, (any Error)?)>()
        session.dataTask(with: request) { waiter.finish(($0, $1, $2)) }.resume()
        return await waiter.value()
    }

    // MARK: Delegates

    /// Records each delegate call; answers as its settings say.
    final class Recorder: NSObject, URLSessionDataDelegate, URLSessionDownloadDelegate, @unchecked Sendable {
        let transcript = Transcript()
        let done = Waiter<Void>()
        let invalid = Waiter<Void>()
        let responded = Waiter<Void>()
        var refuseRedirects = false
        var redirectHeader: (String, String)?
        var disposition: URLSession.ResponseDisposition = .allow
        var credential: URLCredential?
        let bytes = Mutex(Data())
        var expectedQueue: OperationQueue?

        private func note(_ line: String) {
            if let expectedQueue { transcript.add(OperationQueue.current === expectedQueue ? "on queue: \(line)" : "OFF QUEUE: \(line)") } else { transcript.add(line) }
        }

        func urlSession(_ session: URLSession, didBecomeInvalidWithError error: (any Error)?) {
            note("didBecomeInvalid \(SamenessPrograms.describe(error))")
            invalid.finish(())
        }

        func urlSession(
            _ session: URLSession,
            task: URLSessionTask,
            willPerformHTTPRedirection response: HTTPURLResponse,
            newRequest request: URLRequest,
            completionHandler: @escaping @Sendable (URLRequest?) -> Void
        ) {
            note("willPerformHTTPRedirection \(response.statusCode) to \(request.url?.path ?? "-") method \(request.httpMethod ?? "-")")
            if refuseRedirects { return completionHandler(nil) }
            var changed = request
            if let (name, value) = redirectHeader { changed.setValue(value, forHTTPHeaderField: name) }
            completionHandler(changed)
        }

        func urlSession(
            _ session: URLSession,
            task: URLSessionTask,
            didReceive challenge: URLAuthenticationChallenge,
            completionHandler: @escaping @Sendable (URLSession.AuthChallengeDisposition, URLCredential?) -> Void
        ) {
            let space = challenge.protectionSpace
            note("didReceiveChallenge \(space.authenticationMethod) realm \(space.realm ?? "-") failures \(challenge.previousFailureCount) after \((challenge.failureResponse as? HTTPURLResponse)?.statusCode ?? 0)")
            if let credential, challenge.previousFailureCount == 0 {
                completionHandler(.useCredential, credential)
            } else {
                completionHandler(.performDefaultHandling, nil)
            }
        }

        func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive response: URLResponse, completionHandler: @escaping @Sendable (URLSession.ResponseDisposition) -> Void) {
            note("didReceiveResponse \(SamenessPrograms.describe(response))")
            completionHandler(disposition)
            responded.finish(())
        }

        func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
            bytes.withLock { $0.append(data) }
        }

        func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?) {
            let received = bytes.withLock { $0 }
            if !received.isEmpty { note("didReceiveData total \(SamenessPrograms.describe(received))") }
            note("didComplete \(SamenessPrograms.describe(error))")
            done.finish(())
        }

        let written = Waiter<Void>()
        var writtenEnough: Int64 = .max

        func urlSession(_ session: URLSession, downloadTask: URLSessionDownloadTask, didResumeAtOffset fileOffset: Int64, expectedTotalBytes: Int64) {
            note("didResumeAtOffset \(fileOffset) expected \(expectedTotalBytes)")
        }

        func urlSession(_ session: URLSession, downloadTask: URLSessionDownloadTask, didFinishDownloadingTo location: URL) {
            note("didFinishDownloading \(SamenessPrograms.describe(try? Data(contentsOf: location)))")
            SamenessPrograms.removeIfKept(location, after: session)
        }

        let reachedTotal = Mutex(false)

        func urlSession(_ session: URLSession, downloadTask: URLSessionDownloadTask, didWriteData bytesWritten: Int64, totalBytesWritten: Int64, totalBytesExpectedToWrite: Int64) {
            if totalBytesWritten >= writtenEnough { written.finish(()) }
            // How many calls there are depends on the reads; that the total is reached does not.
            guard totalBytesWritten == totalBytesExpectedToWrite, !reachedTotal.withLock({ $0 }) else { return }
            reachedTotal.withLock { $0 = true }
            note("didWriteData reached \(totalBytesWritten) of \(totalBytesExpectedToWrite)")
        }
    }

    // MARK: Programs

    static func getWithCompletionHandler(_ origin: String) async -> [String] {
        let session = ephemeralSession()
        defer { session.finishTasksAndInvalidate() }
        let (data, response, error) = await dataTask(session, URLRequest(url: URL(string: "\(origin)/bytes/1000?seed=1")!))
        let http = response as? HTTPURLResponse
        return [describe(data), describe(response), describe(error), "etag \(http?.value(forHTTPHeaderField: "etag") ?? "-")", "mime \(response?.mimeType ?? "-")"]
    }

    static func notFoundIsAResponse(_ origin: String) async -> [String] {
        let session = ephemeralSession()
        defer { session.finishTasksAndInvalidate() }
        let (data, response, error) = await dataTask(session, URLRequest(url: URL(string: "\(origin)/status/404")!))
        return [describe(response), describe(error), "has body \(data.map { !$0.isEmpty } ?? false)"]
    }

    static func refusedConnection(_ origin: String) async -> [String] {
        let session = ephemeralSession()
        defer { session.finishTasksAndInvalidate() }
        let url = URL(string: "http://127.0.0.1:1/nothing")!
        let (data, response, error) = await dataTask(session, URLRequest(url: url))
        let info = (error as NSError?)?.userInfo ?? [:]
        let failing = (info[NSURLErrorFailingURLErrorKey] as? URL)?.absoluteString ?? "-"
        return [describe(data), describe(response), describe(error), "failing URL \(failing)", "is URLError \(error is URLError)"]
    }

    static func unsupportedScheme(_ origin: String) async -> [String] {
        let session = ephemeralSession()
        defer { session.finishTasksAndInvalidate() }
        let (data, response, error) = await dataTask(session, URLRequest(url: URL(string: "gopher://127.0.0.1/x")!))
        return [describe(data), describe(response), describe(error)]
    }

    static func postWithHTTPBody(_ origin: String) async -> [String] {
        let session = ephemeralSession()
        defer { session.finishTasksAndInvalidate() }
        var request = URLRequest(url: URL(string: "\(origin)/upload")!)
        request.httpMethod = "POST"
        request.httpBody = Data((0..<5000).map { UInt8($0 % 251) })
        request.setValue("application/octet-stream", forHTTPHeaderField: "Content-Type")
        let (data, response, error) = await dataTask(session, request)
        return [describe(response), describe(error), field("length", data), field("method", data), field("contentType", data)]
    }

    static func postWithBodyStream(_ origin: String) async -> [String] {
        let session = ephemeralSession()
        defer { session.finishTasksAndInvalidate() }
        var request = URLRequest(url: URL(string: "\(origin)/upload")!)
        request.httpMethod = "POST"
        let body = Data((0..<200_000).map { UInt8($0 % 253) })
        request.httpBodyStream = InputStream(data: body)
        request.setValue("\(body.count)", forHTTPHeaderField: "Content-Length")
        let (data, response, error) = await dataTask(session, request)
        return [describe(response), describe(error), field("length", data), field("sha256", data), field("method", data)]
    }

    static func uploadFromData(_ origin: String) async -> [String] {
        let session = ephemeralSession()
        defer { session.finishTasksAndInvalidate() }
        var request = URLRequest(url: URL(string: "\(origin)/upload")!)
        request.httpMethod = "PUT"
        let waiter = Waiter<(Data?, URLResponse?, (any Error)?)>()
        let task = session.uploadTask(with: request, from: Data(repeating: 7, count: 12_345)) { waiter.finish(($0, $1, $2)) }
        task.resume()
        let (data, response, error) = await waiter.value()
        return [describe(response), describe(error), field("length", data), field("method", data), "sent \(task.countOfBytesSent)"]
    }

    static func uploadFromFile(_ origin: String) async -> [String] {
        let session = ephemeralSession()
        defer { session.finishTasksAndInvalidate() }
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("sameness-\(UUID().uuidString)")
        try? Data(repeating: 9, count: 70_000).write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        var request = URLRequest(url: URL(string: "\(origin)/upload")!)
        request.httpMethod = "POST"
        let waiter = Waiter<(Data?, URLResponse?, (any Error)?)>()
        session.uploadTask(with: request, fromFile: file) { waiter.finish(($0, $1, $2)) }.resume()
        let (data, response, error) = await waiter.value()
        return [describe(response), describe(error), field("length", data), field("sha256", data)]
    }

    static func redirectsAreFollowed(_ origin: String) async -> [String] {
        let session = ephemeralSession()
        defer { session.finishTasksAndInvalidate() }
        let (data, response, error) = await dataTask(session, URLRequest(url: URL(string: "\(origin)/redirect/3?to=/bytes/100")!))
        return [describe(response), describe(error), describe(data)]
    }

    static func refusedRedirect(_ origin: String) async -> [String] {
        let recorder = Recorder()
        recorder.refuseRedirects = true
        let session = ephemeralSession(delegate: recorder)
        defer { session.finishTasksAndInvalidate() }
        session.dataTask(with: URL(string: "\(origin)/redirect/2?mode=path")!).resume()
        await recorder.done.value()
        return recorder.transcript.all
    }

    static func changedRedirect(_ origin: String) async -> [String] {
        let recorder = Recorder()
        recorder.redirectHeader = ("X-Changed", "by-delegate")
        let session = ephemeralSession(delegate: recorder)
        defer { session.finishTasksAndInvalidate() }
        let (data, response, error) = await dataTask(session, URLRequest(url: URL(string: "\(origin)/redirect/1?mode=path&code=307")!))
        return recorder.transcript.all + ["status \((response as? HTTPURLResponse)?.statusCode ?? 0)", describe(error), field("header:X-Changed", data)]
    }

    static func dataTaskDelegateOrder(_ origin: String) async -> [String] {
        let recorder = Recorder()
        let session = ephemeralSession(delegate: recorder)
        defer { session.finishTasksAndInvalidate() }
        let task = session.dataTask(with: URL(string: "\(origin)/bytes/300000?seed=4")!)
        task.resume()
        await recorder.done.value()
        return recorder.transcript.all + [describe(task.response), "countOfBytesReceived \(task.countOfBytesReceived)"]
    }

    static func responseDispositionCancel(_ origin: String) async -> [String] {
        let recorder = Recorder()
        recorder.disposition = .cancel
        let session = ephemeralSession(delegate: recorder)
        defer { session.finishTasksAndInvalidate() }
        let task = session.dataTask(with: URL(string: "\(origin)/bytes/300000?seed=4")!)
        task.resume()
        await recorder.done.value()
        return recorder.transcript.all + ["state \(task.state.rawValue)"]
    }

    static func downloadTaskDelegateOrder(_ origin: String) async -> [String] {
        let recorder = Recorder()
        let session = ephemeralSession(delegate: recorder)
        defer { session.finishTasksAndInvalidate() }
        let task = session.downloadTask(with: URL(string: "\(origin)/bytes/250000?seed=5")!)
        task.resume()
        await recorder.done.value()
        return recorder.transcript.all + [describe(task.response)]
    }

    static func downloadWithCompletionHandler(_ origin: String) async -> [String] {
        let session = ephemeralSession()
        defer { session.finishTasksAndInvalidate() }
        let waiter = Waiter<[String]>()
        session.downloadTask(with: URL(string: "\(origin)/bytes/77777?seed=6")!) { location, response, error in
            // The file is there while the handler runs, and gone once it returned.
            let lines = [describe(location.flatMap { try? Data(contentsOf: $0) }), describe(response), describe(error)]
            removeIfKept(location, after: session) { kept in
                waiter.finish(lines + ["the file after the handler: \(kept ? "kept" : "removed")"])
            }
        }.resume()
        return await waiter.value()
    }

    static func basicChallengeAnswered(_ origin: String) async -> [String] {
        let recorder = Recorder()
        recorder.credential = URLCredential(user: "ann", password: "s3cret", persistence: .forSession)
        let session = ephemeralSession(delegate: recorder)
        defer { session.finishTasksAndInvalidate() }
        let task = session.dataTask(with: URL(string: "\(origin)/basic-auth/ann/s3cret")!)
        task.resume()
        await recorder.done.value()
        return recorder.transcript.all
    }

    static func basicChallengeWithoutDelegate(_ origin: String) async -> [String] {
        let session = ephemeralSession()
        defer { session.finishTasksAndInvalidate() }
        let (_, response, error) = await dataTask(session, URLRequest(url: URL(string: "\(origin)/basic-auth/ann/s3cret")!))
        return [describe(response), describe(error)]
    }

    static func cancelRunningTask(_ origin: String) async -> [String] {
        let recorder = Recorder()
        let session = ephemeralSession(delegate: recorder)
        defer { session.finishTasksAndInvalidate() }
        // The body stalls after 1000 bytes: the task is running when it is cancelled.
        let task = session.dataTask(with: URL(string: "\(origin)/bytes/100000?stall_after=1000&stall_ms=600000")!)
        task.resume()
        await recorder.responded.value()
        task.cancel()
        await recorder.done.value()
        return recorder.transcript.all.filter { !$0.hasPrefix("didReceiveData") } + ["state \(task.state.rawValue)"]
    }

    static func stalledServerTimesOut(_ origin: String) async -> [String] {
        let session = ephemeralSession()
        defer { session.finishTasksAndInvalidate() }
        var request = URLRequest(url: URL(string: "\(origin)/bytes/1000?stall_after=10&stall_ms=600000")!)
        request.timeoutInterval = 1
        let (_, _, error) = await dataTask(session, request)
        return [describe(error)]
    }

    static func asyncData(_ origin: String) async -> [String] {
        let session = ephemeralSession()
        defer { session.finishTasksAndInvalidate() }
        do {
            let (data, response) = try await session.data(from: URL(string: "\(origin)/bytes/4096?seed=8")!)
            return [describe(data), describe(response)]
        } catch {
            return [describe(error)]
        }
    }

    static func asyncDataCancelled(_ origin: String) async -> [String] {
        let session = ephemeralSession()
        defer { session.finishTasksAndInvalidate() }
        // The server stalls after 10 bytes: only the cancel ends the call, whether it comes before the
        // task exists or while it runs.
        let url = URL(string: "\(origin)/bytes/1000?stall_after=10&stall_ms=600000")!
        let caller = Task { try await session.data(from: url) }
        caller.cancel()
        do {
            let (data, _) = try await caller.value
            return ["finished with \(data.count) bytes"]
        } catch {
            return [describe(error)]
        }
    }

    static func asyncDownload(_ origin: String) async -> [String] {
        let session = ephemeralSession()
        defer { session.finishTasksAndInvalidate() }
        do {
            let (url, response) = try await session.download(from: URL(string: "\(origin)/bytes/9000?seed=9")!)
            defer { try? FileManager.default.removeItem(at: url) }
            return [describe(try? Data(contentsOf: url)), describe(response)]
        } catch {
            return [describe(error)]
        }
    }

    static func headHasNoBody(_ origin: String) async -> [String] {
        let session = ephemeralSession()
        defer { session.finishTasksAndInvalidate() }
        var request = URLRequest(url: URL(string: "\(origin)/bytes/5000")!)
        request.httpMethod = "HEAD"
        let (data, response, error) = await dataTask(session, request)
        return [describe(response), describe(error), "body \(data?.count ?? -1)"]
    }

    static func additionalHeaders(_ origin: String) async -> [String] {
        let configuration = URLSessionConfiguration.ephemeral
        configuration.httpAdditionalHeaders = ["X-Extra": "from-configuration"]
        let session = URLSession(configuration: configuration)
        defer { session.finishTasksAndInvalidate() }
        let (data, _, error) = await dataTask(session, URLRequest(url: URL(string: "\(origin)/echo")!))
        return [describe(error), field("header:X-Extra", data)]
    }

    static func requestHeadersWin(_ origin: String) async -> [String] {
        let configuration = URLSessionConfiguration.ephemeral
        configuration.httpAdditionalHeaders = ["X-Extra": "from-configuration", "X-Other": "kept"]
        let session = URLSession(configuration: configuration)
        defer { session.finishTasksAndInvalidate() }
        var request = URLRequest(url: URL(string: "\(origin)/echo")!)
        request.setValue("from-request", forHTTPHeaderField: "X-Extra")
        let (data, _, error) = await dataTask(session, request)
        return [describe(error), field("header:X-Extra", data), field("header:X-Other", data)]
    }

    static func finishAndInvalidate(_ origin: String) async -> [String] {
        let recorder = Recorder()
        let session = ephemeralSession(delegate: recorder)
        session.dataTask(with: URL(string: "\(origin)/bytes/10")!).resume()
        session.finishTasksAndInvalidate()
        await recorder.invalid.value()
        return recorder.transcript.all.filter { !$0.hasPrefix("didReceiveData") }
    }

    static func delegateQueueIsUsed(_ origin: String) async -> [String] {
        let recorder = Recorder()
        let queue = OperationQueue()
        queue.maxConcurrentOperationCount = 1
        recorder.expectedQueue = queue
        let session = ephemeralSession(delegate: recorder, queue: queue)
        defer { session.finishTasksAndInvalidate() }
        session.dataTask(with: URL(string: "\(origin)/redirect/1?to=/bytes/10")!).resume()
        await recorder.done.value()
        return recorder.transcript.all + ["delegateQueue is the one given \(session.delegateQueue === queue)"]
    }

    static func taskStateAndCounts(_ origin: String) async -> [String] {
        let session = ephemeralSession()
        defer { session.finishTasksAndInvalidate() }
        let waiter = Waiter<Void>()
        let first = session.dataTask(with: URL(string: "\(origin)/bytes/2048")!) { _, _, _ in waiter.finish(()) }
        let second = session.dataTask(with: URL(string: "\(origin)/bytes/10")!)
        var lines = ["before resume \(first.state.rawValue)", "identifiers differ \(first.taskIdentifier != second.taskIdentifier)"]
        lines.append("original \(first.originalRequest?.url?.path ?? "-")")
        first.resume()
        await waiter.value()
        // The handler ran; the task is completed by then.
        lines.append("after \(first.state.rawValue) received \(first.countOfBytesReceived) expected \(first.countOfBytesExpectedToReceive)")
        second.cancel()
        return lines
    }

    static func cookiesGoBack(_ origin: String) async -> [String] {
        let session = ephemeralSession()
        defer { session.finishTasksAndInvalidate() }
        _ = await dataTask(session, URLRequest(url: URL(string: "\(origin)/cookies/set?flavour=oat")!))
        let (data, _, error) = await dataTask(session, URLRequest(url: URL(string: "\(origin)/cookies")!))
        let text = data.map { String(decoding: $0, as: UTF8.self) } ?? "-"
        return [describe(error), "cookie sent \(text.contains("flavour=oat"))"]
    }

    public static func cookieStorageOfASession(_ origin: String) async -> [String] {
        let session = ephemeralSession()
        defer { session.finishTasksAndInvalidate() }
        _ = await dataTask(session, URLRequest(url: URL(string: "\(origin)/cookies/set?flavour=oat")!))
        let url = URL(string: "\(origin)/cookies")!
        guard let storage = session.configuration.httpCookieStorage else { return ["no storage"] }
        let seen = (storage.cookies(for: url) ?? []).map { "\($0.name)=\($0.value) path \($0.path)" }
        // A cookie the application stores is sent too.
        let added = HTTPCookie(properties: [.name: "added", .value: "1", .domain: "127.0.0.1", .path: "/"])!
        storage.setCookie(added)
        let (data, _, error) = await dataTask(session, URLRequest(url: url))
        let text = data.map { String(decoding: $0, as: UTF8.self) } ?? "-"
        storage.deleteCookie(added)
        let after = (storage.cookies ?? []).map(\.name).sorted()
        return ["stored \(seen)", describe(error), "sent flavour \(text.contains("flavour")) added \(text.contains("added"))", "after delete \(after)"]
    }

    public static func cookieStorageShared(_ origin: String) async -> [String] {
        let configuration = URLSessionConfiguration.ephemeral
        let first = URLSession(configuration: configuration)
        let second = URLSession(configuration: configuration)
        let other = ephemeralSession()
        defer {
            first.finishTasksAndInvalidate()
            second.finishTasksAndInvalidate()
            other.finishTasksAndInvalidate()
        }
        _ = await dataTask(first, URLRequest(url: URL(string: "\(origin)/cookies/set?shared=yes")!))
        let url = URLRequest(url: URL(string: "\(origin)/cookies")!)
        let (fromSecond, _, _) = await dataTask(second, url)
        let (fromOther, _, _) = await dataTask(other, url)
        func sent(_ data: Data?) -> Bool { data.map { String(decoding: $0, as: UTF8.self).contains("shared") } ?? false }
        return ["second sends it \(sent(fromSecond))", "another ephemeral configuration's session sends it \(sent(fromOther))"]
    }

    static func resumeData(_ origin: String) async -> [String] {
        // The server stalls after 500,000 bytes the first time only: the resumed request runs through.
        let url = URL(string: "\(origin)/bytes/2000000?seed=3&stall_after=500000&stall_ms=600000&only_first=1&key=\(UUID().uuidString)")!
        let first = Recorder()
        first.writtenEnough = 500_000
        let session = ephemeralSession(delegate: first)
        defer { session.finishTasksAndInvalidate() }
        let task = session.downloadTask(with: url)
        task.resume()
        await first.written.value()
        let resumeData = Waiter<Data?>()
        task.cancel(byProducingResumeData: { resumeData.finish($0) })
        guard let data = await resumeData.value() else { return ["resume data nil"] }
        let second = Recorder()
        let again = ephemeralSession(delegate: second)
        defer { again.finishTasksAndInvalidate() }
        again.downloadTask(withResumeData: data).resume()
        await second.done.value()
        // The same bytes as a download in one go.
        let (whole, _, _) = await dataTask(again, URLRequest(url: URL(string: "\(origin)/bytes/2000000?seed=3")!))
        return ["resume data given", "in one go: \(describe(whole))"] + second.transcript.all.filter { !$0.hasPrefix("didWriteData") }
    }

    static func failedDownloadResumeData(_ origin: String) async -> [String] {
        // The connection closes after 300,000 bytes the first time only.
        let url = URL(string: "\(origin)/bytes/1000000?seed=2&close_after=300000&only_first=1&key=\(UUID().uuidString)")!
        let session = ephemeralSession()
        defer { session.finishTasksAndInvalidate() }
        let failed = Waiter<(any Error)?>()
        session.downloadTask(with: url) { _, _, error in failed.finish(error) }.resume()
        let error = await failed.value()
        // NSURLSessionDownloadTaskResumeData (FoundationNetworking names it URLSessionDownloadTaskResumeData).
        guard let data = (error as NSError?)?.userInfo["NSURLSessionDownloadTaskResumeData"] as? Data else {
            return [describe(error), "no resume data"]
        }
        let finished = Waiter<[String]>()
        session.downloadTask(withResumeData: data) { location, response, error in
            finished.finish([describe(location.flatMap { try? Data(contentsOf: $0) }), describe(error)])
            removeIfKept(location, after: session)
        }.resume()
        return [describe(error), "resume data given"] + (await finished.value())
    }

    static func cancelledErrorInfo(_ origin: String) async -> [String] {
        let session = ephemeralSession()
        defer { session.finishTasksAndInvalidate() }
        let waiter = Waiter<(any Error)?>()
        let url = URL(string: "\(origin)/bytes/100000?stall_after=10&stall_ms=600000")!
        let task = session.dataTask(with: url) { _, _, error in waiter.finish(error) }
        task.resume()
        task.cancel()
        let error = await waiter.value()
        let failing = ((error as NSError?)?.userInfo[NSURLErrorFailingURLErrorKey] as? URL)?.absoluteString ?? "-"
        return [describe(error), "failing URL is the task's \(failing == url.absoluteString)"]
    }
}
