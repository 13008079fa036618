public import FerryCore
public import Foundation
public import NIOCore
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// Where a download's checkpoints go: nowhere (an in-process session), ferryd's store, or the CLI's
/// resume record. ``Downloader/Checkpoint`` calls it.
public protocol CheckpointSink: Sendable {
    /// The partial file is durable (fdatasync) up to `resumeData.bytesReceived`.
    func durable(_ resumeData: ResumeData) throws
    /// The partial file holds `resumeData.bytesReceived` bytes, written out but not yet synchronized
    /// (a checkpoint between durable ones, ``Downloader/Checkpoint/durableEverySeconds``).
    func written(_ resumeData: ResumeData) throws
}

extension CheckpointSink {
    public func written(_ resumeData: ResumeData) throws {}
}

extension Downloader.Checkpoint {
    /// Checkpoints into `sink` every `everyBytes` or `everySeconds`, whichever comes first; durable every
    /// `durableEverySeconds` (0: every one).
    public init(into sink: any CheckpointSink, everyBytes: Int64, everySeconds: Double, durableEverySeconds: Double = 0) {
        self.init(everyBytes: everyBytes, everySeconds: everySeconds) { try sink.durable($0) }
        self.durableEverySeconds = durableEverySeconds
        if durableEverySeconds > 0 { recordWritten = { try sink.written($0) } }
    }
}

/// Drives one download through the engine to its end — the one driver that an in-process `Session`,
/// ferryd and the CLI share, so that they try again, checkpoint and deliver by the same rules:
///
/// - **Tries:** network errors (``RetryPolicy/isRetryable(_:)``) continue from the partial data after a
///   backoff; an answer in ``Retries/statuses`` (curl's transient set, or a busy server's) starts over
///   after its Retry-After, else the backoff. A device or FIFO that got bytes is never tried again (they
///   cannot be taken back). A caller that schedules its own tries (ferryd frees the transfer slot
///   meanwhile) gets ``Outcome/tryLater(after:_:)`` instead of a wait.
/// - **Checkpoints:** through the ``CheckpointSink`` in ``Plan/events``.
/// - **Delivery:** to a ``DownloadDestination``: only a 2xx body, then atomically over a regular file
///   (made durable first when asked), written through a device or FIFO; any other status removes the
///   part file and ends as ``Outcome/refused(_:_:)``. Without a destination the file stays where
///   it was written, whatever the status (URLSession hands an error page over as the file).
public struct DownloadDriver: Sendable {
    /// When a run tries again.
    public struct Retries: Sendable {
        /// Tries after the first, in this run.
        public var extraTries: Int
        /// Answers that are not the file, tried again (their body is discarded).
        public var statuses: Set<Int>
        /// Whether such an answer is tried again only when it says when (Retry-After); otherwise it is
        /// the response.
        public var onlyWithRetryAfter: Bool
        /// Whether an answer to try again, once this run's tries are used, is handed back
        /// (``Outcome/tryLater(after:_:)``) instead of taken as the response.
        public var handsBack: Bool
        /// Seconds before the next try after `failedTries` failed ones.
        public var backoff: @Sendable (_ failedTries: Int) -> Double

        /// No tries again: the first answer or error is the outcome.
        public static let none = Retries(
            extraTries: 0,
            statuses: [],
            onlyWithRetryAfter: true,
            handsBack: false,
            backoff: { _ in 0 }
        )

        /// curl's `--retry N`: network errors and 408, 429, 500, 502, 503, 504, Retry-After honoured,
        /// else 1 s doubling to 30 s.
        public static func curl(_ extraTries: Int) -> Retries {
            Retries(
                extraTries: extraTries,
                statuses: RetryPolicy.transientStatuses,
                onlyWithRetryAfter: false,
                handsBack: false,
                backoff: { min(30, Double(1 << min(max($0, 1) - 1, 5))) }
            )
        }

        /// ferryd's: no wait inside a run; a busy server (503, 429) that says when is handed back to the
        /// scheduler, which tries again then without holding a slot.
        public static let handedBack = Retries(
            extraTries: 0,
            statuses: RetryPolicy.busyStatuses,
            onlyWithRetryAfter: true,
            handsBack: true,
            backoff: { _ in 0 }
        )

        /// A policy.
        public init(
            extraTries: Int,
            statuses: Set<Int>,
            onlyWithRetryAfter: Bool,
            handsBack: Bool,
            backoff: @escaping @Sendable (Int) -> Double
        ) {
            self.extraTries = extraTries
            self.statuses = statuses
            self.onlyWithRetryAfter = onlyWithRetryAfter
            self.handsBack = handsBack
            self.backoff = backoff
        }
    }

