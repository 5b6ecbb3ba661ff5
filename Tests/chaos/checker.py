"""The chaos run's invariant checker: pure functions over one run's record (what the scripted
server sent and received, the daemon's log lines per run segment, the decoded capture per
segment, the process measurements). No I/O here, so a hand-made record can prove that each
invariant catches what it is meant to catch (test_checker.py).

A record is a dict:
  orders:   {id: {"priority": int, "kind": str, "ttl": float|None, "created": t}}
  server:   [{"t": wall, "conn": n, "dir": "send"|"recv"|"event", "msg": dict|None, "event": str}]
            events: "welcome", "device_closed" (EOF the server did not cause), "server_closed",
            "silence_start"/"silence_end" (the server stops answering, a half-open link)
  segments: [{"index": i, "log": [log lines], "speech": [[t0, t1], ...] (loud intervals of the
             capture in wall time, None when the segment had no capture), "capture_start": t|None,
             "capture_end": t|None,
             "start": t, "end": t, "end_kind": "sigterm"|"sigkill"|"exit", "kill_t": t|None,
             "stop_seconds": float|None, "rc": int|None, "sighup": [t...], "alive_after_sighup": [bool...],
             "idle": [{"t": t, "seconds": s, "cpu": fraction of one core, "rss_kb": [first, last]}]}]
Times are Unix seconds (the daemon logs UTC with milliseconds; server and daemon share a clock).
"""
import calendar
import re

FINAL = ("spoken", "expired", "cancelled", "rejected")
# `rejected` with these reasons is about one delivery, not the order (protocol.md section 4).
NOT_FINAL_REASONS = ("queue_full", "unsigned", "bad_signature", "stale", "replayed")

# Tolerances. Each is wide enough for a loaded 2-core CI machine: a check that fails spuriously is
# worse than none (docs/chaos.md).
INTERRUPT_S = 2.5        # how long a higher-priority order may wait behind a lower one playing
KILL_WINDOW_S = 1.0      # a SIGKILL this soon after an order finished may lose its (persisted) outcome
STOP_S = 6.0             # SIGTERM to exit, documented in operations.md
IDLE_CPU = 0.25          # fraction of one core while idle (a debug build writing silence)
IDLE_RSS_KB = 150_000    # resident set while idle
IDLE_RSS_GROWTH_KB = 8_000
SPEECH_COVER = 0.3       # loud fraction of a `saying` window for it to count as heard
# The capture's timeline (from the `audio: opened` line) runs up to ~0.7 s behind the log: the
# engine writes ahead of real time into a self-paced PCM. The window around a `saying` is wider
# after than before.
SLACK_BEFORE_S = 0.3
SLACK_AFTER_S = 1.0


LOG_RX = re.compile(r"^(\d{4})-(\d\d)-(\d\d)T(\d\d):(\d\d):(\d\d)\.(\d{3})Z (\w+) ([\w-]+): (.*)$")
FIELD_RX = re.compile(r'(?:^| )([A-Za-z_][\w.]*)=("(?:[^"\\]|\\.)*"|\S*)')


def parse_log_line(line):
    """(time, level, component, message, fields) or None for a line that is not a log record."""
    m = LOG_RX.match(line)
    if not m:
        return None
    y, mo, d, h, mi, s, ms = (int(m.group(i)) for i in range(1, 8))
    t = calendar.timegm((y, mo, d, h, mi, s, 0, 0, 0)) + ms / 1000
    rest = m.group(10)
    fm = FIELD_RX.search(rest)
    message = rest[:fm.start()].strip() if fm else rest
    fields = {}
    for k, v in FIELD_RX.findall(rest[fm.start():] if fm else ""):
        if v.startswith('"'):
            v = re.sub(r'\\(.)', r'\1', v[1:-1])
        fields[k] = v
    return t, m.group(8), m.group(9), message, fields


class Failure:
    def __init__(self, invariant, order, detail, lines=()):
        self.invariant, self.order, self.detail, self.lines = invariant, order, detail, list(lines)

    def __repr__(self):
        return "Failure(%s, %s, %s)" % (self.invariant, self.order, self.detail)

    def render(self):
        s = "FAIL %s order=%s: %s" % (self.invariant, self.order or "-", self.detail)
        for l in self.lines[:12]:
            s += "\n    | " + l
        return s


def _segment_events(seg):
    """Parsed log records of a segment: sayings, spoken lines, opened, stopping."""
    out = []
    for line in seg.get("log", []):
        p = parse_log_line(line)
        if p:
            out.append((p, line))
    return out


