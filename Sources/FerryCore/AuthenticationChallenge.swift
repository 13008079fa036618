public import Foundation

/// A server's request for credentials (URLAuthenticationChallenge): one `WWW-Authenticate` challenge of
/// a 401 response, asked of the task's delegate (SPEC S2.5, S2.8).
public struct AuthenticationChallenge: Sendable, Hashable {
    /// The scheme, lower-cased: `basic` or `digest` (the ones Ferry can answer).
    public var scheme: String
    /// The challenge's parameters, names lower-cased (`realm`, `nonce`, `qop`, `algorithm`, ...).
    public var parameters: [String: String]
    /// The host and port that asked.
    public var host: String
    /// See ``host``.
    public var port: Int
    /// How many credentials were already refused for this request.
    public var previousFailureCount: Int
    /// The 401 response.
    public var failureResponse: Response?

    /// The realm, if the server named one.
    public var realm: String? { parameters["realm"] }

    /// Creates a challenge.
    public init(
        scheme: String,
        parameters: [String: String],
        host: String,
        port: Int,
        previousFailureCount: Int = 0,
        failureResponse: Response? = nil
    ) {
        self.scheme = scheme.lowercased()
        self.parameters = parameters
        self.host = host
        self.port = port
        self.previousFailureCount = previousFailureCount
        self.failureResponse = failureResponse
    }

    /// The challenges Ferry can answer (Basic, Digest) among `WWW-Authenticate` values, strongest first
    /// (Digest before Basic). One challenge per header value.
    public static func supported(in values: [String], host: String, port: Int) -> [AuthenticationChallenge] {
        let parsed = values.compactMap { value -> AuthenticationChallenge? in
            let trimmed = value.trimmingCharacters(in: .whitespaces)
            let scheme = trimmed.prefix { $0 != " " }.lowercased()
            guard scheme == "basic" || scheme == "digest" else { return nil }
            let rest = String(trimmed.dropFirst(scheme.count))
            return AuthenticationChallenge(
                scheme: scheme,
                parameters: AuthParameters.parse(rest),
                host: host,
                port: port
            )
        }
        return parsed.sorted { $0.scheme == "digest" && $1.scheme != "digest" }
    }
}

/// A user name and password for a challenge (URLCredential).
public struct Credential: Sendable, Hashable, Codable {
    /// The user.
    public var user: String
    /// The password.
    public var password: String

    /// A credential.
    public init(user: String, password: String) {
        self.user = user
        self.password = password
    }
}

/// The answer to a challenge (URLSession.AuthChallengeDisposition).
public enum ChallengeDisposition: Sendable, Hashable {
    /// Send the request again with this credential.
    case useCredential(Credential)
    /// What Ferry does without a delegate: the URL's own credential (`https://user:password@host/`)
    /// answers the first challenge; otherwise the 401 is the response.
    case performDefaultHandling
    /// Fail the task with ``FerryError/Code/userCancelledAuthentication``.
    case cancelAuthenticationChallenge
    /// Do not answer this challenge: the 401 is the response.
    case rejectProtectionSpace
}

/// `name=value` and `name="quoted value"` lists, as in authentication headers (RFC 9110 §11.2).
public enum AuthParameters {
    /// The parameters of `text` (a challenge or credentials without their scheme); names lower-cased,
    /// quoted values unescaped. Malformed pieces are skipped.
    public static func parse(_ text: some StringProtocol) -> [String: String] {
        var result: [String: String] = [:]
        var characters = Array(text)[...]
        func skip(_ set: Set<Character>) {
            while let first = characters.first, set.contains(first) { characters.removeFirst() }
        }
        while !characters.isEmpty {
            skip([" ", "\t", ","])
            let name = String(characters.prefix { $0 != "=" && $0 != "," }).trimmingCharacters(in: .whitespaces)
            characters.removeFirst(min(characters.count, characters.prefix { $0 != "=" && $0 != "," }.count))
            guard characters.first == "=" else { continue }
            characters.removeFirst()
            skip([" ", "\t"])
            var value = ""
            if characters.first == "\"" {
                characters.removeFirst()
                while let next = characters.popFirst(), next != "\"" {
                    value.append(next == "\\" ? (characters.popFirst() ?? next) : next)
                }
            } else {
                value = String(characters.prefix { $0 != "," }).trimmingCharacters(in: .whitespaces)
                characters.removeFirst(characters.prefix { $0 != "," }.count)
            }
            if !name.isEmpty { result[name.lowercased()] = value }
        }
        return result
    }
}
