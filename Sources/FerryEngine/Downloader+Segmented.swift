public import FerryCore
import Foundation
public import NIOCore
import NIOPosix
import Synchronization

/// Segmented downloads (SPEC S10.2): one resource over several connections with Range requests.
///
/// The first request asks for `bytes=0-`. A 206 with the whole length, a validator (strong ETag or
/// Last-Modified) and room for two segments starts the others: each connection asks for its range with
/// If-Range, so a resource that changes answers 200 and the download starts over cleanly (once; a second
/// change fails it). A connection that finishes takes over the second half of the busiest segment
/// (``SegmentScheduler``). A 200 to the first request (no range support), no validator, or a small
/// resource: one connection, as a plain download. The result is reported as a 200 with the whole length,
/// as if fetched in one piece.
///
/// A connection that fails is retried (its segment goes back to the pool) until connections have failed
/// `2 × connections` times in a row without a byte arriving; a server that refuses an extra connection
/// (an error status to a range request) leaves the work to the others. Failure and cancellation carry
/// resume data with the segments, and ferryd's checkpoints record them (D1).
extension Downloader {
    /// The resource changed (or its server stopped serving ranges) in the middle: start over.
    struct SegmentRestart: Error {
        var reason: String
    }

    /// What the connections of one segmented run share.
    struct SegmentRun: Sendable {
        /// The request as first made.
        var original: Request
        /// The request to send ranges of (after redirects).
        var request: Request
        /// The Authorization an authentication challenge's answer added, sent with every range.
        var authorization: String?
        var plan: SegmentPlan
        var validators: BodyJob.Validators
        /// Whether the file starts empty (a new plan) or holds the plan's bytes (a continuation).
        var fresh: Bool
        var redirects: Int
        /// The whole resource's response head, if known (from the first request).
        var headers: Headers?
        var protocolName: String?

        var validator: String? {
            RangeResumption.validator(entityTag: validators.etag, lastModified: validators.lastModified)
        }
    }

    /// How a connection's response to a range request is taken.
    enum SegmentVerdict: Equatable {
        /// The requested bytes of the same version.
        case accept
        /// Another version, or no range: the download starts over.
        case changed(String)
        /// An error status: this connection stops; the others go on.
        case refused(Int)
    }

    /// Downloads `request` in segments (see the extension's documentation), or continues resume data
    /// (with segments, or a single-connection partial file, which becomes the first segment).
    func downloadSegmented(
        _ request: Request,
        resumingFrom resumeData: ResumeData?,
        to path: String,
        deadline: NIODeadline,
        events: Events
    ) async throws -> Result {
        let original = resumeData?.originalRequest ?? request
        var current = resumeData?.currentRequest ?? request
        try current.validate(for: transport)
        var restarted = false
        if let resumeData {
            let continued = try await continueSegments(resumeData, original: original, current: current, path: path, deadline: deadline, events: events)
            if let result = continued.result { return result }
            restarted = continued.restarted
        }

        let follower = RedirectFollower(transport: transport, maximumRedirects: maximumRedirects)
        var redirectCount = 0
        while true {
            let outcome = try await follower.send(
                current,
                body: nil,
                extraHeaders: [("Range", "bytes=0-")],
                deadline: deadline,
                willRedirect: events.willRedirect,
                didReceiveChallenge: events.didReceiveChallenge
            )
            var response = outcome.response
            current = outcome.request
            redirectCount += outcome.redirects
            let validators = BodyJob.Validators(
                etag: response.headers["etag"],
                lastModified: response.headers["last-modified"]
            )
            let total = Self.wholeLength(ofFirst: response)
            guard let total, !outcome.refusedRedirect else {
                let unsegmented = Unsegmented(response: response, request: current, original: original, redirects: redirectCount)
                return try await downloadUnsegmented(unsegmented, to: path, deadline: deadline, events: events)
            }
            let whole = Self.wholeHeaders(response.headers, total: total)
            events.didReceiveResponse(200, whole)
            let plan = SegmentPlan(
                total: total,
                connections: original.connections,
                minimumSegmentSize: original.minimumSegmentSize
            )
            let run = SegmentRun(
                original: original,
                request: current,
                authorization: outcome.authorization,
                plan: plan,
                validators: validators,
                fresh: true,
                redirects: redirectCount,
                headers: whole,
                protocolName: response.protocolName
            )
            guard run.validator != nil, plan.segments.count > 1 else {
                // One piece (small, or no validator to keep the pieces one version): this response is it.
                response.status = 200
                response.headers = whole
                return try await continueAsDownload(
                    response: response,
                    request: current,
                    originalRequest: original,
                    redirects: redirectCount,
                    to: path,
                    deadline: deadline,
                    events: events
                )
            }
            do {
                return try await runSegments(run, path: path, first: response, deadline: deadline, events: events)
            } catch let restart as SegmentRestart {
                guard !restarted else {
                    throw FerryError(
                        .badServerResponse,
                        "the resource changed twice during a segmented download (\(restart.reason)); try again later",
                        failingURL: current.url.absoluteString
                    )
                }
                restarted = true
                events.didStartOver(restart.reason)
                events.didResume(0, total)
            }
        }
    }

