"""The VM tier's instruments, on fixed inputs (they judge runs nobody watches): stallmatch.py
says whose an underrun was (docs/vm-tests.md, 14-loaded)."""
import importlib.util
import os

HERE = os.path.dirname(os.path.abspath(__file__))
SPEC = importlib.util.spec_from_file_location("stallmatch", os.path.join(HERE, "..", "..", "scripts", "vm", "lib", "stallmatch.py"))
stallmatch = importlib.util.module_from_spec(SPEC)
SPEC.loader.exec_module(stallmatch)

U = 'WARN audio: underrun, recovered device=hw:Loopback,0 slept_ms=%s asked_ms=%s queued_ms=60.0 busy_ms=0.4 why=%s'


def line(t, slept, asked, why='"woke late"'):
    return "2026-12-05T16:%sZ " % t + U % (slept, asked, why)


def test_the_self_test_passes():
    stallmatch.self_test()


def test_a_stall_long_enough_and_overlapping_makes_it_the_emulators():
    t = stallmatch.unix("2026-12-05T16:00:10.000")
    # 100 ms asleep, asked 30: woke 70 ms late, between t-0.070 and t; a 60 ms vCPU gap ending at t-0.005.
    out, c, e = stallmatch.judge([line("00:10.000", "100.0", "30.0")], ["%.3f 60.0 0" % (t - 0.005)])
    assert (c, e) == (0, 1), out


def test_a_stall_elsewhere_in_time_or_too_short_leaves_it_crier_s():
    t = stallmatch.unix("2026-12-05T16:00:10.000")
    far = ["%.3f 200.0 1" % (t - 5)]
    short = ["%.3f 40.0 1" % (t - 0.005)]
    for stalls in (far, short, []):
        out, c, e = stallmatch.judge([line("00:10.000", "100.0", "30.0")], stalls)
        assert (c, e) == (1, 0), (stalls, out)


def test_busy_short_queue_and_unparsed_lines_are_crier_s():
    t = stallmatch.unix("2026-12-05T16:00:10.000")
    stalls = ["%.3f 500.0 0" % t]
    lines = [line("00:10.000", "10.0", "30.0", "busy"), line("00:10.000", "10.0", "30.0", '"short queue"'),
             "2026-12-05T16:00:10.000Z WARN audio: underrun, recovered device=hw:0"]
    out, c, e = stallmatch.judge(lines, stalls)
    assert (c, e) == (3, 0), out
