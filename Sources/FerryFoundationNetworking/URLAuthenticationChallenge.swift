public import Foundation
#if canImport(FoundationNetworking)
public import FoundationNetworking
#endif

/// What answers a challenge on behalf of whoever raised it (Apple's `URLAuthenticationChallengeSender`).
///
/// Declared here because its messages take this module's ``URLAuthenticationChallenge``.
/// `performDefaultHandling(for:)` and `rejectProtectionSpaceAndContinue(with:)` are optional, as
/// Apple declares them: the defaults do nothing.
public protocol URLAuthenticationChallengeSender: NSObjectProtocol {
    /// Answers with `credential`.
    func use(_ credential: URLCredential, for challenge: URLAuthenticationChallenge)
    /// Goes on without a credential.
    func continueWithoutCredential(for challenge: URLAuthenticationChallenge)
    /// Cancels the request.
    func cancel(_ challenge: URLAuthenticationChallenge)
    /// Lets the system decide.
    func performDefaultHandling(for challenge: URLAuthenticationChallenge)
    /// Declines this protection space and tries the next.
    func rejectProtectionSpaceAndContinue(with challenge: URLAuthenticationChallenge)
}

extension URLAuthenticationChallengeSender {
    public func performDefaultHandling(for challenge: URLAuthenticationChallenge) {}
    public func rejectProtectionSpaceAndContinue(with challenge: URLAuthenticationChallenge) {}
}

/// A server's (or a protocol's) request for credentials, handed to the delegate (Apple's
/// `URLAuthenticationChallenge`).
///
/// This module declares its own class so that `failureResponse` is this module's ``URLResponse``:
/// `challenge.failureResponse as? HTTPURLResponse` then finds the 401 or 407 it was.
open class URLAuthenticationChallenge: NSObject, @unchecked Sendable {
    private let space: URLProtectionSpace
    private let proposed: URLCredential?
    private let failures: Int
    private let failed: URLResponse?
    private let underlying: (any Error)?
    private let from: (any URLAuthenticationChallengeSender)?

    /// A challenge with everything Apple's initializer takes.
    public init(
        protectionSpace space: URLProtectionSpace,
        proposedCredential credential: URLCredential?,
        previousFailureCount: Int,
        failureResponse response: URLResponse?,
        error: (any Error)?,
        sender: any URLAuthenticationChallengeSender
    ) {
        self.space = space
        proposed = credential
        failures = previousFailureCount
        failed = response
        underlying = error
        from = sender
        super.init()
    }

    /// `challenge` with another sender (as a protocol re-raises one it received).
    public init(authenticationChallenge challenge: URLAuthenticationChallenge, sender: any URLAuthenticationChallengeSender) {
        space = challenge.protectionSpace
        proposed = challenge.proposedCredential
        failures = challenge.previousFailureCount
        failed = challenge.failureResponse
        underlying = challenge.error
        from = sender
        super.init()
    }

    /// The server, realm and scheme asked for.
    open var protectionSpace: URLProtectionSpace { space }
    /// A credential to try, or nil.
    open var proposedCredential: URLCredential? { proposed }
    /// How many answers this challenge has already refused.
    open var previousFailureCount: Int { failures }
    /// The response that asked (a 401 or 407 for HTTP), or nil.
    open var failureResponse: URLResponse? { failed }
    /// The error of the last failure, or nil.
    open var error: (any Error)? { underlying }
    /// What the answer goes to.
    open var sender: (any URLAuthenticationChallengeSender)? { from }
}

#if canImport(FoundationNetworking)
extension URLAuthenticationChallenge {
    /// This module's challenge for one a FoundationNetworking `URLProtocol` raised; answers go to its
    /// own sender.
    convenience init(_ theirs: FoundationNetworking.URLAuthenticationChallenge) {
        self.init(
            protectionSpace: theirs.protectionSpace,
            proposedCredential: theirs.proposedCredential,
            previousFailureCount: theirs.previousFailureCount,
            failureResponse: theirs.failureResponse.map(URLResponse.foundation),
            error: theirs.error,
            sender: FoundationChallengeSender(theirs)
        )
    }
}

/// Passes answers to a FoundationNetworking challenge's own sender.
final class FoundationChallengeSender: NSObject, URLAuthenticationChallengeSender, @unchecked Sendable {
    private let challenge: FoundationNetworking.URLAuthenticationChallenge

    init(_ challenge: FoundationNetworking.URLAuthenticationChallenge) {
        self.challenge = challenge
    }

    func use(_ credential: URLCredential, for _: URLAuthenticationChallenge) { challenge.sender?.use(credential, for: challenge) }
    func continueWithoutCredential(for _: URLAuthenticationChallenge) { challenge.sender?.continueWithoutCredential(for: challenge) }
    func cancel(_: URLAuthenticationChallenge) { challenge.sender?.cancel(challenge) }
    func performDefaultHandling(for _: URLAuthenticationChallenge) { challenge.sender?.performDefaultHandling(for: challenge) }
    func rejectProtectionSpaceAndContinue(with _: URLAuthenticationChallenge) { challenge.sender?.rejectProtectionSpaceAndContinue(with: challenge) }
}

extension URLResponse {
    /// This module's response for one a FoundationNetworking `URLProtocol` reported.
    static func foundation(_ theirs: FoundationNetworking.URLResponse) -> URLResponse {
        if let http = theirs as? FoundationNetworking.HTTPURLResponse, let url = http.url {
            return HTTPURLResponse(url: url, statusCode: http.statusCode, fields: FoundationBridge.headers(http.allHeaderFields))
        }
        return URLResponse(
            url: theirs.url ?? URL(fileURLWithPath: "/"),
            mimeType: theirs.mimeType,
            expectedContentLength: Int(theirs.expectedContentLength),
            textEncodingName: theirs.textEncodingName
        )
    }
}

extension CachedURLResponse {
    /// This module's cached response for FoundationNetworking's.
    static func foundation(_ theirs: FoundationNetworking.CachedURLResponse) -> CachedURLResponse {
        CachedURLResponse(response: .foundation(theirs.response), data: theirs.data, userInfo: theirs.userInfo, storagePolicy: theirs.storagePolicy)
    }
}
#endif