    /// Continues resume data's segments (or its single-connection partial file as the first segment).
    /// `result` is nil when they cannot go on and the download starts over; `restarted` says whether the
    /// resource changed under them (a second change then fails the download).
    private func continueSegments(
        _ resumeData: ResumeData,
        original: Request,
        current: Request,
        path: String,
        deadline: NIODeadline,
        events: Events
    ) async throws -> (result: Result?, restarted: Bool) {
        var restarted = false
        if let continuation = Self.segmentedContinuation(of: resumeData, path: path) {
            events.didResume(continuation.plan.bytesReceived, continuation.plan.total)
            let run = SegmentRun(
                original: original,
                request: current,
                plan: continuation.plan,
                validators: continuation.validators,
                fresh: false,
                redirects: 0
            )
            do {
                return (try await runSegments(run, path: path, first: nil, deadline: deadline, events: events), false)
            } catch let restart as SegmentRestart {
                restarted = true
                events.didStartOver(restart.reason)
            }
        } else {
            events.didStartOver(Self.obstacle(continuing: resumeData, at: path) ?? "the partial download cannot be continued")
        }
        events.didResume(0, nil)
        return (nil, restarted)
    }

    /// A first answer that cannot be split: not a 206 for the whole resource, or a refused redirect.
    private struct Unsegmented {
        var response: TransportResponse
        var request: Request
        var original: Request
        var redirects: Int
    }

    /// Downloads over the one connection of `first`: a 416 (an empty resource has no byte 0 to give, or
    /// the server refuses ranges) is asked again plainly; a 200, an error status or a refused redirect is
    /// the download (only a 200 or 206 body can be continued, so a redirect's validators do not matter).
    private func downloadUnsegmented(_ first: Unsegmented, to path: String, deadline: NIODeadline, events: Events) async throws -> Result {
        let response = first.response
        if response.status == 416 {
            try await Self.drain(response.body)
            return try await downloadSequential(first.request, resumingFrom: nil, to: path, deadline: deadline, events: events)
        }
        events.didReceiveResponse(response.status, response.headers)
        return try await continueAsDownload(
            response: response,
            request: first.request,
            originalRequest: first.original,
            redirects: first.redirects,
            to: path,
            deadline: deadline,
            events: events
        )
    }

