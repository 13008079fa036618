import Ferry
import Foundation

extension FerryBench {
    /// The Autobahn test suite's client side against a fuzzing server at `base` (`ws://127.0.0.1:9001`;
    /// kosoku from PyPI is one): asks for the number of cases, runs each through a WebSocketTask that
    /// echoes every message back (the suite's contract for a client), then asks the server to write its
    /// reports. Benchmarks/autobahn.sh starts the server and reads the verdicts.
    static func autobahn(_ base: String, deflate: Bool) async throws {
        let session = Session(configuration: .ephemeral)
        defer { session.invalidateAndCancel() }
        let counter = session.webSocketTask(with: URL(string: "\(base)/getCaseCount")!)
        counter.resume()
        guard case .string(let text) = try await counter.receive(), let count = Int(text) else {
            throw FerryError(.badServerResponse, "the fuzzing server did not say how many cases it has")
        }
        await counter.waitUntilFinished()
        let started = ContinuousClock.now
        for number in 1...count {
            let socket = session.webSocketTask(with: URL(string: "\(base)/runCase?case=\(number)&agent=ferry")!)
            // The performance cases (9.x) send messages of up to 16 MiB.
            socket.maximumMessageSize = 64 << 20
            socket.compression = deflate
            socket.resume()
            while true {
                do {
                    let message = try await socket.receive()
                    try await socket.send(message)
                } catch {
                    break
                }
            }
            await socket.waitUntilFinished()
            if ProcessInfo.processInfo.environment["FERRY_AUTOBAHN_PROGRESS"] != nil {
                FileHandle.standardError.write(Data("case \(number)/\(count) at \(ContinuousClock.now - started)\n".utf8))
            }
        }
        let reports = session.webSocketTask(with: URL(string: "\(base)/updateReports?agent=ferry")!)
        reports.resume()
        _ = try? await reports.receive()
        await reports.waitUntilFinished()
        print("autobahn: ran \(count) cases in \(ContinuousClock.now - started)")
    }
}
