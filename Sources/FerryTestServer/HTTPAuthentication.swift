import Crypto
import FerryCore
import Foundation

/// Basic (RFC 7617) and Digest (RFC 7616) challenge checks for `/basic-auth/...` and `/digest-auth/...`.
enum HTTPAuthentication {
    static let realm = "ferry-testserver"

    /// Whether an Authorization header carries `user:password` in the Basic scheme.
    static func basicAccepts(_ authorization: String?, user: String, password: String) -> Bool {
        guard let authorization, authorization.lowercased().hasPrefix("basic ") else { return false }
        let encoded = authorization.dropFirst("basic ".count).trimmingSpaces
        guard let decoded = Data(base64Encoded: encoded) else { return false }
        return Array(decoded) == Array("\(user):\(password)".utf8)
    }

    /// The digest algorithms the server offers.
    enum DigestAlgorithm: String {
        case md5 = "MD5"
        case sha256 = "SHA-256"

        func hash(_ text: String) -> String {
            switch self {
            case .md5: Insecure.MD5.hash(data: Array(text.utf8)).hexString
            case .sha256: SHA256.hash(data: Array(text.utf8)).hexString
            }
        }
    }

    /// The WWW-Authenticate value of a Digest challenge.
    static func digestChallenge(nonce: String, qop: String, algorithm: DigestAlgorithm, stale: Bool) -> String {
        var value = "Digest realm=\"\(realm)\", nonce=\"\(nonce)\", algorithm=\(algorithm.rawValue), opaque=\"ferry\""
        if qop != "none" { value += ", qop=\"\(qop)\"" }
        if stale { value += ", stale=true" }
        return value
    }

    /// The parameters of a `Digest` Authorization header (`name=value` or `name="value"`, comma separated).
    static func digestParameters(_ authorization: String) -> [String: String]? {
        guard authorization.lowercased().hasPrefix("digest ") else { return nil }
        return AuthParameters.parse(authorization.dropFirst("digest ".count))
    }

    /// The expected `response` of a Digest Authorization for the given request and credentials.
    static func digestResponse(
        parameters: [String: String],
        method: String,
        password: String,
        algorithm: DigestAlgorithm,
        realm: String = HTTPAuthentication.realm
    ) -> String? {
        guard let user = parameters["username"], let nonce = parameters["nonce"], let uri = parameters["uri"] else {
            return nil
        }
        let ha1 = algorithm.hash("\(user):\(realm):\(password)")
        let ha2 = algorithm.hash("\(method):\(uri)")
        if let qop = parameters["qop"] {
            guard let nc = parameters["nc"], let cnonce = parameters["cnonce"] else { return nil }
            return algorithm.hash("\(ha1):\(nonce):\(nc):\(cnonce):\(qop):\(ha2)")
        }
        return algorithm.hash("\(ha1):\(nonce):\(ha2)")
    }
}

extension Sequence where Element == UInt8 {
    /// Lower-case hexadecimal.
    var hexString: String {
        let digits = Array("0123456789abcdef".utf8)
        var result: [UInt8] = []
        for byte in self {
            result.append(digits[Int(byte >> 4)])
            result.append(digits[Int(byte & 0x0f)])
        }
        return String(decoding: result, as: UTF8.self)
    }
}

extension Digest {
    var hexString: String { self.withUnsafeBytes { Array($0) }.hexString }
}
