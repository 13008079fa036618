import HTTPTypes

extension Router {
    /// `/cookies`: the cookies the client sent, as JSON; `/cookies/set?a=1` sets each query item
    /// (`Path=/`); `/cookies/delete?a` expires each named cookie.
    func cookies() -> ResponsePlan {
        var headers = HTTPFields()
        switch segments.dropFirst().first {
        case nil:
            var sent: [String: String] = [:]
            for field in request.headerFields[values: .cookie] {
                for pair in field.split(separator: ";") {
                    let nameValue = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
                    guard let name = nameValue.first?.trimmingSpaces, !name.isEmpty else { continue }
                    sent[name] = nameValue.count == 2 ? nameValue[1].trimmingSpaces : ""
                }
            }
            return json(.ok, ["cookies": sent])
        case "set":
            for item in query.items {
                headers.append(HTTPField(name: .setCookie, value: "\(item.name)=\(item.value); Path=/"))
            }
            return json(.ok, ["set": query.items.map(\.name)], headers: headers)
        case "delete":
            for item in query.items {
                headers.append(
                    HTTPField(
                        name: .setCookie,
                        value: "\(item.name)=; Path=/; Max-Age=0; Expires=Thu, 01 Jan 1970 00:00:00 GMT"
                    )
                )
            }
            return json(.ok, ["deleted": query.items.map(\.name)], headers: headers)
        default:
            return .text(.notFound, "use /cookies, /cookies/set?name=value or /cookies/delete?name\n")
        }
    }
}
