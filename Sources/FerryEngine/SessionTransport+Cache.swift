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
        let method = request.method.uppercased()
        guard method == "GET" || method == "HEAD", let use = context?.cache else {
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
        let head = method == "HEAD"
        let candidates = cache.cachedResponses(for: request.url)
        let decision = HTTPCacheRules.decide(requestHeaders: request.headers, policy: use.policy, stored: candidates, now: now())
        switch decision {
        case .unavailable:
            throw FerryError(
                .resourceUnavailable,
                "nothing in the cache answers this request, and its cache policy (returnCacheDataDontLoad) does not allow loading it",
                failingURL: request.url.absoluteString
            )
        case .gatewayTimeout:
            // only-if-cached with nothing to answer: 504, as RFC 9111 §5.2.1.7 and URLSession answer.
            return TransportResponse(status: 504, headers: Headers([("Content-Length", "0")]), protocolName: "http/1.1", body: TransportBodyStream(DataChunks(data: Data(), sliceSize: 1)))
        case .useStored(let stored):
            record(stored, request: request, context: context)
            return served(stored, head: head)
        case .notModified(let stored):
            record(stored, request: request, context: context)
            return notModified(stored)
        case .partialContent(let stored, let range):
            record(stored, request: request, context: context)
            return partialContent(stored, range, head: head)
        case .useStale(let stored, let conditions):
            record(stored, request: request, context: context)
            if !head { revalidateInBackground(request, stored: stored, conditions: conditions, cache: cache) }
            return served(stored, head: head)
        case .network, .validate:
            // A HEAD the cache cannot answer goes as it is, and its answer is not stored.
            if head { return try await exchange(request, deadline: deadline, context: context).response }
            let fallback = HTTPCacheRules.staleIfErrorFallback(requestHeaders: request.headers, stored: candidates, now: now())
            do {
                let (response, index) = try await load(request, decision, deadline: deadline, context: context, cache: cache, use: use)
                guard let fallback, HTTPCacheRules.errorStatuses.contains(response.status) else { return response }
                // stale-if-error: the stored response stands in for the server's error (RFC 5861 §4).
                response.cancel?()
                if let context, let index {
                    context.update(index) { metrics in
                        metrics.resourceFetchType = .localCache
                        metrics.response = fallback.response
                    }
                }
                return served(fallback, head: false)
            } catch let error where fallback != nil && !Self.isCancellation(error) {
                record(fallback!, request: request, context: context)
                return served(fallback!, head: false)
            }
        }
    }

    /// A GET the cache could not answer: sent as it is (`.network`) or with the stored response's
    /// validators (`.validate`, a 304 then serving the stored response, updated). The answer is stored
    /// when RFC 9111 allows.
    private func load(
        _ request: TransportRequest,
        _ decision: HTTPCacheRules.Decision,
        deadline: NIODeadline,
        context: TransferContext?,
        cache: ResponseCache,
        use: CacheUse
    ) async throws -> (TransportResponse, Int?) {
        guard case .validate(let stored, let conditions) = decision else {
            let requestDate = now()
            let (response, index) = try await exchange(request, deadline: deadline, context: context)
            return (storing(response, of: request, sentAt: requestDate, in: cache, use: use), index)
        }
        var conditional = request
        for field in conditions { conditional.headers[field.name] = field.value }
        let requestDate = now()
        let (response, index) = try await exchange(conditional, deadline: deadline, context: context)
        guard response.status == 304 else {
            return (storing(response, of: request, sentAt: requestDate, in: cache, use: use), index)
        }
        let updated = try await refreshed(stored, by: response, sentAt: requestDate, in: cache)
        if let context, let index {
            context.update(index) { metrics in
                metrics.resourceFetchType = .revalidated
                metrics.response = updated.response
            }
        }
        return (served(updated, head: false), index)
    }

    /// `stored` after the server's 304 `response` (its empty body read, so its connection is reused),
    /// stored again.
    private func refreshed(
        _ stored: CachedResponse,
        by response: TransportResponse,
        sentAt requestDate: Date,
        in cache: ResponseCache
    ) async throws -> CachedResponse {
        for try await _ in response.body {}
        let updated = HTTPCacheRules.updating(
            stored,
            notModified: HTTPCacheRules.storable(response.headers),
            requestDate: requestDate,
            responseDate: now()
        )
        await cache.storeOffPool(updated)
        return updated
    }

    /// Revalidates `stored` in the background (stale-while-revalidate), once per entry at a time: a 304
    /// refreshes it, another storable answer replaces it. Failures leave it as it is.
    private func revalidateInBackground(
        _ request: TransportRequest,
        stored: CachedResponse,
        conditions: Headers,
        cache: ResponseCache
    ) {
        let key = HTTPCacheRules.key(for: stored.url) + "\n" + stored.varyValues.sorted { $0.key < $1.key }.description
        guard cache.beginRevalidation(key) else { return }
        var conditional = request
        for field in conditions { conditional.headers[field.name] = field.value }
        Task {
            defer { cache.endRevalidation(key) }
            let requestDate = now()
            guard let (response, _) = try? await exchange(conditional, deadline: .now() + .seconds(60), context: nil) else { return }
            if response.status == 304 {
                _ = try? await refreshed(stored, by: response, sentAt: requestDate, in: cache)
            } else {
                let kept = storing(response, of: request, sentAt: requestDate, in: cache, use: CacheUse(policy: .useProtocolCachePolicy))
                do { for try await _ in kept.body {} } catch {}
            }
        }
    }

    /// Whether `error` is the task's own cancellation (which a stale response must not hide).
    private static func isCancellation(_ error: any Error) -> Bool {
        error is CancellationError || (error as? FerryError)?.code == .cancelled
    }

    /// The stored response as served from the cache (RFC 9111 §4): with its current `Age` (§5.1), and
    /// for a HEAD without its body.
    func served(_ stored: CachedResponse, head: Bool) -> TransportResponse {
        var headers = stored.headers
        headers["age"] = nil
        headers.add(name: "Age", value: String(Int(HTTPCacheRules.currentAge(stored, now: now()))))
        return TransportResponse(
            status: stored.statusCode,
            headers: headers,
            protocolName: "http/1.1",
            body: TransportBodyStream(DataChunks(data: head ? Data() : stored.data, sliceSize: 65_536))
        )
    }

    /// A 206 from the cache (RFC 9111 §3.3, RFC 9110 §15.3.7): `range` of the representation, cut from a
    /// complete stored response or from the stored part that holds it.
    private func partialContent(_ stored: CachedResponse, _ range: ClosedRange<Int64>, head: Bool) -> TransportResponse {
        let full = served(stored, head: true)
        let (offset, total) = HTTPCacheRules.storedPart(stored).map { ($0.range.lowerBound, $0.total) } ?? (0, Int64(stored.data.count))
        var headers = full.headers
        headers["content-range"] = "bytes \(range.lowerBound)-\(range.upperBound)/\(total)"
        headers["content-length"] = String(range.count)
        let start = Int(range.lowerBound - offset)
        let bytes = head ? Data() : stored.data.subdata(in: start..<(start + range.count))
        return TransportResponse(status: 206, headers: headers, protocolName: "http/1.1", body: TransportBodyStream(DataChunks(data: bytes, sliceSize: 65_536)))
    }

    /// A 304 from the cache for the request's own conditions (§4.3.2): the fields RFC 9110 §15.4.5 says
    /// a 304 carries, and `Age`.
    private func notModified(_ stored: CachedResponse) -> TransportResponse {
        let full = served(stored, head: true)
        var headers = Headers()
        var kept: Set<String> = ["cache-control", "content-location", "date", "etag", "expires", "vary", "age"]
        if stored.headers["etag"] == nil { kept.insert("last-modified") }
        for field in full.headers.fields where kept.contains(field.name.lowercased()) {
            headers.add(name: field.name, value: field.value)
        }
        return TransportResponse(status: 304, headers: headers, protocolName: "http/1.1", body: full.body)
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
            headers: HTTPCacheRules.storable(response.headers),
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
                // A part is combined with the part stored before it (§3.4), and never replaces the
                // complete response it is a part of.
                if entry.statusCode == 206 {
                    guard let combined = cache.withStoredParts(entry) else { return }
                    entry = combined
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
