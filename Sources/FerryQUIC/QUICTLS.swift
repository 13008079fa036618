import CNIOBoringSSL

/// QUIC's encryption levels (RFC 9001 §4.1.4), as BoringSSL numbers them.
public enum QUICEncryptionLevel: Int, Sendable, Hashable, CaseIterable {
    case initial = 0
    case earlyData = 1
    case handshake = 2
    case application = 3
}

/// TLS 1.3 for one QUIC connection, through BoringSSL's QUIC interface (`SSL_set_quic_method`, RFC
/// 9001 §4): handshake bytes go in and out per encryption level, never over a record layer, and each
/// level's secrets come out as packet protection keys.
///
/// One owner drives it (the connection's state machine, on one thread at a time): ``start()`` for a
/// client's first flight, ``receive(_:at:)`` for each CRYPTO frame's bytes in order. Each call returns
/// what the connection must act on, in order: bytes to send at a level, keys to install, the end of
/// the handshake. The peer's certificate chain is judged by the configuration's `verify`, so Ferry's
/// own trust evaluation and pins decide, as they do over TCP.
public final class QUICTLS: @unchecked Sendable {
    /// What the connection acts on.
    public enum Event: Sendable, Hashable {
        /// Handshake bytes to send in CRYPTO frames at this level.
        case send(QUICEncryptionLevel, [UInt8])
        /// Keys to open the peer's packets at this level with.
        case readKeys(QUICEncryptionLevel, QUICKeys)
        /// Keys to protect this side's packets at this level with.
        case writeKeys(QUICEncryptionLevel, QUICKeys)
        /// The handshake is complete (for a client: the server's Finished is verified).
        case handshakeComplete
        /// The peer's certificate chain (DER, leaf first) waits for a verdict: the handshake goes on
        /// once ``finishVerification(accepted:)`` gives one (without a `verify` closure only).
        case verifyPeer([[UInt8]])
    }

    /// How one side of the handshake is set up.
    public struct Configuration: Sendable {
        public var isClient: Bool
        /// The server's name, sent in SNI (a client's; nil for an address).
        public var serverName: String?
        /// ALPN protocols in preference order (`h3`); the handshake fails without a common one.
        public var applicationProtocols: [String]
        /// This side's transport parameters, encoded (RFC 9000 §18).
        public var transportParameters: [UInt8]
        /// Judges the peer's certificate chain (DER, leaf first) at once; false fails the handshake with
        /// `bad_certificate`. Nil on a client: the chain is handed out as ``Event/verifyPeer(_:)`` and
        /// judged asynchronously (Ferry's trust evaluation loads certificate stores). Nil on a server:
        /// no client certificate is asked for.
        public var verify: (@Sendable ([[UInt8]]) -> Bool)?
        /// A server's certificate chain (PEM, leaf first) and private key (PEM).
        public var certificateChainPEM: String?
        public var privateKeyPEM: String?

        public init(isClient: Bool, serverName: String? = nil, applicationProtocols: [String], transportParameters: [UInt8]) {
            self.isClient = isClient
            self.serverName = serverName
            self.applicationProtocols = applicationProtocols
            self.transportParameters = transportParameters
        }
    }

    private let configuration: Configuration
    private let context: OpaquePointer
    private let ssl: OpaquePointer
    private var events: [Event] = []
    /// The TLS alert BoringSSL asked to send, if any: the handshake failed.
    public private(set) var alert: UInt8?
    public private(set) var isComplete = false
    /// The asynchronous verdict on the peer's chain, once given; nil while it is awaited.
    private var verdict: Bool?
    private var verificationAsked = false

    public init(_ configuration: Configuration) throws(QUICError) {
        self.configuration = configuration
        guard let context = SSL_CTX_new(TLS_method()) else { throw .malformed("BoringSSL could not make a context") }
        self.context = context
        SSL_CTX_set_min_proto_version(context, UInt16(TLS1_3_VERSION))
        SSL_CTX_set_max_proto_version(context, UInt16(TLS1_3_VERSION))
        guard let ssl = SSL_new(context) else {
            SSL_CTX_free(context)
            throw .malformed("BoringSSL could not make a connection")
        }
        self.ssl = ssl
        SSL_set_ex_data(ssl, Self.exDataIndex, Unmanaged.passUnretained(self).toOpaque())
        SSL_set_quic_method(ssl, Self.method)
        try configure()
    }

