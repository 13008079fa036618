/// The version of Ferry's libraries, tools and control API.
///
/// One place to bump: the CLI's `--version`, the daemon's status and the control API's `User-Agent`
/// read it from here.
public enum FerryVersion {
    /// The semantic version of this build, e.g. `0.1.0-dev`.
    public static let current = "0.1.0-dev"
}
