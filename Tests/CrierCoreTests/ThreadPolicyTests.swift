import Testing
@testable import CrierCore

@Suite struct ThreadPolicyTests {
    @Test func outcomesAndTheirLines() {
        #expect(ThreadPolicy.outcome(requested: 30, errno: 0, errnoName: "", errnoText: "").line == "SCHED_FIFO 30")
        #expect(ThreadPolicy.outcome(requested: 0, errno: 0, errnoName: "", errnoText: "").line
                == "SCHED_OTHER (off: audio.realtime_priority = 0)")
        let refused = ThreadPolicy.outcome(requested: 30, errno: 1, errnoName: "EPERM", errnoText: "Operation not permitted")
        #expect(refused == ThreadPolicy(kind: .other, detail: "real-time refused: EPERM Operation not permitted"))
        #expect(refused.line == "SCHED_OTHER (real-time refused: EPERM Operation not permitted)")
    }

    @Test func onlyARefusalIsAdvised() {
        #expect(ThreadPolicy.refusalAdvice(requested: 30, errno: 0, errnoName: "") == nil)
        #expect(ThreadPolicy.refusalAdvice(requested: 0, errno: 1, errnoName: "EPERM") == nil)
        let advice = ThreadPolicy.refusalAdvice(requested: 30, errno: 1, errnoName: "EPERM") ?? ""
        #expect(advice.hasPrefix("audio thread: real-time priority SCHED_FIFO 30 refused (EPERM: not root and RLIMIT_RTPRIO below 30"))
        #expect(advice.contains("LimitRTPRIO=30 and RestrictRealtime=no"))
        #expect(advice.hasSuffix("or set audio.realtime_priority = 0 to silence this"))
        #expect(!advice.contains("\n"))
    }

    @Test func configKeyDefaultRangeAndError() {
        let parser = ConfigParser()
        #expect(parser.parse("", file: "c.conf").config.audio.realtimePriority == 30)
        #expect(parser.parse("audio.realtime_priority = 0\n", file: "c.conf").config.audio.realtimePriority == 0)
        #expect(parser.parse("audio.realtime_priority = 45\n", file: "c.conf").config.audio.realtimePriority == 45)
        for bad in ["100", "-1", "fifo"] {
            let r = parser.parse("audio.realtime_priority = \(bad)\n", file: "c.conf")
            #expect(r.errors.map(\.description)
                    == ["c.conf:1: audio.realtime_priority: expected an integer 0...99, got \"\(bad)\"; using the default (30)"])
            #expect(r.config.audio.realtimePriority == 30)
        }
    }
}
