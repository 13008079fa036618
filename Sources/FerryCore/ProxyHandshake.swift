/// The opening of a tunnel through a proxy, as a state machine without I/O: bytes in, bytes to send or
/// a verdict out. An HTTP proxy gets `CONNECT host:port` (RFC 9110 §9.3.6); a SOCKS5 proxy gets RFC
/// 1928's greeting, RFC 1929's user name and password when it asks for them, and a CONNECT request.
///
/// The transport feeds every byte the proxy sends to ``receive(_:)`` until the tunnel is established
/// (what came after the proxy's answer is handed back as `leftover`) or has failed.
public struct ProxyHandshake: Sendable {
    /// Which handshake.
    public enum Kind: Sendable, Equatable {
        /// HTTP CONNECT, with a `Proxy-Authorization` value when credentials are known.
        case httpConnect(proxyAuthorization: String?)
        /// SOCKS5; with credentials, user name and password authentication is offered too.
        case socks5(username: String?, password: String?)
    }

    /// Where the tunnel goes: a name (sent to the proxy as is) or an address's bytes (4 or 16).
    public enum Destination: Sendable, Equatable {
        case name(String)
        case address([UInt8])
    }

    /// What the transport does next.
    public enum Action: Sendable, Equatable {
        /// Send these bytes, then wait for more.
        case send([UInt8])
        /// Wait for more bytes.
        case wait
        /// The tunnel is open; these bytes (sent by the far server already) belong to what follows.
        case established(leftover: [UInt8])
        /// The proxy refused or broke the protocol; the message says what and what to do.
        case fail(FerryError)
    }

    private enum State: Sendable {
        case idle
        case awaitingConnectResponse
        case awaitingMethod
        case awaitingAuthentication
        case awaitingReply
        case done
    }

    private let kind: Kind
    private let destination: Destination
    private let port: Int
    /// `proxy host:port`, for messages.
    private let proxyName: String
    private var state = State.idle
    private var buffer: [UInt8] = []

    /// A handshake through `proxyName` to `destination`:`port`.
    public init(kind: Kind, destination: Destination, port: Int, proxyName: String) {
        self.kind = kind
        self.destination = destination
        self.port = port
        self.proxyName = proxyName
    }

    /// The host as an HTTP authority: `name:port`, `[v6]:port`.
    private var authority: String {
        switch destination {
        case .name(let name): return (name.contains(":") ? "[\(name)]" : name) + ":\(port)"
        case .address(let bytes) where bytes.count == 4:
            return bytes.map(String.init).joined(separator: ".") + ":\(port)"
        case .address(let bytes):
            let groups = stride(from: 0, to: bytes.count, by: 2).map { String(UInt16(bytes[$0]) << 8 | UInt16(bytes[$0 + 1]), radix: 16) }
            return "[\(groups.joined(separator: ":"))]:\(port)"
        }
    }

    /// The first bytes to send.
    public mutating func start() -> Action {
        guard case .idle = state else { return fail("the proxy handshake was started twice") }
        switch kind {
        case .httpConnect(let authorization):
            state = .awaitingConnectResponse
            var head = "CONNECT \(authority) HTTP/1.1\r\nHost: \(authority)\r\n"
            if let authorization { head += "Proxy-Authorization: \(authorization)\r\n" }
            head += "\r\n"
            return .send(Array(head.utf8))
        case .socks5(let username, _):
            state = .awaitingMethod
            // Version 5; no authentication, and user name/password when we have one.
            return .send(username == nil ? [5, 1, 0] : [5, 2, 0, 2])
        }
    }

    /// Bytes from the proxy.
    public mutating func receive(_ bytes: some Sequence<UInt8>) -> Action {
        buffer += bytes
        switch state {
        case .idle, .done:
            return fail("the proxy sent bytes outside the handshake")
        case .awaitingConnectResponse:
            return connectResponse()
        case .awaitingMethod:
            guard buffer.count >= 2 else { return .wait }
            guard buffer[0] == 5 else { return fail("\(proxyName) does not speak SOCKS5") }
            let method = buffer[1]
            buffer.removeFirst(2)
            switch (method, kind) {
            case (0, _):
                state = .awaitingReply
                return .send(connectRequest())
            case (2, .socks5(let username?, let password)):
                let user = Array(username.utf8)
                let pass = Array((password ?? "").utf8)
                guard user.count <= 255, pass.count <= 255 else {
                    return fail("a SOCKS5 user name and password are at most 255 bytes each")
                }
                state = .awaitingAuthentication
                return .send([1, UInt8(user.count)] + user + [UInt8(pass.count)] + pass)
            default:
                return fail(
                    "\(proxyName) accepts none of the offered SOCKS5 authentication methods"
                        + (isAnonymous ? "; it may want a user name and password (socks5h://user:password@host:port)" : "")
                )
            }
        case .awaitingAuthentication:
            guard buffer.count >= 2 else { return .wait }
            let status = buffer[1]
            buffer.removeFirst(2)
            guard status == 0 else {
                return fail("\(proxyName) refused the SOCKS5 user name or password; check them")
            }
            state = .awaitingReply
            return .send(connectRequest())
        case .awaitingReply:
            return socksReply()
        }
    }

