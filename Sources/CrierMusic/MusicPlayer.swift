import CrierCore
import CrierHTTP
import CrierMP3
import CrierMusicFile
import CrierPosix
import CrierSoxr
import Glibc
import Synchronization

/// What `crier status` says about the music.
public struct MusicNowPlaying: Sendable, Equatable {
    /// `files`, `stream`, `fifo` (or `off`).
    public var kind = "off"
    /// `playing`, `starting`, `connecting`, `reconnecting`, `waiting for the player`,
    /// `no files`, `outside music.hours`, `clock not synchronized`.
    public var state = "starting"
    public var title: String?
    /// The file, URL or FIFO being played.
    public var location: String?
    public init() {}
}

/// Local wall-clock minute and whether the system clock is synchronized (for `music.hours`).
public struct LocalClock: Sendable {
    public var minute: Int
    public var second: Int
    public var synchronized: Bool

    public init(minute: Int, second: Int, synchronized: Bool) {
        self.minute = minute
        self.second = second
        self.synchronized = synchronized
    }

    /// localtime_r (TZ / /etc/localtime); synchronized once systemd-timesyncd has created its
    /// flag file (the image's time service; a Pi has no RTC, so before that the clock is wrong).
    public static func now() -> LocalClock {
        var t = time(nil)
        var tm = Glibc.tm()
        localtime_r(&t, &tm)
        let synced = ClockSync.isSynchronized()
        return LocalClock(minute: Int(tm.tm_hour) * 60 + Int(tm.tm_min), second: Int(tm.tm_sec), synchronized: synced)
    }
}

/// The music thread: reads the configured source (files and playlists through libsndfile, an
/// MP3 stream through libcurl + libmpg123, raw PCM from a FIFO), converts it to the output's
/// channels and rate (libsoxr) and keeps `buffer` filled ahead of the audio thread. Nothing
/// here runs on the audio thread; if this thread hangs in a decoder the alerts carry on and the
/// supervisor replaces the player.
public final class MusicPlayer: Sendable {
    public let buffer: MusicBuffer
    public let config: MusicConfig
    public let format: AudioFormat
    let log: Logger
    let clock: @Sendable () -> LocalClock
    let stopFlag = Atomic<Bool>(false)
    let progressNs = Atomic<Int64>(0)
    let info = Mutex(MusicNowPlaying())
    let started = Atomic<Bool>(false)
    /// The music's own lines, limited per reason with the file as an item field: a folder of
    /// short files is one `playing` reason (10 lines a minute, then a count), not one line per
    /// file. Here, not in the thread, so `stop()` writes the pending counts even when the
    /// thread is stuck or abandoned.
    let logLimiter = Mutex(RateLimiter(window: 60, bursts: [.info: 10, .notice: 10, .warning: 5, .error: 5],
                                       itemFields: RateLimiter.itemFields.union(["file"])))

    public init(config: MusicConfig, format: AudioFormat, log: Logger, clock: @escaping @Sendable () -> LocalClock = LocalClock.now) {
        self.config = config
        self.format = format
        self.log = log
        self.clock = clock
        // Room for the audio thread to hand back what it took back from the device (≤ 1 s).
        buffer = MusicBuffer(channels: format.channels, capacityFrames: format.frames(ms: Double(config.bufferMs)),
                             reserveFrames: format.rate)
        info.withLock { $0.kind = config.source.kind }
    }

    public var nowPlaying: MusicNowPlaying { info.withLock { $0 } }
    public var lastProgress: Double { Double(progressNs.load(ordering: .relaxed)) / 1e9 }

    public func start() {
        guard !started.exchange(true, ordering: .relaxed) else { return }
        progressNs.store(Int64(Monotonic.now() * 1e9), ordering: .relaxed)
        do {
            try PosixThread.detach(name: "crier-music") { [self] in
                // Below the audio thread: decoding ahead must never take its CPU (on Linux the
                // nice value is per thread; 0 = the calling thread).
                _ = setpriority(__priority_which_t(PRIO_PROCESS.rawValue), 0, 10)
                let w = Worker(player: self)
                w.run()
            }
        } catch {
            log.error("cannot start the music thread: \(error); no music (alerts are not affected)")
        }
    }

