import Testing
@testable import CrierCore

/// What a button's GPIO line is requested with (both libgpiod backends build their v1 flags or
/// v2 line settings from `LineRequestPlan`), and the invariant that makes the two backends
/// equivalent: the kernel hands back electrical levels, and active level and debounce are
/// applied once, by the recognizer, from the same ButtonSpec.
@Suite("GPIO line request plan")
struct LineRequestPlanTests {
    static let specs: [ButtonSpec] = {
        var out: [ButtonSpec] = []
        for bias in LineBias.allCases {
            for activeLow: Bool? in [nil, true, false] {
                for debounce in [0, 5, 20, 200] {
                    var s = ButtonSpec(line: .name("GPIO17"))
                    s.bias = bias
                    s.activeLowSetting = activeLow
                    s.debounceMs = debounce
                    out.append(s)
                }
            }
        }
        return out
    }()

    @Test("bias goes to the kernel; active level and debounce do not (the recognizer has them)")
    func mapping() {
        for s in Self.specs {
            let p = LineRequestPlan(spec: s)
            #expect(p.bias == s.bias)
            #expect(p.activeLow == false)
            #expect(p.debounceMicros == 0)
            #expect(p.bothEdges)
            #expect(p.monotonicTimestamps)
        }
        #expect(LineRequestPlan(spec: ButtonSpec(line: .name("GPIO17"))).description
            == "bias=pull-up active_low=false debounce_us=0 edges=both clock=monotonic")
    }

    @Test("the retry without bias changes nothing else")
    func withoutBias() {
        for s in Self.specs {
            let p = LineRequestPlan(spec: s)
            var q = p.withoutBias
            #expect(q.bias == nil)
            q.bias = p.bias
            #expect(q == p)
        }
        #expect(LineRequestPlan(spec: ButtonSpec(line: .name("GPIO17"))).withoutBias.description.hasPrefix("bias=as-is "))
    }

    @Test("electrical levels survive the kernel's inversion either way")
    func electrical() {
        for activeLow in [false, true] {
            var p = LineRequestPlan(spec: ButtonSpec(line: .name("GPIO17")))
            p.activeLow = activeLow
            for level in [false, true] {
                let reported = activeLow ? !level : level  // what the kernel reports for it
                #expect(p.electricalLevel(reported: reported) == level)
            }
        }
    }

    /// Every spec, end to end as a backend does it: the electrical level of the button goes
    /// through the kernel (as the plan requested it) and back through `electricalLevel` into
    /// the recognizer made from the same spec. A press longer than the debounce time is one
    /// press; a glitch shorter than it is nothing. If the plan handed active-low or debounce
    /// to the kernel too, one of the two would be applied twice and this would fail.
    @Test("a press is one press and a glitch is none, for every bias, active level and debounce")
    func endToEnd() {
        for s in Self.specs {
            let plan = LineRequestPlan(spec: s)
            var c = ButtonsConfig()
            c.buttons = [.mute: s]
            func kernel(_ electrical: Bool) -> Bool {
                plan.electricalLevel(reported: plan.activeLow ? !electrical : electrical)
            }
            let debounce = Double(s.debounceMs) / 1000
            var r = GestureRecognizer(config: c)
            var got = r.start(.mute, level: kernel(!s.pressedLevel), at: 0)
            // a glitch: half the debounce time (skipped when there is no debounce)
            if s.debounceMs >= 10 {
                got += r.feed(.mute, level: kernel(s.pressedLevel), at: 1)
                got += r.feed(.mute, level: kernel(!s.pressedLevel), at: 1 + debounce / 2)
                got += r.tick(now: 2)
                #expect(got.isEmpty, "spec \(s): a \(s.debounceMs / 2) ms glitch gave \(got)")
            }
            got += r.feed(.mute, level: kernel(s.pressedLevel), at: 3)
            got += r.tick(now: 3 + debounce + 0.05)
            got += r.feed(.mute, level: kernel(!s.pressedLevel), at: 3.1 + debounce)
            got += r.tick(now: 4)
            #expect(got.map(\.kind) == [.press], "spec \(s): \(got)")
        }
    }

    @Test("event times: the kernel's stamp when it is on our clock, never later than the reading")
    func eventTime() {
        #expect(LineRequestPlan.eventTime(kernel: 100.25, now: 100.5) == 100.25)
        // a stamp "from the future" (clock skew of a few µs): the reading time
        #expect(LineRequestPlan.eventTime(kernel: 100.500_01, now: 100.5) == 100.5)
        // CLOCK_REALTIME stamps (v1 before Linux 5.7) against a monotonic reading
        #expect(LineRequestPlan.eventTime(kernel: 1_764_600_000, now: 5_000) == 5_000)
        #expect(LineRequestPlan.eventTime(kernel: 98.0, now: 100) == 100)
        for k in stride(from: 90.0, through: 110.0, by: 0.125) {
            let t = LineRequestPlan.eventTime(kernel: k, now: 100)
            #expect(t <= 100 && t > 99)
        }
    }
}
