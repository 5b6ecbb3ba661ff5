import Testing
@testable import CrierCore

/// Playlist order and ICY demultiplexing (the pure parts the music thread relies on).
@Suite("Music sources")
struct MusicSourceTests {
    @Test("m3u: comments, relative entries, URLs apart, BOM and CRLF")
    func m3u() {
        let text = "\u{FEFF}#EXTM3U\r\n#EXTINF:1,x\r\na.mp3\r\n/abs/b.flac\r\n\r\nhttp://radio/x\r\nfile:///c.ogg\n"
        let r = Playlist.parseM3U(text, directory: "/srv/music")
        #expect(r.files == ["/srv/music/a.mp3", "/abs/b.flac", "/c.ogg"])
        #expect(r.urls == ["http://radio/x"])
        #expect(Playlist.isMusic("x.MP3") && Playlist.isMusic("y.flac") && !Playlist.isMusic(".hidden.mp3") && !Playlist.isMusic("notes.txt"))
    }

    @Test("in order it loops; shuffled every round is a permutation and does not repeat the last track first")
    func order() {
        var p = Playlist(items: ["a", "b", "c"], shuffle: false, seed: 1)
        #expect((0..<7).compactMap { _ in p.next() } == ["a", "b", "c", "a", "b", "c", "a"])
        for seed in 0..<200 as Range<UInt64> {
            var s = Playlist(items: ["a", "b", "c", "d"], shuffle: true, seed: seed)
            var last: String?
            for _ in 0..<5 {
                let round = (0..<4).compactMap { _ in s.next() }
                #expect(Set(round) == ["a", "b", "c", "d"])
                if let l = last { #expect(round.first != l, "seed \(seed)") }
                last = round.last
            }
        }
        var e = Playlist(items: [], shuffle: true, seed: 3)
        #expect(e.next() == nil)
    }

    @Test("ICY: metadata never reaches the decoder, titles come out, whatever the chunking (seeded)")
    func icy() {
        var rng: UInt64 = 42
        func rand(_ n: Int) -> Int {
            rng = rng &* 6364136223846793005 &+ 1442695040888963407
            return Int((rng >> 33) % UInt64(n))
        }
        let metaint = 100
        var stream: [UInt8] = []
        var audio: [UInt8] = []
        var titles: [String] = []
        for block in 0..<50 {
            let a = (0..<metaint).map { _ in UInt8(rand(256)) }
            audio += a
            stream += a
            if block % 7 == 3 {
                let t = "Artist \(block) - Song"
                titles.append(t)
                var m = Array("StreamTitle='\(t)';StreamUrl='';".utf8)
                while m.count % 16 != 0 { m.append(0) }
                stream.append(UInt8(m.count / 16))
                stream += m
            } else {
                stream.append(0)
            }
        }
        for _ in 0..<30 {
            var d = IcyDemux(metaint: metaint)
            var got: [UInt8] = []
            var gotTitles: [String] = []
            var i = 0
            while i < stream.count {
                let n = min(stream.count - i, 1 + rand(300))
                gotTitles += stream[i..<(i + n)].withUnsafeBufferPointer { b in d.feed(b) { got += $0 } }
                i += n
            }
            #expect(got == audio)
            #expect(gotTitles == titles)
        }
        var plain = IcyDemux(metaint: 0)
        var out: [UInt8] = []
        _ = [UInt8](repeating: 7, count: 10).withUnsafeBufferPointer { plain.feed($0) { out += $0 } }
        #expect(out.count == 10)
        #expect(IcyDemux.title(in: Array("StreamTitle='It's';".utf8)) == "It's")  // ends at "';", not at the first quote
    }
}
