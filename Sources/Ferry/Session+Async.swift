import FerryEngine
public import Foundation
import NIOCore
import Synchronization

extension Session {
    /// Loads `request` and returns its body and response. The session's delegate is bypassed; `delegate`
    /// (if given) gets this task's redirects, progress and metrics.
    /// - Throws: `FerryError`; cancelling the calling task cancels the transfer.
    public func data(for request: Request, delegate: (any TaskDelegate)? = nil) async throws -> (Data, Response) {
        try await run(delegate: delegate, inline: Self.runsInline(request)) { route in
            self.register {
                DataTask(session: self, identifier: $0, request: request, work: .data, route: route, rejection: $1)
            }
        }.data()
    }

    /// Loads `url` with a GET.
    public func data(from url: URL, delegate: (any TaskDelegate)? = nil) async throws -> (Data, Response) {
        try await data(for: Request(url: url), delegate: delegate)
    }

    /// Uploads the file at `fileURL` (streamed, constant memory) and returns the response body.
    public func upload(
        for request: Request,
        fromFile fileURL: URL,
        delegate: (any TaskDelegate)? = nil
    )
        async throws -> (Data, Response)
    {
        try await run(delegate: delegate, inline: Self.runsInline(request)) { route in
            self.register {
                UploadTask(
                    session: self,
                    identifier: $0,
                    request: request,
                    work: .upload(.file(fileURL)),
                    route: route,
                    rejection: $1
                )
            }
        }.data()
    }

    /// Uploads `data` and returns the response body.
    public func upload(
        for request: Request,
        from data: Data,
        delegate: (any TaskDelegate)? = nil
    ) async throws
        -> (Data, Response)
    {
        try await run(delegate: delegate, inline: Self.runsInline(request)) { route in
            self.register {
                UploadTask(
                    session: self,
                    identifier: $0,
                    request: request,
                    work: .upload(.data(data)),
                    route: route,
                    rejection: $1
                )
            }
        }.data()
    }

    /// Downloads `request` to a temporary file that is now the caller's to move or remove.
    /// - Throws: `FerryError`; when the download can be continued, with `FerryError/resumeData`
    ///   (cancelling the calling task produces resume data too).
    public func download(for request: Request, delegate: (any TaskDelegate)? = nil) async throws -> (URL, Response) {
        try await run(delegate: delegate) { route in
            self.register {
                DownloadTask(
                    session: self,
                    identifier: $0,
                    request: request,
                    work: .download(resumeData: nil),
                    route: route,
                    rejection: $1
                )
            }
        }.file()
    }

    /// Downloads `request` straight to `destination`, which is what you named and nothing else:
    /// - a regular file (or nothing yet) is replaced atomically once the body is complete and verified;
    ///   meanwhile it grows in `DESTINATION.ferry-part`, which a second download to the same destination
    ///   finds locked (it fails at once, naming the first);
    /// - a symbolic link is followed: the file it points to is replaced;
    /// - a character device, FIFO or socket is written through, in order, over one connection: never
    ///   replaced, and such a download cannot be continued after an interruption.
    ///
    /// A status outside 2xx leaves a file destination as it was and throws.
    /// - Returns: the destination (links followed) and the response.
    /// - Throws: `FerryError`; with `FerryError/resumeData` when the part file can be continued.
    public func download(
        for request: Request,
        to destination: URL,
        delegate: (any TaskDelegate)? = nil
    ) async throws -> (URL, Response) {
        let place = try DownloadDestination(inspecting: destination.path)
        return try await run(delegate: delegate) { route in
            self.register {
                DownloadTask(
                    session: self,
                    identifier: $0,
                    request: request,
                    work: .download(resumeData: nil, destination: place),
                    route: route,
                    rejection: $1
                )
            }
        }.file()
    }

    /// Downloads `url`.
    public func download(from url: URL, delegate: (any TaskDelegate)? = nil) async throws -> (URL, Response) {
        try await download(for: Request(url: url), delegate: delegate)
    }

