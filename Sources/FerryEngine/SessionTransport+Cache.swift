import FerryCore
import Foundation
import NIOCore
import Synchronization

/// The HTTP cache on a session's exchanges (RFC 9111 through ``HTTPCacheRules``): a GET of a task that
/// uses the cache is served from a fresh entry, validated with the server when stale, or loaded and
/// stored; an unsafe request's success invalidates what it changed. Each hop of a redirect is its own
/// exchange, so a cached 301 is followed without asking the server.
extension SessionTransport {
    func send(
        _ request: TransportRequest,
        deadline: NIODeadline,
        context: TransferContext?,
        cache: ResponseCache
    ) async throws -> TransportResponse {
        guard request.method.uppercased() == "GET", let use = context?.cache else {
            let response = try await exchange(request, deadline: deadline, context: context).response
            for url in HTTPCacheRules.invalidatedURLs(
                method: request.method,
                url: request.url,
                statusCode: response.status,
                responseHeaders: response.headers
            ) {
                cache.removeCachedResponses(for: url)
            }
            return response
        }
        let decision = HTTPCacheRules.decide(
            requestHeaders: request.headers,
            policy: use.policy,
            stored: cache.cachedResponses(for: request.url),
            now: now()
        )
        switch decision {
        case .unavailable:
            throw FerryError(
                .resourceUnavailable,
                "nothing in the cache answers this request, and its cache policy (returnCacheDataDontLoad or only-if-cached) does not allow loading it",
                failingURL: request.url.absoluteString
            )
        case .useStored(let stored):
            record(stored, request: request, context: context)
            return Self.response(from: stored)
        case .network:
            let requestDate = now()
            let response = try await exchange(request, deadline: deadline, context: context).response
            return storing(response, of: request, sentAt: requestDate, in: cache, use: use)
        case .validate(let stored, let conditions):
            var conditional = request
            for field in conditions { conditional.headers[field.name] = field.value }
            let requestDate = now()
            let (response, index) = try await exchange(conditional, deadline: deadline, context: context)
            guard response.status == 304 else {
                return storing(response, of: request, sentAt: requestDate, in: cache, use: use)
            }
            // The stored body stands; the 304's own (empty) body is read so its connection is reused.
            for try await _ in response.body {}
            let updated = HTTPCacheRules.updating(
                stored,
                notModified: response.headers,
                requestDate: requestDate,
                responseDate: now()
            )
            await cache.storeOffPool(updated)
            if let context, let index {
                context.update(index) { metrics in
                    metrics.resourceFetchType = .revalidated
                    metrics.response = updated.response
                }
            }
            return Self.response(from: updated)
        }
    }

    /// A transaction for a response served from the cache without asking the server.
    private func record(_ stored: CachedResponse, request: TransportRequest, context: TransferContext?) {
        guard let context else { return }
        var metrics = TransactionMetrics(request: request.sentRequest, resourceFetchType: .localCache)
        let moment = now()
        metrics.fetchStartDate = moment
        metrics.responseStartDate = moment
        metrics.responseEndDate = moment
        metrics.response = stored.response
        metrics.countOfResponseBodyBytesReceived = Int64(stored.data.count)
        _ = context.begin(metrics)
    }

    /// The response as a transport would hand it over: its body in slices.
    static func response(from stored: CachedResponse) -> TransportResponse {
        TransportResponse(
            status: stored.statusCode,
            headers: stored.headers,
            protocolName: "http/1.1",
            body: TransportBodyStream(DataChunks(data: stored.data, sliceSize: 65_536))
        )
    }

    /// `response` with its body copied aside as it is read, and stored once it has been read whole
    /// (after the task's willStore says so), when RFC 9111 lets it be stored and it is within the
    /// cache's entry size.
    private func storing(
        _ response: TransportResponse,
        of request: TransportRequest,
        sentAt requestDate: Date,
        in cache: ResponseCache,
        use: CacheUse
    ) -> TransportResponse {
        let policy = HTTPCacheRules.storagePolicy(
            method: request.method,
            requestHeaders: request.headers,
            statusCode: response.status,
            responseHeaders: response.headers
        )
        guard policy != .notAllowed,
            let varyValues = HTTPCacheRules.varyValues(requestHeaders: request.headers, responseHeaders: response.headers),
            (response.headers.contentLength ?? 0) <= Int64(cache.maximumEntrySize)
        else { return response }
        let responseDate = now()
        let template = CachedResponse(
            url: URL(string: HTTPCacheRules.key(for: request.url)) ?? request.url,
            statusCode: response.status,
            headers: response.headers,
            data: Data(),
            storagePolicy: policy,
            requestDate: requestDate,
            responseDate: responseDate,
            varyValues: varyValues
        )
        var stored = response
        stored.body = TransportBodyStream(
            CopyingBody(base: response.body, limit: cache.maximumEntrySize) { data in
                var entry = template
                entry.data = data
                if let willStore = use.willStore {
                    guard let changed = await willStore(entry) else { return }
                    entry = changed
                }
                await cache.storeOffPool(entry)
            }
        )
        return stored
    }
}

/// A body copied aside as it is read; `complete` gets the copy once the body ended, unless it failed
/// or grew past `limit` (then the copy is dropped at once).
private struct CopyingBody: AsyncSequence, Sendable {
    typealias Element = ByteBuffer
    let base: TransportBodyStream
    let limit: Int
    let complete: @Sendable (Data) async -> Void

    func makeAsyncIterator() -> Iterator { Iterator(base: base.makeAsyncIterator(), limit: limit, complete: complete) }

    struct Iterator: AsyncIteratorProtocol {
        var base: TransportBodyStream.Iterator
        let limit: Int
        let complete: @Sendable (Data) async -> Void
        var copy: Data? = Data()

        mutating func next() async throws -> ByteBuffer? {
            guard let chunk = try await base.next() else {
                if let copy {
                    self.copy = nil
                    await complete(copy)
                }
                return nil
            }
            if copy != nil {
                if copy!.count + chunk.readableBytes > limit {
                    copy = nil
                } else {
                    copy!.append(contentsOf: chunk.readableBytesView)
                }
            }
            return chunk
        }
    }
}
