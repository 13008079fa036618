// FerryFoundationNetworking: Apple's URLSession API on Ferry's engine (docs/FOUNDATION_NETWORKING.md).
//
// Foundation and FoundationNetworking come with this module, so code that imported them keeps every
// other name. This module's own declarations shadow FoundationNetworking's (Swift prefers a module's
// own names over those it imports), and the value types FoundationNetworking gets right are re-used
// through typealiases: a scoped import such as `import struct FerryFoundationNetworking.URLRequest`
// then names one type, never two.
@_exported public import Foundation
#if canImport(FoundationNetworking)
@_exported public import FoundationNetworking

/// A request: FoundationNetworking's value type, sent by Ferry.
public typealias URLRequest = FoundationNetworking.URLRequest
/// A cookie.
public typealias HTTPCookie = FoundationNetworking.HTTPCookie
/// A credential for an authentication challenge.
public typealias URLCredential = FoundationNetworking.URLCredential
/// The server, realm and scheme a credential is for.
public typealias URLProtectionSpace = FoundationNetworking.URLProtectionSpace

/// The key of a failed download's resume data in its error's `userInfo` (Apple's
/// `NSURLSessionDownloadTaskResumeData`; FoundationNetworking's `URLSessionDownloadTaskResumeData`).
public let NSURLSessionDownloadTaskResumeData = FoundationNetworking.URLSessionDownloadTaskResumeData
#endif

#if canImport(FoundationNetworking)
extension URLError {
    /// A failed or cancelled download's resume data, for `URLSession.downloadTask(withResumeData:)`
    /// (Apple's; FoundationNetworking lacks it).
    public var downloadTaskResumeData: Data? {
        userInfo[NSURLSessionDownloadTaskResumeData] as? Data
    }
}
#endif
