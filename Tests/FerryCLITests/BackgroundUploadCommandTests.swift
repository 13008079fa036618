import FerryCore
import FerryTestServer
import Foundation
import Testing

/// `ferry put --background` with `--form` and `--chunks`: ferryd sends the form and the tus chunks
/// itself (the restart behaviour is tested against ferryd in BackgroundChunkedUploadTests).
@Suite struct BackgroundUploadCommandTests {
    @Test func formsAndChunksAreHandedToFerryd() async throws {
        try await TestServer.withServer { server in
            let directory = try makeDirectory()
            let home = "/tmp/ferry-u-\(UUID().uuidString.prefix(8))"
            try FileManager.default.createDirectory(atPath: home, withIntermediateDirectories: true)
            let cli = CLIRunner(environment: ["FERRY_HOME": home], directory: directory)
            defer {
                try? FileManager.default.removeItem(atPath: directory)
                try? FileManager.default.removeItem(atPath: home)
            }
            let photo = DeterministicBytes(seed: 31).bytes(offset: 0, count: 300_000)
            try Data(photo).write(to: URL(fileURLWithPath: directory + "/photo.png"))
            let big = DeterministicBytes(seed: 32).bytes(offset: 0, count: 3_000_000)
            try Data(big).write(to: URL(fileURLWithPath: directory + "/big.bin"))

            // Refused before ferryd is asked (or started): a missing form file, a form field of stdin.
            let missing = try await cli.run(["put", "--background", "--form", "f=@nothing.bin", server.url("/multipart")])
            #expect(missing.status == 4, "\(missing.stderr)")
            #expect(missing.stderr.contains("nothing.bin"), "\(missing.stderr)")
            let stdin = try await cli.run(["put", "--background", "--form", "f=@-", server.url("/multipart")])
            #expect(stdin.status == 2, "\(stdin.stderr)")
            #expect(try await cli.run(["daemon", "status"]).status == 5)

            do {
                let form = try await cli.run([
                    "put", "--background", "--form", "title=Holiday", "--form", "photo=@photo.png",
                    "--form", "raw=@photo.png;type=application/x-raw;filename=raw.dat",
                    server.url("/multipart?keep=cli-bgform"),
                ])
                #expect(form.status == 0, "\(form.stderr)")
                let formTask = form.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
                let chunked = try await cli.run([
                    "put", "--background", "--chunks", "3", "big.bin", server.url("/tus/?keep=cli-bgchunks"), "--json",
                ])
                #expect(chunked.status == 0, "\(chunked.stderr)")
                let info = try JSONDecoder().decode(BackgroundTaskInfo.self, from: Data(chunked.stdout.utf8))
                let waited = try await cli.run(["wait", formTask, String(info.taskIdentifier)])
                #expect(waited.status == 0, "\(waited.stderr)")

                let kept = try #require(server.storedUpload(key: "cli-bgform"))
                let report = try #require(try JSONSerialization.jsonObject(with: Data(kept.body)) as? [String: Any])
                let parts = try #require(report["parts"] as? [[String: Any]])
                #expect(parts.map { $0["name"] as? String } == ["title", "photo", "raw"])
                #expect(parts[0]["text"] as? String == "Holiday")
                #expect(parts[1]["filename"] as? String == "photo.png")
                #expect(parts[1]["contentType"] as? String == "image/png")  // guessed as curl does
                #expect(parts[1]["sha256"] as? String == bytesSHA256(300_000, seed: 31))
                #expect(parts[2]["filename"] as? String == "raw.dat")
                #expect(parts[2]["contentType"] as? String == "application/x-raw")
                #expect(server.storedUpload(key: "cli-bgchunks")?.body == big)

                let list = try await cli.run(["ls", "--json"])
                let tasks = try JSONDecoder().decode([BackgroundTaskInfo].self, from: Data(list.stdout.utf8))
                #expect(tasks.map(\.taskDescription).contains("form: title, photo, raw"))
            } catch {
                _ = try? await cli.run(["daemon", "stop"])
                throw error
            }
            _ = try await cli.run(["daemon", "stop"])
        }
    }
}
