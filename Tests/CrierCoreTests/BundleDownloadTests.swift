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
            #expect(why == "the bundle is 3072 MiB, more than the 2048 MiB a bundle may be (update.max_download_mib)")
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
        #expect(why == "not enough space in /var/lib/crier for the bundle: 172 MiB more are needed, 136 MiB are free (64 MiB kept for crier's state, update.keep_free_mib); free some space on crier-data, or set update.download = off to stream it")
        #expect(BundleDownload.spaceProblem(need: 1, free: 10 * mib, reserve: 64 * mib, dir: "/d")?.contains("0.0 MiB are free") == true)
    }

    /// A file system of `size` bytes that allocates whole blocks: whatever the writes' sizes,
    /// a download never leaves less than the reserve free, and stops within 1 MiB and one write
    /// of it (issue 31: a download without a length filled crier-data to 0 bytes).
    @Test func aDownloadNeverTakesTheReserveWhateverTheWriteSizes() {
        let mib: Int64 = 1 << 20, block: Int64 = 4096
        for seed in UInt64(1)...200 {
            var rng = SplitMix64(seed: seed)
            let size = Int64(rng.next() % 200 + 20) * mib + Int64(rng.next() % 4096)
            let reserve = Int64(rng.next() % 16 + 1) * mib
            let used0 = Int64(rng.next() % 8) * mib  // the journals, the state
            var w = BundleDownload.SpaceWatch(reserve: reserve, maxBytes: 1 << 40, dir: "/d")
            var have: Int64 = 0, measures = 0, stop: String?
            func free() -> Int64 { size - used0 - (have + block - 1) / block * block }
            while stop == nil {
                let n = Int64(rng.next() % 16384) + 1  // libcurl hands over up to 16 KiB
                if w.mustMeasure(before: n) { w.measured(free: free(), blockSize: block); measures += 1 }
                stop = w.admit(have: have, n)
                if stop == nil { have += n }
                #expect(free() >= reserve, "seed \(seed): \(free()) bytes free, reserve \(reserve)")
                if have > size { Issue.record("seed \(seed): never stopped"); break }
            }
            #expect(free() < reserve + mib + 3 * 16384, "seed \(seed): stopped early with \(free()) free, reserve \(reserve)")
            #expect(stop?.hasPrefix("stopped at ") == true && stop?.contains("update.keep_free_mib") == true)
            // Measured about once a MiB, and at every write near the end (at most 1 MiB of them).
            #expect(measures < Int(have / mib) + 600, "seed \(seed): \(measures) measures for \(have) bytes")
        }
    }

    @Test func theCapHoldsWithOrWithoutAnAnnouncedSizeAndNothingIsWrittenUnmeasured() {
        let mib: Int64 = 1 << 20
        var w = BundleDownload.SpaceWatch(reserve: 64 * mib, maxBytes: 3 * mib, dir: "/var/lib/crier")
        #expect(w.mustMeasure(before: 1))
        #expect(w.admit(have: 0, 100) == "the free space in /var/lib/crier is unknown (statvfs failed); nothing written")
        w.measured(free: 10_000 * mib, blockSize: 4096)
        #expect(!w.mustMeasure(before: 16384))
        #expect(w.admit(have: 0, 16384) == nil)
        #expect(w.admit(have: 3 * mib - 10, 10) == nil)
        #expect(w.admit(have: 3 * mib - 10, 11) == "the server sent more than 3.0 MiB, the most a bundle may be (update.max_download_mib); stopped there")
        // Measured again once a MiB was written since.
        var v = BundleDownload.SpaceWatch(reserve: 1, maxBytes: 1 << 40, dir: "/d")
        v.measured(free: 1 << 40, blockSize: 4096)
        var written: Int64 = 0
        while !v.mustMeasure(before: 16384) { #expect(v.admit(have: written, 16384) == nil); written += 16384 }
        #expect(written == mib - 16384)
    }

    @Test func whatIsRetriedAndWhatIsGivenUpAtOnce() {
        typealias E = BundleDownload.ConnectionEnd
        for e: E in [.network("Failed to connect to 10.0.0.1 port 80 after 3 ms: Connection refused"), .noAnswer(seconds: 30),
                     .tooSlow(seconds: 30, minRate: 1024), .httpStatus(503), .httpStatus(429)] {
            #expect(BundleDownload.retried(e), "\(e)")
        }
        for e: E in [.tooManyRedirects(5), .redirectRefused("file"), .refused("SSL certificate problem"), .httpStatus(404), .httpStatus(403)] {
            #expect(!BundleDownload.retried(e), "\(e)")
        }
        #expect(BundleDownload.message(.tooManyRedirects(5)) == "the server redirected more than 5 times (a redirect loop?); not retried")
        #expect(BundleDownload.message(.redirectRefused("file")) == "the server redirected to a file:// URL; only http and https redirects are followed; not retried")
        #expect(BundleDownload.message(.noAnswer(seconds: 30)) == "the server accepted the connection but sent no answer for 30 s")
        #expect(BundleDownload.message(.tooSlow(seconds: 30, minRate: 1024)) == "the server sent less than 1 KiB a second for 30 s (update.stall_seconds)")
    }

    @Test func theWaitsStopAtTheLimit() {
        #expect(BundleDownload.nextWait(attempt: 2, elapsed: 0, limit: 3600) == 1)
        #expect(BundleDownload.nextWait(attempt: 6, elapsed: 100, limit: 3600) == 60)
        // A wait that would end past the limit is not started.
        #expect(BundleDownload.nextWait(attempt: 6, elapsed: 3550, limit: 3600) == nil)
        #expect(BundleDownload.nextWait(attempt: 3, elapsed: 2.5, limit: 5) == nil)
        // Whatever the attempts, the waits of one download add up to less than the limit.
        var elapsed = 0.0
        for n in 2...100 { if let d = BundleDownload.nextWait(attempt: n, elapsed: elapsed, limit: 600) { elapsed += d + 30 } }
        #expect(elapsed < 600 + 30)
    }

    @Test func urlsAreShownWithoutCredentialsOrSignedQueries() {
        let r = ShownURL.redacted
        #expect(r("https://user:s3cret@updates.example.com/b.raucb") == "https://***@updates.example.com/b.raucb")
        #expect(r("https://token123@h/b") == "https://***@h/b")
        #expect(r("http://u:p@ss:w@[::1]:8080/b?x=1#f") == "http://***@[::1]:8080/b?x=1#f")
        #expect(r("https://h/b.raucb?X-Amz-Signature=abc&X-Amz-Date=1&access_token=t&api_key=k")
                == "https://h/b.raucb?X-Amz-Signature=***&X-Amz-Date=1&access_token=***&api_key=***")
        // An @ after the host is not user-info.
        #expect(r("https://h/path@x?q=a@b") == "https://h/path@x?q=a@b")
        #expect(r("http://plain.example/b.raucb") == "http://plain.example/b.raucb")
        let url = "https://shop:hunter22@h/b?sig=deadbeef"
        #expect(ShownURL.scrub("rauc: downloading \(url) failed", secretsOf: url) == "rauc: downloading https://***@h/b?sig=*** failed")
        #expect(ShownURL.scrub("auth failed for shop:hunter22 (hunter22, deadbeef)", secretsOf: url) == "auth failed for *** (***, ***)")
        #expect(ShownURL.scrub("nothing here", secretsOf: "http://h/b") == "nothing here")
        // A secret of 3 characters or fewer is not hunted in free text (it would mangle every word),
        // but never printed as part of the URL.
        #expect(ShownURL.scrub("a b c", secretsOf: "http://u:a@h/") == "a b c")
    }

    @Test func retriesWaitLongerEachTimeAndNeverForever() {
        let delays = (1...10).map { BundleDownload.retryDelay(attempt: $0) }
        #expect(delays[0] == 0)
        #expect(zip(delays, delays.dropFirst()).allSatisfy { $0 <= $1 })
        #expect(delays.max() == 60)
        #expect(BundleDownload.retryDelay(attempt: -3) == 0)
    }
}
