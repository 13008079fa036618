/// The one error type of Ferry: what failed, in words that say what to do, with a code that mirrors
/// Foundation's `URLError` where one exists, and the resume data of a download that can continue.
///
/// Compare errors by ``code``: `if error.code == .timedOut { ... }`, or `switch error.code`.
public struct FerryError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The kind of failure. ``rawValue`` is `URLError.Code`'s value where Foundation has the same code
    /// (`cancelled` is -999, `timedOut` -1001, ...); Ferry's own codes are positive.
    public struct Code: Sendable, Hashable, CustomStringConvertible {
        /// The numeric code: URLError's where it exists, else Ferry's own (positive).
        public let rawValue: Int
        /// A stable name, e.g. `timedOut`; fit for logs and metric labels.
        public let name: String

        private init(_ rawValue: Int, _ name: String) {
            self.rawValue = rawValue
            self.name = name
        }

        /// A code as stored or sent elsewhere (the daemon's database, the control API): its number and
        /// name, as ``rawValue`` and ``name`` gave them.
        public init(rawValue: Int, name: String) {
            self.init(rawValue, name)
        }

        public var description: String { name }

        // Mirrors of URLError.Code.
        /// Something failed that has no better code (URLError -1); the message says what.
        public static let unknown = Code(-1, "unknown")
        /// The task was cancelled (URLError -999).
        public static let cancelled = Code(-999, "cancelled")
        /// The URL is malformed (URLError -1000).
        public static let badURL = Code(-1000, "badURL")
        /// No data arrived within the request timeout, or the resource timeout passed (URLError -1001).
        public static let timedOut = Code(-1001, "timedOut")
        /// The scheme is not supported (URLError -1002).
        public static let unsupportedURL = Code(-1002, "unsupportedURL")
        /// The host name did not resolve (URLError -1003).
        public static let cannotFindHost = Code(-1003, "cannotFindHost")
        /// The connection could not be made (URLError -1004).
        public static let cannotConnectToHost = Code(-1004, "cannotConnectToHost")
        /// The connection dropped during the transfer (URLError -1005).
        public static let networkConnectionLost = Code(-1005, "networkConnectionLost")
        /// Too many redirects, or a redirect loop (URLError -1007).
        public static let httpTooManyRedirects = Code(-1007, "httpTooManyRedirects")
        /// The server's response breaks the protocol or contradicts the request (URLError -1011).
        public static let badServerResponse = Code(-1011, "badServerResponse")
        /// The delegate cancelled an authentication challenge (URLError -1012).
        public static let userCancelledAuthentication = Code(-1012, "userCancelledAuthentication")
        /// Authentication is required and none that works was given, e.g. a proxy's 407 (URLError -1013).
        public static let userAuthenticationRequired = Code(-1013, "userAuthenticationRequired")
        /// The request may only be answered from the cache, and nothing stored answers it
        /// (`returnCacheDataDontLoad`, `only-if-cached`; URLError -1008).
        public static let resourceUnavailable = Code(-1008, "resourceUnavailable")
        /// The content could not be decoded, e.g. broken gzip (URLError -1016).
        public static let cannotDecodeContentData = Code(-1016, "cannotDecodeContentData")
        /// The response could not be parsed (URLError -1017).
        public static let cannotParseResponse = Code(-1017, "cannotParseResponse")
        /// The request must be sent again (a 307 or 308 redirect, an answered 401) and its body is a
        /// stream, which cannot be read twice, and no new one was given (URLError -1021).
        public static let requestBodyStreamExhausted = Code(-1021, "requestBodyStreamExhausted")
        /// The network does not allow the request: offline, or a metered or constrained network the
        /// task may not use (URLError -1009).
        public static let notConnectedToInternet = Code(-1009, "notConnectedToInternet")
        /// A file to upload does not exist (URLError -1100).
        public static let fileDoesNotExist = Code(-1100, "fileDoesNotExist")
        /// A file to upload is a directory (URLError -1101).
        public static let fileIsDirectory = Code(-1101, "fileIsDirectory")
        /// A file to upload cannot be read (URLError -1102).
        public static let noPermissionsToReadFile = Code(-1102, "noPermissionsToReadFile")
        /// A body is larger than the caller allows (URLError -1103).
        public static let dataLengthExceedsMaximum = Code(-1103, "dataLengthExceedsMaximum")
        /// TLS failed (URLError -1200).
        public static let secureConnectionFailed = Code(-1200, "secureConnectionFailed")
        /// The server's certificate is not trusted (URLError -1202).
        public static let serverCertificateUntrusted = Code(-1202, "serverCertificateUntrusted")
        /// A download's file could not be created (URLError -3000).
        public static let cannotCreateFile = Code(-3000, "cannotCreateFile")
        /// A download's file could not be written, e.g. the disk is full (URLError -3003).
        public static let cannotWriteToFile = Code(-3003, "cannotWriteToFile")
        /// A download's file could not be moved into place (URLError -3005).
        public static let cannotMoveFile = Code(-3005, "cannotMoveFile")
        /// Another process uses this background session identifier (URLError -996).
        public static let backgroundSessionInUseByAnotherProcess = Code(-996, "backgroundSessionInUseByAnotherProcess")
        /// The daemon of a background session went away (URLError -997).
        public static let backgroundSessionWasDisconnected = Code(-997, "backgroundSessionWasDisconnected")

        // Ferry's own.
        /// A header name or value is not allowed (CR, LF or NUL in it, or an invalid name).
        public static let invalidHeader = Code(1, "invalidHeader")
        /// Resume data is damaged, of an unknown version, or its partial file is gone.
        public static let invalidResumeData = Code(2, "invalidResumeData")
        /// The downloaded bytes do not have the expected checksum.
        public static let checksumMismatch = Code(3, "checksumMismatch")
        /// The call is not allowed in this state or for this kind of session.
        public static let invalidOperation = Code(4, "invalidOperation")
        /// A WebSocket or stream task is not connected (any more): sending or receiving after its close.
        /// 57 is ENOTCONN, the POSIX error Apple's tasks report.
        public static let notConnected = Code(57, "notConnected")
    }

    /// What kind of failure this is.
    public var code: Code
    /// What happened and what to do about it, in one sentence or two.
    public var message: String
    /// The URL of the request that failed, if any.
    public var failingURL: String?
    /// For a download that can continue: pass it to `downloadTask(withResumeData:)`.
    public var resumeData: ResumeData?

    /// Creates an error.
    public init(_ code: Code, _ message: String, failingURL: String? = nil, resumeData: ResumeData? = nil) {
        self.code = code
        self.message = message
        self.failingURL = failingURL
        self.resumeData = resumeData
    }

    /// The code's name only, with no request-specific text: for metric labels and bounded logs.
    public var shortDescription: String { code.name }

    public var description: String {
        var text = "FerryError.\(code.name): \(message)"
        if let failingURL { text += " (\(failingURL))" }
        return text
    }
}

