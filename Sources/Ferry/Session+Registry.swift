public import FerryEngine
public import Foundation
public import Logging
import NIOCore
import Synchronization

/// The session's tasks: how a task is made and numbered (in process, or as ferryd's for a background
/// session), handed from one kind to another, and listed.
extension Session {
    func makeDownloadTask(resumeData: Data, route: SessionTask.Route) -> DownloadTask {
        let decoded = Result { try ResumeData(encoded: resumeData) }
        var remote: ControlAPI.TaskCreation?
        if case .delegates = route, case .success(let resume) = decoded {
            remote = ControlAPI.TaskCreation(kind: .download, request: resume.originalRequest, resumeData: resume)
        }
        return register(remote: remote) { identifier, rejection in
            switch decoded {
            case .success(let resume):
                return DownloadTask(
                    session: self,
                    identifier: identifier,
                    request: resume.originalRequest,
                    work: .download(resumeData: resume),
                    route: route,
                    rejection: rejection
                )
            case .failure(let error):
                return DownloadTask(
                    session: self,
                    identifier: identifier,
                    request: nil,
                    work: .download(resumeData: nil),
                    route: route,
                    rejection: rejection
                        ?? (error as? FerryError
                            ?? FerryError(.invalidResumeData, "the resume data is damaged: \(error)"))
                )
            }
        }
    }

    /// Makes a task, written once whatever runs it: in this process, with the next identifier, tracked
    /// until it ends; in a background session, created in ferryd as `remote` says (``registerRemote(_:_:)``),
    /// or refused when it has no such form (S6.2: data tasks, uploads from data or a stream, the
    /// completion-handler and async forms). On an invalidated session the task fails when resumed.
    func register<Task: SessionTask>(remote: ControlAPI.TaskCreation? = nil, _ make: (Int, FerryError?) -> Task)
        -> Task
    {
        if background != nil, let remote { return registerRemote(remote, make) }
        if background != nil {
            // S6.2: what a background session does not run is refused, clearly, when resumed. Such a
            // task has identifier 0: it never exists in the daemon.
            return make(
                0,
                configurationError
                    ?? FerryError(
                        .invalidOperation,
                        "background sessions run download tasks and uploads from a file, with a delegate; data tasks, uploads from data or a stream, and the async and completion-handler forms are refused (use a default session for those)"
                    )
            )
        }
        return locked.withLock { state in
            let identifier = state.nextIdentifier
            state.nextIdentifier += 1
            guard case .valid = state.phase else {
                return make(
                    identifier,
                    FerryError(.invalidOperation, "the session was invalidated; make a new session for new tasks")
                )
            }
            let task = make(identifier, nil)
            state.tasks[identifier] = task
            return task
        }
    }

    /// A download task taking over the transfer of `dataTask` (disposition becomeDownload).
    func adoptAsDownload(_ dataTask: SessionTask) -> DownloadTask {
        let download = register { identifier, _ in
            DownloadTask(
                session: self,
                identifier: identifier,
                request: dataTask.originalRequest,
                work: .download(resumeData: nil),
                route: dataTask.route
            )
        }
        download.adoptRunningTransfer(from: dataTask)
        return download
    }

    /// A stream task taking over the connection of `dataTask` (disposition becomeStream), whose final
    /// request went to `url`.
    func adoptAsStream(_ dataTask: SessionTask, url: URL) -> StreamTask {
        let secure = url.scheme?.lowercased() == "https"
        let port = url.port ?? (secure ? 443 : 80)
        let stream = register { identifier, _ -> StreamTask in
            var host = url.host ?? ""
            if host.hasPrefix("["), host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
            return StreamTask(session: self, identifier: identifier, host: host, port: port, rejection: nil)
        }
        stream.adoptRunningTransfer(from: dataTask)
        return stream
    }

