# The VM benchmarks' sampler (sourced by idle.sh and music.sh): measure NAME PID appends
# "NAME cpu_pct=… wakeups=… invol=… seconds=… threads=… hwm_kb=…" to $RESULTS/bench.txt, summed over
# the process's threads (/proc/PID/task/*/schedstat and *_ctxt_switches).
measure() {  # measure NAME PID: CPU and wakeups of the process over BENCH_IDLE_S seconds
  python3 - "$1" "$2" "${BENCH_IDLE_S:-60}" >> "$RESULTS/bench.txt" <<'PY'
import os, sys, time
name, pid, secs = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
def counters():
    out = {}
    for t in os.listdir("/proc/%d/task" % pid):
        try:
            cpu = int(open("/proc/%d/task/%s/schedstat" % (pid, t)).read().split()[0])
            st = dict(l.split(":", 1) for l in open("/proc/%d/task/%s/status" % (pid, t)) if ":" in l)
            out[t] = (cpu, int(st["voluntary_ctxt_switches"]), int(st["nonvoluntary_ctxt_switches"]), st["Name"].strip())
        except (OSError, KeyError):
            pass
    return out
a, t0 = counters(), time.monotonic_ns()
time.sleep(secs)
b, t1 = counters(), time.monotonic_ns()
d = [tuple(y - x for x, y in zip(a.get(k, (0, 0, 0)), v[:3])) + (v[3],) for k, v in b.items()]
dt = (t1 - t0) / 1e9
hwm = [l.split()[1] for l in open("/proc/%d/status" % pid) if l.startswith("VmHWM")][0]
thread = lambda n: 100.0 * sum(x[0] for x in d if x[3] == n) / (t1 - t0)  # noqa: E731
print("%s cpu_pct=%.3f wakeups=%.1f invol=%.1f seconds=%.1f threads=%d hwm_kb=%s audio_pct=%.3f music_pct=%.3f" % (
    name, 100.0 * sum(x[0] for x in d) / (t1 - t0), sum(x[1] for x in d) / dt, sum(x[2] for x in d) / dt, dt, len(b), hwm,
    thread("crier-audio"), thread("crier-music")))
PY
}