def _sayings(seg):
    """[(t, ids, seconds, line)] from `alert: saying ids=…`. Speech plays while it is synthesized
    (issue 16), so its length comes from the `alert: synthesized ids=… seconds=…` line that follows
    (an older `saying` line carried `seconds=` itself)."""
    res = []
    events = _segment_events(seg)
    for i, ((t, lvl, comp, msg, f), line) in enumerate(events):
        if comp == "alert" and msg == "saying" and "ids" in f:
            secs = f.get("seconds")
            if secs is None:
                for (t2, _, c2, m2, f2), _ in events[i + 1:]:
                    if c2 == "alert" and m2 == "saying":
                        break
                    if c2 == "alert" and m2 == "synthesized" and f2.get("ids") == f["ids"]:
                        secs = f2.get("seconds")
                        break
            res.append((t, f["ids"].split(","), float(secs or 0), line))
    return res


def _partials(seg):
    """[(t, ids, heard_s)] from `alert: not heard in full ids=… heard_s=…`: an alert cut short;
    its first parts, heard in full within heard_s, are the ones acked spoken (protocol.md,
    "Partial alerts")."""
    res = []
    for (t, lvl, comp, msg, f), line in _segment_events(seg):
        if comp == "alert" and msg == "not heard in full" and "ids" in f and "heard_s" in f:
            try:
                res.append((t, set(f["ids"].split(",")), float(f["heard_s"])))
            except ValueError:
                pass
    return res


def _spoken_lines(seg):
    return [(t, f["id"], line) for (t, lvl, comp, msg, f), line in _segment_events(seg)
            if comp == "alert" and msg == "spoken" and "id" in f]


def loud_between(speech, a, b):
    """Seconds of loud capture inside [a, b]."""
    return sum(max(0.0, min(b, t1) - max(a, t0)) for t0, t1 in speech)


def last_loud_before(speech, a, b):
    ends = [min(b, t1) for t0, t1 in speech if t1 > a and t0 < b]
    return max(ends) if ends else None