    /// Runs the connections of a segmented download until every byte is in the file.
    private func runSegments(
        _ run: SegmentRun,
        path: String,
        first: TransportResponse?,
        deadline: NIODeadline,
        events: Events
    ) async throws -> Result {
        // A new file's whole length must fit before anything is written or reserved (a continued one
        // reserves what its holes need, and says so if that fails).
        if run.fresh {
            do {
                try DiskSpace.check(run.plan.total, for: path, keeping: 0, url: run.request.url.absoluteString)
            } catch {
                first?.cancel?()
                throw error
            }
        }
        let file = try SegmentFile(path: path, length: run.plan.total, fresh: run.fresh)
        let coordinator = SegmentCoordinator(
            plan: run.plan,
            minimumSegmentSize: run.original.minimumSegmentSize,
            file: file,
            didWrite: events.didWrite
        )
        if let headers = run.headers { coordinator.adoptHead(headers, protocolName: run.protocolName ?? "http/1.1") }
        let url = run.request.url.absoluteString
        do {
            try await DeadlineRace.run(until: deadline, url: url, over: transport) {
                try await withThrowingTaskGroup(of: Void.self) { group in
                    if let checkpoint = events.checkpoint {
                        group.addTask {
                            await Self.checkpoints(coordinator, checkpoint) { plan in
                                Self.resumeData(run, plan: plan, path: path)
                            }
                        }
                    }
                    do {
                        try await withThrowingTaskGroup(of: Void.self) { workers in
                            let firstClaim = first.map { _ in coordinator.claim(0) }
                            for connection in 0..<run.original.connections {
                                let opening = connection == 0 ? first.map { ($0, firstClaim!) } : nil
                                workers.addTask {
                                    try await self.segmentConnection(
                                        run,
                                        opening: opening,
                                        coordinator: coordinator,
                                        deadline: deadline,
                                        gate: events.gate
                                    )
                                }
                            }
                            try await workers.waitForAll()
                        }
                    } catch {
                        group.cancelAll()
                        throw error
                    }
                    group.cancelAll()
                }
            }
        } catch let restart as SegmentRestart {
            throw restart
        } catch var error as FerryError {
            if error.resumeData == nil { error.resumeData = Self.resumeData(run, plan: coordinator.plan, path: path) }
            throw error
        } catch is CancellationError {
            throw FerryError(
                .cancelled,
                "the download was cancelled",
                failingURL: url,
                resumeData: Self.resumeData(run, plan: coordinator.plan, path: path)
            )
        } catch {
            throw FerryError(
                .networkConnectionLost,
                "the download failed: \(error)",
                failingURL: url,
                resumeData: Self.resumeData(run, plan: coordinator.plan, path: path)
            )
        }
        let plan = coordinator.plan
        guard plan.isComplete else {
            throw FerryError(
                .networkConnectionLost,
                "the server stopped sending before the download was complete (\(plan.bytesReceived) of \(plan.total) bytes); the partial data is kept",
                failingURL: url,
                resumeData: Self.resumeData(run, plan: plan, path: path)
            )
        }
        let (headers, protocolName) = coordinator.head
        return Result(
            finalRequest: run.request,
            status: 200,
            headers: headers ?? Self.wholeHeaders(Headers(), total: plan.total),
            protocolName: protocolName ?? "http/1.1",
            path: path,
            length: plan.total,
            redirectCount: run.redirects
        )
    }

    /// One connection: claims work and fetches it until there is none left.
    private func segmentConnection(
        _ run: SegmentRun,
        opening: (TransportResponse, SegmentScheduler.Claim)?,
        coordinator: SegmentCoordinator,
        deadline: NIODeadline,
        gate: TransferGate?
    ) async throws {
        var opening = opening
        while true {
            try Task.checkCancellation()
            if let fatal = coordinator.fatal { throw fatal }
            let claim: SegmentScheduler.Claim
            let response: TransportResponse
            let requestedEnd: Int64
            if let (first, firstClaim) = opening {
                opening = nil
                (claim, response, requestedEnd) = (firstClaim, first, coordinator.total)
            } else {
                guard let next = coordinator.claim() else { return }
                claim = next
                requestedEnd = next.end
                var sent = run.request
                sent.headers["Range"] = "bytes=\(next.start)-\(next.end - 1)"
                if let validator = run.validator { sent.headers["If-Range"] = validator }
                if let authorization = run.authorization { sent.headers["Authorization"] = authorization }
                do {
                    response = try await transport.send(TransportRequest(sent), deadline: deadline)
                } catch let error as FerryError {
                    coordinator.release(next.index)
                    try await pauseAfterFailure(error, coordinator: coordinator, run: run, deadline: deadline)
                    continue
                }
                switch Self.judgeSegment(response, claim: next, total: coordinator.total, run: run) {
                case .accept:
                    coordinator.adoptHead(
                        Self.wholeHeaders(response.headers, total: coordinator.total),
                        protocolName: response.protocolName
                    )
                case .changed(let reason):
                    coordinator.release(next.index)
                    throw SegmentRestart(reason: reason)
                case .refused(let status):
                    coordinator.release(next.index)
                    // The server takes fewer connections than asked for: the others carry on.
                    if coordinator.activeCount > 0 { return }
                    throw FerryError(
                        .badServerResponse,
                        "the server answered \(status) to a request for bytes \(next.start)-\(next.end - 1); the partial data is kept for a later try",
                        failingURL: run.request.url.absoluteString
                    )
                }
            }
            do {
                var body = response.body.makeAsyncIterator()
                var complete = false
                while !complete, let chunk = try await body.next() {
                    if let gate, !gate.isOpen { try await gate.passThrough() }
                    complete = try coordinator.write(claim.index, chunk)
                }
                if complete, coordinator.end(of: claim.index) == requestedEnd {
                    // The range is done: read the end of the response, so its connection can be reused.
                    while let extra = try await body.next() {
                        guard extra.readableBytes == 0 else {
                            throw FerryError(
                                .badServerResponse,
                                "the server sent more bytes than the range it announced",
                                failingURL: run.request.url.absoluteString
                            )
                        }
                    }
                }
                // Otherwise another connection took over the rest of the range: this response is dropped
                // (its connection closed) and this connection looks for other work.
                coordinator.release(claim.index)
                if !complete {
                    try await pauseAfterFailure(
                        FerryError(.networkConnectionLost, "a range's response ended early"),
                        coordinator: coordinator,
                        run: run,
                        deadline: deadline
                    )
                }
            } catch let error as FerryError where RetryPolicy.isRetryable(error.code) {
                coordinator.release(claim.index)
                try await pauseAfterFailure(error, coordinator: coordinator, run: run, deadline: deadline)
            } catch {
                coordinator.release(claim.index)
                throw error
            }
        }
    }

