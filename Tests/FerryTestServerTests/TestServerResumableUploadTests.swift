import AsyncHTTPClient
import FerryTestServer
import NIOCore
import Testing

/// The resumable-upload listener speaks the IETF draft "Resumable Uploads for HTTP" (interop versions 3,
/// 5 and 6, through apple/swift-nio-extras' NIOResumableUpload) and keeps the assembled body.
@Suite struct TestServerResumableUploadTests {
    @Test func anUploadInTwoPartsIsAssembled() async throws {
        try await withServerAndClient { server, client in
            let whole = expectedBytes(300_000, seed: 21)
            let creation = try await client.fetch(
                server.url("/upload?keep=r1", on: .resumable),
                method: .POST,
                headers: [("Upload-Draft-Interop-Version", "6"), ("Upload-Complete", "?0")],
                body: Array(whole[..<120_000])
            )
            #expect(creation.status == 201)
            #expect(creation.header("upload-offset") == "120000")
            let location = try #require(creation.header("location"))
            #expect(location.hasPrefix(server.url("/resumable/", on: .resumable)))

            let offset = try await client.fetch(
                location,
                method: .HEAD,
                headers: [("Upload-Draft-Interop-Version", "6")]
            )
            #expect(offset.status == 204)
            #expect(offset.header("upload-offset") == "120000")

            let append = try await client.fetch(
                location,
                method: .PATCH,
                headers: [
                    ("Upload-Draft-Interop-Version", "6"), ("Upload-Offset", "120000"), ("Upload-Complete", "?1"),
                    ("Content-Type", "application/partial-upload"),
                ],
                body: Array(whole[120_000...])
            )
            #expect(append.status == 200)
            let report = try append.json()
            #expect(report["length"] as? Int == whole.count)
            #expect(report["sha256"] as? String == sha256Hex(whole))
            #expect(Bytes(server.storedUpload(key: "r1")?.body ?? []) == Bytes(whole))
        }
    }

    @Test func aWrongOffsetIsAConflict() async throws {
        try await withServerAndClient { server, client in
            let creation = try await client.fetch(
                server.url("/upload?keep=r2", on: .resumable),
                method: .POST,
                headers: [("Upload-Draft-Interop-Version", "6"), ("Upload-Complete", "?0")],
                body: [1, 2, 3]
            )
            let location = try #require(creation.header("location"))
            let append = try await client.fetch(
                location,
                method: .PATCH,
                headers: [
                    ("Upload-Draft-Interop-Version", "6"), ("Upload-Offset", "1"), ("Upload-Complete", "?1"),
                    ("Content-Type", "application/partial-upload"),
                ],
                body: [4]
            )
            #expect(append.status == 409)
            #expect(append.header("upload-offset") == "3")
        }
    }

    @Test func plainRequestsStillWorkThere() async throws {
        try await withServerAndClient { server, client in
            let response = try await client.fetch(server.url("/bytes/1000?seed=3", on: .resumable))
            #expect(Bytes(response.body) == Bytes(expectedBytes(1000, seed: 3)))
        }
    }
}
