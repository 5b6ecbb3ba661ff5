# Scenario 1, order → speech: crier runs in the VM on hw:Loopback,0 and is connected to
# `crier-sim order-sim` on the host (1-order-speech.host). Once the loopback capture (hw:Loopback,1)
# has been quiet for 1.5 s, the order "42" is sent (the capture helper writes it to the host
# through the control port and notes the sample it was sent at); capture goes on until 1.5 s
# after the speech ends (30 s at most).
# The host check asserts: silence before the order, speech after it, the ack; prints the latency
# from sending the order to the first loud sample.
# No spoken status prompts (started / server connected): they would race with the order.
crier_config "status.on_start = off" "status.on_link_up = off"
crier_start
capture --quiet 1.5 --max-wait 30 --seconds 30 --stop-after-speech 1.5 --trigger-line "stdin 42" \
  --out "$RESULTS/capture.wav" --meta "$RESULTS/capture.json" --pid "$CRIER_PID"
ctl_expect 'ack .*status=spoken' 20 || fail "no 'ack ... status=spoken' from order-sim"
say "${CTL_LINE:-}"
kill -0 "$CRIER_PID" || fail "crier died"
crier_stop
[ ! -s "$RESULTS/failures" ] || { say "failures:"; cat "$RESULTS/failures"; exit 1; }
