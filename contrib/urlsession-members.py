#!/usr/bin/env python3
"""Every member of Apple's URLSession API, and what FerryFoundationNetworking does with it.

    contrib/urlsession-members.py          rewrites the table in MovingFromURLSession.md
    contrib/urlsession-members.py check    exits 1 when the table there is not this one

Apple's members are FoundationNetworking's public declarations (this toolchain's, read with
swift-symbolgraph-extract) plus the Apple members FoundationNetworking lacks (APPLE_ONLY below). Each is
looked up in FerryFoundationNetworking's own symbol graph (from the debug build: run
`swift build --build-tests` first). A member present there is "supported" unless NOTES says how it
differs or why it is "refused" (declared, with a clear error when used); a member absent is "missing".
"""
import collections
import glob
import json
import os
import re
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ARTICLE = os.path.join(ROOT, "Sources/Ferry/Ferry.docc/MovingFromURLSession.md")
BEGIN, END = "<!-- members:begin -->", "<!-- members:end -->"

TYPES = [
    "URLSession", "URLSessionConfiguration", "URLSessionTask", "URLSessionDataTask", "URLSessionUploadTask",
    "URLSessionDownloadTask", "URLSessionStreamTask", "URLSessionWebSocketTask", "URLSessionDelegate",
    "URLSessionTaskDelegate", "URLSessionDataDelegate", "URLSessionDownloadDelegate", "URLSessionStreamDelegate",
    "URLSessionWebSocketDelegate", "URLProtocol", "URLProtocolClient", "URLSessionTaskMetrics",
    "URLSessionTaskTransactionMetrics", "HTTPCookieStorage", "URLCache", "URLCredentialStorage",
    "URLResponse", "HTTPURLResponse", "CachedURLResponse", "URLAuthenticationChallenge",
    "URLAuthenticationChallengeSender",
]
SUPERCLASSES = {
    "URLSessionDataTask": ["URLSessionTask"], "URLSessionUploadTask": ["URLSessionDataTask", "URLSessionTask"],
    "URLSessionDownloadTask": ["URLSessionTask"], "URLSessionStreamTask": ["URLSessionTask"],
    "URLSessionWebSocketTask": ["URLSessionTask"], "HTTPURLResponse": ["URLResponse"],
}

# Apple's members that FoundationNetworking does not declare.
APPLE_ONLY = {
    "URLSession": [
        "bytes(for:delegate:)", "bytes(from:delegate:)", "download(resumeFrom:delegate:)",
        "streamTask(withHostName:port:)", "uploadTask(withResumeData:)", "allTasks", "tasks",
        "ResponseDisposition.becomeDownload", "ResponseDisposition.becomeStream",
    ],
    "URLSessionConfiguration": [
        "background(withIdentifier:)", "allowsExpensiveNetworkAccess", "allowsConstrainedNetworkAccess",
        "waitsForConnectivity", "sessionSendsLaunchEvents", "tlsMinimumSupportedProtocolVersion",
        "tlsMaximumSupportedProtocolVersion", "multipathServiceType", "requiresDNSSECValidation",
    ],
    "URLSessionTask": ["earliestBeginDate", "prefersIncrementalDelivery"],
    "URLSessionUploadTask": ["cancel(byProducingResumeData:)"],
    "URLSessionDownloadTask": ["cancelByProducingResumeData()"],
    "URLSessionStreamTask": [
        "readData(ofMinLength:maxLength:timeout:completionHandler:)", "write(_:timeout:completionHandler:)",
        "captureStreams()", "closeWrite()", "closeRead()", "startSecureConnection()", "stopSecureConnection()",
    ],
    "URLSessionDelegate": ["urlSessionDidFinishEvents(forBackgroundURLSession:)", "urlSession(_:didReceive:)"],
    "URLSessionTaskDelegate": [
        "urlSession(_:didCreateTask:)", "urlSession(_:taskIsWaitingForConnectivity:)",
        "urlSession(_:task:didReceiveInformationalResponse:)",
        # The async forms.
        "urlSession(_:task:willBeginDelayedRequest:)", "urlSession(_:task:willPerformHTTPRedirection:newRequest:)",
        "urlSession(_:task:didReceive:)", "urlSession(_:needNewBodyStreamForTask:)",
    ],
    "URLSessionDataDelegate": ["urlSession(_:dataTask:didBecome:)", "urlSession(_:dataTask:willCacheResponse:)"],
    "HTTPCookieStorage": ["storeCookies(_:for:)", "getCookiesFor(_:completionHandler:)"],
    "URLCache": ["init(memoryCapacity:diskCapacity:directory:)"],
}

