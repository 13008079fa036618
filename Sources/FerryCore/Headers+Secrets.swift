extension Headers {
    /// The fields that carry a credential: stored only where they must be (ferryd's private database),
    /// never in a file beside a download, and shown as `<redacted>` in listings.
    public static let secretNames = ["authorization", "proxy-authorization", "cookie"]

    /// True when `name` is one of ``secretNames`` (any case).
    public static func isSecret(_ name: String) -> Bool {
        secretNames.contains { sameName($0, name) }
    }

    /// These fields without the ones that carry a credential.
    public var withoutSecrets: Headers {
        var copy = self
        for name in Self.secretNames { copy[name] = nil }
        return copy
    }

    /// These fields with each credential's value replaced by `<redacted>`: those of ``secretNames``, and
    /// a response's `Set-Cookie` (the names stay, so a reader sees that one was sent or set).
    public var redacted: Headers {
        var copy = Headers()
        for field in self {
            let secret = Self.isSecret(field.name) || Self.sameName(field.name, "set-cookie")
            copy.add(name: field.name, value: secret ? Self.redactedValue : field.value)
        }
        return copy
    }

    /// What a redacted value reads.
    public static let redactedValue = "<redacted>"

    /// These fields with the credentials of `other` in place of their own: a stored request that lost
    /// its secrets gets this run's back.
    public func withSecrets(of other: Headers) -> Headers {
        var copy = withoutSecrets
        for field in other where Self.isSecret(field.name) { copy.add(name: field.name, value: field.value) }
        return copy
    }
}
