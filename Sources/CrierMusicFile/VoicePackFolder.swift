import CrierCore
import Glibc

/// A voice pack on disk (docs/voice.md): a folder with `manifest` and one audio file per clip,
/// decoded through libsndfile. The rules (limits, what is a problem) are `VoicePackLoader`'s.
public struct VoicePackFolder: VoicePackSource {
    public let path: String

    public init(path: String) {
        self.path = path
    }

    public func entries(limit: Int) throws(VoicePackProblem) -> (names: [String], more: Bool) {
        guard let dir = opendir(path) else {
            let e = errno
            throw VoicePackProblem(.notAPack, nil, e == ENOENT ? "\(path) does not exist" : e == ENOTDIR ? "\(path) is not a folder" : "cannot read \(path): \(String(cString: strerror(e)))")
        }
        defer { closedir(dir) }
        var names: [String] = []
        while let ent = readdir(dir) {
            let name = withUnsafeBytes(of: ent.pointee.d_name) { raw in
                String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
            }
            if name == "." || name == ".." || name.hasPrefix(".") { continue }
            if names.count == limit { return (names, true) }
            names.append(name)
        }
        return (names.sorted(), false)
    }

    public func manifest(maxBytes: Int) throws(VoicePackProblem) -> String {
        let file = path + "/" + VoicePackManifest.fileName
        let fd = open(file, O_RDONLY | O_NONBLOCK | O_CLOEXEC)
        guard fd >= 0 else {
            let e = errno
            if e == ENOTDIR { throw VoicePackProblem(.notAPack, nil, "\(path) is not a folder") }
            if e == ENOENT {
                var st = stat()
                if stat(path, &st) != 0 { throw VoicePackProblem(.notAPack, nil, "\(path) does not exist") }
                if st.st_mode & S_IFMT != S_IFDIR { throw VoicePackProblem(.notAPack, nil, "\(path) is not a folder") }
                throw VoicePackProblem(.manifest, nil, "no manifest in \(path) (a text file `manifest` with language, name, licence, rate; docs/voice.md)")
            }
            throw VoicePackProblem(.manifest, nil, "cannot open \(file): \(String(cString: strerror(e)))")
        }
        defer { close(fd) }
        var st = stat()
        guard fstat(fd, &st) == 0, st.st_mode & S_IFMT == S_IFREG else {
            throw VoicePackProblem(.manifest, nil, "\(file) is not a regular file")
        }
        guard st.st_size <= maxBytes else {
            throw VoicePackProblem(.manifest, nil, "\(file) is \(st.st_size) bytes; a manifest is a few lines (at most \(maxBytes) bytes)")
        }
        var bytes = [UInt8](repeating: 0, count: Int(st.st_size))
        let n = bytes.withUnsafeMutableBytes { pread(fd, $0.baseAddress, $0.count, 0) }
        guard n >= 0 else { throw VoicePackProblem(.manifest, nil, "cannot read \(file): \(String(cString: strerror(errno)))") }
        guard let text = String(validating: bytes.prefix(n), as: UTF8.self) else {
            throw VoicePackProblem(.manifest, nil, "\(file) is not UTF-8 text")
        }
        return text
    }

    public func decode(_ file: String, maxFrames: Int) throws(VoicePackProblem) -> DecodedAudio {
        let f: SoundFile
        do {
            f = try SoundFile(path: path + "/" + file)
        } catch {
            throw VoicePackProblem(.broken, nil, error.reason)
        }
        // A file longer than the limit is not read past it: the loader refuses it from its length.
        let want = f.frames > 0 ? min(Int(f.frames), maxFrames) : maxFrames
        var out = [Float](repeating: 0, count: max(want, 0) * f.channels)
        var got = 0
        while got < want {
            // The failure leaves the closure as a value: Swift 6.0.3 (Debian 13) loses a typed
            // throw through withUnsafeMutableBufferPointer's rethrows.
            var failure: SoundFile.Failure?
            let n: Int = out.withUnsafeMutableBufferPointer { buf in
                do throws(SoundFile.Failure) {
                    return try f.read(into: UnsafeMutableBufferPointer(rebasing: buf[(got * f.channels)...]), frames: want - got)
                } catch {
                    failure = error
                    return 0
                }
            }
            if let failure {
                throw VoicePackProblem(.broken, nil, "cannot decode it after \(got) frames: \(failure.reason)")
            }
            if n == 0 { break }
            got += n
        }
        out.removeLast(out.count - got * f.channels)
        return DecodedAudio(rate: f.rate, channels: f.channels, samples: out, totalFrames: max(f.frames, Int64(got)))
    }
}