    /// Asks the thread to end (it checks at least every 100 ms while it waits, and at every
    /// block it decodes). Does not wait: a thread stuck in a decoder is simply left behind.
    public func stop() {
        stopFlag.store(true, ordering: .relaxed)
        emit(logLimiter.withLock { $0.drain(now: Self.limiterNow) })
    }

    /// Limiter time: monotonic (only differences count; the hub stamps the wall time).
    static var limiterNow: WallTime { WallTime(unixMillis: Int64(Monotonic.now() * 1000)) }

    func emit(_ records: [LogRecord]) {
        for r in records { log.hub.emit(r.level, r.component, r.message, r.fields) }
    }

    var stopping: Bool { stopFlag.load(ordering: .relaxed) }

    func progress() { progressNs.store(Int64(Monotonic.now() * 1e9), ordering: .relaxed) }
}

/// State of the music thread (never shared).
final class Worker {
    let p: MusicPlayer
    var resampler: SoxrResampler?
    var resamplerKey = (0, 0)
    var mapped: [Float] = []
    var lastState = ""
    var lastScheduleCheck = -1.0
    var allowedCache = true
    /// Files that stopped decoding part-way, reported once each (bounded).
    var reportedFailures: Set<String> = []
    var rng: UInt64
    var broken = BrokenMusicFiles()
    var pacer = MusicOpenPacer()
    var roundBackoff = MusicRoundBackoff()

    init(player: MusicPlayer) {
        p = player
        rng = UInt64(bitPattern: Int64(Monotonic.now() * 1e9)) ^ UInt64(UInt32(bitPattern: getpid()))
    }

    var log: Logger { p.log }
    var running: Bool { !p.stopping }

    /// Logs through the music's limiter (its clock is monotonic: only differences count; the
    /// hub stamps the wall time).
    func say(_ level: LogLevel, _ message: String, _ fields: [(String, String)] = []) {
        let r = LogRecord(time: MusicPlayer.limiterNow, level: level, component: log.component, message: message, fields: fields)
        p.emit(p.logLimiter.withLock { $0.admit(r) })
    }

    /// Writes the "(repeated N times)" summaries whose minute is over (`final`: all of them).
    func flushLog(final: Bool = false) {
        let now = MusicPlayer.limiterNow
        p.emit(p.logLimiter.withLock { final ? $0.drain(now: now) : $0.flush(now: now) })
    }

    /// Sets the state shown in status; logs it once per change.
    func state(_ s: String, title: String? = nil, location: String? = nil, level: LogLevel = .info, _ message: String? = nil,
               _ fields: KeyValuePairs<String, any CustomStringConvertible> = [:]) {
        p.info.withLock { i in
            i.state = s
            i.title = title
            if let location { i.location = location }
        }
        let key = s + (location ?? "") + (title ?? "")
        guard key != lastState else { return }
        lastState = key
        if let message {
            var f: [(String, String)] = []
            for (k, v) in fields { f.append((k, v.description)) }
            say(level, message, f)
        }
    }

    /// Music hours and the clock rule, checked at most once a second.
    func allowed() -> Bool {
        let now = Monotonic.now()
        if now - lastScheduleCheck < 1 { return allowedCache }
        lastScheduleCheck = now
        let c = p.clock()
        switch MusicSchedule.verdict(hours: p.config.hours, localMinute: c.minute, clockSynchronized: c.synchronized) {
        case .play:
            allowedCache = true
        case .outsideHours:
            allowedCache = false
            state("outside music.hours", level: .info, "music paused: outside music.hours", ["hours": p.config.hours?.description ?? ""])
        case .clockNotSynchronized:
            allowedCache = false
            state("clock not synchronized", level: .notice,
                  "music waits: music.hours is set but the system clock is not synchronized yet (NTP); no music until it is")
        }
        return allowedCache
    }

