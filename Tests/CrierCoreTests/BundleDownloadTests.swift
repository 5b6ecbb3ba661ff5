import Testing
@testable import CrierCore

/// What a bundle download does with each answer (the I/O is HTTPDownload's; the integration
/// tests cut, stall and lie to a real `crier update`).
@Suite struct BundleDownloadTests {
    static func response(_ lines: [String]) -> BundleDownload.Response {
        var r = BundleDownload.Response()
        for l in lines { r.header(l + "\r\n") }
        return r
    }

    @Test func headerLinesAreReadWithCRLFAnyCaseAndARedirectStartsOver() {
        let r = Self.response(["HTTP/1.1 302 Found", "Content-Length: 5", "Location: /b",
                               "HTTP/1.1 206 Partial Content", "content-range: bytes 100-199/1000", "CONTENT-LENGTH:  100 ", "ETag: \"abc\""])
        #expect(r.status == 206)
        #expect(r.contentLength == 100)
        #expect(r.rangeStart == 100 && r.rangeTotal == 1000)
        #expect(r.total == 1000)
        #expect(r.etag == "\"abc\"")
        let unsatisfiable = Self.response(["HTTP/2 416", "Content-Range: bytes */4096"])
        #expect(unsatisfiable.status == 416 && unsatisfiable.rangeTotal == 4096 && unsatisfiable.rangeStart == nil)
        let junk = Self.response(["HTTP/1.1 abc", "Content-Length: -4", "Content-Range: bytes x-y/z", "no colon here"])
        #expect(junk.status == nil && junk.contentLength == nil && junk.rangeStart == nil)
    }

    @Test func decisions() {
        let max: Int64 = 2 << 30
        func d(_ have: Int64, _ lines: [String]) -> BundleDownload.Decision {
            BundleDownload.decide(have: have, Self.response(lines), maxBytes: max)
        }
        #expect(d(0, ["HTTP/1.1 200 OK", "Content-Length: 1000"]) == .restart(total: 1000))
        #expect(d(0, ["HTTP/1.1 200 OK"]) == .restart(total: nil))
        // Resumed where asked.
        #expect(d(400, ["HTTP/1.1 206", "Content-Range: bytes 400-999/1000"]) == .append(total: 1000))
        // The server ignored the range: everything again, from the first byte.
        #expect(d(400, ["HTTP/1.1 200 OK", "Content-Length: 1000"]) == .restart(total: 1000))
        // A range from elsewhere would splice two files.
        if case .fail(let why) = d(400, ["HTTP/1.1 206", "Content-Range: bytes 0-999/1000"]) {
            #expect(why == "the server sent bytes from 0 when asked for bytes from 400")
        } else { Issue.record("a misplaced range was accepted") }
        // The file shrank under us.
        if case .fail(let why) = d(400, ["HTTP/1.1 206", "Content-Range: bytes 400-399/300"]) {
            #expect(why.contains("shorter than the 400 bytes"))
        } else { Issue.record("a shorter file was appended to") }
        // Huge announcements are refused before a byte is written.
        if case .fail(let why) = d(0, ["HTTP/1.1 200 OK", "Content-Length: \(3 << 30)"]) {
            #expect(why == "the bundle is 3072 MiB, more than the 2048 MiB a bundle may be")
        } else { Issue.record("a 3 GiB bundle was accepted") }
        #expect(d(0, ["HTTP/1.1 500 Oops"]) == .fail("the server answered HTTP 500"))
        #expect(d(0, []) == .fail("the server's answer has no HTTP status line"))
        // 206 to a request without a range: not what was asked for.
        #expect(d(0, ["HTTP/1.1 206", "Content-Range: bytes 0-9/10"]) == .fail("the server answered HTTP 206"))
    }

    @Test func spaceIsCheckedWithAReserveAndTheMessageSaysWhatToDo() {
        let mib: Int64 = 1 << 20
        #expect(BundleDownload.spaceProblem(need: 100 * mib, free: 200 * mib, reserve: 64 * mib, dir: "/var/lib/crier") == nil)
        #expect(BundleDownload.spaceProblem(need: 0, free: 0, reserve: 64 * mib, dir: "/d") == nil)
        let why = BundleDownload.spaceProblem(need: 172 * mib, free: 200 * mib, reserve: 64 * mib, dir: "/var/lib/crier")
        #expect(why == "not enough space in /var/lib/crier for the bundle: 172 MiB more are needed, 136 MiB are free (64 MiB kept for crier's state); free some space on crier-data, or set update.download = off to stream it")
        #expect(BundleDownload.spaceProblem(need: 1, free: 10 * mib, reserve: 64 * mib, dir: "/d")?.contains("0.0 MiB are free") == true)
    }

    @Test func retriesWaitLongerEachTimeAndNeverForever() {
        let delays = (1...10).map { BundleDownload.retryDelay(attempt: $0) }
        #expect(delays[0] == 0)
        #expect(zip(delays, delays.dropFirst()).allSatisfy { $0 <= $1 })
        #expect(delays.max() == 60)
        #expect(BundleDownload.retryDelay(attempt: -3) == 0)
    }
}
