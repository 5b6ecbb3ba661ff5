# Scenario 8, background music on a clock-driven device (hw:Loopback): a 15 kHz tone file
# (sox, 44.1 kHz, so libsoxr resamples it) plays as music, quiet enough (peak < 1 % FS) that the
# capture helper counts it as "quiet"; after 1.5 s of it the order "42" is sent from the host's
# order-sim (an order, not `crier say`: a second debug process starting under TCG starves the
# guest). The engine takes queued audio back with snd_pcm_rewind for the speech and hands the
# music in it back to the music buffer. The host check decodes the capture: music before, ducked
# by 18 dB during the speech, restored after, ramp lengths, no skip at the rewind.
# vm-timeout: 300
mkdir -p /tmp/music
sox -n -r 44100 -c 2 -b 16 /tmp/music/tone.wav synth 60 sine 15000 vol 0.12
crier_config "status.on_start = off" "status.on_link_up = off" "music.source = /tmp/music" "input = keyboard"
crier_start
wait_log "$RESULTS/crier.log" ' INFO music: playing file=' 30 || fail "music did not start"
capture --quiet 1.5 --max-wait 30 --seconds 30 --stop-after-speech 6 --trigger-line "stdin 42" \
  --out "$RESULTS/capture.wav" --meta "$RESULTS/capture.json" --pid "$CRIER_PID"
ctl_expect 'ack .*status=spoken' 20 || fail "no 'ack ... status=spoken' from order-sim"
kill -0 "$CRIER_PID" || fail "crier died"
crier_stop
[ ! -s "$RESULTS/failures" ] || { say "failures:"; cat "$RESULTS/failures"; exit 1; }
