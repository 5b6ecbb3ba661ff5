# Scenario 0, `crier say` on a clock-driven device: no daemon, no server. The capture of
# hw:Loopback,1 (S16_LE 2 ch 48 kHz, set in the config so both ends agree) starts first; after
# 1 s of silence `crier say --config F TEXT` is started; the capture ends 1.5 s after the speech.
# The host check asserts speech after the start, silence before, exit status 0, and prints the
# time from starting the process to the first loud sample (process start + espeak-ng init under
# TCG included).
crier_config "audio.rate = 48000" "audio.channels = 2"
PCM_PARAMS="S16_LE 2 48000"
capture --quiet 1.0 --max-wait 10 --seconds 20 --stop-after-speech 1.5 \
  --trigger-cmd "'$CRIER_BIN' say --config /tmp/crier.conf '新客户来了 42' 2>>'$RESULTS/crier.log'" \
  --out "$RESULTS/capture.wav" --meta "$RESULTS/capture.json"
python3 -c 'import json,sys; m=json.load(open(sys.argv[1])); sys.exit(m.get("trigger_cmd_exit") != 0)' \
  "$RESULTS/capture.json" || fail "crier say failed: $(cat "$RESULTS/crier.log")"
[ ! -s "$RESULTS/failures" ] || { say "failures:"; cat "$RESULTS/failures"; exit 1; }
