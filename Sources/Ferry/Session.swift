public import FerryEngine
public import Foundation
public import Logging
import NIOCore
import Synchronization

/// A group of transfers sharing a configuration, a connection pool and a delegate (URLSession).
///
/// ```swift
/// let session = Session(configuration: .default)
/// let (data, response) = try await session.data(for: Request(url: url))
/// ```
///
/// Every method is thread safe. Delegate callbacks arrive one at a time, in order (SPEC S1.6); the
/// session holds its delegate until it is invalidated (S1.5).
public final class Session: Sendable {
    /// "Unknown" in byte counts (NSURLSessionTransferSizeUnknown).
    public static let transferSizeUnknown: Int64 = -1
    /// Redirects followed before a task fails with `FerryError/Code/httpTooManyRedirects`.
    static let maximumRedirects = 16

    /// The shared session: default configuration, no delegate, never invalidated.
    public static let shared = Session(configuration: .default, delegate: nil, isShared: true, daemon: nil, logger: nil)

    enum Phase {
        case valid
        /// finishTasksAndInvalidate or invalidateAndCancel: no new tasks; invalid when the last ends.
        case finishing
        case invalidated
    }

    struct State {
        var delegate: (any SessionDelegate)?
        var sessionDescription: String?
        var tasks: [Int: SessionTask] = [:]
        var nextIdentifier = 1
        var phase = Phase.valid
    }

    /// The configuration, fixed when the session was made.
    public let configuration: SessionConfiguration
    /// Where the session logs its exchanges (debug level); silent unless one was given at creation.
    public let logger: Logger
    let transport: SessionTransport
    let queue = DelegateQueue()
    let isShared: Bool
    let configurationError: FerryError?
    let locked: Mutex<State>
    let downloadDirectory: String
    /// The link to ferryd, for background sessions.
    let background: BackgroundLink?
    /// In-process: `SessionConfiguration/bandwidthLimit` shared by the session's transfers; nil: none.
    let bandwidthPool: BandwidthPool?
    /// Where in-process tasks learn the network's state: the process's shared monitor (tests give a fake).
    var networkMonitor: NetworkMonitor {
        get { monitor.withLock { $0 } }
        set { monitor.withLock { $0 = newValue } }
    }
    let monitor = Mutex(NetworkMonitor.shared)

    /// A session with `configuration` and an optional delegate for its tasks' events.
    ///
    /// A configuration that fails `SessionConfiguration/validate()` makes every task fail with that
    /// error. A background configuration (`SessionConfiguration/background(identifier:)`) runs its
    /// tasks in ferryd, starting it when none runs; it needs a delegate, and its tasks fail with a clear
    /// error when the identifier is in use or the daemon cannot be reached (docs/BACKGROUND.md).
    ///
    /// `logger` gets the session's exchanges at debug level (method, URL, status, protocol, connection
    /// reuse, failures); by default nothing is logged.
    public convenience init(
        configuration: SessionConfiguration = .default,
        delegate: (any SessionDelegate)? = nil,
        logger: Logger? = nil
    ) {
        self.init(configuration: configuration, delegate: delegate, isShared: false, daemon: nil, logger: logger)
    }

    /// A background session whose daemon is `daemon` rather than this user's (the one `FERRY_HOME` or
    /// the XDG directories name): for programs that run a daemon of their own, and for tests.
    public convenience init(configuration: SessionConfiguration, delegate: any SessionDelegate, daemon: DaemonClient) {
        self.init(configuration: configuration, delegate: delegate, isShared: false, daemon: daemon, logger: nil)
    }

    /// A session whose cookies, cache and credentials are these stores (an in-process session only; nil:
    /// the ones its configuration names): FerryFoundationNetworking's storage objects, which sessions made
    /// from one configuration share, as Apple's do.
    package convenience init(
        configuration: SessionConfiguration,
        delegate: (any SessionDelegate)?,
        cookies: CookieStore?,
        cache: ResponseCache?,
        credentials: CredentialStore?
    ) {
        self.init(
            configuration: configuration,
            delegate: delegate,
            isShared: false,
            daemon: nil,
            logger: nil,
            cookies: cookies,
            cache: cache,
            credentials: credentials
        )
    }