    /// Makes a background task: created in the daemon (suspended until resumed), tracked here under the
    /// daemon's identifier. When that fails the task carries the error and fails when resumed.
    func registerRemote<Task: SessionTask>(
        _ creation: ControlAPI.TaskCreation,
        _ make: (Int, FerryError?) -> Task
    ) -> Task {
        guard let background else { preconditionFailure("registerRemote needs a background session") }
        let phaseError: FerryError? = locked.withLock { state in
            guard case .valid = state.phase else {
                return FerryError(.invalidOperation, "the session was invalidated; make a new session for new tasks")
            }
            return nil
        }
        if let failure = configurationError ?? phaseError { return make(0, failure) }
        // The configuration travels with each task: the daemon has no session object (S1.3).
        var creation = creation
        creation.request = configuration.applyingAdditionalHeaders(to: creation.request)
        if configuration.isDiscretionary { creation.discretionary = true }
        // The stricter of the session's and the request's network access travels in the request.
        let policy = NetworkPolicy(request: creation.request, configuration: configuration)
        creation.request.allowsCellularAccess = policy.allowsMetered
        creation.request.allowsExpensiveNetworkAccess = policy.allowsMetered
        creation.request.allowsConstrainedNetworkAccess = policy.allowsConstrained
        if let limit = configuration.bandwidthLimit { creation.bandwidthLimit = limit }
        creation.resourceTimeout = configuration.timeoutIntervalForResource
        do {
            // How ferryd connects for this task: this session's TLS settings and proxy (explicit, or this
            // process's environment), never ferryd's own environment.
            var connection = try TransportOptions(configuration)
                .connectionSettings(environment: ProcessInfo.processInfo.environment)
            // Cookies: ferryd reads and writes the same file as this process's store, so the program
            // sees what background responses set (session cookies stay in ferryd while it runs).
            if creation.request.httpShouldHandleCookies, let file = cookies?.path {
                connection.cookies = CookieSettings(file: file, acceptPolicy: configuration.cookieJarAcceptPolicy)
            }
            // A proxy without credentials takes the store's now: ferryd has no credential store.
            for server in [\ProxySettings.http, \ProxySettings.https] {
                guard let proxy = connection.proxies[keyPath: server], proxy.username == nil,
                    let credential = credentials?.credential(for: ProtectionSpace(proxy: proxy))
                else { continue }
                connection.proxies[keyPath: server]?.username = credential.user
                connection.proxies[keyPath: server]?.password = credential.password
            }
            creation.connection = connection
            // Named here and created in the daemon after the link's earlier requests: the factory
            // never waits for ferryd.
            let task = make(background.nextIdentifier(), nil)
            task.locked.withLock { $0.taskDescription = creation.taskDescription }
            locked.withLock { $0.tasks[task.taskIdentifier] = task }
            background.create(creation, for: task)
            return task
        } catch {
            return make(0, error as? FerryError ?? FerryError(.unknown, "\(error)"))
        }
    }

    /// The task object for a background task the daemon reports: the one made here, or a new one for a
    /// task made by an earlier process (after a re-attach, S6.3).
    func backgroundTask(for info: BackgroundTaskInfo) -> SessionTask? {
        guard info.session == configuration.identifier else { return nil }
        return locked.withLock { state -> SessionTask in
            if let known = state.tasks[info.taskIdentifier] { return known }
            let task: SessionTask
            switch info.kind {
            case .download:
                task = DownloadTask(
                    session: self,
                    identifier: info.taskIdentifier,
                    request: info.originalRequest,
                    work: .download(resumeData: nil),
                    route: .delegates
                )
            case .upload:
                task = UploadTask(
                    session: self,
                    identifier: info.taskIdentifier,
                    request: info.originalRequest,
                    work: .upload(.file(URL(fileURLWithPath: "/"))),
                    route: .delegates
                )
            }
            task.adopt(info)
            state.tasks[info.taskIdentifier] = task
            return task
        }
    }

    /// The tasks that have not completed (getAllTasks), as this process knows them now, without waiting
    /// for ferryd: in a background session, those made by an earlier process (S6.8) are included once
    /// the session has attached; ``allTasks`` waits for that and asks the daemon.
    public func getAllTasks() -> [SessionTask] {
        locked.withLock { state in
            state.tasks.values.filter { $0.state != .completed }.sorted { $0.taskIdentifier < $1.taskIdentifier }
        }
    }

    /// The tasks that have not completed, as URLSession's async `allTasks`. For a background session,
    /// the daemon's: tasks made by an earlier process are included (S6.8); it waits (suspending, never
    /// blocking) until the session has attached.
    public var allTasks: [SessionTask] {
        get async {
            if let background, configurationError == nil, let remote = try? await background.tasks() {
                for info in remote where info.state != .completed { _ = backgroundTask(for: info) }
            }
            return getAllTasks()
        }
    }
}
