// A WebSocket chat client: each line of standard input is a message, each message that arrives is a
// line of standard output. At the end of input it waits a moment for answers, then closes normally.
//
// usage: WebSocketChat ws://HOST:PORT/PATH
import Ferry
import Foundation

guard CommandLine.arguments.count == 2, let url = URL(string: CommandLine.arguments[1]) else {
    FileHandle.standardError.write(Data("usage: WebSocketChat URL\n".utf8))
    exit(2)
}

let session = Session(configuration: .ephemeral)
let socket = session.webSocketTask(with: url)
socket.resume()

// Messages in: printed as they come, until the connection closes.
let printer = Task {
    while true {
        switch try await socket.receive() {
        case .string(let text): print("< \(text)")
        case .data(let bytes): print("< \(bytes.count) bytes")
        @unknown default: break
        }
    }
}

// Messages out: one per line of input. (readLine blocks, so it runs off the cooperative pool.)
let lines = AsyncStream<String> { continuation in
    Thread.detachNewThread {
        while let line = readLine() { continuation.yield(line) }
        continuation.finish()
    }
}
do {
    for await line in lines { try await socket.send(.string(line)) }
    try await Task.sleep(for: .seconds(1))  // answers still on their way
    socket.cancel(with: .normalClosure, reason: Data("bye".utf8))
} catch let error as FerryError {
    print("failed: \(error.message)")
    exit(1)
}
_ = await printer.result
print("closed with \(socket.closeCode.rawValue)")
exit(socket.closeCode == .normalClosure ? 0 : 1)