    /// A session sending through `transport` (a custom transport, or one that trusts a test server's
    /// certificate) instead of one made from the configuration.
    public init(
        configuration: SessionConfiguration,
        delegate: (any SessionDelegate)?,
        transport: any HTTPTransport,
        logger: Logger? = nil
    ) {
        self.configuration = configuration
        self.isShared = false
        self.configurationError = Self.check(configuration)
        self.logger = logger ?? SessionTransport.silentLogger
        self.transport = SessionTransport(
            transport,
            maximumConnectionsPerHost: configuration.httpMaximumConnectionsPerHost,
            cookies: Self.cookieStore(for: configuration),
            cache: Self.responseCache(for: configuration),
            logger: self.logger,
            protocolHandlers: configuration.protocolHandlers
        )
        self.locked = Mutex(State(delegate: delegate))
        self.downloadDirectory = Self.makeDownloadDirectory()
        self.background = nil
        self.bandwidthPool = configuration.bandwidthLimit.map { BandwidthPool(bytesPerSecond: $0) }
        self.credentials = Self.credentialStore(for: configuration)
    }

    private init(
        configuration: SessionConfiguration,
        delegate: (any SessionDelegate)?,
        isShared: Bool,
        daemon: DaemonClient?,
        logger: Logger?,
        cookies givenCookies: CookieStore? = nil,
        cache givenCache: ResponseCache? = nil,
        credentials givenCredentials: CredentialStore? = nil
    ) {
        self.configuration = configuration
        self.isShared = isShared
        self.logger = logger ?? SessionTransport.silentLogger
        var configurationError = Self.check(configuration)
        let base: any HTTPTransport
        // The delegate's server-trust answers; the relay holds the session weakly (no cycle through the
        // transport it owns).
        let trust = ServerTrustRelay()
        let credentials =
            configuration.urlCredentialStorage == .none ? nil : givenCredentials ?? Self.credentialStore(for: configuration)
        do {
            var options = TransportOptions(configuration)
            if delegate != nil {
                options.serverTrustEvaluator = { challenge in await trust.evaluate(challenge) }
            }
            if let credentials {
                options.proxyCredential = { server in credentials.credential(for: ProtectionSpace(proxy: server)) }
            }
            // A background session's transfers run in ferryd: no connections of its own.
            base =
                configuration.identifier != nil
                ? UnavailableTransport() : try StandardTransport(options: options)
        } catch {
            configurationError = configurationError ?? (error as? FerryError)
            base = UnavailableTransport()
        }
        var link: BackgroundLink?
        if configurationError == nil, let identifier = configuration.identifier {
            if delegate == nil {
                configurationError = FerryError(
                    .invalidOperation,
                    "a background session needs a delegate: its events may arrive after this process restarts"
                )
            } else {
                do {
                    link = try BackgroundLink(identifier: identifier, client: daemon)
                } catch {
                    configurationError = error as? FerryError ?? FerryError(.unknown, "\(error)")
                }
            }
        }
        self.background = link
        self.bandwidthPool = nil
        self.credentials = credentials
        self.configurationError = configurationError
        self.transport = SessionTransport(
            base,
            maximumConnectionsPerHost: configuration.httpMaximumConnectionsPerHost,
            cookies: configuration.httpShouldSetCookies ? givenCookies ?? Self.cookieStore(for: configuration) : nil,
            cache: configuration.urlCache == nil || configuration.identifier != nil ? nil : givenCache ?? Self.responseCache(for: configuration),
            logger: self.logger,
            protocolHandlers: configuration.protocolHandlers
        )
        self.locked = Mutex(State(delegate: delegate))
        self.downloadDirectory = Self.makeDownloadDirectory()
        trust.attach(self)
        if let link {
            Task { [self] in await link.run(session: self) }
        }
    }

    static func check(_ configuration: SessionConfiguration) -> FerryError? {
        do {
            try configuration.validate()
        } catch let error as FerryError {
            return error
        } catch {
            return FerryError(.invalidOperation, "the configuration is not valid: \(error)")
        }
        return nil
    }

    static func makeDownloadDirectory() -> String {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("ferry-downloads").path
        try? FileManager.default.createDirectory(
            atPath: directory,
            withIntermediateDirectories: true,
            attributes: [.posixPermissions: 0o700]
        )
        return directory
    }

