import CrierPosix
import Glibc
import Synchronization
import Testing

@Suite struct SubprocessTests {
    @Test func statusOutputAndLinesAreSeparate() throws {
        let lines = Mutex<[String]>([])
        let r = try Subprocess.run("/bin/sh", ["-c", "echo one; echo two >&2; printf 'three'; exit 3"], timeout: 10) { l in
            lines.withLock { $0.append(l) }
        }
        #expect(r.status == 3 && r.signal == nil && !r.timedOut && !r.succeeded)
        #expect(r.stdoutText == "one\nthree" && r.stderrText == "two\n")
        #expect(lines.withLock { $0 }.sorted() == ["one", "three", "two"])
    }

    @Test func argumentsAreNeverParsedByAShell() throws {
        let r = try Subprocess.run("printf", ["%s|", "a b", "$(touch /tmp/crier-never)", ";"], timeout: 10)
        #expect(r.succeeded && r.stdoutText == "a b|$(touch /tmp/crier-never)|;|")
        #expect(access("/tmp/crier-never", F_OK) != 0)
    }

    @Test func aProgramThatHangsIsKilledAtTheTimeout() throws {
        let t0 = Monotonic.now()
        let r = try Subprocess.run("/bin/sh", ["-c", "echo started; exec sleep 30"], timeout: 0.5)
        #expect(r.timedOut && r.status == nil && r.signal == SIGTERM && r.stdoutText == "started\n")
        #expect(Monotonic.now() - t0 < 10)
    }

    @Test func aProgramIgnoringSIGTERMIsKilledToo() throws {
        let r = try Subprocess.run("/bin/sh", ["-c", "trap '' TERM; while :; do sleep 0.1; done"], timeout: 0.3)
        #expect(r.timedOut && r.signal == SIGKILL)
    }

    @Test func aMissingProgramIsAnError() {
        #expect(throws: SystemError.self) { try Subprocess.run("crier-no-such-program", [], timeout: 5) }
    }

    @Test func captureIsBoundedButTheProgramIsNotBlocked() throws {
        let r = try Subprocess.run("/bin/sh", ["-c", "head -c 3000000 /dev/zero; echo done >&2"], timeout: 20, capture: 1000)
        #expect(r.succeeded && r.stdout.count == 1000 && r.stderrText == "done\n")
    }
}