    /// After a connection failed: throws when retrying is pointless (the deadline passed, not a network
    /// failure, or `2 × connections` failures in a row without a byte arriving); else waits a little.
    private func pauseAfterFailure(
        _ error: FerryError,
        coordinator: SegmentCoordinator,
        run: SegmentRun,
        deadline: NIODeadline
    ) async throws {
        let failures = coordinator.countFailure()
        guard RetryPolicy.isRetryable(error.code), NIODeadline.now() < deadline,
            failures <= 2 * run.original.connections
        else { throw error }
        try await Task.sleep(for: .milliseconds(min(2000, 50 << min(failures, 6))))
    }

    /// Makes the run's progress durable now and then, as ``Checkpoint`` asks, until cancelled. A failing
    /// checkpoint stops the download (``SegmentCoordinator/fail(_:)``).
    private static func checkpoints(
        _ coordinator: SegmentCoordinator,
        _ checkpoint: Checkpoint,
        resumeData: @escaping @Sendable (SegmentPlan) -> ResumeData?
    ) async {
        var last = NIODeadline.now()
        var lastDurable = NIODeadline.now()
        let interval = TimeAmount.nanoseconds(Int64(checkpoint.everySeconds * 1e9))
        let durableInterval = TimeAmount.nanoseconds(Int64(checkpoint.durableEverySeconds * 1e9))
        let tick = Duration.milliseconds(max(10, min(250, Int64(checkpoint.everySeconds * 1000))))
        while !Task.isCancelled {
            try? await Task.sleep(for: tick)
            if Task.isCancelled { return }
            let now = NIODeadline.now()
            do {
                guard
                    let (plan, point) = try coordinator.checkpoint(
                        afterBytes: checkpoint.everyBytes,
                        force: now - last >= interval
                    )
                else { continue }
                last = now
                let snapshot = resumeData(plan)
                if now - lastDurable < durableInterval, let recordWritten = checkpoint.recordWritten {
                    point.discard()
                    if let snapshot { try recordWritten(snapshot) }
                    continue
                }
                lastDurable = now
                try await NIOThreadPool.singleton.runIfActive { try checkpoint.synchronize(point, snapshot) }
            } catch let error as FerryError {
                coordinator.fail(error)
                return
            } catch {
                coordinator.fail(FerryError(.cannotWriteToFile, "a checkpoint failed: \(error)"))
                return
            }
        }
    }

