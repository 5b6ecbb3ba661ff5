# Scenario 2, keep-alive: crier connected to the order server, no orders. Once the capture has
# been quiet for 1 s, 10 s are watched: the playback PCM's /proc status is polled every 20 ms
# (state must be RUNNING at every poll, its trigger_time must never change = no restart after an
# xrun or a close, hw_ptr must keep moving), the capture must be continuous near-silence (host
# check) and crier's CPU time over the window is printed.
# No spoken status prompts (started / server connected): they would race with the window.
crier_config "status.on_start = off" "status.on_link_up = off"
crier_start
capture --quiet 1.0 --max-wait 30 --seconds 10 --watch /proc/asound/Loopback/pcm0p/sub0/status \
  --pid "$CRIER_PID" --out "$RESULTS/capture.wav" --meta "$RESULTS/capture.json"
kill -0 "$CRIER_PID" || fail "crier died"
crier_stop
grep -Ei 'xrun|underrun' "$RESULTS/crier.log" && say "note: crier logged the xrun/underrun lines above (the host check fails only for those inside the window)"
[ ! -s "$RESULTS/failures" ] || { say "failures:"; cat "$RESULTS/failures"; exit 1; }
