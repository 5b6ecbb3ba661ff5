# Scenario 10, an underrun while speech streams in (issue 16). `crier run` on hw:Loopback,0 is
# asked to say a ~15 s text (`crier say` through its control socket); 0.8 s later, while the text is
# still being synthesized (TCG: ~4 s), the daemon is stopped (SIGSTOP) for 1.5 s, longer than any
# buffer, so the clock-driven device underruns. After SIGCONT the engine must recover, fill the
# device to its start threshold and say the rest: `said on request` within 90 s, an
# `underrun, recovered` line (else the stop proved nothing), nothing stuck. Before the fix the
# engine, writing no further ahead than the speech, left the recovered device a partial period
# short of its start threshold, and it never started again (the clip never ended).
CRIER_VM_SERVER= crier_config "status.on_start = off" "status.on_link_up = off" "status.on_link_down = off"
crier_start
LOG=$RESULTS/crier.log
TEXT="请各位顾客注意，本店今日推出新品，欢迎品尝。取餐时请出示取餐码，谢谢合作。请各位顾客注意，本店今日推出新品，欢迎品尝。"
"$CRIER_BIN" say --config /tmp/crier.conf "$TEXT" > "$RESULTS/say.out" 2>&1 &
SAY=$!
sleep 0.8
kill -STOP "$CRIER_PID"
sleep 1.5
kill -CONT "$CRIER_PID"
say "crier stopped for 1.5 s and continued"
wait_log "$LOG" 'WARN audio: underrun, recovered' 20 || fail "no underrun logged: the stop did not reach the device"
# The warning says why: the thread was stopped 1.5 s, asleep (woke late) or awake (busy) when the
# stop landed; either way slept_ms + busy_ms covers the stop.
u=$(grep -m1 'WARN audio: underrun, recovered' "$LOG")
sb=$(sed -n 's/.* slept_ms=\([0-9.]*\).* busy_ms=\([0-9.]*\).*/\1 \2/p' <<< "$u" | awk '{printf "%d", $1 + $2}')
grep -Eq 'why=("woke late"|busy)$' <<< "$u" || fail "the underrun warning does not say the thread woke late or was busy: $u"
((${sb:-0} >= 1400)) || fail "slept_ms + busy_ms = ${sb:-none}, not the 1.5 s stop: $u"
wait_log "$LOG" 'INFO runtime: said on request' 90 || fail "the text was never said to its end after the underrun (device not restarted?)"
grep -E 'underrun|streaming in|behind playback|said on request' "$LOG" | while IFS= read -r l; do say "crier: ${l#* }"; done
wait "$SAY" 2>/dev/null || say "note: crier say exited $? ($(tr '\n' ' ' < "$RESULTS/say.out"))"
kill -0 "$CRIER_PID" || fail "crier died"
crier_stop
[ ! -s "$RESULTS/failures" ] || { say "failures:"; cat "$RESULTS/failures"; exit 1; }
