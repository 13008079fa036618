// WebSocket programs of the sameness suite, against a real peer (Tests/Scripts/ws_peer.py): each takes
// the peer's origin (`ws://127.0.0.1:PORT`), compiled against FoundationNetworking and against
// FerryFoundationNetworking like the rest of SamenessPrograms.
import Foundation
#if FERRY
import FerryFoundationNetworking
#elseif canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Synchronization

extension SamenessPrograms {
    public static let webSocketPrograms: [(name: String, program: Program)] = [
        ("a WebSocket echoes text and binary", webSocketEcho),
        ("a WebSocket's delegate hears it open and complete", webSocketDelegate),
        ("a WebSocket the server closes gives its code and reason", webSocketServerCloses),
        ("a WebSocket ping gets its pong", webSocketPing),
        ("a WebSocket's subprotocol is the one the server chose", webSocketSubprotocol),
        ("a WebSocket the server refuses fails the task", webSocketRefused),
    ]

    static func describe(_ message: URLSessionWebSocketTask.Message?) -> String {
        switch message {
        case .string(let text)?: "string \(text)"
        case .data(let data)?: "data \(data.count) bytes"
        case nil: "no message"
        @unknown default: "unknown message"
        }
    }

    /// Receives one message through the completion handler.
    static func receive(_ task: URLSessionWebSocketTask) async -> (URLSessionWebSocketTask.Message?, (any Error)?) {
        let waiter = Waiter<(URLSessionWebSocketTask.Message?, (any Error)?)>()
        task.receive { result in
            switch result {
            case .success(let message): waiter.finish((message, nil))
            case .failure(let error): waiter.finish((nil, error))
            }
        }
        return await waiter.value()
    }

    static func send(_ task: URLSessionWebSocketTask, _ message: URLSessionWebSocketTask.Message) async -> (any Error)? {
        let waiter = Waiter<(any Error)?>()
        task.send(message) { waiter.finish($0) }
        return await waiter.value()
    }

    /// Records the WebSocket delegate's calls.
    final class WebSocketRecorder: NSObject, URLSessionWebSocketDelegate, @unchecked Sendable {
        let transcript = Transcript()
        let opened = Waiter<Void>()
        let done = Waiter<Void>()

        func urlSession(_ session: URLSession, webSocketTask: URLSessionWebSocketTask, didOpenWithProtocol protocol: String?) {
            transcript.add("didOpen protocol \(`protocol` ?? "none")")
            opened.finish(())
        }

        // FoundationNetworking's protocol has no default for this one (Apple's does).
        func urlSession(_ session: URLSession, webSocketTask: URLSessionWebSocketTask, didCloseWith closeCode: URLSessionWebSocketTask.CloseCode, reason: Data?) {
            transcript.add("didClose \(closeCode.rawValue)")
        }

        func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?) {
            transcript.add("didComplete \(SamenessPrograms.describe(error))")
            done.finish(())
        }
    }

    static func webSocketEcho(_ origin: String) async -> [String] {
        let session = ephemeralSession()
        defer { session.finishTasksAndInvalidate() }
        let task = session.webSocketTask(with: URL(string: "\(origin)/echo")!)
        task.resume()
        var lines: [String] = []
        lines.append("send text \(describe(await send(task, .string("hello"))))")
        let (first, firstError) = await receive(task)
        lines.append("\(describe(first)) \(describe(firstError))")
        lines.append("send data \(describe(await send(task, .data(Data(repeating: 5, count: 3000)))))")
        let (second, secondError) = await receive(task)
        lines.append("\(describe(second)) \(describe(secondError))")
        task.cancel(with: .normalClosure, reason: Data("bye".utf8))
        return lines
    }

    static func webSocketDelegate(_ origin: String) async -> [String] {
        let recorder = WebSocketRecorder()
        let session = ephemeralSession(delegate: recorder)
        defer { session.finishTasksAndInvalidate() }
        let task = session.webSocketTask(with: URL(string: "\(origin)/echo")!)
        task.resume()
        await recorder.opened.value()
        task.cancel(with: .goingAway, reason: nil)
        await recorder.done.value()
        return recorder.transcript.all + ["closeCode \(task.closeCode.rawValue)"]
    }

    static func webSocketServerCloses(_ origin: String) async -> [String] {
        let session = ephemeralSession()
        defer { session.finishTasksAndInvalidate() }
        let task = session.webSocketTask(with: URL(string: "\(origin)/close?code=1008&reason=policy")!)
        task.resume()
        let (message, error) = await receive(task)
        let reason = task.closeReason.map { String(decoding: $0, as: UTF8.self) } ?? "-"
        return [describe(message), "failed \(error != nil)", "closeCode \(task.closeCode.rawValue)", "reason \(reason)"]
    }

    static func webSocketPing(_ origin: String) async -> [String] {
        let session = ephemeralSession()
        defer { session.finishTasksAndInvalidate() }
        let task = session.webSocketTask(with: URL(string: "\(origin)/echo")!)
        task.resume()
        let waiter = Waiter<(any Error)?>()
        task.sendPing { waiter.finish($0) }
        let error = await waiter.value()
        task.cancel(with: .normalClosure, reason: nil)
        return ["pong \(describe(error))"]
    }

    static func webSocketSubprotocol(_ origin: String) async -> [String] {
        let session = ephemeralSession()
        defer { session.finishTasksAndInvalidate() }
        let task = session.webSocketTask(with: URL(string: "\(origin)/protocol")!, protocols: ["chat"])
        task.resume()
        let (message, error) = await receive(task)
        task.cancel(with: .normalClosure, reason: nil)
        return [describe(message), describe(error)]
    }

    static func webSocketRefused(_ origin: String) async -> [String] {
        let recorder = WebSocketRecorder()
        let session = ephemeralSession(delegate: recorder)
        defer { session.finishTasksAndInvalidate() }
        let task = session.webSocketTask(with: URL(string: "\(origin)/refuse")!)
        task.resume()
        let (message, error) = await receive(task)
        await recorder.done.value()
        return [describe(message), "failed \(error != nil)"] + recorder.transcript.all
    }
}
