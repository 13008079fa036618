import FerryCore
import Foundation
import NIOCore

/// Sends a request and follows its redirects, asking first (URLSession's willPerformHTTPRedirection).
/// Shared by downloads and data loads, so both treat redirects the same way.
struct RedirectFollower: Sendable {
    /// The caller's say on a redirect: the request to follow (possibly changed), or nil to stop there.
    typealias Decision = @Sendable (_ status: Int, _ headers: Headers, _ proposed: Request) async -> Request?
    /// The caller's answer to an authentication challenge.
    typealias ChallengeAnswer = @Sendable (AuthenticationChallenge) async -> ChallengeDisposition

    /// Challenges answered per request before the 401 is taken as the answer.
    static let maximumChallenges = 8

    /// The final response, its body unread.
    struct Outcome: Sendable {
        /// The response.
        var response: TransportResponse
        /// The request that got it.
        var request: Request
        /// Redirects followed.
        var redirects: Int
        /// The response is a redirect the caller refused to follow.
        var refusedRedirect: Bool
        /// The Authorization value an authentication challenge's answer added to `request`, if any.
        var authorization: String? = nil
    }

    let transport: any HTTPTransport

    /// The redirect targets followed: http and https, and what the session's protocol handlers load.
    private var redirectTargets: (URL) -> Bool {
        guard let session = transport as? SessionTransport, !session.protocolHandlers.isEmpty else { return Redirect.isHTTP }
        let handlers = session.protocolHandlers
        return { url in Redirect.isHTTP(url) || handlers.handler(for: Request(url: url)) != nil }
    }
    let maximumRedirects: Int

    /// Sends `request`, adding `extraHeaders` to every hop, and follows redirects. `newBodyStream` gives
    /// a stream body afresh each time the request is sent again (``DataLoader/Hooks/newBodyStream``).
    /// - Throws: ``FerryError`` (``FerryError/Code/httpTooManyRedirects`` past the limit, the transport's).
    func send(
        _ request: Request,
        body: TransportRequestBody?,
        extraHeaders: [(name: String, value: String)],
        deadline: NIODeadline,
        willRedirect: Decision,
        didReceiveChallenge: ChallengeAnswer? = nil,
        newBodyStream: (@Sendable () async -> TransportRequestBody?)? = nil
    ) async throws -> Outcome {
        var current = request
        var currentBody = body
        var redirects = 0
        var authorization: String?
        var failures = 0
        var streamSent = false
        while true {
            var sent = current
            for header in extraHeaders { sent.headers[header.name] = header.value }
            if let authorization { sent.headers["Authorization"] = authorization }
            if case .stream = currentBody, let newBodyStream {
                // The caller's stream may be read once only: sending the request again takes a new one
                // (URLSession's needNewBodyStream), or fails saying so rather than sending a short body.
                // (Without a provider the body is sent again as it is: sequences that start over, such as
                // a file's, do.)
                if streamSent { currentBody = try await Self.replacement(for: sent, from: newBodyStream) }
                streamSent = true
            }
            let response = try await transport.send(TransportRequest(sent, body: currentBody), deadline: deadline)
            if response.status == 401, didReceiveChallenge != nil || Self.urlCredential(sent.url) != nil,
                failures < Self.maximumChallenges,
                let answer = try await answer(
                    response,
                    to: sent,
                    failures: failures,
                    didReceiveChallenge
                )
            {
                for try await _ in response.body {}  // drain, so the connection can be reused
                authorization = answer
                failures += 1
                continue
            }
            // (Only a redirect's status looks further: the Location lookup and the targets' check, which
            // casts the transport, cost every plain response a little.)
            guard Redirect.statuses.contains(response.status),
                let proposed = Redirect.follow(
                    current,
                    status: response.status,
                    location: response.headers["location"],
                    allowing: redirectTargets
                )
            else {
                return Outcome(
                    response: response,
                    request: current,
                    redirects: redirects,
                    refusedRedirect: false,
                    authorization: authorization
                )
            }
            guard redirects < maximumRedirects else {
                throw FerryError(
                    .httpTooManyRedirects,
                    "more than \(maximumRedirects) redirects; the last went to \(proposed.url)",
                    failingURL: current.url.absoluteString
                )
            }
            guard let next = await willRedirect(response.status, response.headers, proposed) else {
                return Outcome(response: response, request: current, redirects: redirects, refusedRedirect: true)
            }
            for try await _ in response.body {}  // drain, so the connection can be reused
            try next.validate(for: transport)
            if !Redirect.keepsBody(status: response.status, method: current.method) { currentBody = nil }
            redirects += 1
            current = next
            authorization = nil
            failures = 0
        }
    }

    /// A new body stream for sending `request` again.
    /// - Throws: ``FerryError/Code/requestBodyStreamExhausted`` when there is none.
    private static func replacement(
        for request: Request,
        from newBodyStream: @Sendable () async -> TransportRequestBody?
    ) async throws -> TransportRequestBody {
        guard let body = await newBodyStream() else {
            throw FerryError(
                .requestBodyStreamExhausted,
                "the server asked for the request again (a redirect that keeps the body, or an authentication challenge), and its body is a stream that was read already: give a new stream (URLSession's needNewBodyStream, Session's needNewBodyStreamFor)",
                failingURL: request.url.absoluteString
            )
        }
        return body
    }

