# Benchmark (scripts/bench.sh), VM part: idle keep-alive on a clock-driven device (hw:Loopback,0).
# 1. crier connected to the host's order-sim, no orders, prompts off: CPU time and wakeups over
#    BENCH_IDLE_S seconds, summed over its threads (/proc/PID/task/*/schedstat and *_ctxt_switches).
# 2. The peer's keep-alive: `aplay -D hw:Loopback,0` playing silence (/dev/zero, same format),
#    with aplay's own default buffer, then with crier's period (20 ms) and buffer.
# Results: $RESULTS/bench.txt, one "name key=value..." line per measurement.
# Not a test: it fails only if a process dies.
: "${BENCH_IDLE_S:=60}"
source "$REPO/scripts/bench/vm/measure.sh"   # measure NAME PID
hwparams() { grep -E '^(period_size|buffer_size|rate):' /proc/asound/Loopback/pcm0p/sub0/hw_params | tr '\n' ' '; }

crier_config "status.on_start = off" "status.on_link_up = off"
crier_start
sleep 2
say "crier params: $(hwparams)"
measure crier "$CRIER_PID"
echo "crier_params $(hwparams)" >> "$RESULTS/bench.txt"
kill -0 "$CRIER_PID" || fail "crier died"
crier_stop
read -r fmt ch rate <<<"$PCM_PARAMS"

aplay -q -D hw:Loopback,0 -t raw -f "$fmt" -c "$ch" -r "$rate" /dev/zero &
APID=$!
sleep 2
say "aplay (default buffer) params: $(hwparams)"
echo "aplay_default_params $(hwparams)" >> "$RESULTS/bench.txt"
measure aplay_default "$APID"
kill "$APID"; wait "$APID" 2>/dev/null || true

buf_us=$(( ${CRIER_VM_BUFFER_MS:-80} * 1000 ))
aplay -q -D hw:Loopback,0 -t raw -f "$fmt" -c "$ch" -r "$rate" --period-time=20000 --buffer-time="$buf_us" /dev/zero &
APID=$!
sleep 2
say "aplay (crier's period/buffer) params: $(hwparams)"
echo "aplay_same_params $(hwparams)" >> "$RESULTS/bench.txt"
measure aplay_same "$APID"
kill "$APID"; wait "$APID" 2>/dev/null || true
cat "$RESULTS/bench.txt"
[ ! -s "$RESULTS/failures" ] || { say "failures:"; cat "$RESULTS/failures"; exit 1; }
