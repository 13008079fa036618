public import Foundation

/// A response with its body, as a cache keeps it (Apple's `CachedURLResponse`), holding this module's
/// ``URLResponse``.
open class CachedURLResponse: NSObject, NSSecureCoding, NSCopying, @unchecked Sendable {
    private let storedResponse: URLResponse
    private let storedData: Data
    private let storedUserInfo: [AnyHashable: Any]?
    private let storedPolicy: URLCache.StoragePolicy

    /// A cached response that may be stored anywhere.
    public convenience init(response: URLResponse, data: Data) {
        self.init(response: response, data: data, userInfo: nil, storagePolicy: .allowed)
    }

    /// A cached response with its user info and storage policy.
    public init(response: URLResponse, data: Data, userInfo: [AnyHashable: Any]? = nil, storagePolicy: URLCache.StoragePolicy) {
        storedResponse = response
        storedData = data
        storedUserInfo = userInfo
        storedPolicy = storagePolicy
        super.init()
    }

    /// The response's metadata.
    open var response: URLResponse { storedResponse }
    /// The body.
    open var data: Data { storedData }
    /// What the app attached.
    open var userInfo: [AnyHashable: Any]? { storedUserInfo }
    /// Where it may be stored.
    open var storagePolicy: URLCache.StoragePolicy { storedPolicy }

    public static var supportsSecureCoding: Bool { true }

    /// Decodes what ``encode(with:)`` wrote.
    public required init?(coder: NSCoder) {
        guard coder.allowsKeyedCoding,
            let response = coder.decodeObject(of: [URLResponse.self, HTTPURLResponse.self], forKey: "NS.response") as? URLResponse,
            let data = coder.decodeObject(of: NSData.self, forKey: "NS.data")
        else { return nil }
        storedResponse = response
        storedData = data as Data
        storedUserInfo = nil
        storedPolicy = URLCache.StoragePolicy(rawValue: UInt(coder.decodeInteger(forKey: "NS.storagePolicy"))) ?? .allowed
        super.init()
    }

    /// Encodes the response, body and policy (not the user info, which need not be codable).
    open func encode(with coder: NSCoder) {
        guard coder.allowsKeyedCoding else { return }
        coder.encode(storedResponse, forKey: "NS.response")
        coder.encode(NSData(data: storedData), forKey: "NS.data")
        coder.encode(Int(storedPolicy.rawValue), forKey: "NS.storagePolicy")
    }

    /// The cached response itself: it does not change.
    open func copy(with zone: NSZone? = nil) -> Any { self }

    /// Equal when response, body, policy are.
    open override func isEqual(_ object: Any?) -> Bool {
        guard let other = object as? CachedURLResponse else { return false }
        return other === self || (response.isEqual(other.response) && data == other.data && storagePolicy == other.storagePolicy)
    }

    open override var hash: Int {
        var hasher = Hasher()
        hasher.combine(response.hash)
        hasher.combine(data)
        hasher.combine(storagePolicy)
        return hasher.finalize()
    }
}