    /// Waits `seconds` in slices, staying visibly alive for the supervisor.
    func pause(_ seconds: Double) {
        let until = Monotonic.now() + seconds
        flushLog()
        while running && Monotonic.now() < until {
            p.progress()
            usleep(UInt32(max(1_000, min(100_000, (until - Monotonic.now()) * 1e6))))
        }
        p.progress()
    }

    func run() {
        while running {
            p.progress()
            guard allowed() else {
                pause(1)
                continue
            }
            switch p.config.source {
            case .off: return
            case .files(let path): playFiles(path)
            case .fifo(let path): playFIFO(path)
            case .stream(let url): playStream(url)
            }
        }
        flushLog(final: true)
    }

    // MARK: output

    /// Maps `frames` interleaved frames of `channels` to the output's channels, resamples them
    /// to the output rate and queues them, waiting while the buffer is full. False: stop now.
    func emit(_ src: UnsafeBufferPointer<Float>, frames: Int, rate: Int, channels: Int) -> Bool {
        let och = p.format.channels
        if mapped.count < frames * och { mapped = [Float](repeating: 0, count: frames * och) }
        mapped.withUnsafeMutableBufferPointer { m in
            if och == channels {
                m.baseAddress!.update(from: src.baseAddress!, count: frames * och)
                return
            }
            for f in 0..<frames {
                let b = f * channels
                if och == 1 {
                    var s: Float = 0
                    for c in 0..<min(channels, 2) { s += src[b + c] }
                    m[f] = s / Float(min(channels, 2))
                } else {
                    let l = src[b], r = channels > 1 ? src[b + 1] : src[b]
                    m[2 * f] = l
                    m[2 * f + 1] = r
                }
            }
        }
        if rate == p.format.rate { return mapped.withUnsafeBufferPointer { push(UnsafeBufferPointer(rebasing: $0[0..<(frames * och)])) } }
        if resampler == nil || resamplerKey != (rate, och) {
            do throws(SoxrResampler.Failure) {
                resampler = try SoxrResampler(inRate: rate, outRate: p.format.rate, channels: och)
                resamplerKey = (rate, och)
            } catch {
                log.error("\(error); cannot convert \(rate) Hz music to \(p.format.rate) Hz, skipping it")
                return true
            }
        }
        var ok = true
        let input = mapped
        input.withUnsafeBufferPointer { inp in
            resampler!.process(UnsafeBufferPointer(rebasing: inp[0..<(frames * och)]), frames: frames) { out in
                if ok { ok = push(out) }
            }
        }
        return ok
    }

    /// Queues `block` whole, waiting (10 ms slices) while the buffer is full.
    func push(_ block: UnsafeBufferPointer<Float>) -> Bool {
        let ch = p.format.channels
        var offset = 0
        while offset < block.count {
            let n = p.buffer.write(UnsafeBufferPointer(rebasing: block[offset...]))
            offset += n * ch
            p.progress()
            if offset < block.count {
                guard running && allowed() else { return false }
                usleep(10_000)
            }
        }
        return running
    }

    // MARK: files and playlists

    func listFiles(_ path: String) -> [String] {
        var st = stat()
        guard stat(path, &st) == 0 else { return [] }
        if (st.st_mode & S_IFMT) == S_IFDIR {
            guard let d = opendir(path) else { return [] }
            defer { closedir(d) }
            var names: [String] = []
            while let e = readdir(d) {
                let name = withUnsafeBytes(of: e.pointee.d_name) { raw in
                    String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
                }
                if Playlist.isMusic(name) { names.append(name) }
            }
            let dir = path.hasSuffix("/") ? path : path + "/"
            // Not filtered by kind: a FIFO or directory named like music is refused when it is
            // opened (without blocking), with one line saying what it is.
            return names.sorted().map { dir + $0 }
        }
        if Playlist.isList(path) {
            guard let bytes = try? FileIO.read(path, limit: 4 << 20) else { return [] }
            let dir = path.lastIndex(of: "/").map { String(path[..<$0]) } ?? "/"
            let parsed = Playlist.parseM3U(String(decoding: bytes, as: UTF8.self), directory: dir.isEmpty ? "/" : dir)
            if !parsed.urls.isEmpty && !reportedFailures.contains("urls " + path) {
                reportedFailures.insert("urls " + path)
                log.warning("playlist \(path) lists \(parsed.urls.count) URL(s); they are skipped (set music.source to one stream URL instead)")
            }
            return parsed.files
        }
        // One file named as the source is opened as given.
        return [path]
    }