extension FerryError.Code: Codable {
    private enum CodingKeys: String, CodingKey {
        case rawValue = "code"
        case name
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        self.init(
            rawValue: try container.decode(Int.self, forKey: .rawValue),
            name: try container.decode(String.self, forKey: .name)
        )
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(rawValue, forKey: .rawValue)
        try container.encode(name, forKey: .name)
    }
}

/// Errors cross the daemon's control API as JSON: code, name, message, failing URL, resume data.
extension FerryError: Codable {
    private enum CodingKeys: String, CodingKey { case code, message, failingURL, resumeData }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        self.init(
            try container.decode(Code.self, forKey: .code),
            try container.decode(String.self, forKey: .message),
            failingURL: try container.decodeIfPresent(String.self, forKey: .failingURL),
            resumeData: try container.decodeIfPresent(ResumeData.self, forKey: .resumeData)
        )
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(code, forKey: .code)
        try container.encode(message, forKey: .message)
        try container.encodeIfPresent(failingURL, forKey: .failingURL)
        try container.encodeIfPresent(resumeData, forKey: .resumeData)
    }
}

extension FerryError {
    /// What a `timedOut` error says when the whole transfer outlasted its resource timeout (the session's
    /// `timeoutIntervalForResource`, the command line's `--max-time`): a front end that named the limit
    /// otherwise puts its own name in its place.
    public static let resourceTimeoutMessage = "the transfer took longer than its resource timeout"

    /// What a `serverCertificateUntrusted` error for an unknown issuer says to do, in a library's
    /// words; a command line puts its own flags in its place (`ferry` names `--cacert`).
    public static let trustTheIssuerHint =
        "trust its CA in the session's TLS settings (additionalTrustRootsPEM) or with SSL_CERT_FILE"
}