    deinit {
        SSL_free(ssl)
        SSL_CTX_free(context)
    }

    private func configure() throws(QUICError) {
        let parameters = configuration.transportParameters
        guard parameters.withUnsafeBufferPointer({ SSL_set_quic_transport_params(ssl, $0.baseAddress, $0.count) }) == 1 else {
            throw .malformed("BoringSSL refused the transport parameters")
        }
        var alpn: [UInt8] = []
        for name in configuration.applicationProtocols {
            alpn.append(UInt8(name.utf8.count))
            alpn += name.utf8
        }
        if configuration.isClient {
            SSL_set_connect_state(ssl)
            guard alpn.withUnsafeBufferPointer({ SSL_set_alpn_protos(ssl, $0.baseAddress, $0.count) }) == 0 else {
                throw .malformed("BoringSSL refused the ALPN list")
            }
            if let name = configuration.serverName { SSL_set_tlsext_host_name(ssl, name) }
        } else {
            SSL_set_accept_state(ssl)
            try useCertificate()
            SSL_CTX_set_alpn_select_cb(context, Self.selectProtocol, nil)
        }
        if configuration.isClient || configuration.verify != nil {
            // A client's chain is always judged: by `verify`, or asynchronously (verifyPeer).
            SSL_set_custom_verify(ssl, SSL_VERIFY_PEER, Self.verifyChain)
        }
    }

    /// A server's chain and key, from PEM.
    private func useCertificate() throws(QUICError) {
        guard let chain = configuration.certificateChainPEM, let key = configuration.privateKeyPEM else {
            throw .malformed("a QUIC server needs a certificate chain and a private key")
        }
        let certificates = Self.readPEM(chain) { PEM_read_bio_X509($0, nil, nil, nil) }
        guard let leaf = certificates.first, SSL_use_certificate(ssl, leaf) == 1 else {
            throw .malformed("the server's certificate chain could not be read")
        }
        for intermediate in certificates.dropFirst() { SSL_add1_chain_cert(ssl, intermediate) }
        for certificate in certificates { X509_free(certificate) }
        guard let privateKey = Self.readPEM(key, { PEM_read_bio_PrivateKey($0, nil, nil, nil) }).first else {
            throw .malformed("the server's private key could not be read")
        }
        defer { EVP_PKEY_free(privateKey) }
        guard SSL_use_PrivateKey(ssl, privateKey) == 1 else { throw .malformed("the private key does not fit the certificate") }
    }

    private static func readPEM<Object>(_ text: String, _ read: (OpaquePointer) -> Object?) -> [Object] {
        var bytes = Array(text.utf8)
        return bytes.withUnsafeMutableBufferPointer { buffer in
            guard let bio = BIO_new_mem_buf(buffer.baseAddress, buffer.count) else { return [] }
            defer { BIO_free(bio) }
            var objects: [Object] = []
            while let object = read(bio) { objects.append(object) }
            ERR_clear_error()
            return objects
        }
    }

    // MARK: Driving the handshake

    /// A client's first flight (its ClientHello at the Initial level).
    public func start() throws(QUICError) -> [Event] {
        try advance()
    }

    /// Handshake bytes that arrived in CRYPTO frames at `level`, in order.
    public func receive(_ data: [UInt8], at level: QUICEncryptionLevel) throws(QUICError) -> [Event] {
        let provided = data.withUnsafeBufferPointer {
            SSL_provide_quic_data(ssl, ssl_encryption_level_t(UInt32(level.rawValue)), $0.baseAddress, $0.count)
        }
        guard provided == 1 else { throw .malformed("handshake bytes at a level TLS does not expect: \(Self.errorWords())") }
        if isComplete {
            // After the handshake: session tickets and the like.
            guard SSL_process_quic_post_handshake(ssl) == 1 else { throw .malformed("TLS after the handshake: \(Self.errorWords())") }
            return take()
        }
        return try advance()
    }

