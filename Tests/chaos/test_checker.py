"""The chaos checker against hand-made records: each invariant must catch the broken behaviour it
names (and a healthy record must pass), or the chaos run proves nothing."""
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import checker  # noqa: E402

T0 = 1_800_000_000.0


def L(t, level, comp, msg, **fields):
    ms = int(round(t * 1000))
    s = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(ms // 1000)) + ".%03dZ" % (ms % 1000)
    line = "%s %s %s: %s" % (s, level, comp, msg)
    for k, v in fields.items():
        v = str(v)
        if " " in v or '"' in v or "=" in v:
            v = '"' + v.replace("\\", "\\\\").replace('"', '\\"') + '"'
        line += " %s=%s" % (k, v)
    return line


class Rec:
    """A record built event by event, the way chaos.py writes one."""

    def __init__(self):
        self.r = {"orders": {}, "server": [], "segments": []}
        self.seg = None
        self.new_segment(T0)

    def new_segment(self, t, end_kind="sigterm", kill_t=None):
        if self.seg is not None:
            self.seg["end"] = t - 0.5
            self.seg["stop_requested"] = t - 0.6
            self.seg["end_kind"] = end_kind
            self.seg["kill_t"] = kill_t
            self.seg["stop_seconds"] = 0.1 if end_kind == "sigterm" else None
            self.seg["rc"] = 0
        self.seg = {"index": len(self.r["segments"]), "log": [L(t + 0.1, "INFO", "audio", "opened", device="default", type="FILE")],
                    "speech": [], "capture_end": None, "start": t, "end": None, "end_kind": "sigterm",
                    "stop_seconds": 0.1, "rc": 0, "sighup": [], "alive_after_sighup": [], "idle": []}
        self.r["segments"].append(self.seg)
        return self

    def order(self, oid, t, priority=0, conn=1):
        self.r["orders"].setdefault(oid, {"priority": priority, "kind": "new_customer", "ttl": None, "created": t})
        self.r["server"].append({"t": t, "conn": conn, "dir": "send", "msg": {"type": "order", "id": oid, "kind": "new_customer",
                                                                             "number": 1, "priority": priority}, "event": None})
        return self

    def cancel(self, oid, t, conn=1):
        self.r["server"].append({"t": t, "conn": conn, "dir": "send", "msg": {"type": "cancel", "id": oid}, "event": None})
        return self

    def ack(self, oid, t, status="spoken", conn=1, **kw):
        self.r["server"].append({"t": t, "conn": conn, "dir": "recv", "msg": dict({"type": "ack", "id": oid, "status": status}, **kw),
                                 "event": None})
        return self

    def event(self, t, event, conn=1):
        self.r["server"].append({"t": t, "conn": conn, "dir": "event", "msg": None, "event": event})
        return self

    def say(self, ids, t, secs, heard=True, spoken=True):
        """The daemon says `ids` at t for secs (and the capture holds it when heard)."""
        self.seg["log"].append(L(t, "INFO", "alert", "saying", ids=",".join(ids), seconds="%.1f" % secs, synth_ms="20.0"))
        if heard:
            # words with pauses between them, 0.4 s behind the log like the real capture
            a = t + 0.4
            while a < t + 0.4 + secs:
                self.seg["speech"].append([a, min(a + 0.3, t + 0.4 + secs)])
                a += 0.4
        if spoken:
            for i in ids:
                self.seg["log"].append(L(t + secs, "INFO", "alert", "spoken", id=i, text="新客户来了，一号"))
        self.seg["capture_end"] = max(self.seg["capture_end"] or 0, t + secs + 5)
        return self

    def done(self, t=None):
        seg = self.seg
        seg["end"] = t or (max([e["t"] for e in self.r["server"]] + [seg["start"]]) + 2)
        seg["stop_requested"] = seg["end"] - 0.1
        seg["capture_end"] = max(seg["capture_end"] or 0, seg["end"])
        return self.r


def invariants(rec):
    return sorted({f.invariant for f in checker.check(rec)})


def healthy():
    return (Rec().order("A", T0 + 1).say(["A"], T0 + 1.2, 2.0).ack("A", T0 + 3.3)
            .order("B", T0 + 4).order("C", T0 + 4.1).say(["B", "C"], T0 + 4.3, 3.0).ack("B", T0 + 7.4).ack("C", T0 + 7.4)
            .order("D", T0 + 8).cancel("D", T0 + 8.01).ack("D", T0 + 8.02, "cancelled"))


def test_a_healthy_record_passes():
    assert checker.check(healthy().done()) == []


def test_parse_log_line_reads_quoted_fields():
    t, lvl, comp, msg, f = checker.parse_log_line(L(T0, "INFO", "alert", "spoken", id="A-1", text='say "hi" = x'))
    assert (t, lvl, comp, msg) == (T0, "INFO", "alert", "spoken") and f == {"id": "A-1", "text": 'say "hi" = x'}


def test_spoken_twice_across_a_clean_restart_is_caught():
    r = healthy().new_segment(T0 + 20).order("A", T0 + 21, conn=2).say(["A"], T0 + 21.2, 2.0).ack("A", T0 + 23.3, conn=2)
    assert invariants(r.done()) == ["never_spoken_twice"]


def test_spoken_twice_in_one_segment_is_caught():
    r = healthy().order("A", T0 + 10).say(["A"], T0 + 10.2, 2.0).ack("A", T0 + 12.3)
    assert "never_spoken_twice" in invariants(r.done())


def test_a_power_cut_right_after_the_end_of_an_alert_may_say_it_again():
    # killed 0.3 s after "spoken": the outcome may not have reached the disk
    r = (Rec().order("A", T0 + 1).say(["A"], T0 + 1.2, 2.0)
         .new_segment(T0 + 4.5, end_kind="sigkill", kill_t=T0 + 3.5)
         .order("A", T0 + 5, conn=2).say(["A"], T0 + 5.2, 2.0).ack("A", T0 + 7.3, conn=2))
    assert invariants(r.done()) == []


def test_a_power_cut_long_after_the_end_of_an_alert_may_not():
    r = (Rec().order("A", T0 + 1).say(["A"], T0 + 1.2, 2.0)
         .new_segment(T0 + 9, end_kind="sigkill", kill_t=T0 + 8)
         .order("A", T0 + 10, conn=2).say(["A"], T0 + 10.2, 2.0).ack("A", T0 + 12.3, conn=2))
    assert invariants(r.done()) == ["never_spoken_twice"]


def test_spoken_without_sound_is_caught():
    r = Rec().order("A", T0 + 1).say(["A"], T0 + 1.2, 3.0, heard=False).ack("A", T0 + 4.3)
    assert invariants(r.done()) == ["spoken_is_in_capture"]


def test_spoken_when_the_capture_stopped_early_is_caught():
    # issue 13 item 5: SIGTERM cut the audio, yet the whole announcement was acked spoken
    r = Rec().order("A", T0 + 1).say(["A"], T0 + 1.2, 11.0).ack("A", T0 + 12.3)
    r.seg["speech"] = [iv for iv in r.seg["speech"] if iv[1] < T0 + 4]
    r.seg["capture_end"] = T0 + 4
    r = r.done(T0 + 4)
    r["segments"][0]["capture_end"] = T0 + 4
    assert invariants(r) == ["spoken_is_in_capture"]


def test_a_coalesced_alert_cut_short_acks_its_first_part_against_what_was_heard():
    # seed 75946: four orders in a 4.3 s alert, SIGTERM 2.1 s in: the first part (heard in full)
    # is acked spoken, the others are not; the capture ends at 2.4 s. Right, not a failure.
    r = Rec()
    for i in "ABCD":
        r.order(i, T0 + 1)
    r.say(["A", "B", "C", "D"], T0 + 1.2, 4.3, spoken=False)
    r.seg["speech"] = [iv for iv in r.seg["speech"] if iv[1] < T0 + 1.2 + 2.3]
    r.seg["log"].append(L(T0 + 3.3, "INFO", "alert", "spoken", id="A", text="新客户来了，一号"))
    r.seg["log"].append(L(T0 + 3.3, "INFO", "alert", "not heard in full", ids="B,C,D", heard_s="2.1",
                          why="stopping; not acked, the server redelivers them"))
    r.ack("A", T0 + 3.4)
    r = r.done(T0 + 3.6)
    r["segments"][0]["capture_end"] = T0 + 1.2 + 2.4
    fails = [f for f in checker.check(r) if f.invariant == "spoken_is_in_capture"]
    assert fails == [], [f.detail for f in fails]


def test_a_cut_alert_acked_spoken_as_a_whole_is_still_caught():
    # The same cut, but every part acked spoken (issue 13 item 5's defect): still a failure.
    r = Rec()
    for i in "AB":
        r.order(i, T0 + 1)
    r.say(["A", "B"], T0 + 1.2, 4.3, spoken=False)
    r.seg["speech"] = [iv for iv in r.seg["speech"] if iv[1] < T0 + 1.2 + 2.3]
    for i in "AB":
        r.seg["log"].append(L(T0 + 3.3, "INFO", "alert", "spoken", id=i, text="新客户来了，一号"))
        r.ack(i, T0 + 3.4)
    r = r.done(T0 + 3.6)
    r["segments"][0]["capture_end"] = T0 + 1.2 + 2.4
    assert "spoken_is_in_capture" in invariants(r)


def test_never_acked_is_caught():
    r = healthy().order("E", T0 + 12)
    assert invariants(r.done()) == ["acked_exactly_once"]


def test_a_queue_full_rejection_is_not_a_final_ack():
    r = healthy().order("E", T0 + 12).ack("E", T0 + 12.1, "rejected", reason="queue_full")
    assert invariants(r.done()) == ["acked_exactly_once"]


def test_two_final_statuses_are_caught():
    r = healthy().cancel("A", T0 + 9).ack("A", T0 + 9.1, "cancelled")
    assert "acked_exactly_once" in invariants(r.done())


def test_more_acks_than_deliveries_are_caught():
    r = healthy().ack("A", T0 + 9)
    assert invariants(r.done()) == ["acked_exactly_once"]


def test_a_repeated_ack_for_a_redelivery_is_fine():
    r = healthy().order("A", T0 + 9).ack("A", T0 + 9.01)
    assert invariants(r.done()) == []


def test_log_spoken_but_ack_cancelled_is_caught():
    # issue 13 item 16: an alert cut by a cancel logged `spoken`, acked `cancelled`
    r = healthy().order("E", T0 + 12).cancel("E", T0 + 13).say(["E"], T0 + 12.2, 1.0).ack("E", T0 + 13.3, "cancelled")
    assert invariants(r.done()) == ["log_agrees_with_ack"]


def test_a_cancel_before_delivery_must_win():
    r = healthy().cancel("E", T0 + 12).order("E", T0 + 12.5).say(["E"], T0 + 12.6, 1.0).ack("E", T0 + 13.7)
    assert invariants(r.done()) == ["cancel_honoured"]


def test_higher_priority_stuck_behind_a_long_lower_one_is_caught():
    # issue 13 item 6: priority 50 arrives 1 s into a 30 s text of priority -5
    r = (Rec().order("L", T0 + 1, priority=-5).say(["L"], T0 + 1.2, 30.0).ack("L", T0 + 31.3)
         .order("H", T0 + 2.2, priority=50).say(["H"], T0 + 31.4, 2.0).ack("H", T0 + 33.5))
    assert invariants(r.done()) == ["priority_not_blocked"]


def test_higher_priority_after_one_interruption_passes():
    r = (Rec().order("L", T0 + 1, priority=-5).say(["L"], T0 + 1.2, 30.0, spoken=False)
         .order("H", T0 + 2.2, priority=50).say(["H"], T0 + 3.0, 2.0).ack("H", T0 + 5.1)
         .say(["L"], T0 + 5.3, 30.0).ack("L", T0 + 35.4))
    assert invariants(r.done()) == []


def test_expiring_behind_a_lower_one_is_caught():
    r = (Rec().order("L", T0 + 1, priority=-5).say(["L"], T0 + 1.2, 30.0).ack("L", T0 + 31.3)
         .order("H", T0 + 2.2, priority=50).ack("H", T0 + 31.3, "expired"))
    assert invariants(r.done()) == ["priority_not_blocked"]


def test_a_slow_sigterm_is_caught():
    r = healthy().done()
    r["segments"][0]["stop_seconds"] = None
    assert invariants(r) == ["stop_within_6s"]


def test_a_crash_is_caught():
    r = healthy().done()
    r["segments"][0]["end_kind"] = "exit"
    r["segments"][0]["rc"] = -11
    assert invariants(r) == ["no_crash"]


def test_dying_on_sighup_is_caught():
    r = healthy().done()
    r["segments"][0]["sighup"] = [T0 + 5]
    r["segments"][0]["alive_after_sighup"] = [False]
    assert invariants(r) == ["survives_sighup"]


def test_idle_memory_growth_is_caught():
    r = healthy().done()
    r["segments"][0]["idle"] = [{"t": T0, "seconds": 4, "cpu": 0.01, "rss_kb": [30000, 310000]}]
    assert invariants(r) == ["idle_is_idle"]
    r["segments"][0]["idle"] = [{"t": T0, "seconds": 4, "cpu": 1.4, "rss_kb": [30000, 30000]}]
    assert invariants(r) == ["idle_is_idle"]
    r["segments"][0]["idle"] = [{"t": T0, "seconds": 4, "cpu": 0.01, "rss_kb": [30000, 30100]}]
    assert invariants(r) == []


def test_the_device_dropping_a_healthy_link_is_caught():
    # issue 13 item 7: acks flowing, no ping, "dead" after 2 x heartbeat
    r = healthy().event(T0 + 10, "device_closed")
    assert invariants(r.done(T0 + 20)) == ["link_kept_alive"]


def test_the_device_dropping_a_silent_link_is_right():
    r = healthy().event(T0 + 9, "silence_start").event(T0 + 12, "device_closed")
    assert invariants(r.done(T0 + 20)) == []


def test_speech_intervals_find_words():
    rate = 1000
    x = [0.0] * 1000 + [0.5, -0.5] * 250 + [0.0] * 500
    iv = checker.speech_intervals(x, rate, 100.0, threshold=0.01)
    assert len(iv) == 1 and abs(iv[0][0] - 101.0) < 0.03 and abs(iv[0][1] - 101.5) < 0.03


def test_a_cancel_and_a_late_delivery_get_one_ack_each():
    r = healthy().cancel("E", T0 + 12).ack("E", T0 + 12.01, "cancelled").order("E", T0 + 12.5).ack("E", T0 + 12.51, "cancelled")
    assert invariants(r.done()) == []


def test_one_delivery_answered_twice_is_caught():
    r = (healthy().cancel("E", T0 + 12).ack("E", T0 + 12.01, "cancelled").order("E", T0 + 12.5)
         .ack("E", T0 + 12.51, "cancelled").ack("E", T0 + 12.52, "cancelled"))
    assert invariants(r.done()) == ["acked_exactly_once"]


def test_an_alert_said_while_the_device_was_missing_counts_from_when_it_opened():
    r = Rec().order("A", T0 + 1).say(["A"], T0 + 1.2, 2.0, heard=False).ack("A", T0 + 8.3)
    r.seg["capture_start"] = T0 + 6
    r.seg["speech"] = [[T0 + 6.3, T0 + 6.9], [T0 + 7.0, T0 + 7.8]]
    assert invariants(r.done()) == []
    r.seg["speech"] = []
    assert invariants(r.done()) == ["spoken_is_in_capture"]


def test_spoken_after_no_audio_is_caught():
    # issue 13 item 12: a text of zero-width characters acked spoken after 0 s
    r = healthy().order("E", T0 + 12).say(["E"], T0 + 12.2, 0.0).ack("E", T0 + 12.3)
    assert invariants(r.done()) == ["spoken_is_in_capture"]


def test_killed_by_sigterm_is_a_failure_once_the_daemon_is_ready():
    r = healthy().done()
    r["segments"][0]["rc"] = -15
    r["segments"][0]["log"].append(L(T0 + 0.2, "INFO", "runtime", "ready", version="0.1.0"))
    assert invariants(r) == ["stop_within_6s"]
    r["segments"][0]["log"] = []  # before it had started: the default action of SIGTERM is fine
    r["segments"][0]["speech"] = None
    assert "stop_within_6s" not in invariants(r)


def test_saying_length_comes_from_the_synthesized_line_since_speech_streams():
    # Issue 16: `saying` is logged when the clip starts, before its length is known; the
    # `synthesized` line that follows carries `seconds=`.
    seg = {"log": [L(T0, "INFO", "alert", "saying", ids="a,b", parts=2),
                   L(T0 + 0.01, "INFO", "alert", "synthesized", ids="a,b", seconds="3.5", synth_ms="9.0"),
                   L(T0 + 4, "INFO", "alert", "saying", ids="c", seconds="1.5", synth_ms="2.0"),
                   L(T0 + 6, "INFO", "alert", "saying", ids="d", parts=1),
                   L(T0 + 6.5, "INFO", "alert", "saying", ids="e", parts=1),
                   L(T0 + 6.6, "INFO", "alert", "synthesized", ids="d", seconds="9.9")]}
    got = [(ids, secs) for _, ids, secs, _ in checker._sayings(seg)]
    # d's synthesized line comes after the next saying: not d's (it was cut before its end).
    assert got == [(["a", "b"], 3.5), (["c"], 1.5), (["d"], 0.0), (["e"], 0.0)]


def test_a_coalesced_alert_counts_its_speech_once():
    # CI seed 86226 (coalesce_max=10): every alert heard, yet the total check added each alert's
    # length once per order in it and reported 34.7 s of speech for 130.8 s of alerts.
    r = Rec()
    ids = ["N%d" % i for i in range(10)]
    for i in ids:
        r.order(i, T0 + 1)
    r.say(ids, T0 + 1.2, 8.0)
    for i in ids:
        r.ack(i, T0 + 9.3)
    assert checker.check(r.done()) == []

