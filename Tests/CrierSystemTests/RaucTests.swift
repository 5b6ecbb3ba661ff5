import CrierCore
import CrierPosix
import Glibc
import Synchronization
import Testing
@testable import CrierSystem

/// `Rauc` against a stand-in `rauc` script printing what RAUC 1.13 prints.
@Suite struct RaucTests {
    func fake(_ body: String) throws -> String {
        let dir = FileIO.temporaryDirectory() + "/crier-rauc-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        mkdir(dir, 0o700)
        let path = dir + "/rauc"
        try FileIO.write(path, Array(("#!/bin/sh\n" + body + "\n").utf8))
        chmod(path, 0o755)
        return path
    }

    @Test func statusParsesTheJSON() throws {
        let json = UpdateRecordsJSON.sample
        let r = Rauc(program: try fake("[ \"$1 $2 $3\" = 'status --detailed --output-format=json' ] || exit 9\ncat <<'E'\n\(json)\nE"))
        let s = try r.status().get()
        #expect(s.booted == "B" && s.rootSlots.map(\.version) == [nil, "0.9.1+20261203.2"])
    }

    @Test func aFailedInstallSaysRaucsOwnReasonAndProgressIsPassedOn() throws {
        let r = Rauc(program: try fake("""
            echo installing
            echo '  0% Installing'
            echo ' 40% Checking bundle failed.'
            echo 'LastError: Failed to check bundle identifier: Compatible mismatch: Expected '"'"'crier-rpi-arm64'"'"' but bundle manifest has '"'"'crier-amd64'"'"'' >&2
            echo 'Installing `/data/b.raucb` failed' >&2
            exit 1
            """))
        let seen = Mutex<[String]>([])
        let out = r.install("/data/b.raucb") { l in seen.withLock { $0.append(l) } }
        guard case .failure(let f) = out else { Issue.record("installed"); return }
        #expect(f == .refused(reason: "Failed to check bundle identifier: Compatible mismatch: Expected 'crier-rpi-arm64' but bundle manifest has 'crier-amd64'", status: 1))
        #expect(f.description.hasPrefix("RAUC refused: Failed to check bundle identifier: Compatible mismatch"))
        #expect(seen.withLock { $0 }.contains(" 40% Checking bundle failed."))
    }

    @Test func aMissingRaucSaysWhatToCheck() {
        guard case .failure(let f) = Rauc(program: "/nonexistent/rauc").status() else { Issue.record("ran"); return }
        #expect(f.description == "cannot run RAUC ('/nonexistent/rauc': No such file or directory); is the rauc package installed? (update.rauc in crier.conf names the program)")
    }

    @Test func garbageInsteadOfJSONIsAClearError() throws {
        let r = Rauc(program: try fake("echo '=== System Info ==='"))
        guard case .failure(.badStatus(let m)) = r.status() else { Issue.record("parsed"); return }
        #expect(m.hasPrefix("rauc status printed no JSON"))
    }

    @Test func aHungRaucIsStopped() throws {
        let r = Rauc(program: try fake("exec sleep 30"))
        guard case .failure(let f) = r.status(timeout: 0.3) else { Issue.record("returned"); return }
        #expect(f == .timedOut(what: "`rauc status`", seconds: 0))
    }
}

enum UpdateRecordsJSON {
    static let sample = #"{"compatible":"crier-rpi-arm64","booted":"B","slots":[{"rootfs.0":{"bootname":"A","state":"inactive","boot_status":"good","slot_status":{"bundle":{"version":null},"status":null}}},{"rootfs.1":{"bootname":"B","state":"booted","boot_status":"good","slot_status":{"bundle":{"version":"0.9.1+20261203.2"},"status":"ok"}}}]}"#
}
