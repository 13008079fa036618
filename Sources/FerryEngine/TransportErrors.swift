import FerryCore
import NIOCore
import NIOPosix
import NIOSSL

#if canImport(Glibc)
import Glibc
#endif

/// Turns the errors of SwiftNIO and NIOSSL into ``FerryError``s with URLError-like codes.
enum TransportErrors {
    static func ferryError(for error: any Error, url: String? = nil) -> FerryError {
        if let error = error as? FerryError { return error }
        if error is CancellationError {
            return FerryError(.cancelled, "the transfer was cancelled", failingURL: url)
        }
        // In words, as NetworkTransport's own retries say them (issue 41: a GOAWAY that reached a user
        // as a Swift value's dump, `refused("GOAWAY (NO_ERROR) below the stream")`).
        switch error as? ConnectionError {
        case .closedBeforeResponse?:
            return FerryError(.networkConnectionLost, "the server closed the connection before answering", failingURL: url)
        case .refused(let reason)?:
            return FerryError(.networkConnectionLost, "the server refused the request without processing it: \(reason)", failingURL: url)
        case nil:
            break
        }
        if error is NIOSSLError || error is BoringSSLError || error is NIOSSLExtraError {
            // BoringSSL names a failed chain check CERTIFICATE_VERIFY_FAILED.
            if String(describing: error).contains("CERTIFICATE_VERIFY_FAILED") {
                return FerryError(
                    .serverCertificateUntrusted,
                    "the server's certificate is not trusted; trust its CA to connect",
                    failingURL: url
                )
            }
            // BoringSSL's reasons in plain words, without its internals (file names, line numbers).
            return FerryError(.secureConnectionFailed, "TLS failed: \(TLSClient.plainReason(error))", failingURL: url)
        }
        if let error = error as? IOError {
            switch error.errnoCode {
            case ECONNREFUSED, EHOSTUNREACH, ENETUNREACH:
                return FerryError(
                    .cannotConnectToHost,
                    "could not connect: \(error.description); is the server running?",
                    failingURL: url
                )
            case ECONNRESET, EPIPE:
                return FerryError(.networkConnectionLost, "the connection was reset", failingURL: url)
            default:
                return FerryError(
                    .networkConnectionLost,
                    "the connection failed: \(error.description)",
                    failingURL: url
                )
            }
        }
        if let error = error as? NIOConnectionError {
            // The name did not resolve at all: no address was tried.
            if error.connectionErrors.isEmpty, error.dnsAError != nil || error.dnsAAAAError != nil {
                return FerryError(.cannotFindHost, "cannot find the host \(error.host)", failingURL: url)
            }
            if error.connectionErrors.contains(where: { ($0.error as? IOError)?.errnoCode == ECONNREFUSED }) {
                return FerryError(
                    .cannotConnectToHost,
                    "could not connect to \(error.host):\(error.port); is the server running?",
                    failingURL: url
                )
            }
            return FerryError(.cannotConnectToHost, "could not connect: \(error)", failingURL: url)
        }
        if error is ChannelError {
            return FerryError(.networkConnectionLost, "the connection failed: \(error)", failingURL: url)
        }
        return FerryError(.networkConnectionLost, "the transfer failed: \(error)", failingURL: url)
    }
}
