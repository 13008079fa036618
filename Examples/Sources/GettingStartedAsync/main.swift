// The snippet of Sources/Ferry/Ferry.docc/GettingStarted.md, character for character (ExamplesTests'
// GettingStartedTests compares them): built here so that a snippet that does not compile fails CI.
// It is built, not run: its URLs are example.com's.

import Ferry
import Foundation

let session = Session(configuration: .default)

// A body in memory.
let (data, response) = try await session.data(from: URL(string: "https://example.com/")!)

// A body in a file: the file is yours (move it or remove it).
let (file, _) = try await session.download(from: URL(string: "https://example.com/big.iso")!)

// An upload from a file, sent as it is read.
var request = Request(url: URL(string: "https://example.com/upload")!)
request.method = "PUT"
let (answer, _) = try await session.upload(for: request, fromFile: URL(fileURLWithPath: "/tmp/report.pdf"))

// A body as it arrives, byte by byte or (faster) in the pieces the network delivers.
let (bytes, _) = try await session.bytes(from: URL(string: "https://example.com/log")!)
for try await chunk in bytes.chunks { print(chunk.count) }