    func playFiles(_ path: String) {
        flushLog()
        let files = listFiles(path)
        guard !files.isEmpty else {
            state("no files", location: path, level: .warning,
                  "no music: \(path) is missing, empty or has no .mp3/.ogg/.flac/.wav files; checking again every 5 s; check music.source in crier.conf")
            pause(5)
            return
        }
        rng &+= 0x9E37_79B9_7F4A_7C15
        var list = Playlist(items: files, shuffle: p.config.shuffle, seed: rng)
        var played = 0
        // One round, then the directory or list is read again (files added or removed).
        for _ in 0..<files.count {
            guard running, allowed(), let f = list.next() else { return }
            let id = SoundFile.identity(f)
            let signature = BrokenMusicFiles.Signature(size: id?.size ?? -1, modified: id?.modified ?? -1)
            // Failed before and unchanged since: not opened again.
            if broken.isKnownBroken(f, signature) { continue }
            guard playFile(f, signature: signature) else { continue }
            played += 1
            // Files that play: 10 at once, then 1 a second, so a folder of 10 ms or one-frame
            // files never spins (a file that plays a second has paid for itself). Files that
            // fail are opened once each until they change, and do not count.
            var wait = pacer.delay(now: Monotonic.now())
            while wait > 0 {
                pause(wait)
                guard running, allowed() else { return }
                wait = pacer.delay(now: Monotonic.now())
            }
        }
        let wait = roundBackoff.roundEnded(played: played > 0)
        if wait > 0 && running {
            state("no files", location: path, level: .warning,
                  "no music: none of the \(files.count) file(s) in \(path) could be played; checking again in 5 s, then less often (up to every 60 s) until one plays")
            pause(wait)
        }
    }

    /// Plays one file to its end; false when it could not be opened or gave no audio.
    func playFile(_ path: String, signature: BrokenMusicFiles.Signature) -> Bool {
        let file: SoundFile
        do throws(SoundFile.Failure) {
            file = try SoundFile(path: path)
        } catch {
            if broken.remember(path, signature) {
                say(.warning, "skipping music file: \(error.reason)", [("file", path)])
            }
            return false
        }
        let name = String(path[(path.lastIndex(of: "/").map { path.index(after: $0) } ?? path.startIndex)...])
        state("playing", title: file.title ?? name, location: path, level: .info, "playing", ["file": path, "rate": file.rate, "channels": file.channels])
        let chunk = 4096
        var block = [Float](repeating: 0, count: chunk * file.channels)
        var total = 0
        var decodeFailed = false
        while running {
            // A value, not a throwing closure: withUnsafeMutableBufferPointer only rethrows
            // `any Error` under Swift 6.0.
            let result = block.withUnsafeMutableBufferPointer { b -> Result<Int, SoundFile.Failure> in
                do throws(SoundFile.Failure) { return .success(try file.read(into: b, frames: chunk)) } catch { return .failure(error) }
            }
            let n: Int
            switch result {
            case .success(let k): n = k
            case .failure(let error):
                decodeFailed = true
                if total == 0 {
                    if broken.remember(path, signature) { say(.warning, "skipping music file: it does not decode: \(error.reason)", [("file", path)]) }
                } else {
                    if reportedFailures.count >= 4096 { reportedFailures.removeAll() }
                    if reportedFailures.insert(path).inserted {
                        say(.warning, "music file stopped decoding; skipping the rest: \(error.reason)",
                            [("file", path), ("after_s", Format.fixed(Double(total) / Double(file.rate), 1))])
                    }
                }
                n = 0  // ends this file
            }
            if n == 0 { break }
            total += n
            let ok = block.withUnsafeBufferPointer { emit(UnsafeBufferPointer(rebasing: $0[0..<(n * file.channels)]), frames: n, rate: file.rate, channels: file.channels) }
            if !ok { break }
        }
        if total > 0 {
            broken.forget(path)
        } else if running && !decodeFailed && broken.remember(path, signature) {
            say(.warning, "skipping music file: it holds no audio (0 frames)", [("file", path)])
        }
        return total > 0
    }

