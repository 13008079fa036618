import FerryQUIC

/// Bytes from hex written in the RFCs' style (white space ignored).
func hex(_ text: String) -> [UInt8] {
    let digits = Array(text.filter { !$0.isWhitespace })
    precondition(digits.count % 2 == 0, "an odd number of hex digits")
    return stride(from: 0, to: digits.count, by: 2).map { UInt8(String(digits[$0...$0 + 1]), radix: 16)! }
}

/// Bytes as hex, for readable failures.
func hexString(_ bytes: [UInt8]) -> String {
    bytes.map { String($0, radix: 16).count == 1 ? "0" + String($0, radix: 16) : String($0, radix: 16) }.joined()
}

extension QUICClientConnection {
    /// Once the handshake is done: this side's HTTP/3 control stream, then a request stream carrying
    /// `method` `path` for localhost:`port` (and `body` as one DATA frame), ended. The request's
    /// stream and the datagrams to send.
    mutating func openRequest(_ method: String, _ path: String, port: Int, body: [UInt8] = []) -> (stream: UInt64, datagrams: [[UInt8]]) {
        let control = openStream(bidirectional: false)
        var datagrams = send(HTTP3Frame.clientControlStreamOpening, on: control)
        let stream = openStream(bidirectional: true)
        let fields = [(":method", method), (":scheme", "https"), (":authority", "localhost:\(port)"), (":path", path)]
        var message = HTTP3Frame.headers(QPACK.encode(fields)).encoded
        if !body.isEmpty { message += HTTP3Frame.data(body).encoded }
        datagrams += send(message, on: stream, fin: true)
        return (stream, datagrams)
    }
}
