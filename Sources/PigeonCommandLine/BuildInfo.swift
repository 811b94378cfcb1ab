/// What this binary was built from, for `pigeon --version`. Packaging builds (the container
/// image) write the commit in before building; a plain checkout's build says "unknown".
enum BuildInfo {
    static let version = "0.5.0"
    static let commit = "unknown"
}