    // MARK: FIFO

    func playFIFO(_ path: String) {
        var st = stat()
        if stat(path, &st) != 0 {
            if mkfifo(path, 0o660) == 0 {
                log.info("created the music FIFO; point the player's output at it", ["path": path, "format": p.config.fifoLayout.description])
            } else {
                let e = errno
                state("waiting for the player", location: "fifo:" + path, level: .warning,
                      "music FIFO \(path) does not exist and cannot be created (\(String(cString: strerror(e)))); retrying every 5 s; check music.source")
                pause(5)
                return
            }
        } else if (st.st_mode & S_IFMT) != S_IFIFO && (st.st_mode & S_IFMT) != S_IFREG {
            state("waiting for the player", location: "fifo:" + path, level: .warning,
                  "music source \(path) is neither a FIFO nor a file; retrying every 5 s; check music.source")
            pause(5)
            return
        }
        // Read and write: the FIFO never reports end-of-file when a player stops and starts again.
        let fd = open(path, O_RDWR | O_NONBLOCK | O_CLOEXEC)
        guard fd >= 0 else {
            let e = errno
            state("waiting for the player", location: "fifo:" + path, level: .warning,
                  "cannot open music FIFO \(path): \(String(cString: strerror(e))); retrying every 5 s")
            pause(5)
            return
        }
        defer { close(fd) }
        let layout = p.config.fifoLayout
        let bpf = layout.bytesPerFrame
        var bytes = [UInt8](repeating: 0, count: 64 * 1024)
        var carry: [UInt8] = []
        var floats: [Float] = []
        var lastData = Monotonic.now()
        state("waiting for the player", location: "fifo:" + path, level: .info, "waiting for PCM on the music FIFO", ["path": path, "format": layout.description])
        while running && allowed() {
            var pfd = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            p.progress()
            let r = poll(&pfd, 1, 200)
            if r <= 0 {
                if Monotonic.now() - lastData > 1 {
                    carry = []
                    state("waiting for the player", location: "fifo:" + path, level: .info, "music FIFO: the player stopped writing", ["path": path])
                }
                continue
            }
            let n = bytes.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if n <= 0 { continue }
            lastData = Monotonic.now()
            state("playing", title: nil, location: "fifo:" + path, level: .info, "music FIFO: playing what the player writes", ["path": path])
            carry += bytes[0..<n]
            let frames = carry.count / bpf
            guard frames > 0 else { continue }
            let samples = frames * layout.channels
            if floats.count < samples { floats = [Float](repeating: 0, count: samples) }
            carry.withUnsafeBytes { raw in
                for i in 0..<samples {
                    switch layout.sample {
                    case .s16:
                        let v = Int16(bitPattern: UInt16(raw[2 * i]) | UInt16(raw[2 * i + 1]) << 8)
                        floats[i] = Float(v) / 32768
                    case .s32:
                        let u = UInt32(raw[4 * i]) | UInt32(raw[4 * i + 1]) << 8 | UInt32(raw[4 * i + 2]) << 16 | UInt32(raw[4 * i + 3]) << 24
                        floats[i] = Float(Int32(bitPattern: u)) / 2_147_483_648
                    case .f32:
                        let u = UInt32(raw[4 * i]) | UInt32(raw[4 * i + 1]) << 8 | UInt32(raw[4 * i + 2]) << 16 | UInt32(raw[4 * i + 3]) << 24
                        let f = Float(bitPattern: u)
                        floats[i] = f.isFinite ? max(-1, min(1, f)) : 0
                    }
                }
            }
            carry.removeFirst(frames * bpf)
            let ok = floats.withUnsafeBufferPointer { emit(UnsafeBufferPointer(rebasing: $0[0..<samples]), frames: frames, rate: layout.rate, channels: layout.channels) }
            if !ok { return }
        }
    }

