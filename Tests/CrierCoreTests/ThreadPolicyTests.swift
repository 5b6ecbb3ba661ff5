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

    /// Every thread that asks (audio, speech, event, link) logs through `asked`: one line, a
    /// warning for a refusal, info for a grant with the thread's note, nothing when off or when
    /// no logger is given (asked again).
    @Test func askedLogsOneLineOfTheRightKind() {
        let hub = LogHub(clock: { WallTime(unixMillis: 0) })
        let sink = MemoryLogSink()
        hub.add(sink)
        let log = hub.logger("t")
        let asker = ThreadPolicy.Asker(thread: "event thread", key: "speech.start_priority", cost: "orders may wait",
                                       grantedNote: " (orders)")
        #expect(ThreadPolicy.asked(10, errno: 0, errnoName: "", errnoText: "", by: asker, log: log).line == "SCHED_FIFO 10")
        #expect(sink.all.count == 1 && sink.all[0].level == .info)
        #expect(sink.lines.last?.hasSuffix("INFO t: event thread: SCHED_FIFO 10 (orders)") == true)
        let refused = ThreadPolicy.asked(10, errno: 1, errnoName: "EPERM", errnoText: "Operation not permitted", by: asker, log: log)
        #expect(refused.line == "SCHED_OTHER (real-time refused: EPERM Operation not permitted)")
        #expect(sink.all.count == 2 && sink.all[1].level == .warning)
        #expect(sink.lines.last?.contains("event thread: real-time priority SCHED_FIFO 10 refused (EPERM") == true)
        #expect(sink.lines.last?.contains("running as SCHED_OTHER, orders may wait.") == true)
        #expect(sink.lines.last?.contains("set speech.start_priority = 0") == true)
        #expect(ThreadPolicy.asked(0, errno: 0, errnoName: "", errnoText: "", by: asker, log: log).line
                == "SCHED_OTHER (off: speech.start_priority = 0)")
        _ = ThreadPolicy.asked(10, errno: 1, errnoName: "EPERM", errnoText: "x", by: asker, log: nil)
        #expect(sink.all.count == 2)
        #expect(ThreadPolicy.asked(30, errno: 0, errnoName: "", errnoText: "", by: .audio, log: log).line == "SCHED_FIFO 30")
        #expect(sink.lines.last?.hasSuffix("INFO t: audio thread: SCHED_FIFO 30") == true)
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

    @Test func theSpeechThreadIsNamedWithItsOwnKey() {
        #expect(ThreadPolicy.outcome(requested: 0, errno: 0, errnoName: "", errnoText: "", key: "speech.realtime_priority").line
                == "SCHED_OTHER (off: speech.realtime_priority = 0)")
        let advice = ThreadPolicy.refusalAdvice(requested: 20, errno: 1, errnoName: "EPERM", thread: "speech thread",
                                                key: "speech.realtime_priority", cost: "an order's first sound may wait") ?? ""
        #expect(advice.hasPrefix("speech thread: real-time priority SCHED_FIFO 20 refused (EPERM: "))
        #expect(advice.contains("running as SCHED_OTHER, an order's first sound may wait. Allow it with LimitRTPRIO=20"))
        #expect(advice.hasSuffix("or set speech.realtime_priority = 0 to silence this"))
    }

    /// The audio thread must run before the speech thread: a speech priority at or above the
    /// audio one is lowered below it (an error on its own line; a warning on the audio line
    /// when only that was set), and check-config shows what runs.
    @Test func theSpeechPriorityStaysBelowTheAudioOne() {
        let parser = ConfigParser()
        let d = parser.parse("", file: "c.conf")
        #expect(d.config.speech.realtimePriority == 20 && d.diagnostics.isEmpty)
        let same = parser.parse("audio.realtime_priority = 12\nspeech.realtime_priority = 12\n", file: "c.conf")
        #expect(same.config.speech.realtimePriority == 11)
        #expect(same.errors.map(\.description)
                == ["c.conf:2: speech.realtime_priority: 12 is not below audio.realtime_priority = 12 (the audio thread must run first); using 11"])
        let lowAudio = parser.parse("audio.realtime_priority = 10\n", file: "c.conf")
        #expect(lowAudio.config.speech.realtimePriority == 9)
        // The event thread follows below the speech thread (its own line: test below).
        #expect(lowAudio.errors.isEmpty && lowAudio.diagnostics.count == 2 && lowAudio.diagnostics.allSatisfy { $0.key == "audio.realtime_priority" })
        #expect(lowAudio.config.speech.startPriority == 8)
        #expect(parser.parse("audio.realtime_priority = 1\n", file: "c.conf").config.speech.realtimePriority == 0)
        // Audio ordinary: the speech thread's short boost is its own choice.
        let off = parser.parse("audio.realtime_priority = 0\n", file: "c.conf")
        #expect(off.config.speech.realtimePriority == 20 && off.diagnostics.isEmpty)
        #expect(parser.parse("speech.realtime_priority = 0\n", file: "c.conf").config.speech.realtimePriority == 0)
    }

    /// The event thread hands each utterance to the speech thread, so it stays below it (below
    /// the audio thread when the speech thread is ordinary); 0 is always allowed.
    @Test func theStartPriorityStaysBelowTheSpeechOne() {
        let parser = ConfigParser()
        #expect(parser.parse("", file: "c.conf").config.speech.startPriority == 10)
        let same = parser.parse("speech.realtime_priority = 10\nspeech.start_priority = 10\n", file: "c.conf")
        #expect(same.config.speech.startPriority == 9)
        #expect(same.errors.map(\.description)
                == ["c.conf:2: speech.start_priority: 10 is not below speech.realtime_priority = 10 (the thread it hands speech to must run first); using 9"])
        let speechOff = parser.parse("speech.realtime_priority = 0\naudio.realtime_priority = 5\n", file: "c.conf")
        #expect(speechOff.config.speech.startPriority == 4)
        #expect(parser.parse("speech.start_priority = 0\n", file: "c.conf").config.speech.startPriority == 0)
        #expect(parser.parse("speech.start_priority = 3\n", file: "c.conf").config.speech.startPriority == 3)
        let all0 = parser.parse("audio.realtime_priority = 0\nspeech.realtime_priority = 0\n", file: "c.conf")
        #expect(all0.config.speech.startPriority == 10 && all0.diagnostics.isEmpty)  // nothing above it to wait for
        #expect(ThreadPolicy.outcome(requested: 0, errno: 0, errnoName: "", errnoText: "", key: "speech.start_priority").line
                == "SCHED_OTHER (off: speech.start_priority = 0)")
    }
}