    /// One download to drive.
    public struct Plan: Sendable {
        /// The request.
        public var request: Request
        /// Where to continue from, if anywhere.
        public var resumeData: ResumeData?
        /// The file the body is written to (a part file, or the device or FIFO itself).
        public var path: String
        /// Where the finished body goes; nil: it stays at ``path``.
        public var destination: DownloadDestination?
        /// Chooses the destination once the response is known (`-O` names a file after the response's
        /// Content-Disposition); nil: ``destination``.
        public var chooseDestination: (@Sendable (Downloader.Result) throws -> DownloadDestination?)?
        /// Whether a regular file is made durable (fdatasync) before it replaces the destination.
        public var durableDelivery = false
        /// The permission bits of a delivered file.
        public var mode = DownloadDestination.newFileMode
        /// When the whole run must be over.
        public var deadline: NIODeadline
        /// The engine's callbacks (progress, checkpoints into a ``CheckpointSink``, redirects, gate).
        public var events: Downloader.Events
        /// When it tries again.
        public var retries: Retries
        /// Told before each wait for another try: the try's number (2 for the first retry), the wait in
        /// seconds, and why.
        public var willRetry: (@Sendable (_ attempt: Int, _ delay: Double, _ reason: String) -> Void)?
        /// Told when an answer's body was discarded to start over (the CLI forgets its resume record).
        public var didDiscard: (@Sendable () -> Void)?
        /// Told the final answer, once its body is in and before it is delivered (ferryd records it).
        public var didFinishBody: (@Sendable (Downloader.Result) throws -> Void)?
        /// Asked before another try; false stops (an interrupted CLI).
        /// A non-2xx answer's body is delivered to the destination all the same (curl's
        /// `--fail-with-body`); the outcome is still ``Outcome/refused(_:_:)``. Default: removed.
        public var deliversErrorBodies = false
        public var mayRetry: @Sendable () -> Bool = { true }
        /// The wall clock, for Retry-After dates.
        public var now: @Sendable () -> Date = Date.init
        /// Waits between tries (tests pass a fake).
        public var sleep: @Sendable (_ seconds: Double) async throws -> Void = { seconds in
            try await Task.sleep(for: .milliseconds(Int64(seconds * 1000)))
        }

        /// A plan with the defaults: no retries, no destination.
        public init(request: Request, path: String, deadline: NIODeadline, events: Downloader.Events = .init()) {
            self.request = request
            self.path = path
            self.deadline = deadline
            self.events = events
            self.retries = .none
        }
    }

    /// How a run ended, when it did not throw.
    public enum Outcome: Sendable {
        /// The final answer: delivered to the destination (``Downloader/Result/path`` says where), or left
        /// at the plan's path when it has none.
        case finished(Downloader.Result)
        /// The server asked to come back after this many seconds, and the caller schedules its own tries
        /// (``Retries/handsBack``); nothing is kept.
        case tryLater(after: Double, FerryError)
        /// A non-2xx answer for a destination: nothing was written there (a device or FIFO got the
        /// body), the part file is gone; `error` says so (``DownloadDestination/refusal(status:url:)``).
        case refused(Downloader.Result, FerryError)
    }

    /// The engine it drives.
    public var downloader: Downloader

    /// A driver over `transport`.
    public init(transport: any HTTPTransport) {
        downloader = Downloader(transport: transport)
    }

