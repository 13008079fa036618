import Ferry
import Foundation

/// `ferry-bench`: runs one piece of Ferry's work and prints what it measured, for the benchmark scripts
/// (Benchmarks/). Not a user tool: `ferry` is.
///
///     ferry-bench download URL PATH     one download through Session, moved to PATH
///     ferry-bench gets URL COUNT        COUNT sequential GETs of URL through one Session
@main
struct FerryBench {
    static func main() async {
        let arguments = Array(CommandLine.arguments.dropFirst())
        do {
            switch (arguments.first, arguments.count) {
            case ("download", 3):
                try await download(arguments[1], to: arguments[2])
            case ("gets", 3):
                guard let count = Int(arguments[2]), count > 0 else { throw usage() }
                try await gets(arguments[1], count: count)
            default:
                throw usage()
            }
        } catch {
            FileHandle.standardError.write(Data("ferry-bench: \(error)\n".utf8))
            exit(1)
        }
    }

    static func usage() -> FerryError {
        FerryError(.invalidOperation, "usage: ferry-bench download URL PATH | ferry-bench gets URL COUNT")
    }

    static func url(_ text: String) throws -> URL {
        guard let url = URL(string: text) else { throw FerryError(.badURL, "not a URL: \(text)") }
        return url
    }

    static func download(_ text: String, to path: String) async throws {
        let session = Session(configuration: .ephemeral)
        defer { session.invalidateAndCancel() }
        let start = ContinuousClock.now
        let (file, response) = try await session.download(from: try url(text))
        let elapsed = ContinuousClock.now - start
        try? FileManager.default.removeItem(atPath: path)
        try FileManager.default.moveItem(at: file, to: URL(fileURLWithPath: path))
        let size = (try FileManager.default.attributesOfItem(atPath: path)[.size] as? NSNumber)?.int64Value ?? 0
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        print("status=\(response.statusCode) bytes=\(size) seconds=\(seconds) MBps=\(Double(size) / seconds / 1e6)")
    }

    static func gets(_ text: String, count: Int) async throws {
        let session = Session(configuration: .ephemeral)
        defer { session.invalidateAndCancel() }
        let request = Request(url: try url(text))
        var bytes = 0
        let start = ContinuousClock.now
        for _ in 0..<count {
            let (data, response) = try await session.data(for: request)
            guard response.statusCode == 200 else {
                throw FerryError(.badServerResponse, "status \(response.statusCode)")
            }
            bytes += data.count
        }
        let elapsed = ContinuousClock.now - start
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        print("requests=\(count) bytes=\(bytes) seconds=\(seconds) rps=\(Double(count) / seconds)")
    }
}