# How a supported member differs, or why a missing one is refused. Keys: "Type.member".
NOTES = {
    "HTTPURLResponse.allHeaderFields": ("supported", "names capitalised as FoundationNetworking and Darwin do (X- fields as sent); fields whose names differ only in case are one field, values joined with \", \" (FoundationNetworking keeps one); built when first read"),
    "HTTPURLResponse.value(forHTTPHeaderField:)": ("supported", "any case; fields of one name joined with \", \""),
    "URLResponse.suggestedFilename": ("supported", "the `Content-Disposition` filename, else the URL's last path component, else its host, as Apple documents (FoundationNetworking says \"Unknown\" for every HTTP response without a filename); no extension is added by type"),
    "URLResponse.textEncodingName": ("supported", "the `charset` parameter in any case (FoundationNetworking: lower case only)"),
    "URLSession.reset(completionHandler:)": ("differs", "empties cookies, credentials and the cache; open connections stay pooled"),
    "URLSession.flush(completionHandler:)": ("differs", "only calls the handler: Ferry's stores write each change as it happens"),
    "URLSession.bytes(for:delegate:)": ("supported", "a data task (`AsyncBytes.task`) whose task delegate hears redirects, challenges, metrics and the end; `URLProtocol` classes load it; past 4 MiB unread the task is suspended until the reader catches up; `lines` as Apple's"),
    "URLSession.bytes(from:delegate:)": ("supported", "as `bytes(for:delegate:)`"),
    "URLSession.webSocketTask(with:)": ("supported", "ws:// and wss://, permessage-deflate; FoundationNetworking here has no WebSocket support"),
    "URLSession.shared": ("supported", "also consults classes given to `URLProtocol.registerClass`, as Apple's"),
    "URLSessionConfiguration.protocolClasses": ("supported", "this module's `URLProtocol` subclasses or FoundationNetworking's; refused on background sessions, as Apple's"),
    "URLSessionConfiguration.httpCookieStorage": ("differs", "`.shared` (Ferry's store), an ephemeral configuration's own, or nil; a background session takes `.shared` or nil"),
    "URLSessionConfiguration.urlCredentialStorage": ("differs", "`.shared` (Ferry's store), one of its own (`URLCredentialStorage()`, an ephemeral configuration's), or nil; a background session takes `.shared` or nil"),
    "URLSessionConfiguration.urlCache": ("supported", "`.shared` (Ferry's RFC 9111 cache), one the application makes, an ephemeral configuration's, or nil"),
    "URLSessionConfiguration.httpShouldUsePipelining": ("differs", "true is refused: Ferry does not pipeline"),
    "URLSessionConfiguration.sharedContainerIdentifier": ("differs", "refused when set: Linux has no app containers"),
    "URLSessionConfiguration.connectionProxyDictionary": ("differs", "one proxy per session: different HTTP and HTTPS proxies are refused"),
    "URLSessionConfiguration.networkServiceType": ("differs", "kept; Linux has no service classes to give it"),
    "URLSessionConfiguration.shouldUseExtendedBackgroundIdleMode": ("differs", "kept; no meaning on Linux"),
    "URLSessionConfiguration.tlsMinimumSupportedProtocolVersion": ("supported", "TLS 1.0–1.3; DTLS versions are refused"),
    "URLSessionConfiguration.tlsMaximumSupportedProtocolVersion": ("supported", "TLS 1.0–1.3; DTLS versions are refused"),
    "URLSessionConfiguration.multipathServiceType": ("refused", "`.none` only: Ferry does not use Multipath TCP; another value fails the session's tasks with a message that says so"),
    "URLSessionConfiguration.requiresDNSSECValidation": ("refused", "false only: the system resolver does not validate DNSSEC for Ferry; true fails the session's tasks with a message that says so"),
    "URLSessionTask.init()": ("refused", "unavailable (a compile-time error naming the factories): tasks come from a session, as Apple's deprecation says"),
    "URLSessionTask.earliestBeginDate": ("differs", "background: ferryd holds the task until then, across restarts, without asking `willBeginDelayedRequest`; other sessions wait in this process and ask it (Apple ignores the date there)"),
    "URLSessionTask.countOfBytesClientExpectsToReceive": ("differs", "kept as a hint; Ferry's scheduler does not use it"),
    "URLSessionTask.countOfBytesClientExpectsToSend": ("differs", "kept as a hint; Ferry's scheduler does not use it"),
    "URLSessionTask.prefersIncrementalDelivery": ("supported", "false: the data delegate gets the body once, whole, before completion"),
    "URLSessionUploadTask.cancel(byProducingResumeData:)": ("supported", "for resumable uploads (Ferry's tus and draft resumable uploads)"),
    "URLSessionDelegate.urlSession(_:didReceive:completionHandler:)": ("differs", "never asked: Ferry evaluates server trust itself, and Linux has no `SecTrust`"),
    "URLSessionDelegate.urlSession(_:didReceive:)": ("differs", "the async form; never asked, as the completion-handler form"),
    "URLSessionTaskDelegate.urlSession(_:task:didReceiveInformationalResponse:)": ("differs", "each 1xx but 101, HTTP/1.1 and HTTP/2, before `didReceive response`; not for background sessions (ferryd runs their transfers); more than 64 before the answer fail the task (`badServerResponse`)"),
    "URLSessionTaskDelegate.urlSession(_:task:willBeginDelayedRequest:completionHandler:)": ("differs", "asked for tasks of sessions in this process, not background ones (ferryd holds those); `.useNewRequest` fails a network task (it works for a URLProtocol task)"),
    "URLSessionStreamTask.captureStreams()": ("supported", "after the reads and writes asked for before; `read` and `write` wait as a socket stream's do, events go to the run loops the streams are scheduled in; closing both closes the connection"),
    "URLSessionStreamTask.stopSecureConnection()": ("refused", "unavailable (a compile-time error): TLS cannot be taken off a connection, as Apple's deprecation says"),
    "URLSessionStreamTask.readData(ofMinLength:maxLength:timeout:completionHandler:)": ("supported", "also async; reads run in the order asked for"),
    "URLSessionStreamTask.write(_:timeout:completionHandler:)": ("supported", "also async; writes run in the order asked for"),
    "URLSessionStreamDelegate.urlSession(_:betterRouteDiscoveredFor:)": ("differs", "never called: Ferry learns of no routes"),
    "URLSessionStreamDelegate.urlSession(_:streamTask:didBecome:outputStream:)": ("supported", "after `captureStreams()`, the streams not yet open; the task reports nothing more"),
    "URLSession.ResponseDisposition.becomeStream": ("supported", "then `urlSession(_:dataTask:didBecome:)` with the stream task"),
    "HTTPCookieStorage.sharedCookieStorage(forGroupContainerIdentifier:)": ("differs", "the shared store: Linux has no app groups"),
    "HTTPCookieStorage.shared": ("supported", "Ferry's per-user store, the one default sessions and ferryd use"),
    "URLCache.removeCachedResponses(since:)": ("differs", "removes every stored response: Ferry's cache keeps no index by date"),
    "URLCache.memoryCapacity": ("differs", "setting it makes a new cache of that size for sessions made afterwards"),
    "URLCache.diskCapacity": ("differs", "setting it makes a new cache of that size for sessions made afterwards"),
    "URLCache.init(memoryCapacity:diskCapacity:diskPath:)": ("supported", "a relative path is a directory under `$XDG_CACHE_HOME/ferry/`"),
    "URLCache.shared": ("differs", "read-only: the per-user cache default sessions use (a configuration takes another object)"),
    "URLCredentialStorage.init()": ("supported", "a store of its own in memory, for a configuration's `urlCredentialStorage`"),
    "URLCredentialStorage.set(_:for:)": ("differs", "one credential per protection space: another user's replaces it"),
    "URLCredentialStorage.credentials(for:)": ("differs", "at most one user (one credential per space)"),
    "URLCredentialStorage.remove(_:for:options:)": ("differs", "the options (iCloud synchronisation) have no meaning on Linux"),
    "URLSessionWebSocketTask.closeCode": ("differs", "an application's code (4000–4999) reads `.invalid`, as Apple's enum has no case for it"),
    "URLProtocol.property(forKey:in:)": ("differs", "FoundationNetworking's store: a property set on an `NSMutableURLRequest` does not survive its bridge to `URLRequest`"),
    "URLProtocol.setProperty(_:forKey:in:)": ("differs", "FoundationNetworking's store (see `property(forKey:in:)`)"),
    "URLProtocol.removeProperty(forKey:in:)": ("differs", "FoundationNetworking's store (see `property(forKey:in:)`)"),
    "URLProtocol.cachedResponse": ("differs", "always nil: protocols are not handed the session's cached response"),
    "URLSessionTaskTransactionMetrics.countOfRequestHeaderBytesSent": ("differs", "0: not measured"),
    "URLSessionTaskTransactionMetrics.countOfResponseHeaderBytesReceived": ("differs", "0: not measured"),
    "URLSessionTaskTransactionMetrics.countOfResponseBodyBytesAfterDecoding": ("differs", "the bytes received: the decoded size is not counted apart"),
    "URLSessionTaskTransactionMetrics.negotiatedTLSCipherSuite": ("differs", "nil: not recorded"),
    "URLSessionTaskTransactionMetrics.domainResolutionProtocol": ("differs", "`.unknown`: the system resolver does not say"),
    "URLSessionTaskTransactionMetrics.isCellular": ("differs", "false"),
    "URLSessionTaskTransactionMetrics.isExpensive": ("differs", "false"),
    "URLSessionTaskTransactionMetrics.isConstrained": ("differs", "false"),
    "URLSessionTaskTransactionMetrics.isMultipath": ("differs", "false: Ferry does not use Multipath TCP"),
    "URLSessionTaskTransactionMetrics.remotePort": ("supported", "an `Int?` as Apple's (FoundationNetworking declares a `String?`)"),
    "URLSessionTaskTransactionMetrics.localPort": ("supported", "an `Int?` as Apple's (FoundationNetworking declares a `String?`)"),
}