    /// Runs the plan to its outcome.
    /// - Throws: the last ``FerryError`` (with resume data when the partial data can be continued), or
    ///   the destination's refusal of a non-2xx answer.
    public func run(_ plan: Plan) async throws -> Outcome {
        let special = plan.destination?.isSpecial == true
        var events = plan.events
        let wrote = Mutex(false)
        if special {
            let original = events.didWrite
            events.didWrite = { written, total, expected in
                if written > 0 { wrote.withLock { $0 = true } }
                original(written, total, expected)
            }
        }
        // The last answer's head: a continuation answered "busy" fails in the engine, after it.
        let lastAnswer = Mutex<(status: Int, headers: Headers)?>(nil)
        let answered = events.didReceiveResponse
        events.didReceiveResponse = { status, headers in
            lastAnswer.withLock { $0 = (status, headers) }
            answered(status, headers)
        }
        var resumeData = plan.resumeData
        var failedTries = 0
        var request = plan.request
        if special { request.connections = 1 }
        while true {
            lastAnswer.withLock { $0 = nil }
            let result: Downloader.Result
            do {
                result = try await downloader.download(
                    request,
                    resumingFrom: resumeData,
                    to: plan.path,
                    deadline: plan.deadline,
                    events: events
                )
            } catch let error as FerryError {
                failedTries += 1
                // A device or FIFO already has the first bytes: another try would send them twice.
                let wroteThrough = special && wrote.withLock { $0 }
                let busyAfter = lastAnswer.withLock { $0 }.flatMap { answer in
                    plan.retries.statuses.contains(answer.status) ? retryAfter(answer.headers, plan) : nil
                }
                let worthIt = RetryPolicy.isRetryable(error.code) || busyAfter != nil
                guard worthIt, !wroteThrough else { throw error }
                if failedTries <= plan.retries.extraTries, plan.mayRetry(),
                    Self.fits(busyAfter ?? plan.retries.backoff(failedTries), before: plan.deadline)
                {
                    let delay = busyAfter ?? plan.retries.backoff(failedTries)
                    plan.willRetry?(failedTries + 1, delay, error.message)
                    try await plan.sleep(delay)
                    resumeData = error.resumeData
                    continue
                }
                // A continuation answered "busy, come back later": the partial data waits for it.
                if plan.retries.handsBack, let busyAfter { return .tryLater(after: busyAfter, error) }
                throw error
            }
            if plan.retries.statuses.contains(result.status), !(special && wrote.withLock({ $0 })) {
                let after = retryAfter(result.headers, plan)
                if after != nil || !plan.retries.onlyWithRetryAfter {
                    failedTries += 1
                    let delay = after ?? plan.retries.backoff(failedTries)
                    let again = failedTries <= plan.retries.extraTries && plan.mayRetry() && Self.fits(delay, before: plan.deadline)
                    let handBack = !again && plan.retries.handsBack && after != nil && !special
                    if again || handBack {
                        // The body was the server's excuse, not the file.
                        Self.discard(plan.path, special: special)
                        plan.didDiscard?()
                    }
                    if again {
                        resumeData = nil
                        plan.willRetry?(failedTries + 1, delay, "the server answered \(result.status)")
                        try await plan.sleep(delay)
                        continue
                    }
                    if handBack {
                        return .tryLater(
                            after: delay,
                            FerryError(
                                .badServerResponse,
                                "the server answered \(result.status) and asked to try again in \(Int(delay.rounded(.up))) s",
                                failingURL: result.finalRequest.url.absoluteString
                            )
                        )
                    }
                }
            }
            try plan.didFinishBody?(result)
            return try deliver(result, plan)
        }
    }

    /// Puts a finished body where the plan says.
    private func deliver(_ result: Downloader.Result, _ plan: Plan) throws -> Outcome {
        guard let destination = try plan.chooseDestination?(result) ?? plan.destination else {
            return .finished(result)
        }
        guard (200..<300).contains(result.status) else {
            let refusal = destination.refusal(status: result.status, url: result.finalRequest.url)
            guard plan.deliversErrorBodies else {
                DownloadDestination.removeFile(plan.path)
                return .refused(result, refusal)
            }
            // curl's --fail-with-body: the error page is the file, and the download still fails.
            var delivered = result
            delivered.path = try destination.deliver(from: plan.path, mode: plan.mode)
            return .refused(delivered, refusal)
        }
        if plan.durableDelivery, !destination.isSpecial { try Self.synchronize(plan.path) }
        var delivered = result
        delivered.path = try destination.deliver(from: plan.path, mode: plan.mode)
        return .finished(delivered)
    }

    /// The wait an answer's Retry-After asks for, if it has a usable one.
    private func retryAfter(_ headers: Headers, _ plan: Plan) -> Double? {
        headers["retry-after"].flatMap { RetryPolicy.retryAfter($0, now: plan.now()) }
    }

    /// Whether a wait of `delay` seconds ends before `deadline`: a try that would start after the run's
    /// deadline (`--max-time`) is not made (three tries with their backoff once took a 2 s
    /// `--max-time` to 9 s).
    static func fits(_ delay: Double, before deadline: NIODeadline) -> Bool {
        deadline == .distantFuture || NIODeadline.now() + .nanoseconds(Int64(delay * 1e9)) < deadline
    }

    /// Empties a part file (kept in place: its lock stays on it); a device or FIFO is left alone.
    private static func discard(_ path: String, special: Bool) {
        guard !special else { return }
        truncate(path, 0)
    }

    /// Makes a file's data durable (fdatasync).
    /// - Throws: ``FerryError/Code/cannotWriteToFile`` when it cannot.
    public static func synchronize(_ path: String) throws {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else {
            throw FerryError(.cannotWriteToFile, "cannot open \(path) to make it durable: \(String(cString: strerror(errno)))")
        }
        defer { close(descriptor) }
        guard fdatasync(descriptor) == 0 else {
            throw FerryError(.cannotWriteToFile, "cannot make \(path) durable: \(String(cString: strerror(errno)))")
        }
    }
}
