import FerryCore
import Foundation
import Hummingbird
import NIOCore

/// The control API's request context: Hummingbird's codable plumbing with the API's rules — JSON bodies
/// up to ``ControlAPI/maximumBodySize``, decoded by ``ControlBodyDecoder`` into ``ControlError``s that say
/// what is wrong, answers encoded as JSON.
struct ControlContext: RequestContext {
    var coreContext: CoreRequestContextStorage

    init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
    }

    var maxUploadSize: Int { ControlAPI.maximumBodySize }
    var requestDecoder: ControlBodyDecoder { ControlBodyDecoder() }
}

/// Decodes a control request's JSON body: over the size limit is a 413, a missing body or one that is
/// not the expected JSON a 400 naming the field at fault.
struct ControlBodyDecoder: RequestDecoder {
    func decode<T: Decodable>(_ type: T.Type, from request: Request, context: some RequestContext) async throws -> T {
        guard let value = try await Self.decodeIfPresent(type, from: request) else {
            throw ControlError(.badRequest, FerryError(.invalidOperation, "the request needs a JSON body (\(T.self))"))
        }
        return value
    }

    /// The body decoded, or nil when there is none (routes whose body is optional).
    static func decodeIfPresent<T: Decodable>(_ type: T.Type, from request: Request) async throws -> T? {
        var request = request
        let buffer: ByteBuffer
        do {
            buffer = try await request.collectBody(upTo: ControlAPI.maximumBodySize)
        } catch {
            throw ControlError(
                .contentTooLarge,
                FerryError(.invalidOperation, "the request body is larger than \(ControlAPI.maximumBodySize) bytes")
            )
        }
        guard buffer.readableBytes > 0 else { return nil }
        do {
            return try JSONDecoder().decode(T.self, from: Data(buffer.readableBytesView))
        } catch {
            throw ControlError(
                .badRequest,
                FerryError(.invalidOperation, "the JSON body is not a valid \(T.self): \(describe(error))")
            )
        }
    }

    private static func describe(_ error: any Error) -> String {
        switch error {
        case DecodingError.keyNotFound(let key, _): "the field '\(key.stringValue)' is missing"
        case DecodingError.typeMismatch(_, let context), DecodingError.valueNotFound(_, let context),
            DecodingError.dataCorrupted(let context):
            context.codingPath.isEmpty
                ? context.debugDescription
                : "\(context.codingPath.map(\.stringValue).joined(separator: ".")): \(context.debugDescription)"
        default: "\(error)"
        }
    }
}
