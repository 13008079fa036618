/// The rules of RFC 9113 §8.2–8.3 for a response's header block, checked before any of it is used: a
/// field that breaks them makes the response malformed, a stream error (a server that sent `:status 500`
/// then `:status 200` was taken for a 200 and its error page saved as the file).
enum HTTP2ResponseFields {
    /// The fields HTTP/2 forbids (RFC 9113 §8.2.2): they belong to one HTTP/1.1 connection.
    static let connectionSpecific: Set<String> = ["connection", "keep-alive", "proxy-connection", "transfer-encoding", "upgrade"]

    /// What a block of `fields` (name, value) does wrong, in words, or nil when it is well formed.
    /// A response head (`trailers` false) has exactly one `:status` and no other pseudo-field, before
    /// every regular field; trailers have no pseudo-field. Names are lower case; `te` may only say
    /// `trailers`; no connection-specific field.
    static func problem(_ fields: some Sequence<(name: String, value: String)>, trailers: Bool) -> String? {
        var status = 0
        var regular = false
        for (name, value) in fields {
            if name.hasPrefix(":") {
                if trailers { return "trailers with the pseudo-field \(name)" }
                guard name == ":status" else { return "a response with the request's pseudo-field \(name)" }
                if regular { return "the pseudo-field :status after regular fields" }
                status += 1
                if status > 1 { return "a response head with a second :status" }
                continue
            }
            regular = true
            if name.utf8.contains(where: { (0x41...0x5A).contains($0) }) {
                return "the field name \(name) in upper case (HTTP/2 and HTTP/3 names are lower case)"
            }
            if connectionSpecific.contains(name) { return "the connection-specific field \(name)" }
            if name == "te", value.lowercased() != "trailers" { return "the field te with \(value)" }
        }
        if !trailers, status == 0 { return "a response head without :status" }
        return nil
    }
}
