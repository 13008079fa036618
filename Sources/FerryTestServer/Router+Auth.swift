import HTTPTypes

extension Router {
    /// `/basic-auth/{user}/{password}`: 200 with the right Basic credentials, else 401 with a challenge.
    func basicAuth() -> ResponsePlan {
        guard segments.count == 3 else {
            return .text(.badRequest, "use /basic-auth/{user}/{password}\n")
        }
        let user = String(segments[1])
        if HTTPAuthentication.basicAccepts(
            request.headerFields[.authorization],
            user: user,
            password: String(segments[2])
        ) {
            return json(.ok, ["authenticated": user])
        }
        var headers = HTTPFields()
        headers[.wwwAuthenticate] = "Basic realm=\"\(HTTPAuthentication.realm)\", charset=\"UTF-8\""
        return .text(.unauthorized, "Basic credentials required\n", headers: headers)
    }

    /// `/digest-auth/{qop}/{user}/{password}?algorithm=MD5|SHA-256`: Digest authentication (RFC 7616);
    /// qop is `auth` or `none`. A nonce this server never issued gets a new challenge with `stale=true`.
    func digestAuth() -> ResponsePlan {
        guard segments.count == 4, ["auth", "none"].contains(segments[1]) else {
            return .text(.badRequest, "use /digest-auth/{auth|none}/{user}/{password}\n")
        }
        guard let algorithm = HTTPAuthentication.DigestAlgorithm(rawValue: query["algorithm"] ?? "MD5") else {
            return .text(.badRequest, "algorithm must be MD5 or SHA-256\n")
        }
        let qop = String(segments[1])
        let user = String(segments[2])
        var stale = false
        if let authorization = request.headerFields[.authorization],
            let parameters = HTTPAuthentication.digestParameters(authorization),
            parameters["username"] == user, let nonce = parameters["nonce"]
        {
            if !listener.state.isKnownNonce(nonce) {
                stale = true
            } else if let expected = HTTPAuthentication.digestResponse(
                parameters: parameters,
                method: request.method.rawValue,
                password: String(segments[3]),
                algorithm: algorithm
            ),
                parameters["response"] == expected, qop == "none" || parameters["qop"] == qop
            {
                return json(.ok, ["authenticated": user])
            }
        }
        var headers = HTTPFields()
        headers[.wwwAuthenticate] = HTTPAuthentication.digestChallenge(
            nonce: listener.state.issueNonce(),
            qop: qop,
            algorithm: algorithm,
            stale: stale
        )
        return .text(.unauthorized, "Digest credentials required\n", headers: headers)
    }
}