    private var isAnonymous: Bool {
        if case .socks5(nil, _) = kind { return true }
        return false
    }

    private func connectRequest() -> [UInt8] {
        var request: [UInt8] = [5, 1, 0]
        switch destination {
        case .name(let name):
            let bytes = Array(name.utf8.prefix(255))
            request += [3, UInt8(bytes.count)] + bytes
        case .address(let bytes):
            request += [bytes.count == 4 ? 1 : 4] + bytes
        }
        return request + [UInt8(port >> 8), UInt8(port & 0xFF)]
    }

    private mutating func socksReply() -> Action {
        guard buffer.count >= 5 else { return .wait }
        guard buffer[0] == 5 else { return fail("\(proxyName) answered the SOCKS5 request with something else") }
        let addressLength: Int
        switch buffer[3] {
        case 1: addressLength = 4
        case 4: addressLength = 16
        case 3: addressLength = 1 + Int(buffer[4])
        default: return fail("\(proxyName) answered with an unknown SOCKS5 address type")
        }
        let total = 4 + addressLength + 2
        guard buffer.count >= total else { return .wait }
        let reply = buffer[1]
        let leftover = Array(buffer[total...])
        buffer = []
        guard reply == 0 else {
            let reasons: [UInt8: String] = [
                1: "a general failure", 2: "its rules forbid this connection", 3: "the network is unreachable",
                4: "the host is unreachable", 5: "the connection was refused", 6: "the connection timed out",
                7: "it does not support CONNECT", 8: "it does not support this address type",
            ]
            let code: FerryError.Code = reply == 5 || reply == 3 || reply == 4 ? .cannotConnectToHost : .badServerResponse
            return fail("\(proxyName) could not reach \(authority): \(reasons[reply] ?? "error \(reply)")", code)
        }
        state = .done
        return .established(leftover: leftover)
    }

    private mutating func connectResponse() -> Action {
        guard let end = Self.endOfHead(buffer) else {
            return buffer.count > 64 * 1024 ? fail("\(proxyName) sent an answer head over 64 KiB") : .wait
        }
        let head = String(decoding: buffer[..<end], as: UTF8.self)
        let leftover = Array(buffer[(end + 4)...])
        buffer = []
        let statusLine = head.split(separator: "\r\n", maxSplits: 1).first.map(String.init) ?? ""
        let parts = statusLine.split(separator: " ", maxSplits: 2)
        guard parts.count >= 2, parts[0].hasPrefix("HTTP/1."), let status = Int(parts[1]) else {
            return fail("\(proxyName) did not answer CONNECT with HTTP (\(statusLine.prefix(60)))")
        }
        let reason = parts.count > 2 ? " \(parts[2])" : ""
        switch status {
        case 200..<300:
            state = .done
            return .established(leftover: leftover)
        case 407:
            if case .httpConnect(nil) = kind {
                return fail(
                    "\(proxyName) asks for credentials (407): give them with --proxy-user USER:PASSWORD or in the proxy URL",
                    .userAuthenticationRequired
                )
            }
            return fail("\(proxyName) refused the proxy credentials (407); check them", .userAuthenticationRequired)
        default:
            return fail("\(proxyName) refused the tunnel to \(authority): \(status)\(reason)", .cannotConnectToHost)
        }
    }

    private static func endOfHead(_ bytes: [UInt8]) -> Int? {
        guard bytes.count >= 4 else { return nil }
        for index in 0...(bytes.count - 4)
        where bytes[index] == 13 && bytes[index + 1] == 10 && bytes[index + 2] == 13 && bytes[index + 3] == 10 {
            return index
        }
        return nil
    }

    private mutating func fail(_ message: String, _ code: FerryError.Code = .badServerResponse) -> Action {
        state = .done
        return .fail(FerryError(code, message))
    }
}