    /// The credentials that answer this session's challenges before its delegate is asked
    /// (URLCredentialStorage): `CredentialStore/shared` for default sessions, a store of its own for
    /// ephemeral ones, nil for `urlCredentialStorage` `.none`.
    public let credentials: CredentialStore?

    /// The store a session with `configuration` uses.
    static func credentialStore(for configuration: SessionConfiguration) -> CredentialStore? {
        switch configuration.urlCredentialStorage {
        case .shared: CredentialStore.shared
        case .sessionPrivate: CredentialStore()
        case .none: nil
        }
    }

    /// The cookies this session sends and keeps (HTTPCookieStorage's role): `CookieStore/shared` for
    /// default sessions, a store of its own for ephemeral ones; nil when it uses none
    /// (`httpShouldSetCookies` false, `httpCookieStorage` `.none`). A background session's is the shared
    /// store, whose file ferryd applies to its tasks: cookies set by background responses show here.
    public var cookies: CookieStore? { transport.cookies }

    /// The HTTP cache this session's data tasks read and fill (URLCache's role): for default sessions
    /// the user's (`$XDG_CACHE_HOME/ferry/http` on disk, shared by sessions with the same `urlCache`),
    /// for ephemeral ones memory only; nil when `urlCache` is nil and for background sessions.
    public var cache: ResponseCache? { transport.cache }

    static func responseCache(for configuration: SessionConfiguration) -> ResponseCache? {
        guard configuration.identifier == nil, let description = configuration.urlCache else { return nil }
        if configuration.kind == .ephemeral {
            // Ephemeral: nothing on disk, and private to the session.
            return ResponseCache(memoryCapacity: description.memoryCapacity, diskCapacity: 0, directory: nil)
        }
        return ResponseCache.forConfiguration(description)
    }

    /// The store a session with `configuration` uses.
    static func cookieStore(for configuration: SessionConfiguration) -> CookieStore? {
        guard configuration.httpShouldSetCookies else { return nil }
        switch configuration.httpCookieStorage {
        case .shared: return CookieStore.shared
        case .sessionPrivate:
            return CookieStore(acceptPolicy: configuration.cookieJarAcceptPolicy)
        case .none: return nil
        }
    }

    /// The delegate, until the session is invalid.
    public var delegate: (any SessionDelegate)? { locked.withLock { $0.delegate } }

    /// A description for your own use.
    public var sessionDescription: String? {
        get { locked.withLock { $0.sessionDescription } }
        set { locked.withLock { $0.sessionDescription = newValue } }
    }

    // MARK: Tasks

    /// A data task for `request`.
    public func dataTask(with request: Request) -> DataTask {
        register {
            DataTask(session: self, identifier: $0, request: request, work: .data, route: .delegates, rejection: $1)
        }
    }

    /// A data task for a GET of `url`.
    public func dataTask(with url: URL) -> DataTask {
        dataTask(with: Request(url: url))
    }

    /// An upload of the file at `fileURL`, read as it is sent (constant memory).
    public func uploadTask(with request: Request, fromFile fileURL: URL) -> UploadTask {
        register(remote: ControlAPI.TaskCreation(kind: .upload, request: request, uploadFile: fileURL.path)) {
            UploadTask(
                session: self,
                identifier: $0,
                request: request,
                work: .upload(.file(fileURL)),
                route: .delegates,
                rejection: $1
            )
        }
    }

    /// Continues a resumable upload of a file from resume data (``UploadTask/cancelByProducingResumeData()``,
    /// or an error's `FerryError/resumeData`): the server is asked for its offset, and only the rest
    /// of the file is sent. In a background session, ferryd continues it.
    public func uploadTask(withResumeData resumeData: Data) -> UploadTask {
        let decoded = Result { try ResumeData(encoded: resumeData) }
        guard case .success(let resume) = decoded, let upload = resume.upload, !resume.partialFilePath.isEmpty else {
            let error: FerryError
            switch decoded {
            case .failure(let failure as FerryError): error = failure
            case .failure(let failure): error = FerryError(.invalidResumeData, "the resume data is damaged: \(failure)")
            case .success: error = FerryError(.invalidResumeData, "this resume data is not a resumable upload's")
            }
            return register {
                UploadTask(
                    session: self,
                    identifier: $0,
                    request: nil,
                    work: .upload(.file(URL(fileURLWithPath: "/"))),
                    route: .delegates,
                    rejection: $1 ?? error
                )
            }
        }
        let file = URL(fileURLWithPath: resume.partialFilePath)
        let remote = ControlAPI.TaskCreation(
            kind: .upload,
            request: resume.originalRequest,
            uploadFile: file.path,
            resumeData: resume
        )
        return register(remote: remote) {
            UploadTask(
                session: self,
                identifier: $0,
                request: resume.originalRequest,
                work: .upload(.file(file, resumption: upload)),
                route: .delegates,
                rejection: $1
            )
        }
    }