    /// Continues a download from resume data.
    public func download(
        resumeFrom resumeData: Data,
        delegate: (any TaskDelegate)? = nil
    ) async throws
        -> (URL, Response)
    {
        try await run(delegate: delegate) { route in
            self.makeDownloadTask(resumeData: resumeData, route: route)
        }.file()
    }

    /// Whether an async call for `request` runs its transfer in the caller's task: every wait of a plain
    /// exchange honours the transfer's own cancellation; a resumable upload's retries and pauses do not
    /// (yet), so it keeps a task of its own.
    private static func runsInline(_ request: Request) -> Bool {
        !request.resumableUpload
    }

    /// Runs a task made by `make` and waits for its outcome; with `inline`, in a session of this process,
    /// the transfer runs in the calling task (`InProcessBackend/runInline(_:)`).
    private func run(
        delegate: (any TaskDelegate)?,
        inline: Bool = false,
        _ make: @escaping (SessionTask.Route) -> SessionTask
    ) async throws -> SessionTask.Outcome {
        // A download keeps what it has when cancelled: the error carries resume data.
        let box = TaskBox<SessionTask> { task in task.cancel(produceResumeData: task is DownloadTask) }
        let outcome = OutcomeSlot<SessionTask.Outcome>()
        let task = make(.handler { outcome.set($0) })
        task.delegate = delegate
        box.set(task)
        return await withTaskCancellationHandler {
            if inline, background == nil {
                // (When it does not start here, cancelled before it began, it completes on its own.)
                _ = await InProcessBackend().runInline(task)
            } else {
                task.resume()
            }
            return await outcome.value()
        } onCancel: {
            box.cancel()
        }
    }

    /// Opens `request` and returns the response as soon as its head arrives, with the body to read as
    /// it comes (backpressure: nothing more is read from the network until you ask).
    ///
    /// The body is checked against Content-Length when it ends. The transfer is not a task of
    /// ``getAllTasks()``; stop reading (or cancel the reading task) to end it.
    /// - Throws: `FerryError`.
    public func bytes(for request: Request, delegate: (any TaskDelegate)? = nil) async throws -> (AsyncBytes, Response)
    {
        try checkUsable()
        let request = configuration.applyingAdditionalHeaders(to: request)
        var loader = DataLoader(transport: transport)
        loader.maximumRedirects = Session.maximumRedirects
        let willRedirect: @Sendable (Int, Headers, Request) async -> Request?
        if let delegate {
            let probe = register {
                DataTask(
                    session: self,
                    identifier: $0,
                    request: request,
                    work: .data,
                    route: .handler { _ in },
                    rejection: $1
                )
            }
            taskEnded(probe)
            willRedirect = { [self] status, headers, proposed in
                let response = Response(url: proposed.url, statusCode: status, headers: headers)
                return await queue.perform {
                    await delegate.session(
                        self,
                        task: probe,
                        willPerformHTTPRedirection: response,
                        newRequest: proposed
                    )
                }
            }
        } else {
            willRedirect = { _, _, proposed in proposed }
        }
        let opened = try await loader.open(request, deadline: resourceDeadline(), willRedirect: willRedirect)
        let response = Response(
            url: opened.request.url,
            statusCode: opened.response.status,
            headers: opened.response.headers
        )
        return (
            AsyncBytes(body: opened.response.body, declaredLength: response.expectedContentLength, url: response.url),
            response
        )
    }

    /// Loads `url` as ``bytes(for:delegate:)`` does.
    public func bytes(from url: URL, delegate: (any TaskDelegate)? = nil) async throws -> (AsyncBytes, Response) {
        try await bytes(for: Request(url: url), delegate: delegate)
    }
}

extension SessionTask.Outcome {
    func data() throws -> (Data, Response) {
        switch self {
        case .data(let data, let response): return (data, response)
        case .file(let url, let response):
            defer { try? FileManager.default.removeItem(at: url) }
            return (try Data(contentsOf: url), response)
        case .failure(let error): throw error
        }
    }

    func file() throws -> (URL, Response) {
        switch self {
        case .file(let url, let response): return (url, response)
        case .data: throw FerryError(.unknown, "a download produced data instead of a file")
        case .failure(let error): throw error
        }
    }
}