    /// Judges a response to a range request.
    static func judgeSegment(
        _ response: TransportResponse,
        claim: SegmentScheduler.Claim,
        total: Int64,
        run: SegmentRun
    ) -> SegmentVerdict {
        switch response.status {
        case 206:
            if let type = response.headers["content-type"], type.lowercased().hasPrefix("multipart/byteranges") {
                return .changed("the server sent several ranges")
            }
            guard let header = response.headers["content-range"], let range = ContentRange(header) else {
                return .changed("a 206 without a usable Content-Range")
            }
            guard range.total == nil || range.total == total else {
                return .changed("the resource's length changed from \(total) to \(range.total!)")
            }
            if let etag = run.validators.etag, !etag.hasPrefix("W/"), let now = response.headers["etag"], now != etag {
                return .changed("the entity tag changed from \(etag) to \(now)")
            }
            guard range.first == claim.start, range.last < claim.end,
                response.headers.contentLength.map({ $0 == range.last - range.first + 1 }) ?? true
            else {
                return .changed(
                    "the server sent bytes \(range.first)-\(range.last) for \(claim.start)-\(claim.end - 1)"
                )
            }
            return .accept
        case 200:
            return .changed("the server sent the whole resource: a new version, or it stopped serving ranges")
        case 416:
            return .changed("the server refused a range (416)")
        case 201..<300:
            return .changed("unexpected status \(response.status) to a range request")
        default:
            return .refused(response.status)
        }
    }

    /// The whole length the first request's 206 announces for `bytes=0-`; nil for any other answer.
    static func wholeLength(ofFirst response: TransportResponse) -> Int64? {
        guard response.status == 206,
            !(response.headers["content-type"]?.lowercased().hasPrefix("multipart/byteranges") ?? false),
            let header = response.headers["content-range"], let range = ContentRange(header), range.first == 0,
            let total = range.total, range.last == total - 1,
            response.headers.contentLength.map({ $0 == total }) ?? true
        else { return nil }
        return total
    }

    /// A range response's headers as the whole resource's: no Content-Range, the whole Content-Length.
    static func wholeHeaders(_ headers: Headers, total: Int64) -> Headers {
        var whole = Headers()
        for field in headers
        where field.name.lowercased() != "content-range" && field.name.lowercased() != "content-length" {
            whole.add(name: field.name, value: field.value)
        }
        whole["Content-Length"] = String(total)
        return whole
    }

    /// Resume data for a run's progress; nil when nothing is on disk.
    static func resumeData(_ run: SegmentRun, plan: SegmentPlan, path: String) -> ResumeData? {
        guard run.validator != nil, plan.bytesReceived > 0 else { return nil }
        return ResumeData(
            originalRequest: run.original,
            currentRequest: run.request,
            bytesReceived: plan.bytesReceived,
            expectedLength: plan.total,
            entityTag: run.validators.etag,
            lastModified: run.validators.lastModified,
            partialFilePath: path,
            segments: plan
        )
    }

    /// The plan to continue resume data with, if its file still holds what it claims: its segments, or a
    /// single-connection partial file as the first segment of the whole length. The file moves to `path`.
    static func segmentedContinuation(
        of resumeData: ResumeData,
        path: String
    ) -> (plan: SegmentPlan, validators: BodyJob.Validators)? {
        guard RangeResumption.validator(entityTag: resumeData.entityTag, lastModified: resumeData.lastModified) != nil,
            let attributes = try? FileManager.default.attributesOfItem(atPath: resumeData.partialFilePath),
            let size = (attributes[.size] as? NSNumber)?.int64Value
        else { return nil }
        let plan: SegmentPlan
        if let segments = resumeData.segments {
            guard size == segments.total else { return nil }
            plan = segments
        } else {
            guard let total = resumeData.expectedLength, resumeData.bytesReceived > 0, size >= resumeData.bytesReceived,
                let single = SegmentPlan(
                    total: total,
                    segments: [SegmentPlan.Segment(start: 0, end: total, received: resumeData.bytesReceived)]
                )
            else { return nil }
            plan = single
        }
        if resumeData.partialFilePath != path {
            guard (try? FileManager.default.moveItem(atPath: resumeData.partialFilePath, toPath: path)) != nil else {
                return nil
            }
        }
        return (plan, BodyJob.Validators(etag: resumeData.entityTag, lastModified: resumeData.lastModified))
    }
}
