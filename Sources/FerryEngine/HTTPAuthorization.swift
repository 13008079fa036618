import Crypto
import FerryCore
import Foundation

/// The Authorization value answering a Basic (RFC 7617) or Digest (RFC 7616: MD5 and SHA-256, qop
/// `auth` or none) challenge.
enum HTTPAuthorization {
    /// The header value, or nil when the challenge asks for something Ferry cannot do (another
    /// algorithm, qop `auth-int` only).
    static func value(
        for challenge: AuthenticationChallenge,
        credential: Credential,
        method: String,
        uri: String,
        clientNonce: String = UUID().uuidString.replacingOccurrences(of: "-", with: "").lowercased()
    ) -> String? {
        switch challenge.scheme {
        case "basic":
            return "Basic " + Data("\(credential.user):\(credential.password)".utf8).base64EncodedString()
        case "digest":
            return digest(challenge, credential: credential, method: method, uri: uri, clientNonce: clientNonce)
        default:
            return nil
        }
    }

    private static func digest(
        _ challenge: AuthenticationChallenge,
        credential: Credential,
        method: String,
        uri: String,
        clientNonce: String
    ) -> String? {
        let parameters = challenge.parameters
        guard let nonce = parameters["nonce"] else { return nil }
        let realm = parameters["realm"] ?? ""
        let algorithm = parameters["algorithm"] ?? "MD5"
        let hash: (String) -> String
        switch algorithm.uppercased() {
        case "MD5": hash = { Insecure.MD5.hash(data: Array($0.utf8)).map { String(format: "%02x", $0) }.joined() }
        case "SHA-256": hash = { SHA256.hash(data: Array($0.utf8)).map { String(format: "%02x", $0) }.joined() }
        default: return nil
        }
        let offered = (parameters["qop"] ?? "").split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
        let ha1 = hash("\(credential.user):\(realm):\(credential.password)")
        let ha2 = hash("\(method):\(uri)")
        var fields = [
            "username=\"\(quoted(credential.user))\"", "realm=\"\(quoted(realm))\"", "nonce=\"\(quoted(nonce))\"",
            "uri=\"\(quoted(uri))\"", "algorithm=\(algorithm)",
        ]
        if offered.contains("auth") {
            let count = "00000001"
            let response = hash("\(ha1):\(nonce):\(count):\(clientNonce):auth:\(ha2)")
            fields += ["qop=auth", "nc=\(count)", "cnonce=\"\(clientNonce)\"", "response=\"\(response)\""]
        } else if offered.isEmpty {
            fields.append("response=\"\(hash("\(ha1):\(nonce):\(ha2)"))\"")
        } else {
            return nil  // auth-int only: the body would have to be hashed first
        }
        if let opaque = parameters["opaque"] { fields.append("opaque=\"\(quoted(opaque))\"") }
        return "Digest " + fields.joined(separator: ", ")
    }

    private static func quoted(_ text: String) -> String {
        text.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"")
    }
}
