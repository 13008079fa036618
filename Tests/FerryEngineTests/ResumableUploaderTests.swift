import FerryCore
import FerryEngine
import FerryTestServer
import Foundation
import NIOCore
import Synchronization
import Testing

/// A transport that counts the request body bytes it sends, and can cut the first PATCH's body after
/// some bytes (the connection then drops mid-request, as a network error would).
final class UploadProbeTransport: HTTPTransport {
    private let base: any HTTPTransport
    private let cutAfter: Int64?
    private let state = Mutex<(sent: Int64, cut: Bool, methods: [String])>((0, false, []))

    init(_ base: any HTTPTransport, cutFirstPatchAfter: Int64? = nil) {
        self.base = base
        self.cutAfter = cutFirstPatchAfter
    }

    var bodyBytesSent: Int64 { state.withLock { $0.sent } }
    var methods: [String] { state.withLock { $0.methods } }

    func send(_ request: TransportRequest, deadline: NIODeadline) async throws -> TransportResponse {
        var outgoing = request
        let cut: Int64? = state.withLock { state in
            state.methods.append(request.method)
            guard request.method == "PATCH", !state.cut, let cutAfter else { return nil }
            state.cut = true
            return cutAfter
        }
        if case .stream(let length, let stream) = request.body {
            let passed = ByteTally()
            let counted = stream.map { @Sendable [self] chunk -> ByteBuffer in
                let total = passed.add(Int64(chunk.readableBytes))
                if let cut, total > cut {
                    throw FerryError(.networkConnectionLost, "cut by the test after \(cut) bytes")
                }
                self.state.withLock { $0.sent += Int64(chunk.readableBytes) }
                return chunk
            }
            outgoing.body = .stream(length: length, TransportBodyStream(counted))
        }
        return try await base.send(outgoing, deadline: deadline)
    }

    func shutdown() async throws {}
}

/// A running total, shared by reference.
final class ByteTally: Sendable {
    private let total = Mutex<Int64>(0)

    /// Adds `count`; returns the new total.
    func add(_ count: Int64) -> Int64 {
        total.withLock { total in
            total += count
            return total
        }
    }
}

/// A file of `count` deterministic bytes; returns its path and bytes.
func uploadFile(_ count: Int, seed: UInt64) throws -> (String, [UInt8]) {
    let bytes = DeterministicBytes(seed: seed, version: 0).bytes(offset: 0, count: count)
    let path = try temporaryPath("upload.bin")
    try Data(bytes).write(to: URL(fileURLWithPath: path))
    return (path, bytes)
}

@Suite struct ResumableUploaderTests {
    @Test(arguments: ResumableUploadProtocol.Version.allCases)
    func anUploadIsCreatedAndAppendedInEachInteropVersion(version: ResumableUploadProtocol.Version) async throws {
        try await withServerAndTransport { server, transport in
            let (path, bytes) = try uploadFile(1_000_000, seed: 81)
            var uploader = ResumableUploader(transport: transport)
            uploader.version = version
            var request = request(server.url("/upload?keep=v\(version.rawValue)", on: .resumable))
            request.method = "POST"
            let confirmed = Mutex<[UploadResumption]>([])
            var events = ResumableUploader.Events()
            events.didConfirm = { state in confirmed.withLock { $0.append(state) } }
            let outcome = try await uploader.upload(
                request,
                body: .file(path: path, length: 1_000_000),
                resumingFrom: nil,
                filePath: path,
                deadline: testDeadline,
                events: events
            )
            guard case .finished(let result) = outcome else {
                Issue.record("the resumable listener was not detected")
                return
            }
            #expect(result.status == 200)
            let report = try JSONSerialization.jsonObject(with: Data(result.body.readableBytesView)) as? [String: Any]
            #expect(report?["sha256"] as? String == sha256(bytes))
            #expect(server.storedUpload(key: "v\(version.rawValue)")?.body == bytes)
            #expect(confirmed.withLock { $0.first?.offset } == 0)
            #expect(confirmed.withLock { $0.first?.location.path.hasPrefix("/resumable/") } == true)
        }
    }

    @Test func aServerWithoutTheProtocolIsDetectedBeforeAByteIsSent() async throws {
        try await withServerAndTransport { server, base in
            let transport = UploadProbeTransport(base)
            let (path, _) = try uploadFile(10_000, seed: 82)
            var request = request(server.url("/upload"))
            request.method = "POST"
            let outcome = try await ResumableUploader(transport: transport).upload(
                request,
                body: .file(path: path, length: 10_000),
                resumingFrom: nil,
                deadline: testDeadline
            )
            guard case .unsupported = outcome else {
                Issue.record("expected .unsupported")
                return
            }
            #expect(transport.methods == ["OPTIONS"])
        }
    }