    /// An upload of `data`.
    public func uploadTask(with request: Request, from data: Data) -> UploadTask {
        register {
            UploadTask(
                session: self,
                identifier: $0,
                request: request,
                work: .upload(.data(data)),
                route: .delegates,
                rejection: $1
            )
        }
    }

    /// An upload whose body the delegate provides from `needNewBodyStreamFor`.
    public func uploadTask(withStreamedRequest request: Request) -> UploadTask {
        register {
            UploadTask(
                session: self,
                identifier: $0,
                request: request,
                work: .upload(.stream),
                route: .delegates,
                rejection: $1
            )
        }
    }

    /// A download of `request` to a temporary file.
    public func downloadTask(with request: Request) -> DownloadTask {
        register(remote: ControlAPI.TaskCreation(kind: .download, request: request)) {
            DownloadTask(
                session: self,
                identifier: $0,
                request: request,
                work: .download(resumeData: nil),
                route: .delegates,
                rejection: $1
            )
        }
    }

    /// A download of `request` delivered to `destination`, as ``download(for:to:delegate:)`` describes:
    /// a file is replaced atomically when complete, a link is followed, a device or FIFO is written
    /// through. The delegate's `didFinishDownloadingTo` gets the destination, which stays where it is.
    /// In a background session ferryd delivers it (the destination must be writable by ferryd).
    public func downloadTask(with request: Request, to destination: URL) -> DownloadTask {
        let absolute = destination.standardizedFileURL.path
        let remote = ControlAPI.TaskCreation(
            kind: .download,
            request: request,
            destination: absolute,
            destinationMode: Int(DownloadDestination.newFileMode)
        )
        // In this process the destination is looked at now; ferryd looks at it itself.
        var place: DownloadDestination?
        var refusal: FerryError?
        if background == nil {
            do {
                place = try DownloadDestination(inspecting: absolute)
            } catch {
                refusal = error as? FerryError ?? FerryError(.cannotCreateFile, "cannot use \(absolute): \(error)")
            }
        }
        return register(remote: remote) {
            DownloadTask(
                session: self,
                identifier: $0,
                request: request,
                work: .download(resumeData: nil, destination: place),
                route: .delegates,
                rejection: $1 ?? refusal
            )
        }
    }

    /// A download of `url`.
    public func downloadTask(with url: URL) -> DownloadTask {
        downloadTask(with: Request(url: url))
    }

    /// A download continuing from resume data (from ``DownloadTask/cancelByProducingResumeData()`` or a
    /// failed download's error), in this process or an earlier one. Damaged resume data makes the task
    /// fail with `FerryError/Code/invalidResumeData` when resumed.
    public func downloadTask(withResumeData resumeData: Data) -> DownloadTask {
        makeDownloadTask(resumeData: resumeData, route: .delegates)
    }
}

/// Stands in when the session could not make its transport; every request fails with the reason.
private struct UnavailableTransport: HTTPTransport {
    func send(_ request: TransportRequest, deadline: NIODeadline) async throws -> TransportResponse {
        throw FerryError(.invalidOperation, "the session has no transport; see its configuration error")
    }

    func shutdown() async throws {}
}

/// Passes a transport's server-trust challenges to a session's delegate, on its delegate queue.
private final class ServerTrustRelay: Sendable {
    private struct Weak: @unchecked Sendable { weak var session: Session? }
    private let target = Mutex(Weak())

    func attach(_ session: Session) { target.withLock { $0.session = session } }

    func evaluate(_ challenge: ServerTrustChallenge) async -> ServerTrustDisposition {
        guard let session = target.withLock({ $0.session }), let delegate = session.delegate else {
            return .performDefaultHandling
        }
        return await session.queue.perform { await delegate.session(session, didReceive: challenge) }
    }
}