def check(rec, skip=()):
    """Every invariant over one record: a list of Failure (empty: the run passed). `skip`: names
    of invariants not to check (the soak's orders all have one priority: priority_not_blocked,
    quadratic in orders, has nothing to find there)."""
    fails = []
    orders = rec["orders"]
    server = rec["server"]
    segs = rec["segments"]

    # --- server side: acks and deliveries per order
    acks, sends, cancels = {}, {}, {}
    for e in server:
        m = e.get("msg") or {}
        if e["dir"] == "recv" and m.get("type") == "ack":
            acks.setdefault(m.get("id"), []).append((e["t"], m, e))
        elif e["dir"] == "send" and m.get("type") == "order":
            sends.setdefault(m.get("id"), []).append(e["t"])
        elif e["dir"] == "send" and m.get("type") == "cancel":
            cancels.setdefault(m.get("id"), []).append(e["t"])

    def ack_lines(oid):
        return ["server t=%.3f conn=%s %s" % (t, e["conn"], _compact(m)) for t, m, e in acks.get(oid, [])]

    def final_acks(oid):
        return [(t, m) for t, m, e in acks.get(oid, []) if m.get("status") in FINAL
                and not (m.get("status") == "rejected" and m.get("reason") in NOT_FINAL_REASONS)]

    for oid, a in acks.items():
        if oid not in orders:
            fails.append(Failure("acked_exactly_once", oid, "ack for an id the server never sent", ack_lines(oid)))

    for oid in orders:
        fa = final_acks(oid)
        if not fa:
            fails.append(Failure("acked_exactly_once", oid,
                                 "never acked with a final status by the end of the run (sent %d times)" % len(sends.get(oid, [])),
                                 ack_lines(oid)))
            continue
        statuses = sorted({m.get("status") for _, m in fa})
        if len(statuses) > 1:
            fails.append(Failure("acked_exactly_once", oid, "acked with different final statuses %s" % statuses, ack_lines(oid)))
        # Each delivery and each cancel is answered by one ack (protocol.md sections 4-6), never more.
        n_acks, n_sends, n_cancels = len(acks.get(oid, [])), len(sends.get(oid, [])), len(cancels.get(oid, []))
        if n_acks > n_sends + n_cancels:
            fails.append(Failure("acked_exactly_once", oid, "%d acks for %d deliveries and %d cancels (one answered twice)" % (
                n_acks, n_sends, n_cancels), ack_lines(oid)))

    # --- device side: what was said
    spoken_at = {}    # id -> [(t, segment index, line)]
    saying_of = {}    # id -> [(t, seconds, seg, line)]
    for seg in segs:
        for t, oid, line in _spoken_lines(seg):
            spoken_at.setdefault(oid, []).append((t, seg["index"], line))
        for t, ids, secs, line in _sayings(seg):
            for oid in ids:
                saying_of.setdefault(oid, []).append((t, secs, seg, line))

    # never spoken twice. A SIGKILL is a power cut: the outcome of an order that finished less
    # than KILL_WINDOW_S before the kill may not have reached the disk, and protocol.md's promise
    # (section 6, "across device reboots") is for a box that stops, not for one whose power is cut
    # in that window. Everything else said twice is a failure.
    for oid, sp in spoken_at.items():
        if len(sp) < 2:
            continue
        sp = sorted(sp)
        for (t0, s0, l0), (t1, s1, l1) in zip(sp, sp[1:]):
            seg0 = segs[s0]
            if (s1 != s0 and seg0.get("end_kind") == "sigkill" and seg0.get("kill_t") is not None
                    and 0 <= seg0["kill_t"] - t0 <= KILL_WINDOW_S):
                continue
            why = "spoken in segment %d and again in segment %d" % (s0, s1)
            if s1 != s0:
                why += " (segment %d ended by %s)" % (s0, seg0.get("end_kind"))
            fails.append(Failure("never_spoken_twice", oid, why, [l0, l1] + ack_lines(oid)))
            break

    # a cancel sent before the order's first delivery: never spoken (protocol.md section 5).
    for oid, cts in cancels.items():
        if oid in sends and min(cts) < min(sends[oid]) and oid in spoken_at:
            fails.append(Failure("cancel_honoured", oid, "cancelled before it was sent, yet spoken",
                                 [l for _, _, l in spoken_at[oid]] + ack_lines(oid)))

    # the log and the ack tell the same story (issue 13 item 16)
    for oid in orders:
        fa = final_acks(oid)
        if not fa:
            continue
        st = fa[-1][1].get("status")
        if st == "spoken" and oid not in spoken_at:
            fails.append(Failure("log_agrees_with_ack", oid, "acked spoken but no `alert: spoken` line in any segment", ack_lines(oid)))
        if st != "spoken" and oid in spoken_at:
            fails.append(Failure("log_agrees_with_ack", oid, "logged `spoken` but acked %s" % st,
                                 [l for _, _, l in spoken_at[oid]] + ack_lines(oid)))

    # `spoken` only for what is in the capture: the last saying before each spoken line must have
    # speech energy in the capture over its length, up to (nearly) its end.
    # (Only orders acked `spoken`: one logged spoken but acked otherwise is log_agrees_with_ack's.)
    # The total counts each saying once: a coalesced alert acks every order in it against the same
    # stretch of capture (CI seed 86226, coalesce_max=10: 34.7 s of speech for 130.8 s "expected",
    # every alert heard).
    expected_of_saying = {}
    for oid, sp in spoken_at.items():
        fa = final_acks(oid)
        if not fa or fa[-1][1].get("status") != "spoken":
            continue
        for t_sp, si, l_sp in sp:
            seg = segs[si]
            if seg.get("speech") is None:
                continue
            cands = [s for s in saying_of.get(oid, []) if s[2] is seg and s[0] <= t_sp + 0.05]
            if not cands:
                fails.append(Failure("spoken_is_in_capture", oid, "`spoken` logged with no `saying` line before it", [l_sp]))
                continue
            t0, secs, _, l_say = max(cands, key=lambda s: s[0])
            # A coalesced alert cut short (SIGTERM, an urgent order): the orders acked spoken are
            # the parts heard in full, all within what was heard (seed 75946: the first of four
            # parts acked after 2.1 s of a 4.3 s alert, the capture ending at 2.4 s).
            ids_said = next((s[1] for s in _sayings(seg) if s[0] == t0 and s[3] == l_say), [])
            cut = [h for tp, ids_cut, h in _partials(seg) if t0 <= tp <= t_sp + 0.5 and ids_cut <= set(ids_said) and oid not in ids_cut]
            if cut:
                secs = min(secs, max(cut))
            # Said while the device was missing: the clip waits and plays once it opens.
            t0 = max(t0, seg.get("capture_start") or t0)
            key = (si, t0, l_say)
            expected_of_saying[key] = max(expected_of_saying.get(key, 0.0), secs)
            a, b = t0 - SLACK_BEFORE_S, t0 + secs + SLACK_AFTER_S
            cap_end = seg.get("capture_end")
            loud = loud_between(seg["speech"], a, b)
            last = last_loud_before(seg["speech"], a, b)
            if secs < 0.05 or loud < 0.1:
                # issue 13 item 12: nothing to say is a rejection, not `spoken`
                fails.append(Failure("spoken_is_in_capture", oid,
                                     "acked spoken after %.1f s of audio (%.2f s loud in the capture)" % (secs, loud),
                                     [l_say, l_sp] + ack_lines(oid)))
            elif secs >= 0.3 and loud < SPEECH_COVER * secs:
                fails.append(Failure("spoken_is_in_capture", oid,
                                     "acked/logged spoken, but the capture has %.2f s of speech in the %.1f s it was said (capture ends %s)" % (
                                         loud, secs, "%.1f s after saying" % (cap_end - t0) if cap_end else "?"),
                                     [l_say, l_sp] + ack_lines(oid)))
            elif cap_end is not None and cap_end < t0 + 0.6 * secs:
                fails.append(Failure("spoken_is_in_capture", oid,
                                     "acked spoken, but the capture ends %.1f s into a %.1f s alert" % (cap_end - t0, secs),
                                     [l_say, l_sp] + ack_lines(oid)))
            elif secs >= 1.0 and (last is None or last < t0 + 0.6 * secs - SLACK_BEFORE_S):
                fails.append(Failure("spoken_is_in_capture", oid,
                                     "the capture's speech stops %.1f s into a %.1f s alert that was acked spoken" % (
                                         (last or t0) - t0, secs), [l_say, l_sp] + ack_lines(oid)))
    total_expected = sum(expected_of_saying.values())
    total_loud = sum(t1 - t0 for seg in segs for t0, t1 in (seg.get("speech") or []))
    if total_expected > 3 and total_loud < SPEECH_COVER * total_expected:
        fails.append(Failure("spoken_is_in_capture", None, "captures hold %.1f s of speech for %.1f s of alerts acked spoken" % (
            total_loud, total_expected)))

    # higher priority never waits behind lower longer than one interruption
    if "priority_not_blocked" not in skip:
        fails += _check_priority(rec, orders, sends, acks, segs)

    # the process: stops in time, survives SIGHUP, never dies by itself, idle is idle
    for seg in segs:
        i = seg["index"]
        lines = seg.get("log", [])[-8:]
        if seg.get("end_kind") == "sigterm":
            ss = seg.get("stop_seconds")
            if ss is None or ss > STOP_S:
                fails.append(Failure("stop_within_6s", None, "segment %d: SIGTERM took %s" % (
                    i, "%.1f s" % ss if ss is not None else "more than %.0f s (then SIGKILLed)" % (STOP_S + 4)), lines))
            elif seg.get("rc") == -15 and not any(" runtime: ready" in l for l in seg.get("log", [])):
                pass  # SIGTERM before the daemon installed its handlers: nothing was received yet
            elif seg.get("rc") not in (0, None):
                fails.append(Failure("stop_within_6s", None, "segment %d: exit status %s after SIGTERM" % (i, seg.get("rc")), lines))
        if seg.get("end_kind") == "exit":
            fails.append(Failure("no_crash", None, "segment %d: the daemon exited by itself with status %s" % (i, seg.get("rc")), lines))
        for t, alive in zip(seg.get("sighup", []), seg.get("alive_after_sighup", [])):
            if not alive:
                rc = seg.get("rc")
                how = "killed by signal %d" % -rc if isinstance(rc, int) and rc < 0 else "exit status %s" % rc
                fails.append(Failure("survives_sighup", None, "segment %d: the daemon died on SIGHUP (%s)" % (i, how), lines))
        for idle in seg.get("idle", []):
            r0, r1 = idle["rss_kb"]
            if idle["cpu"] > IDLE_CPU or r1 > IDLE_RSS_KB or r1 - r0 > IDLE_RSS_GROWTH_KB:
                fails.append(Failure("idle_is_idle", None, "segment %d (%s): %.0f%% of a core over %.0f s idle, RSS %d -> %d kB" % (
                    i, idle.get("what", "idle"), idle["cpu"] * 100, idle["seconds"], r0, r1), lines))

    # a healthy link is kept: the device must not drop a connection on which the server was
    # answering (issue 13 item 7). After a silence/half-open, a drop is what it should do.
    quiet = {}
    for e in server:
        if e["dir"] == "event" and e["event"] == "silence_start":
            quiet.setdefault(e["conn"], []).append([e["t"], None])
        elif e["dir"] == "event" and e["event"] == "silence_end" and quiet.get(e["conn"]):
            quiet[e["conn"]][-1][1] = e["t"]
    for e in server:
        if e["dir"] == "event" and e["event"] == "device_closed":
            if quiet.get(e["conn"]):
                continue
            if _near_stop(e["t"], segs):
                continue
            ctx = ["server t=%.3f conn=%s %s %s" % (x["t"], x["conn"], x["dir"], _compact(x.get("msg")) if x.get("msg") else x["event"])
                   for x in server if x["conn"] == e["conn"]][-10:]
            fails.append(Failure("link_kept_alive", None, "conn %s: the device closed a link whose server never went quiet" % e["conn"], ctx))
    return fails


