# Scenario 8, background music on a clock-driven device (hw:Loopback): a 15 kHz tone file
# (sox, 44.1 kHz, so libsoxr resamples it) plays as music; after 2 s of it an alert is said
# through the daemon (`crier say` over the control socket), so the engine takes queued audio back
# with snd_pcm_rewind and hands the music in it back to the music buffer. The host check decodes
# the capture: music before, ducked by 18 dB during the speech, restored after, ramps, no music
# skip at the rewind, no underrun logged.
# vm-timeout: 300
CRIER_VM_SERVER=
mkdir -p /tmp/music
sox -n -r 44100 -c 2 -b 16 /tmp/music/tone.wav synth 60 sine 15000 vol 0.5
crier_config "audio.rate = 48000" "audio.channels = 2" "status.on_start = off" "music.source = /tmp/music" \
  "input = keyboard"
crier_start
wait_log "$RESULTS/crier.log" ' INFO music: playing file=' 30 || fail "music did not start"
sleep 2
capture --seconds 12 --stop-after-speech 2.5 --loud 0.2 \
  --trigger-cmd "sleep 2; '$CRIER_BIN' say --config /tmp/crier.conf --lang en 'New customer, number forty two' 2>>'$RESULTS/say.log'" \
  --out "$RESULTS/capture.wav" --meta "$RESULTS/capture.json"
crier_stop
[ ! -s "$RESULTS/failures" ] || { say "failures:"; cat "$RESULTS/failures"; exit 1; }
