public import Foundation

/// A server's certificate chain, offered to the session's delegate before a TLS connection is used
/// (URLSession's server-trust challenge, `NSURLAuthenticationMethodServerTrust`).
public struct ServerTrustChallenge: Sendable, Hashable {
    /// The host connected to (as in the URL).
    public var host: String
    /// Its port.
    public var port: Int
    /// The certificates the server sent, leaf first, DER-encoded.
    public var certificateChain: [Data]
    /// What Ferry's own evaluation found: nil when the chain is trusted (system roots, the session's
    /// extra CAs, validity, the host's name), else why not, in words.
    public var defaultEvaluationFailure: String?

    /// A challenge.
    public init(host: String, port: Int, certificateChain: [Data], defaultEvaluationFailure: String?) {
        self.host = host
        self.port = port
        self.certificateChain = certificateChain
        self.defaultEvaluationFailure = defaultEvaluationFailure
    }
}

/// The answer to a ``ServerTrustChallenge``.
public enum ServerTrustDisposition: Sendable, Hashable {
    /// Ferry's own evaluation decides (``ServerTrustChallenge/defaultEvaluationFailure``).
    case performDefaultHandling
    /// Trust this chain for this connection, whatever the evaluation found (URLSession's
    /// `.useCredential` with the server trust). Pinned keys still apply.
    case trust
    /// Refuse the connection: the task fails with ``FerryError/Code/serverCertificateUntrusted``.
    case reject
}
