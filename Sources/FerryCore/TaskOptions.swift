public import Foundation

/// How a background task transfers, as its client asked: fixed when the task is created, and read each
/// time it runs.
///
/// One type carries these fields all the way: a ``ControlAPI/TaskCreation`` holds it (its JSON keys sit
/// beside the creation's own, flat), ferryd keeps it with the task as one JSON column, and the transfer
/// runner reads it from the stored task. Adding an option is three changes: a property here (and its
/// rule in ``validate(for:)``), its schema in `docs/openapi.json`, and the code that honours it.
/// Options that the scheduler queries or a client changes later (priority, network policy, bandwidth,
/// not-before) are columns of their own instead.
public struct TaskOptions: Sendable, Hashable, Codable {
    /// For uploads without an upload file: a multipart/form-data body made of these fields (text
    /// values, and files read by ferryd each time the upload is sent). The request gets the form's
    /// Content-Type, with its boundary, unless it has one.
    public var form: [FormField]?
    /// Downloads: a request body whose answer is the download (curl's `-d`), base64 in JSON, at most
    /// ``ControlAPI/TaskCreation/maximumRequestBody`` bytes; sent with every try, and again on a 307 or
    /// 308. Such a download is never continued by range: each try starts over.
    public var requestBody: Data?
    /// Downloads: undo a gzip or deflate Content-Encoding before the bytes are written (curl's
    /// `--compressed`; the request should carry Accept-Encoding). Such a download starts over each
    /// try: a decoded file's offsets are not the server's.
    public var decodesContent: Bool?
    /// The task's own redirect, retry and speed limits (curl's `--max-redirs`, `--retry`,
    /// `--speed-limit`/`--speed-time`); absent values take ferryd's.
    public var limits: TaskLimits?
    /// Downloads: an absolute path where the daemon moves the finished file itself (replacing what
    /// is there), for clients that are gone when it finishes (`ferry get --background -o`). Only a
    /// 2xx response is moved there; another status fails the task with `badServerResponse` and
    /// writes nothing. Its directory must exist.
    public var destination: String?
    /// The permission bits of the file at ``destination`` (e.g. 0o644); default 0o600.
    public var destinationMode: Int?
    /// How the task's connections are made (TLS trust, proxies, ...), recorded with the task; absent:
    /// direct, with the system's trust roots as ferryd sees them.
    public var connection: ConnectionSettings?

    /// No options: ferryd's defaults.
    public init() {}

    /// Whether every option is absent (ferryd stores nothing for it).
    public var isEmpty: Bool { self == TaskOptions() }

    /// Checks the options against each other and the task's kind, without touching the file system
    /// (whether the destination's directory exists is the daemon's question).
    /// - Throws: ``FerryError`` saying which option is wrong and why.
    public func validate(for kind: BackgroundTaskInfo.Kind) throws {
        switch kind {
        case .upload:
            guard requestBody == nil, decodesContent != true else {
                throw FerryError(.invalidOperation, "requestBody and decodesContent are a download's; an upload sends uploadFile or a form")
            }
        case .download:
            guard form == nil else {
                throw FerryError(.invalidOperation, "a download has no upload file, form or chunks; use kind \"upload\"")
            }
            if let destination, !ControlAPI.isAbsoluteFilePath(destination) {
                throw FerryError(.invalidOperation, "the destination must be an absolute file path, not '\(destination)'")
            }
            if let requestBody, requestBody.count > ControlAPI.TaskCreation.maximumRequestBody {
                throw FerryError(
                    .invalidOperation,
                    "a download's requestBody is at most \(ControlAPI.TaskCreation.maximumRequestBody) bytes, not \(requestBody.count)"
                )
            }
            if let destinationMode, !(0...0o777).contains(destinationMode) {
                throw FerryError(.invalidOperation, "destinationMode holds permission bits, 0 to 0o777 (511)")
            }
        }
        try connection?.validate()
        try limits?.validate()
    }
}

extension ControlAPI {
    /// Whether `path` names a file absolutely: it starts with `/`, does not end with one, and holds no NUL
    /// (docs/openapi.json's pattern for destinations and partial files). By bytes: "/" or NUL followed by
    /// a combining mark is one Character.
    public static func isAbsoluteFilePath(_ path: String) -> Bool {
        let bytes = path.utf8
        return bytes.first == UInt8(ascii: "/") && bytes.last != UInt8(ascii: "/") && !bytes.contains(0)
    }
}