def _near_stop(t, segs):
    """A device close that a stop/kill of the daemon explains."""
    for seg in segs:
        if seg.get("end") is not None and seg.get("stop_requested", seg["end"]) - 0.5 <= t <= seg["end"] + 1.0:
            return True
    return False


def _check_priority(rec, orders, sends, acks, segs):
    """For each order H: from the delivery that led to its outcome until it starts being said
    (or gets its final ack), lower-priority alerts may play for at most INTERRUPT_S in total."""
    fails = []
    plays = []  # (start, end, ids, prio, seg index, line)
    for seg in segs:
        says = _sayings(seg)
        seg_end = seg.get("stop_requested") or seg.get("end") or float("inf")
        for k, (t, ids, secs, line) in enumerate(says):
            end = t + secs
            if k + 1 < len(says):
                end = min(end, says[k + 1][0])
            end = min(end, seg_end)
            prio = max(orders.get(i, {}).get("priority", 0) for i in ids)
            plays.append((t, end, ids, prio, seg["index"], line))
    for oid, o in orders.items():
        p = o.get("priority", 0)
        ends = [s[0] for s in plays if oid in s[2]]
        fa = [t for t, m, e in acks.get(oid, []) if m.get("status") in FINAL]
        if not sends.get(oid):
            continue
        end_h = min(ends + fa) if (ends or fa) else None
        if end_h is None:
            continue
        dels = [t for t in sends[oid] if t <= end_h]
        if not dels:
            continue
        d = max(dels)  # the delivery the device acted on
        seg = _segment_at(d, segs)
        if seg is None:
            continue
        seg_stop = seg.get("stop_requested") or seg.get("end") or float("inf")
        if end_h > seg_stop:
            end_h = seg_stop
        behind = [(max(s, d), min(e, end_h), l) for s, e, ids, lp, si, l in plays
                  if si == seg["index"] and lp < p and e > d and s < end_h and oid not in ids]
        waited = sum(b - a for a, b, _ in behind if b > a)
        # One interruption includes synthesising the higher one (the cut one plays on meanwhile
        # or the loop is busy): its own synth_ms is allowed on top.
        synth = 0.0
        for s, e, ids, lp, si, l in plays:
            if oid in ids and s == end_h:
                f = parse_log_line(l)
                synth = float(f[4].get("synth_ms", "0") or 0) / 1000 if f else 0.0
        allowed = INTERRUPT_S + synth
        if waited > allowed:
            fails.append(Failure("priority_not_blocked", oid,
                                 "priority %d waited %.1f s behind lower-priority speech (allowed %.1f s: one interruption and its synthesis)" % (
                                     p, waited, allowed),
                                 [l for _, _, l in behind] + ["server t=%.3f delivered %s" % (d, oid)]))
    return fails


def _segment_at(t, segs):
    for seg in segs:
        if seg["start"] <= t <= (seg.get("end") or float("inf")):
            return seg
    return None


def _compact(m):
    import json
    return json.dumps(m, ensure_ascii=False, separators=(",", ":"))


def speech_intervals(samples, rate, t0, frame_s=0.02, threshold=0.01, gap_s=0.05):
    """Loud intervals of a capture in wall time: 20 ms frames whose peak passes `threshold`,
    runs of them merged (not across the pauses between words, so that a neighbouring alert
    cannot fill an alert's window)."""
    n = max(1, int(rate * frame_s))
    out = []
    cur = None
    for i in range(0, len(samples) - n + 1, n):
        frame = samples[i:i + n]
        loud = max(frame) > threshold or -min(frame) > threshold
        if loud:
            a = t0 + i / rate
            b = a + frame_s
            if cur and a - cur[1] <= gap_s:
                cur[1] = b
            else:
                if cur:
                    out.append(cur)
                cur = [a, b]
    if cur:
        out.append(cur)
    return out