# Nested types this module takes from FoundationNetworking through a typealias: their members are
# FoundationNetworking's own (a symbol graph lists a typealias, not its members).
ALIASED = ("URLCache.StoragePolicy",)

# Members that are Swift's or NSObject's plumbing rather than API a program calls.
PLUMBING = ("!=(_:_:)", "hash(into:)", "hashValue", "init(rawValue:)", "copy()", "description")


def symbols(module, include_dirs):
    out = tempfile.mkdtemp()
    command = ["swift-symbolgraph-extract", "-module-name", module, "-target", "x86_64-unknown-linux-gnu",
               "-output-dir", out, "-minimum-access-level", "public"]
    for directory in include_dirs:
        command += ["-I", directory]
    for modulemap in glob.glob(os.path.join(ROOT, ".build/debug/*.build/module.modulemap")) + glob.glob(
        os.path.join(ROOT, "Sources/C*/module.modulemap")
    ):
        command += ["-Xcc", f"-fmodule-map-file={modulemap}"]
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"swift-symbolgraph-extract failed for {module}:\n{done.stderr[-3000:]}")
    members = collections.defaultdict(set)
    for path in glob.glob(os.path.join(out, f"{module}*.symbols.json")):
        for symbol in json.load(open(path))["symbols"]:
            parts = symbol["pathComponents"]
            unavailable = any(a.get("isUnconditionallyUnavailable") or a.get("isUnconditionallyDeprecated")
                              for a in symbol.get("availability", []))
            if len(parts) >= 2 and parts[0] in TYPES and not unavailable:
                members[parts[0]].add(".".join(parts[1:]))
    return members


