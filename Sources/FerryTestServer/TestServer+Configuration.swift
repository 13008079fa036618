public import NIOSSL

extension TestServer {
    /// How to run a test server. Every listener binds 127.0.0.1 only.
    public struct Configuration: Sendable {
        /// The port of the main plain HTTP/1.1 listener; 0 (the default) picks a free one.
        public var port: Int = 0
        /// The port of the second plain listener (another origin, for cross-origin redirects); default 0.
        public var alternatePort: Int = 0
        /// The port of the HTTPS listener (HTTP/2 and HTTP/1.1 by ALPN); 0 picks one; nil: no HTTPS.
        public var tlsPort: Int? = 0
        /// The port of the resumable-upload listener; 0 picks one; nil: none.
        public var resumablePort: Int? = 0
        /// A directory whose files `GET /files/{path}` serves; nil (the default): none.
        public var root: String?
        /// The HTTPS identity; nil (the default) generates a fresh CA and leaf at start.
        public var certificates: TestCertificates?
        /// The TLS versions the HTTPS listener accepts; default 1.2 to 1.3.
        public var tlsMinimumVersion: TLSVersion = .tlsv12
        /// See ``tlsMinimumVersion``.
        public var tlsMaximumVersion: TLSVersion = .tlsv13
        /// When set, the HTTPS listener asks for a client certificate issued by this CA (PEM) and refuses
        /// connections without one (mutual TLS).
        public var clientCertificateTrustRootPEM: String?
        /// Event-loop threads; default 1, which keeps tests light (the executable uses 2).
        public var threads: Int = 1

        /// The defaults: every listener on a free port, a generated certificate, one thread.
        public init() {}
    }
}
