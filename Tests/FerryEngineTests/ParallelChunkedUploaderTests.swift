import FerryCore
import FerryEngine
import FerryTestServer
import Foundation
import NIOCore
import Synchronization
import Testing

@Suite struct ParallelChunkedUploaderTests {
    private func smallChunks(inFlight: Int = 4) -> ChunkPlanner.Options {
        var options = ChunkPlanner.Options()
        options.probeSize = 64 << 10
        options.minimumChunkSize = 64 << 10
        options.maximumChunkSize = 512 << 10
        options.maximumChunksInFlight = inFlight
        return options
    }

    @Test func aFileGoesInParallelChunksAndIsAssembledInOrder() async throws {
        try await withServerAndTransport { server, transport in
            let (path, bytes) = try uploadFile(3_000_000, seed: 101)
            let total = ByteTally()
            let report = try await ParallelChunkedUploader(transport: transport, options: smallChunks()).upload(
                request(server.url("/tus/?keep=tus1")),
                file: path,
                deadline: testDeadline
            ) { sent, _ in _ = total.add(sent) }
            #expect(report.result.status == 201)
            #expect(server.storedUpload(key: "tus1")?.body == bytes)
            #expect(report.chunks > 4)
            #expect(report.retries == 0)
            #expect(report.probeThroughput != nil)
            #expect(total.add(0) == 3_000_000)
            // Each chunk's bytes went once: what reached the server is the file.
            #expect(server.counters.requestBodyBytes(pathPrefix: "/tus/") == 3_000_000)
        }
    }

    @Test func failedChunksAreSentAgainAfterTheOthers() async throws {
        try await withServerAndTransport { server, transport in
            let (path, bytes) = try uploadFile(1_000_000, seed: 102)
            // The first three tus requests of this key get 503: the probe's creation fails twice, then a
            // chunk's; each is queued again.
            let report = try await ParallelChunkedUploader(transport: transport, options: smallChunks()).upload(
                request(server.url("/tus/?keep=tus2&fail=3&key=tus2")),
                file: path,
                deadline: testDeadline
            )
            #expect(report.result.status == 201)
            #expect(report.retries == 3)
            #expect(server.storedUpload(key: "tus2")?.body == bytes)
        }
    }

    @Test func storedChunksAreNotSentAgainWhenAnUploadGoesOn() async throws {
        struct Stopped: Error {}
        try await withServerAndTransport { server, transport in
            let (path, bytes) = try uploadFile(2_000_000, seed: 105)
            let recorded = Mutex<[ChunkedUploadProgress.Chunk]>([])
            // The first run records each stored chunk and stops at the third, as a daemon killed then
            // would: one chunk in flight, so nothing else is under way when it stops.
            let uploader = ParallelChunkedUploader(transport: transport, options: smallChunks(inFlight: 1))
            await #expect(throws: Stopped.self) {
                _ = try await uploader.upload(
                    request(server.url("/tus/?keep=tus5")),
                    file: path,
                    deadline: testDeadline,
                    resumption: .init { chunk in
                        let count = recorded.withLock { $0.append(chunk); return $0.count }
                        if count == 3 { throw Stopped() }
                    }
                )
            }
            let stored = recorded.withLock { $0 }
            let storedBytes = stored.reduce(0) { $0 + $1.length }
            #expect(stored.count == 3)
            #expect(server.storedUpload(key: "tus5") == nil)
            let before = server.counters.requestBodyBytes(pathPrefix: "/tus/")
            let progress = ByteTally()
            let report = try await uploader.upload(
                request(server.url("/tus/?keep=tus5")),
                file: path,
                deadline: testDeadline,
                resumption: .init(stored: stored)
            ) { sent, _ in _ = progress.add(sent) }
            #expect(report.result.status == 201)
            #expect(server.storedUpload(key: "tus5")?.body == bytes)
            // Only what the server lacked went again, and progress counts the stored chunks as sent.
            #expect(server.counters.requestBodyBytes(pathPrefix: "/tus/") - before == 2_000_000 - storedBytes)
            #expect(progress.add(0) == 2_000_000)
        }
    }

    @Test func aServerWithoutTusConcatenationIsAClearError() async throws {
        try await withServerAndTransport { server, transport in
            let (path, _) = try uploadFile(1000, seed: 103)
            let error = try await #require(throws: FerryError.self) {
                try await ParallelChunkedUploader(transport: transport).upload(
                    request(server.url("/upload")),
                    file: path,
                    deadline: testDeadline
                )
            }
            #expect(error.code == .badServerResponse)
            #expect(error.message.contains("tus"))
        }
    }

    @Test func theReadThrottleHoldsAnUploadBack() async throws {
        try await withServerAndTransport { server, transport in
            // 300 kB at 1 MB/s: the server may not have read it all before 0.3 s (a lower bound only).
            let body = ByteBuffer(bytes: DeterministicBytes(seed: 104).bytes(offset: 0, count: 300_000))
            let started = ContinuousClock.now
            let response = try await transport.send(
                TransportRequest(
                    method: "POST",
                    url: URL(string: server.url("/upload?read_throttle=1000000"))!,
                    headers: Headers(),
                    body: .bytes(body)
                ),
                deadline: testDeadline
            )
            for try await _ in response.body {}
            #expect(response.status == 200)
            #expect(ContinuousClock.now - started >= .milliseconds(250))
        }
    }
}
