import FerryCore
import FerryEngine
import Foundation
import NIOCore
import Synchronization

/// `ferry get URL -o -`: the body goes to stdout as it arrives (progress on stderr), over one
/// connection, in order. Nothing can be continued or verified afterwards, so `-C`, `-x` and
/// `--checksum` are refused with it. An HTTP error status writes nothing and fails, as a download does.
struct StandardOutputDownload {
    let url: URL
    let headers: Headers
    let quiet: Bool
    let transport: any HTTPTransport
    let limit: Int64?
    var deadline = NIODeadline.distantFuture
    var maximumRedirects: Int?
    /// `--compressed`: ask for gzip or deflate and write the body decoded.
    var decodesContent = false
    var cache: CacheUse?
    /// `--speed-limit`/`--speed-time`.
    var speedFloor: SpeedFloor?
    /// `-Z`: the board the progress shows on.
    var board: ProgressBoard?
    /// `-X` and `-d`.
    var method = "GET"
    var requestBody: ByteBuffer?

    func run() async throws -> ForegroundDownload.Report {
        var request = Request(url: url)
        request.method = method
        for field in headers { request.headers.add(name: field.name, value: field.value) }
        let display = ProgressDisplay(name: "stdout", quiet: quiet, board: board)
        let written = ByteCounter()
        let expected = Mutex<Int64?>(nil)
        var hooks = DataLoader.Hooks()
        hooks.collect = false
        hooks.decodesContent = decodesContent
        let name = url.absoluteString
        hooks.didReceiveResponse = { status, headers, _ in
            guard (200..<300).contains(status) else {
                let why = UnfollowedRedirect.explanation(status: status, headers: headers, base: url)
                throw CLIFailure("\(name): the server answered \(status)\(why); nothing was written", status: .transferFailed, httpStatus: status)
            }
            expected.withLock { $0 = decodesContent ? nil : headers.contentLength }
            return .allow
        }
        hooks.didReceive = { chunk in
            // (The loader's hook cannot throw: a write failure ends the process's transfer below.)
            do {
                try chunk.withUnsafeReadableBytes { try Console.outBody($0) }
            } catch {
                Console.errorLine("\(error)")
                exit(ExitStatus.localFile.rawValue)
            }
            let total = written.add(Int64(chunk.readableBytes))
            display.update(done: total, total: expected.withLock { $0 })
        }
        var loader = DataLoader(transport: transport)
        if let maximumRedirects { loader.maximumRedirects = maximumRedirects }
        let context = TransferContext(
            cache: cache,
            throttle: limit.map { TaskThrottle(bytesPerSecond: $0, pool: nil, weight: 0.5) }
        )
        let started = ProgressDisplay.now()
        let startDate = Date()
        let loaded: DataLoader.Result
        do {
            let (ready, finalHooks, finalRequest, body, end) = (loader, hooks, request, requestBody, deadline)
            let outcome = try await TransferContext.$current.withValue(context) {
                try await SpeedFloor.enforce(speedFloor, counter: written) {
                    try await ready.perform(finalRequest, body: body.map { .bytes($0) }, deadline: end, hooks: finalHooks)
                }
            }
            guard case .loaded(let result) = outcome else { preconditionFailure("no other disposition was asked for") }
            loaded = result
        } catch {
            display.finish(failed: true)
            var failure: CLIFailure
            switch error {
            case let error as FerryError: failure = CLIFailure(error, context: url.absoluteString)
            case is SpeedFloor.TooSlow: failure = ForegroundDownload.tooSlow(speedFloor, url: url, continuable: false)
            case let error as CLIFailure: failure = error
            default: throw error
            }
            failure.writeOut = WriteOut.Values(
                failed: failure,
                transactions: context.recordedTransactions,
                url: url,
                bytes: written.value,
                start: startDate,
                total: ProgressDisplay.now() - started,
                file: "-"
            )
            throw failure
        }
        display.finish()
        let last = context.recordedTransactions.last
        let seconds = ProgressDisplay.now() - started
        let bytes = written.value
        return ForegroundDownload.Report(
            url: url.absoluteString,
            path: "-",
            status: loaded.status,
            bytes: bytes,
            resumedFrom: 0,
            seconds: seconds,
            sha256: nil,
            checksum: nil,
            connections: 1,
            protocol: loaded.protocolName,
            tlsVersion: last?.negotiatedTLSProtocolVersion,
            proxy: last?.proxy,
            remoteAddress: last?.remoteAddress,
            fetchType: ForegroundDownload.fetchTypeName(last?.resourceFetchType ?? .networkLoad),
            writeOut: WriteOut.Values(
                transactions: context.recordedTransactions,
                status: loaded.status,
                protocolName: loaded.protocolName,
                url: loaded.finalRequest.url,
                redirects: loaded.redirectCount,
                bytes: bytes,
                start: startDate,
                total: seconds,
                file: "-"
            )
        )
    }
}