    // MARK: HTTP stream

    func playStream(_ url: String) {
        var backoff = StreamBackoff()
        while running && allowed() {
            state("connecting", location: url, level: .info, "connecting to the music stream", ["url": url])
            let decoder: MP3Decoder
            do throws(MP3Decoder.Failure) { decoder = try MP3Decoder() } catch {
                log.error("\(error); no stream music")
                pause(30)
                return
            }
            var metaint = 0
            var demux: IcyDemux?
            var title: String?
            var name: String?
            var contentType: String?
            var audioSince: Double?
            // How much came, how much of it decoded, since when (the give-up rules).
            var watch = StreamWatch(limits: p.config.streamLimits, now: Monotonic.now())
            var giveUp: String?
            var options = HTTPStream.Options()
            options.headers = ["Icy-MetaData: 1"]
            options.stallSeconds = Int(p.config.stallSeconds.rounded())
            let outcome = HTTPStream.get(url, options: options, onHeader: { line in
                let l = line.lowercased()
                if l.hasPrefix("http/") { metaint = 0; demux = nil }
                if l.hasPrefix("icy-metaint:") { metaint = Int(String(line.dropFirst(12)).filter { $0.isNumber }) ?? 0 }
                if l.hasPrefix("icy-name:") { name = String(line.dropFirst(9).filter { !$0.isNewline }.drop { $0 == " " }.prefix(200)) }
                if l.hasPrefix("content-type:") { contentType = String(line.dropFirst(13).filter { !$0.isNewline }.drop { $0 == " " }.prefix(80)) }
            }, onData: { bytes in
                if demux == nil { demux = IcyDemux(metaint: metaint) }
                var ok = true
                let titles = demux!.feed(bytes) { audio in
                    watch.received(audio.count)
                    decoder.decode(audio) { pcm, frames, rate, ch in
                        if ok { ok = self.emit(pcm, frames: frames, rate: rate, channels: ch) }
                        // Stamped after the buffer took it: time spent waiting for room (the
                        // audio thread paused) is not time without audio.
                        if rate > 0 { watch.decoded(seconds: Double(frames) / Double(rate), now: Monotonic.now()) }
                    }
                }
                if let t = titles.last, t != title {
                    title = t
                    self.say(.info, "stream title", [("title", t)])
                }
                if decoder.rate > 0 && watch.playing {
                    if audioSince == nil { audioSince = Monotonic.now() }
                    self.state("playing", title: title ?? name, location: url, level: .info,
                               title == nil ? "stream connected" : nil, ["url": url, "rate": decoder.rate, "channels": decoder.channels])
                }
                if let why = StreamWatch.reason(watch.check(now: Monotonic.now()), contentType: contentType) {
                    giveUp = why
                    return false
                }
                return ok
            }, keepGoing: { [self] in
                p.progress()
                if giveUp == nil, let why = StreamWatch.reason(watch.check(now: Monotonic.now()), contentType: contentType) { giveUp = why }
                return giveUp == nil && running && allowed()
            })
            guard running, allowed() else { return }
            let why: String
            if let g = giveUp {
                why = g
            } else {
                switch outcome {
                case .stopped: continue
                case .ended: why = "the server ended the stream"
                case .failed(let e): why = e
                }
            }
            let wait = backoff.failed(played: audioSince.map { Monotonic.now() - $0 } ?? 0)
            state("reconnecting", location: url, level: .warning,
                  "music stream dropped (\(why)); silence meanwhile; reconnecting in \(Format.fixed(wait, 0)) s (backoff 1-30 s)", ["url": url])
            pause(wait)
        }
    }
}
