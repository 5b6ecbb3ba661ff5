import CSndfile
import CrierCore
import Glibc

/// A music file read through libsndfile (WAV, FLAC, OGG/Vorbis, Opus and, from 1.1 on, MP3
/// through libmpg123): interleaved float frames at the file's own rate and channel count.
public final class SoundFile {
    public let path: String
    public let rate: Int
    public let channels: Int
    /// Total frames when the format knows it (0 for some MP3s).
    public let frames: Int64
    private var handle: OpaquePointer?
    private var fd: Int32 = -1

    public struct Failure: Error, Sendable, CustomStringConvertible {
        public var path: String
        public var reason: String
        public var description: String { "cannot play \(path): \(reason)" }
    }

    /// Opens `path` without blocking (a FIFO or a device named like music is refused with a
    /// line that says so, never opened for reading), then hands the descriptor to libsndfile.
    /// A file libsndfile cannot identify is described from its size and first bytes
    /// (`MusicFileProblem`): empty, text, an HTML page, a picture, or unknown bytes.
    public init(path: String) throws(Failure) {
        self.path = path
        let fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC)
        guard fd >= 0 else {
            let e = errno
            throw Failure(path: path, reason: e == ENOENT ? "it does not exist" : "cannot open it: \(String(cString: strerror(e)))")
        }
        var st = stat()
        guard fstat(fd, &st) == 0 else {
            let e = errno
            close(fd)
            throw Failure(path: path, reason: "cannot stat it: \(String(cString: strerror(e)))")
        }
        if let problem = MusicFileProblem.notAFile(Self.kind(st.st_mode), path: path) {
            close(fd)
            throw Failure(path: path, reason: problem)
        }
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK)
        var head = [UInt8](repeating: 0, count: 512)
        let got = head.withUnsafeMutableBytes { pread(fd, $0.baseAddress, $0.count, 0) }
        head = Array(head.prefix(max(0, got)))
        if let why = MusicFileProblem.obviouslyNotAudio(size: Int64(st.st_size), head: head) {
            close(fd)
            throw Failure(path: path, reason: why)
        }
        var info = SF_INFO()
        // The descriptor stays ours (closed in deinit, after sf_close).
        guard let h = sf_open_fd(fd, Int32(SFM_READ), &info, Int32(SF_FALSE)) else {
            let lib = String(cString: sf_strerror(nil))
            close(fd)
            throw Failure(path: path, reason: MusicFileProblem.describe(size: Int64(st.st_size), head: head, library: lib))
        }
        guard info.channels >= 1, info.channels <= 8, info.samplerate >= 4000, info.samplerate <= 384_000 else {
            sf_close(h)
            close(fd)
            throw Failure(path: path, reason: "unsupported layout (\(info.channels) channels at \(info.samplerate) Hz)")
        }
        self.fd = fd
        handle = h
        rate = Int(info.samplerate)
        channels = Int(info.channels)
        frames = info.frames
        // Integer files are scaled to -1...1; float files that overshoot are left as they are
        // (the mixer's headroom and clamp deal with them).
        sf_command(h, Int32(SFC_SET_SCALE_FLOAT_INT_READ), nil, Int32(SF_TRUE))
    }

    static func kind(_ mode: mode_t) -> MusicFileProblem.Kind {
        switch mode & S_IFMT {
        case S_IFREG: .regular
        case S_IFIFO: .fifo
        case S_IFDIR: .directory
        case S_IFCHR, S_IFBLK: .device
        case S_IFSOCK: .socket
        default: .other
        }
    }

    /// What `path` is (symlinks followed), its size and modification time; nil when it cannot
    /// be stat'ed.
    public static func identity(_ path: String) -> (kind: MusicFileProblem.Kind, size: Int64, modified: Int64)? {
        var st = stat()
        guard stat(path, &st) == 0 else { return nil }
        return (kind(st.st_mode), Int64(st.st_size), Int64(st.st_mtim.tv_sec) * 1_000_000_000 + Int64(st.st_mtim.tv_nsec))
    }

    deinit {
        if let h = handle { sf_close(h) }
        if fd >= 0 { close(fd) }
    }

    /// Reads up to `frames` frames into `out` (count ≥ frames × channels); 0 at the end.
    /// Throws when the decoder reports an error (a corrupt frame it cannot get past).
    public func read(into out: UnsafeMutableBufferPointer<Float>, frames: Int) throws(Failure) -> Int {
        guard let h = handle, let base = out.baseAddress else { return 0 }
        let n = sf_readf_float(h, base, sf_count_t(frames))
        if n <= 0 {
            let e = sf_error(h)
            if e != 0 { throw Failure(path: path, reason: String(cString: sf_strerror(h))) }
            return 0
        }
        return Int(n)
    }

    /// The title tag, if the file has one.
    public var title: String? {
        guard let h = handle, let p = sf_get_string(h, Int32(SF_STR_TITLE)) else { return nil }
        let s = String(cString: p)
        return s.isEmpty ? nil : s
    }

    /// Writes interleaved float frames to a new file (tests and benchmarks make their music
    /// with it): `format` e.g. `.wav16`, `.flac`, `.ogg`, `.mp3`.
    public enum WriteFormat: Sendable {
        case wav16, flac, ogg, mp3

        var code: Int32 {
            switch self {
            case .wav16: Int32(SF_FORMAT_WAV | SF_FORMAT_PCM_16)
            case .flac: Int32(SF_FORMAT_FLAC | SF_FORMAT_PCM_16)
            case .ogg: Int32(SF_FORMAT_OGG | SF_FORMAT_VORBIS)
            case .mp3: Int32(SF_FORMAT_MPEG | SF_FORMAT_MPEG_LAYER_III)
            }
        }
    }

    public static func write(path: String, samples: [Float], rate: Int, channels: Int, format: WriteFormat) throws(Failure) {
        var info = SF_INFO()
        info.samplerate = Int32(rate)
        info.channels = Int32(channels)
        info.format = format.code
        guard let h = sf_open(path, Int32(SFM_WRITE), &info) else {
            throw Failure(path: path, reason: String(cString: sf_strerror(nil)))
        }
        let frames = samples.count / channels
        let n = samples.withUnsafeBufferPointer { sf_writef_float(h, $0.baseAddress, sf_count_t(frames)) }
        sf_close(h)
        if n != frames { throw Failure(path: path, reason: "wrote \(n) of \(frames) frames") }
    }

    /// libsndfile's version string, for the startup log.
    public static var version: String { String(cString: sf_version_string()) }
}
