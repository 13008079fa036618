public import FerryCore
import Foundation
import NIOCore

/// A multipart/form-data body (RFC 7578) whose file parts are streamed from disk as the body is sent,
/// so a body of any size uses constant memory (SPEC S4.1).
///
/// ```swift
/// var form = MultipartFormData()
/// form.append(field: "title", value: "Holiday")
/// try form.append(fileAt: "/home/me/photo.jpg", name: "photo", contentType: "image/jpeg")
/// let body = try form.makeBody()   // Content-Length known in advance
/// ```
public struct MultipartFormData: Sendable {
    /// The boundary between parts: random, 40 characters, so it does not occur in the content.
    public let boundary: String
    private var parts: [MultipartStream.Part] = []

    /// An empty form with a random boundary (or the given one).
    public init(boundary: String? = nil) {
        self.boundary = boundary ?? "ferry-" + UUID().uuidString.replacingOccurrences(of: "-", with: "").lowercased()
    }

    /// The Content-Type header value, with the boundary.
    public var contentType: String { "multipart/form-data; boundary=\(boundary)" }

    /// Adds a text field.
    public mutating func append(field name: String, value: String) {
        append(data: Array(value.utf8), name: name, filename: nil, contentType: nil)
    }

    /// Adds bytes as a part, optionally as a file with a name and a content type.
    public mutating func append(data: [UInt8], name: String, filename: String?, contentType: String?) {
        parts.append(
            MultipartStream.Part(
                head: head(name: name, filename: filename, contentType: contentType),
                bytes: data,
                file: nil
            )
        )
    }

    /// Adds a file, read from disk only when the body is sent. The file name sent is the last path
    /// component of `filename` (default: of `path`): a path never leaves the machine.
    /// - Throws: ``FerryError`` when the file is missing, a directory, or unreadable.
    public mutating func append(
        fileAt path: String,
        name: String,
        filename: String? = nil,
        contentType: String = "application/octet-stream"
    ) throws {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) else {
            throw FerryError(.fileDoesNotExist, "there is no file \(path) to upload")
        }
        guard !isDirectory.boolValue else {
            throw FerryError(.fileIsDirectory, "\(path) is a directory; upload the files in it one by one")
        }
        guard FileManager.default.isReadableFile(atPath: path),
            let size = (try? FileManager.default.attributesOfItem(atPath: path))?[.size] as? NSNumber
        else {
            throw FerryError(.noPermissionsToReadFile, "\(path) cannot be read")
        }
        parts.append(
            MultipartStream.Part(
                head: head(name: name, filename: filename ?? path, contentType: contentType),
                bytes: [],
                file: (path, size.int64Value)
            )
        )
    }

    /// Adds a field described by value (``FormField``): a text part, or a file read when the body is sent.
    /// - Throws: ``FerryError`` when a file part's file is missing, a directory, or unreadable.
    public mutating func append(_ field: FormField) throws {
        if let file = field.file {
            try append(
                fileAt: file,
                name: field.name,
                filename: field.filename,
                contentType: field.contentType ?? "application/octet-stream"
            )
        } else {
            append(data: Array((field.value ?? "").utf8), name: field.name, filename: field.filename, contentType: field.contentType)
        }
    }

    /// The body's exact length.
    public var contentLength: Int64 {
        var total = Int64(closing.count)
        for part in parts {
            // The head, the content, and the CRLF after it.
            total += Int64(part.head.count + part.bytes.count + 2) + (part.file?.length ?? 0)
        }
        return total
    }

    /// The body to send, streamed, with its length.
    public func makeBody(chunkSize: Int = 256 * 1024) -> TransportRequestBody {
        .stream(
            length: contentLength,
            TransportBodyStream(MultipartStream(parts: parts, closing: closing, chunkSize: chunkSize))
        )
    }

    /// The file name as sent: the last component of a path, either separator.
    static func sanitizedFilename(_ filename: String) -> String {
        let last = filename.split(whereSeparator: { $0 == "/" || $0 == "\\" }).last.map(String.init) ?? ""
        return last.isEmpty ? "file" : last
    }

    /// Escapes a name or file name for a quoted Content-Disposition parameter as browsers do (WHATWG
    /// HTML): `"` as %22, CR as %0D, LF as %0A, so nothing can end the header early.
    static func quoted(_ value: String) -> String {
        var result = ""
        for scalar in value.unicodeScalars {
            switch scalar {
            case "\"": result += "%22"
            case "\r": result += "%0D"
            case "\n": result += "%0A"
            default: result.unicodeScalars.append(scalar)
            }
        }
        return "\"" + result + "\""
    }

    private func head(name: String, filename: String?, contentType: String?) -> [UInt8] {
        var text = "--\(boundary)\r\nContent-Disposition: form-data; name=\(Self.quoted(name))"
        if let filename { text += "; filename=\(Self.quoted(Self.sanitizedFilename(filename)))" }
        text += "\r\n"
        if let contentType {
            // By scalars: "\r\n" is one Character, equal to neither "\r" nor "\n".
            let clean = String(String.UnicodeScalarView(contentType.unicodeScalars.filter { $0 != "\r" && $0 != "\n" }))
            text += "Content-Type: \(clean)\r\n"
        }
        text += "\r\n"
        return Array(text.utf8)
    }

    private var closing: [UInt8] { Array("--\(boundary)--\r\n".utf8) }
}

/// The bytes of a multipart body in order: each part's head, its content (files read in chunks), CRLF;
/// then the closing boundary.
private struct MultipartStream: AsyncSequence, Sendable {
    typealias Element = ByteBuffer

    struct Part: Sendable {
        var head: [UInt8]
        var bytes: [UInt8]
        var file: (path: String, length: Int64)?
    }

    let parts: [Part]
    let closing: [UInt8]
    let chunkSize: Int

    func makeAsyncIterator() -> Iterator { Iterator(stream: self) }

    struct Iterator: AsyncIteratorProtocol {
        let stream: MultipartStream
        var index = 0
        var step = 0  // 0: head and in-memory bytes; 1: the file; 2: CRLF
        var file: FileChunks.Iterator?
        var closed = false

        init(stream: MultipartStream) { self.stream = stream }

        mutating func next() async throws -> ByteBuffer? {
            while index < stream.parts.count {
                let part = stream.parts[index]
                switch step {
                case 0:
                    step = 1
                    if let source = part.file {
                        file = FileChunks(
                            path: source.path,
                            offset: 0,
                            length: source.length,
                            chunkSize: stream.chunkSize
                        )
                        .makeAsyncIterator()
                    }
                    return ByteBuffer(bytes: part.head + part.bytes)
                case 1:
                    if file != nil, let chunk = try await file!.next() { return chunk }
                    file = nil
                    step = 2
                default:
                    step = 0
                    index += 1
                    return ByteBuffer(string: "\r\n")
                }
            }
            guard !closed else { return nil }
            closed = true
            return ByteBuffer(bytes: stream.closing)
        }
    }
}