def table():
    includes = [os.path.join(ROOT, ".build/debug/Modules")]
    includes += [d for d in glob.glob(os.path.join(ROOT, ".build/checkouts/*/Sources/*/include"))]
    apple = symbols("FoundationNetworking", [])
    ours = symbols("FerryFoundationNetworking", includes)
    for type_name, names in APPLE_ONLY.items():
        apple[type_name].update(names)
    rows, counts = [], collections.Counter()
    for type_name in TYPES:
        for member in sorted(apple[type_name]):
            if member.endswith(PLUMBING):
                continue
            owners = [type_name] + SUPERCLASSES.get(type_name, [])
            present = any(member in ours[owner] for owner in owners) or any(
                f"{type_name}.{member}".startswith(alias + ".") for alias in ALIASED
            )
            status, note = NOTES.get(f"{type_name}.{member}", ("supported" if present else "missing", ""))
            if not present and status == "refused" and declared_unavailable(type_name, member):
                pass  # declared unavailable: symbol graphs leave such declarations out
            elif not present and status != "missing":
                status, note = "missing", note or "not declared"
            if present and status == "missing":
                sys.exit(f"{type_name}.{member} is declared now: its note in NOTES says missing")
            counts[status] += 1
            rows.append(f"| `{type_name}.{member}` | {status} | {note} |")
    summary = (f"{sum(counts.values())} members: {counts['supported']} supported, {counts['differs']} differ, "
               f"{counts['refused']} refused (declared; a clear error says why), {counts['missing']} missing "
               f"(counted by contrib/urlsession-members.py).")
    return "\n".join([BEGIN, summary, "", "| member | status | how, or why |", "| --- | --- | --- |"] + rows + [END])


def declared_unavailable(type_name, member):
    """Whether this module's sources declare `member` of `type_name` with `@available(*, unavailable`."""
    name = member.split("(")[0]
    head = r"init\(" if name == "init" else r"func " + re.escape(name) + r"\("
    pattern = re.compile(r"@available\(\*, unavailable[^\n]*\n[^\n]*" + head)
    for path in glob.glob(os.path.join(ROOT, "Sources/FerryFoundationNetworking", "*.swift")):
        text = open(path).read()
        if re.search(r"\bclass " + re.escape(type_name) + r"\b", text) and pattern.search(text):
            return True
    return False


def main():
    made = table()
    text = open(ARTICLE).read()
    start, end = text.index(BEGIN), text.index(END) + len(END)
    if len(sys.argv) > 1 and sys.argv[1] == "check":
        if text[start:end] != made:
            sys.exit("MovingFromURLSession.md's member table is out of date: run contrib/urlsession-members.py")
        return
    open(ARTICLE, "w").write(text[:start] + made + text[end:])
    print(made.splitlines()[1])


if __name__ == "__main__":
    main()