    private func advance() throws(QUICError) -> [Event] {
        let result = SSL_do_handshake(ssl)
        if result == 1 {
            if !isComplete {
                isComplete = true
                events.append(.handshakeComplete)
            }
            return take()
        }
        let error = SSL_get_error(ssl, result)
        if error == SSL_ERROR_WANT_CERTIFICATE_VERIFY {
            // The chain went out as an event (verifyChain); the handshake waits for the verdict.
            return take()
        }
        guard error == SSL_ERROR_WANT_READ else {
            throw .malformed("the TLS handshake failed: \(Self.errorWords())\(alert.map { " (alert \($0))" } ?? "")")
        }
        return take()
    }

    private func take() -> [Event] {
        defer { events = [] }
        return events
    }

    /// The verdict on the chain handed out as ``Event/verifyPeer(_:)``: the handshake goes on, or
    /// fails with `bad_certificate`.
    public func finishVerification(accepted: Bool) throws(QUICError) -> [Event] {
        guard verificationAsked, verdict == nil else { return [] }
        verdict = accepted
        return try advance()
    }

    /// The application protocol the handshake chose, once it is known.
    public var applicationProtocol: String? {
        var data: UnsafePointer<UInt8>?
        var length: UInt32 = 0
        SSL_get0_alpn_selected(ssl, &data, &length)
        guard let data, length > 0 else { return nil }
        return String(decoding: UnsafeBufferPointer(start: data, count: Int(length)), as: UTF8.self)
    }

    /// The peer's transport parameters, encoded, once its first flight has been read.
    public var peerTransportParameters: [UInt8]? {
        var data: UnsafePointer<UInt8>?
        var length = 0
        SSL_get_peer_quic_transport_params(ssl, &data, &length)
        guard let data, length > 0 else { return nil }
        return Array(UnsafeBufferPointer(start: data, count: length))
    }

    private static func errorWords() -> String {
        let code = ERR_get_error()
        guard code != 0, let reason = ERR_reason_error_string(code) else { return "no reason given" }
        ERR_clear_error()
        return String(cString: reason).lowercased().replacingOccurrences(of: "_", with: " ")
    }

    // MARK: BoringSSL's callbacks

    private static let exDataIndex: Int32 = SSL_get_ex_new_index(0, nil, nil, nil, nil)

    private static func owner(_ ssl: OpaquePointer?) -> QUICTLS? {
        guard let ssl, let pointer = SSL_get_ex_data(ssl, exDataIndex) else { return nil }
        return Unmanaged<QUICTLS>.fromOpaque(pointer).takeUnretainedValue()
    }

    private static func keys(_ cipher: OpaquePointer?, _ secret: UnsafePointer<UInt8>?, _ length: Int) -> QUICKeys? {
        guard let cipher, let secret else { return nil }
        let suite: QUICCipherSuite
        switch SSL_CIPHER_get_protocol_id(cipher) {
        case 0x1301: suite = .aes128GCM
        case 0x1302: suite = .aes256GCM
        case 0x1303: suite = .chacha20Poly1305
        default: return nil
        }
        return QUICKeys(secret: Array(UnsafeBufferPointer(start: secret, count: length)), suite: suite)
    }

    /// A secret BoringSSL hands over for `level`: the keys it makes, as an event (0 on failure).
    private static func installSecret(
        _ ssl: OpaquePointer?,
        _ level: ssl_encryption_level_t,
        _ cipher: OpaquePointer?,
        _ secret: UnsafePointer<UInt8>?,
        _ length: Int,
        read: Bool
    ) -> Int32 {
        guard let owner = owner(ssl), let keys = keys(cipher, secret, length), let level = QUICEncryptionLevel(rawValue: Int(level.rawValue))
        else { return 0 }
        owner.events.append(read ? .readKeys(level, keys) : .writeKeys(level, keys))
        return 1
    }

