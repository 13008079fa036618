import FerryCore
import NIOCore

/// The reader's demand for one HTTP/3 body, passed to its connection's loop.
final class HTTP3BodyDemand: NIOAsyncSequenceProducerDelegate, Sendable {
    private let connection: HTTP3Connection
    private let id: UInt64

    init(connection: HTTP3Connection, id: UInt64) {
        self.connection = connection
        self.id = id
    }

    func produceMore() {
        let (connection, id) = (connection, id)
        connection.eventLoop.execute { connection.resume(id) }
    }

    func didTerminate() {
        let (connection, id) = (connection, id)
        connection.eventLoop.execute { connection.fail(id, FerryError(.cancelled, "the body's reader went away")) }
    }
}