    @Test func aConnectionCutAtHalfResumesFromTheServersOffset() async throws {
        try await withServerAndTransport { server, base in
            let size: Int64 = 4_000_000
            let transport = UploadProbeTransport(base, cutFirstPatchAfter: size / 2)
            let (path, bytes) = try uploadFile(Int(size), seed: 83)
            var request = request(server.url("/upload?keep=cut", on: .resumable))
            request.method = "POST"
            let outcome = try await ResumableUploader(transport: transport).upload(
                request,
                body: .file(path: path, length: size),
                resumingFrom: nil,
                deadline: testDeadline
            )
            guard case .finished(let result) = outcome else {
                Issue.record("expected the upload to finish")
                return
            }
            #expect(result.status == 200)
            #expect(server.storedUpload(key: "cut")?.body == bytes)
            #expect(transport.methods == ["OPTIONS", "POST", "PATCH", "HEAD", "PATCH"])
            let again = transport.bodyBytesSent - size
            print("resumable upload cut at 50 %: \(again) bytes sent again")
            // At most one chunk of the file (256 KiB) is sent twice: what was in flight when it broke.
            #expect(again <= 256 * 1024)
        }
    }

    @Test func aCancelledUploadContinuesFromItsResumeDataInANewUploader() async throws {
        try await withServerAndTransport { server, base in
            let size: Int64 = 3_000_000
            let (path, bytes) = try uploadFile(Int(size), seed: 84)
            var request = request(server.url("/upload?keep=cancel", on: .resumable))
            request.method = "POST"
            let sent = Mutex<Int64>(0)
            var events = ResumableUploader.Events()
            let gate = TransferGate()
            events.gate = gate
            events.didSend = { _, total, _ in
                sent.withLock { $0 = total }
                if total >= size / 2 { gate.close() }
            }
            let first = Task {
                try await ResumableUploader(transport: base).upload(
                    request,
                    body: .file(path: path, length: size),
                    resumingFrom: nil,
                    filePath: path,
                    deadline: testDeadline,
                    events: events
                )
            }
            while sent.withLock({ $0 }) < size / 2 { try await Task.sleep(for: .milliseconds(10)) }
            first.cancel()
            let error = try await #require(throws: FerryError.self) { try await first.value }
            let resumeData = try ResumeData(encoded: try #require(error.resumeData).encoded())
            let upload = try #require(resumeData.upload)
            #expect(resumeData.partialFilePath == path)

            let transport = UploadProbeTransport(base)
            let outcome = try await ResumableUploader(transport: transport).upload(
                resumeData.originalRequest,
                body: .file(path: path, length: size),
                resumingFrom: upload,
                deadline: testDeadline
            )
            guard case .finished(let result) = outcome else {
                Issue.record("expected the upload to finish")
                return
            }
            #expect(result.status == 200)
            #expect(server.storedUpload(key: "cancel")?.body == bytes)
            #expect(transport.methods == ["HEAD", "PATCH"])
            // Only what the server did not have went again.
            #expect(transport.bodyBytesSent <= size - size / 2 + 256 * 1024)
        }
    }
}

/// A server of the draft, scripted: announces `Upload-Limit`, answers the first append with a 409 naming
/// a later offset (as if an earlier answer had been lost), and records the appends it gets.
final class ScriptedUploadServer: HTTPTransport {
    struct Append: Sendable, Equatable {
        var offset: Int64
        var length: Int64
        var complete: Bool
    }

    private let limit: String
    private let state = Mutex<(offset: Int64, appends: [Append], conflicted: Bool)>((0, [], false))

    init(limit: String) { self.limit = limit }

    var appends: [Append] { state.withLock { $0.appends } }