    // Written once, then only read by BoringSSL.
    nonisolated(unsafe) private static let method: UnsafeMutablePointer<SSL_QUIC_METHOD> = {
        let method = UnsafeMutablePointer<SSL_QUIC_METHOD>.allocate(capacity: 1)
        method.initialize(
            to: SSL_QUIC_METHOD(
                set_read_secret: { ssl, level, cipher, bytes, length in installSecret(ssl, level, cipher, bytes, length, read: true) },
                set_write_secret: { ssl, level, cipher, bytes, length in installSecret(ssl, level, cipher, bytes, length, read: false) },
                add_handshake_data: { ssl, level, data, length in
                    guard let owner = owner(ssl), let data, let level = QUICEncryptionLevel(rawValue: Int(level.rawValue)) else { return 0 }
                    let bytes = Array(UnsafeBufferPointer(start: data, count: length))
                    // Consecutive bytes for one level join one event.
                    if case .send(level, let earlier)? = owner.events.last {
                        owner.events[owner.events.count - 1] = .send(level, earlier + bytes)
                    } else {
                        owner.events.append(.send(level, bytes))
                    }
                    return 1
                },
                flush_flight: { _ in 1 },
                send_alert: { ssl, _, alert in
                    owner(ssl)?.alert = alert
                    return 1
                }
            )
        )
        return method
    }()

    private static let verifyChain: @convention(c) (OpaquePointer?, UnsafeMutablePointer<UInt8>?) -> ssl_verify_result_t = { ssl, alert in
        guard let owner = owner(ssl), let stack = SSL_get0_peer_certificates(ssl) else {
            alert?.pointee = UInt8(SSL_AD_BAD_CERTIFICATE)
            return ssl_verify_invalid
        }
        if owner.configuration.verify == nil {
            // Judged asynchronously: asked once, then answered on the next call.
            if let verdict = owner.verdict {
                if verdict { return ssl_verify_ok }
                alert?.pointee = UInt8(SSL_AD_BAD_CERTIFICATE)
                return ssl_verify_invalid
            }
            if !owner.verificationAsked {
                owner.verificationAsked = true
                owner.events.append(.verifyPeer(chain(stack)))
            }
            return ssl_verify_retry
        }
        let verify = owner.configuration.verify!
        if verify(chain(stack)) { return ssl_verify_ok }
        alert?.pointee = UInt8(SSL_AD_BAD_CERTIFICATE)
        return ssl_verify_invalid
    }

    /// The DER certificates of a stack of CRYPTO_BUFFERs.
    private static func chain(_ stack: OpaquePointer) -> [[UInt8]] {
        var chain: [[UInt8]] = []
        for index in 0..<OPENSSL_sk_num(stack) {
            guard let buffer = OPENSSL_sk_value(stack, index) else { continue }
            let certificate = OpaquePointer(buffer)
            chain.append(Array(UnsafeBufferPointer(start: CRYPTO_BUFFER_data(certificate), count: CRYPTO_BUFFER_len(certificate))))
        }
        return chain
    }

    /// A server's ALPN choice: its first protocol the client offers too.
    private static let selectProtocol:
        @convention(c) (
            OpaquePointer?, UnsafeMutablePointer<UnsafePointer<UInt8>?>?, UnsafeMutablePointer<UInt8>?, UnsafePointer<UInt8>?, UInt32,
            UnsafeMutableRawPointer?
        ) -> Int32 = { ssl, out, outLength, offered, offeredLength, _ in
            guard let owner = owner(ssl), let offered else { return SSL_TLSEXT_ERR_ALERT_FATAL }
            let list = UnsafeBufferPointer(start: offered, count: Int(offeredLength))
            for wanted in owner.configuration.applicationProtocols {
                var index = 0
                while index < list.count {
                    let length = Int(list[index])
                    guard index + 1 + length <= list.count else { break }
                    if Array(list[(index + 1)..<(index + 1 + length)]) == Array(wanted.utf8) {
                        out?.pointee = offered + index + 1
                        outLength?.pointee = UInt8(length)
                        return SSL_TLSEXT_ERR_OK
                    }
                    index += 1 + length
                }
            }
            return SSL_TLSEXT_ERR_ALERT_FATAL
        }
}