    /// The Authorization value to send again with, or nil to take the 401 as the response.
    /// - Throws: ``FerryError/Code/userCancelledAuthentication`` when the caller cancels.
    private func answer(
        _ response: TransportResponse,
        to request: Request,
        failures: Int,
        _ didReceiveChallenge: ChallengeAnswer?
    ) async throws -> String? {
        let url = request.url
        let port = url.port ?? (url.scheme?.lowercased() == "https" ? 443 : 80)
        guard
            var challenge = AuthenticationChallenge.supported(
                in: response.headers.values("www-authenticate"),
                host: url.host ?? "",
                port: port
            ).first
        else { return nil }
        challenge.previousFailureCount = failures
        challenge.failureResponse = Response(url: url, statusCode: response.status, headers: response.headers)
        var target = url.path.isEmpty ? "/" : url.path
        if let query = url.query { target += "?" + query }
        switch await didReceiveChallenge?(challenge) ?? .performDefaultHandling {
        case .useCredential(let credential):
            return HTTPAuthorization.value(for: challenge, credential: credential, method: request.method, uri: target)
        case .performDefaultHandling:
            // The URL's own credential (`https://user:password@host/`), once: a second 401 is the answer.
            guard failures == 0, let credential = Self.urlCredential(url) else { return nil }
            return HTTPAuthorization.value(for: challenge, credential: credential, method: request.method, uri: target)
        case .rejectProtectionSpace:
            return nil
        case .cancelAuthenticationChallenge:
            for try await _ in response.body {}
            throw FerryError(
                .userCancelledAuthentication,
                "the authentication challenge was cancelled",
                failingURL: url.absoluteString
            )
        }
    }
}

extension RedirectFollower {
    /// The user and password a URL carries (percent-decoded), if it has a user.
    static func urlCredential(_ url: URL) -> Credential? {
        guard let user = url.user(percentEncoded: false), !user.isEmpty else { return nil }
        return Credential(user: user, password: url.password(percentEncoded: false) ?? "")
    }
}

/// Races work against a deadline: the transport's deadline ends at the response head, so bodies are
/// raced here. The work runs in one child task (no hop per chunk).
enum DeadlineRace {
    private enum Outcome<Value: Sendable>: Sendable {
        case done(Value)
        case deadlinePassed
        /// The timer was cancelled (the caller's task was): the work decides the outcome.
        case timerCancelled
    }

    /// Runs `work`; if `deadline` passes first, cancels it and throws a ``FerryError/Code/timedOut`` error
    /// that keeps the resume data the cancelled work reported. A cancellation of the caller reaches the
    /// work, whose own error (with its resume data) is what is thrown.
    static func run<Value: Sendable>(
        until deadline: NIODeadline,
        url: String,
        over transport: any HTTPTransport,
        _ work: @escaping @Sendable () async throws -> Value
    ) async throws -> Value {
        guard !transport.enforcesDeadlineOverBody else {
            // The transport ends the body at the deadline itself: no timer task per exchange.
            do {
                return try await work()
            } catch let error as FerryError where error.code == .timedOut && NIODeadline.now() >= deadline {
                throw FerryError(
                    .timedOut,
                    FerryError.resourceTimeoutMessage,
                    failingURL: url,
                    resumeData: error.resumeData
                )
            }
        }
        return try await withThrowingTaskGroup(of: Outcome<Value>.self) { group in
            group.addTask { .done(try await work()) }
            group.addTask {
                let remaining = deadline.uptimeNanoseconds.subtractingReportingOverflow(
                    NIODeadline.now().uptimeNanoseconds
                )
                if !remaining.overflow, remaining.partialValue > 0 {
                    do {
                        try await Task.sleep(for: .nanoseconds(Int64(clamping: remaining.partialValue)))
                    } catch {
                        return .timerCancelled
                    }
                }
                return .deadlinePassed
            }
            var timedOut = false
            while let next = try await nextOutcome(&group, timedOut: timedOut, url: url) {
                switch next {
                case .done(let value):
                    group.cancelAll()
                    return value
                case .deadlinePassed:
                    timedOut = true
                    group.cancelAll()
                case .timerCancelled:
                    continue
                }
            }
            preconditionFailure("the work ends with a value or an error")
        }
    }

    /// The next outcome; once the deadline has passed, the work's error becomes a timeout.
    private static func nextOutcome<Value: Sendable>(
        _ group: inout ThrowingTaskGroup<Outcome<Value>, any Error>,
        timedOut: Bool,
        url: String
    ) async throws -> Outcome<Value>? {
        do {
            return try await group.next()
        } catch let error as FerryError where timedOut {
            throw FerryError(
                .timedOut,
                FerryError.resourceTimeoutMessage,
                failingURL: url,
                resumeData: error.resumeData
            )
        }
    }
}
