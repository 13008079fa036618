public import Foundation

/// What a download needs to continue where it stopped, in this process or in another one later.
///
/// Opaque to users in spirit (pass it back to `downloadTask(withResumeData:)`), but a documented,
/// versioned JSON document in fact, so it can be stored and inspected. It records the request, how many
/// bytes are on disk, the validators that make a continuation safe, and where the partial file is.
public struct ResumeData: Sendable, Hashable, Codable {
    /// The newest format version this build writes and reads: 2 adds ``segments`` and ``upload``. Resume
    /// data without them is still written as version 1, so an older Ferry can read it.
    public static let currentVersion = 2
    /// The format versions this build reads.
    public static let readableVersions = 1...currentVersion

    /// The format version of this value.
    public var version: Int
    /// The request as first made (before redirects).
    public var originalRequest: Request
    /// The request last sent (after redirects): the one to continue.
    public var currentRequest: Request
    /// Bytes of the body already in ``partialFilePath``.
    public var bytesReceived: Int64
    /// The whole body's length, when the server said.
    public var expectedLength: Int64?
    /// The strong entity tag of the version being downloaded, quotes included.
    public var entityTag: String?
    /// The Last-Modified value of the version being downloaded, as the server sent it.
    public var lastModified: String?
    /// The file holding the bytes received so far.
    public var partialFilePath: String
    /// For a segmented download: the byte ranges and how much of each is in the file (which then has the
    /// resource's full length, with holes); ``bytesReceived`` is their sum. Nil: the file holds the first
    /// ``bytesReceived`` bytes.
    public var segments: SegmentPlan? {
        didSet { version = Self.version(segments: segments, upload: upload) }
    }
    /// For a resumable upload (``Request/resumableUpload``): the server's upload resource and the offset it
    /// confirmed; ``partialFilePath`` is then the file being uploaded and ``bytesReceived`` the offset.
    public var upload: UploadResumption? {
        didSet { version = Self.version(segments: segments, upload: upload) }
    }

    private static func version(segments: SegmentPlan?, upload: UploadResumption?) -> Int {
        segments == nil && upload == nil ? 1 : 2
    }

    /// Creates resume data of the current version.
    public init(
        originalRequest: Request,
        currentRequest: Request,
        bytesReceived: Int64,
        expectedLength: Int64?,
        entityTag: String?,
        lastModified: String?,
        partialFilePath: String,
        segments: SegmentPlan? = nil,
        upload: UploadResumption? = nil
    ) {
        self.version = Self.version(segments: segments, upload: upload)
        self.originalRequest = originalRequest
        self.currentRequest = currentRequest
        self.bytesReceived = bytesReceived
        self.expectedLength = expectedLength
        self.entityTag = entityTag
        self.lastModified = lastModified
        self.partialFilePath = partialFilePath
        self.segments = segments
        self.upload = upload
    }

    /// The URL to continue from.
    public var url: URL { currentRequest.url }

    /// The serialized form (JSON), for storing on disk or sending to another process.
    public func encoded() -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        // Encoding plain values cannot fail.
        return (try? encoder.encode(self)) ?? Data()
    }

    /// Reads serialized resume data.
    /// - Throws: ``FerryError`` with ``FerryError/Code/invalidResumeData`` when the bytes are not resume
    ///   data, come from a newer Ferry, or contradict themselves.
    public init(encoded data: Data) throws {
        struct VersionOnly: Decodable { var version: Int }
        guard let probe = try? JSONDecoder().decode(VersionOnly.self, from: data) else {
            throw FerryError(.invalidResumeData, "these bytes are not Ferry resume data")
        }
        guard Self.readableVersions.contains(probe.version) else {
            throw FerryError(
                .invalidResumeData,
                "resume data version \(probe.version) is not supported by this Ferry (it reads versions 1 to \(Self.currentVersion)); start the download again"
            )
        }
        let decoded: ResumeData
        do {
            decoded = try JSONDecoder().decode(ResumeData.self, from: data)
        } catch {
            throw FerryError(.invalidResumeData, "resume data is damaged: \(error)")
        }
        guard decoded.bytesReceived >= 0, decoded.expectedLength.map({ $0 >= decoded.bytesReceived }) ?? true else {
            throw FerryError(.invalidResumeData, "resume data claims more bytes than the resource has")
        }
        if let segments = decoded.segments {
            guard segments.bytesReceived == decoded.bytesReceived, decoded.expectedLength == segments.total else {
                throw FerryError(.invalidResumeData, "resume data's segments contradict its byte count")
            }
        }
        self = decoded
    }
}
