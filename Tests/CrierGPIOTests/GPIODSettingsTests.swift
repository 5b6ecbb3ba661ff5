import CGPIOD
import CrierCore
import Testing
@testable import CrierGPIO

/// The plan (CrierCore) as this build's libgpiod receives it, read back from the library's own
/// objects: no chip needed. The v2 build checks gpiod_line_settings, the v1 build the request
/// type and flags.
@Suite("libgpiod request settings without a chip")
struct GPIODSettingsTests {
    static let biases: [LineBias] = LineBias.allCases

    @Test("the build's API is the library's: Package.swift and the linked libgpiod agree")
    func apiMatchesLibrary() {
        #expect(GPIODInput.libraryVersion.hasPrefix("\(GPIOD.api)."), "built for API v\(GPIOD.api), running libgpiod \(GPIODInput.libraryVersion)")
    }

    /// Both libraries export gpiod_chip_open and gpiod_chip_close with different meanings: a
    /// binary that loads both (a stale autolink, a -lgpiod that found the other one) calls into
    /// the wrong one. This process must map only the soname of its API.
    @Test("only the libgpiod of this build's API is loaded")
    func oneLibrary() throws {
        let maps = try #require(readFile("/proc/self/maps")).split(separator: UInt8(ascii: "\n"))
            .map { String(decoding: $0, as: UTF8.self) }
        let mine = GPIOD.api == 2 ? "libgpiod.so.3" : "libgpiod.so.2"
        let other = GPIOD.api == 2 ? "libgpiod.so.2" : "libgpiod.so.3"
        #expect(maps.contains { $0.contains(mine) })
        #expect(!maps.contains { $0.contains(other) }, "\(other) is loaded too: \(maps.filter { $0.contains("libgpiod") })")
    }

    #if CRIER_GPIOD_V2
    @Test("v2: input, both edges, bias, not active-low, no kernel debounce, monotonic stamps")
    func v2Settings() throws {
        for bias in Self.biases {
            for activeLow: Bool? in [nil, true, false] {
                for debounce in [0, 20, 150] {
                    var spec = ButtonSpec(line: .name("GPIO17"))
                    spec.bias = bias
                    spec.activeLowSetting = activeLow
                    spec.debounceMs = debounce
                    for plan in [LineRequestPlan(spec: spec), LineRequestPlan(spec: spec).withoutBias] {
                        let s = try #require(GPIOD.settings(for: plan))
                        defer { gpiod_line_settings_free(s) }
                        #expect(gpiod_line_settings_get_direction(s) == GPIOD_LINE_DIRECTION_INPUT)
                        #expect(gpiod_line_settings_get_edge_detection(s) == GPIOD_LINE_EDGE_BOTH)
                        let want: gpiod_line_bias = switch plan.bias {
                        case .pullUp: GPIOD_LINE_BIAS_PULL_UP
                        case .pullDown: GPIOD_LINE_BIAS_PULL_DOWN
                        case .disabled: GPIOD_LINE_BIAS_DISABLED
                        case nil: GPIOD_LINE_BIAS_AS_IS
                        }
                        #expect(gpiod_line_settings_get_bias(s) == want, "\(plan)")
                        #expect(gpiod_line_settings_get_active_low(s) == false)
                        #expect(gpiod_line_settings_get_debounce_period_us(s) == 0)
                        #expect(gpiod_line_settings_get_event_clock(s) == GPIOD_LINE_CLOCK_MONOTONIC)
                    }
                }
            }
        }
    }

    @Test("v2: what the plan says reaches the settings (active-low, debounce, clock are not hard-wired)")
    func v2FollowsPlan() throws {
        var plan = LineRequestPlan(spec: ButtonSpec(line: .name("GPIO17")))
        plan.activeLow = true
        plan.debounceMicros = 5000
        plan.monotonicTimestamps = false
        let s = try #require(GPIOD.settings(for: plan))
        defer { gpiod_line_settings_free(s) }
        #expect(gpiod_line_settings_get_active_low(s) == true)
        #expect(gpiod_line_settings_get_debounce_period_us(s) == 5000)
        #expect(gpiod_line_settings_get_event_clock(s) == GPIOD_LINE_CLOCK_REALTIME)
    }
    #else
    @Test("v1: both-edge events, the bias flag, no active-low flag")
    func v1Flags() {
        for bias in Self.biases {
            var spec = ButtonSpec(line: .name("GPIO17"))
            spec.bias = bias
            for activeLow: Bool? in [nil, true, false] {
                spec.activeLowSetting = activeLow
                let (type, flags) = GPIOD.requestConfig(for: LineRequestPlan(spec: spec))
                #expect(type == Int32(GPIOD_LINE_REQUEST_EVENT_BOTH_EDGES))
                let want: Int32 = switch bias {
                case .pullUp: Int32(GPIOD_LINE_REQUEST_FLAG_BIAS_PULL_UP)
                case .pullDown: Int32(GPIOD_LINE_REQUEST_FLAG_BIAS_PULL_DOWN)
                case .disabled: Int32(GPIOD_LINE_REQUEST_FLAG_BIAS_DISABLE)
                }
                #expect(flags == want)
            }
            #expect(GPIOD.requestConfig(for: LineRequestPlan(spec: spec).withoutBias).flags == 0)
        }
        var plan = LineRequestPlan(spec: ButtonSpec(line: .name("GPIO17")))
        plan.activeLow = true
        #expect(GPIOD.requestConfig(for: plan).flags & Int32(GPIOD_LINE_REQUEST_FLAG_ACTIVE_LOW) != 0)
    }
    #endif
}
