// Cache policies, timeouts, invalidation and less common answers: programs of the sameness suite,
// compiled against FoundationNetworking and against FerryFoundationNetworking like the rest.
import Foundation
#if FERRY
import FerryFoundationNetworking
#elseif canImport(FoundationNetworking)
import FoundationNetworking
#endif

extension SamenessPrograms {
    static let policyPrograms: [(name: String, program: Program)] = [
        ("returnCacheDataDontLoad with nothing cached fails", cacheDontLoadEmpty),
        ("returnCacheDataDontLoad serves what an earlier request cached", cacheDontLoadServes),
        ("returnCacheDataElseLoad serves even a stale entry", cacheElseLoadServesStale),
        ("a configuration's request timeout applies to its requests", configurationTimeout),
        ("the resource timeout ends a slow transfer", resourceTimeout),
        ("invalidateAndCancel cancels a running task, then invalidates", invalidateAndCancelRunning),
        ("a 500 with a body is a response with that body", serverErrorWithBody),
        ("a 204 has no body", noContent),
        ("httpShouldHandleCookies false sends no cookie", cookiesNotHandled),
        ("a download of an empty body gives an empty file", emptyDownload),
        ("a PUT upload from a file to a 404 gives the 404", uploadToNotFound),
        ("a task's own delegate hears the events of its task", taskDelegateHearsItsTask),
    ]

    static func cacheDontLoadEmpty(_ origin: String) async -> [String] {
        let session = ephemeralSession()
        defer { session.finishTasksAndInvalidate() }
        var request = URLRequest(url: URL(string: "\(origin)/bytes/100?seed=11&cache_control=max-age%3D600")!)
        request.cachePolicy = .returnCacheDataDontLoad
        let (data, response, error) = await dataTask(session, request)
        return [describe(data), describe(response), describe(error)]
    }

    static func cacheDontLoadServes(_ origin: String) async -> [String] {
        let session = ephemeralSession()
        defer { session.finishTasksAndInvalidate() }
        let url = URL(string: "\(origin)/bytes/100?seed=12&cache_control=max-age%3D600")!
        let (first, _, _) = await dataTask(session, URLRequest(url: url))
        var request = URLRequest(url: url)
        request.cachePolicy = .returnCacheDataDontLoad
        let (data, response, error) = await dataTask(session, request)
        return [describe(first), describe(data), describe(response), describe(error)]
    }

    static func cacheElseLoadServesStale(_ origin: String) async -> [String] {
        let session = ephemeralSession()
        defer { session.finishTasksAndInvalidate() }
        let url = URL(string: "\(origin)/bytes/100?seed=13&cache_control=max-age%3D0")!
        _ = await dataTask(session, URLRequest(url: url))
        var request = URLRequest(url: url)
        request.cachePolicy = .returnCacheDataElseLoad
        let (data, response, error) = await dataTask(session, request)
        return [describe(data), describe(response), describe(error)]
    }

    static func configurationTimeout(_ origin: String) async -> [String] {
        let configuration = URLSessionConfiguration.ephemeral
        configuration.timeoutIntervalForRequest = 1
        let session = URLSession(configuration: configuration)
        defer { session.finishTasksAndInvalidate() }
        let (_, _, error) = await dataTask(session, URLRequest(url: URL(string: "\(origin)/bytes/1000?stall_after=10&stall_ms=600000")!))
        return [describe(error)]
    }

    static func resourceTimeout(_ origin: String) async -> [String] {
        let configuration = URLSessionConfiguration.ephemeral
        configuration.timeoutIntervalForResource = 1
        let session = URLSession(configuration: configuration)
        defer { session.finishTasksAndInvalidate() }
        let (_, _, error) = await dataTask(session, URLRequest(url: URL(string: "\(origin)/bytes/1000?stall_after=10&stall_ms=600000")!))
        return [describe(error)]
    }

    static func invalidateAndCancelRunning(_ origin: String) async -> [String] {
        let recorder = Recorder()
        let session = ephemeralSession(delegate: recorder)
        session.dataTask(with: URL(string: "\(origin)/bytes/100000?stall_after=1000&stall_ms=600000")!).resume()
        await recorder.responded.value()
        session.invalidateAndCancel()
        await recorder.invalid.value()
        return recorder.transcript.all.filter { !$0.hasPrefix("didReceiveData") }
    }

    static func serverErrorWithBody(_ origin: String) async -> [String] {
        let session = ephemeralSession()
        defer { session.finishTasksAndInvalidate() }
        let (data, response, error) = await dataTask(session, URLRequest(url: URL(string: "\(origin)/status/500")!))
        return [describe(response), describe(error), "has body \(data.map { !$0.isEmpty } ?? false)"]
    }

    static func noContent(_ origin: String) async -> [String] {
        let session = ephemeralSession()
        defer { session.finishTasksAndInvalidate() }
        let (data, response, error) = await dataTask(session, URLRequest(url: URL(string: "\(origin)/status/204")!))
        return [describe(data), "status \((response as? HTTPURLResponse)?.statusCode ?? 0)", describe(error)]
    }

    static func cookiesNotHandled(_ origin: String) async -> [String] {
        let session = ephemeralSession()
        defer { session.finishTasksAndInvalidate() }
        _ = await dataTask(session, URLRequest(url: URL(string: "\(origin)/cookies/set?kept=1")!))
        var request = URLRequest(url: URL(string: "\(origin)/cookies")!)
        request.httpShouldHandleCookies = false
        let (data, _, error) = await dataTask(session, request)
        let text = data.map { String(decoding: $0, as: UTF8.self) } ?? "-"
        return [describe(error), "cookie sent \(text.contains("kept"))"]
    }

    static func emptyDownload(_ origin: String) async -> [String] {
        let session = ephemeralSession()
        defer { session.finishTasksAndInvalidate() }
        let waiter = Waiter<[String]>()
        session.downloadTask(with: URL(string: "\(origin)/bytes/0")!) { url, response, error in
            let contents = url.flatMap { try? Data(contentsOf: $0) }
            waiter.finish(["file \(url != nil)", describe(contents), describe(response), describe(error)])
            removeIfKept(url, after: session)
        }.resume()
        return await waiter.value()
    }

    static func uploadToNotFound(_ origin: String) async -> [String] {
        let session = ephemeralSession()
        defer { session.finishTasksAndInvalidate() }
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("sameness-\(UUID().uuidString)")
        try? Data(repeating: 1, count: 4000).write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        var request = URLRequest(url: URL(string: "\(origin)/status/404")!)
        request.httpMethod = "PUT"
        let waiter = Waiter<(Data?, URLResponse?, (any Error)?)>()
        session.uploadTask(with: request, fromFile: file) { waiter.finish(($0, $1, $2)) }.resume()
        let (_, response, error) = await waiter.value()
        return ["status \((response as? HTTPURLResponse)?.statusCode ?? 0)", describe(error)]
    }

    static func taskDelegateHearsItsTask(_ origin: String) async -> [String] {
        let sessionRecorder = Recorder()
        let taskRecorder = Recorder()
        let session = ephemeralSession(delegate: sessionRecorder)
        defer { session.finishTasksAndInvalidate() }
        let task = session.dataTask(with: URL(string: "\(origin)/bytes/500?seed=14")!)
        task.delegate = taskRecorder
        task.resume()
        await taskRecorder.done.value()
        return ["task: \(taskRecorder.transcript.all)", "session: \(sessionRecorder.transcript.all)"]
    }
}