    func send(_ request: TransportRequest, deadline: NIODeadline) async throws -> TransportResponse {
        func answer(_ status: Int, _ headers: [(String, String)], _ body: String = "") -> TransportResponse {
            TransportResponse(
                status: status,
                headers: Headers(headers),
                protocolName: "http/1.1",
                body: TransportBodyStream((body.isEmpty ? [] : [ByteBuffer(string: body)]).async)
            )
        }
        switch request.method {
        case "OPTIONS":
            return answer(200, [("Upload-Limit", limit)])
        case "POST":
            return answer(201, [("Location", "/up/1"), ("Upload-Offset", "0"), ("Upload-Complete", "?0")])
        case "PATCH":
            let offset = Int64(request.headers["upload-offset"] ?? "") ?? -1
            let complete = request.headers["upload-complete"] == "?1"
            if state.withLock({ !$0.conflicted }) {
                state.withLock {
                    $0.conflicted = true
                    $0.offset = 100_000
                }
                return answer(409, [("Upload-Offset", "100000"), ("Upload-Complete", "?0")])
            }
            var length: Int64 = 0
            if case .stream(_, let body) = request.body {
                for try await chunk in body { length += Int64(chunk.readableBytes) }
            }
            let now = state.withLock { state in
                state.appends.append(Append(offset: offset, length: length, complete: complete))
                state.offset = offset + length
                return state.offset
            }
            return complete
                ? answer(200, [("Upload-Complete", "?1")], "done")
                : answer(204, [("Upload-Offset", String(now)), ("Upload-Complete", "?0")])
        default:
            return answer(405, [])
        }
    }

    func shutdown() async throws {}
}

@Suite struct ResumableUploadLimitTests {
    @Test func appendsKeepToTheLimitAndAConflictMovesToTheServersOffset() async throws {
        let server = ScriptedUploadServer(limit: "max-size=10000000, max-append-size=400000, max-age=3600")
        let (path, _) = try uploadFile(1_000_000, seed: 85)
        var request = request("http://127.0.0.1:9/upload")
        request.method = "POST"
        let outcome = try await ResumableUploader(transport: server).upload(
            request,
            body: .file(path: path, length: 1_000_000),
            resumingFrom: nil,
            deadline: testDeadline
        )
        guard case .finished(let result) = outcome else {
            Issue.record("expected the upload to finish")
            return
        }
        #expect(result.status == 200)
        #expect(String(buffer: result.body) == "done")
        #expect(
            server.appends == [
                .init(offset: 100_000, length: 400_000, complete: false),
                .init(offset: 500_000, length: 400_000, complete: false),
                .init(offset: 900_000, length: 100_000, complete: true),
            ]
        )
    }

    @Test func anUploadAboveTheServersMaximumFailsBeforeItStarts() async throws {
        let server = ScriptedUploadServer(limit: "max-size=1000")
        let (path, _) = try uploadFile(5000, seed: 86)
        let error = try await #require(throws: FerryError.self) {
            try await ResumableUploader(transport: server).upload(
                request("http://127.0.0.1:9/upload"),
                body: .file(path: path, length: 5000),
                resumingFrom: nil,
                deadline: testDeadline
            )
        }
        #expect(error.code == .dataLengthExceedsMaximum)
        #expect(server.appends.isEmpty)
    }

    @Test func limitsAndProtocolFieldsParse() throws {
        let limit = try #require(UploadLimit("max-size=10, min-size=1, max-append-size=4, x-other=?1"))
        #expect(limit.maximumSize == 10)
        #expect(limit.minimumSize == 1)
        #expect(limit.appendLength(from: 0, of: 10) == 4)
        #expect(limit.appendLength(from: 8, of: 10) == 2)
        #expect(UploadLimit("max-size=-1") == nil)
        #expect(ResumableUploadProtocol.completionField(false, .v3) == ("Upload-Incomplete", "?1"))
        #expect(ResumableUploadProtocol.completionField(true, .v5) == ("Upload-Complete", "?1"))
        #expect(
            ResumableUploadProtocol.appendFields(offset: 5, complete: false, .v6).map(\.name) == [
                "Upload-Draft-Interop-Version", "Upload-Offset", "Upload-Complete", "Content-Type",
            ]
        )
        #expect(ResumableUploadProtocol.appendFields(offset: 5, complete: false, .v5).count == 3)
        #expect(ResumableUploadProtocol.isComplete(["Upload-Incomplete": "?0"]) == true)
        #expect(ResumableUploadProtocol.offset(["Upload-Offset": "-3"]) == nil)
        let base = URL(string: "http://127.0.0.1:8/upload")!
        #expect(
            ResumableUploadProtocol.location(["Location": "/r/1"], relativeTo: base)?.absoluteString
                == "http://127.0.0.1:8/r/1"
        )
        #expect(ResumableUploadProtocol.location(["Location": "file:///etc/passwd"], relativeTo: base) == nil)
    }
}
