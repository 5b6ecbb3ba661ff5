# Benchmark (scripts/bench.sh --only vm-firstsound), VM part: order → first sound on a clock-driven
# device (hw:Loopback,0), Crier and the peer in the same VM run (issue 16). Both get the same text
# orders from the same order server on the host (firstsound_server.py, bench.py's texts: one order,
# the ten-number alert, 500 characters); the peer is scripts/bench/peer.sh (socat + espeak-ng |
# aplay per order) with the voice settings Crier is given. For each order the capture of
# hw:Loopback,1 is marked when the guest writes the command to the host, after 0.8 s of quiet;
# first sound = the first sample above 1 % of full scale after the mark. Absolute times here measure
# the emulator (TCG, every instruction ~100× a native one); the ratio Crier : peer is the figure.
# Results: $RESULTS/bench.txt, lines "firstsound WHO LABEL MS" (BENCH_FS_N per text, after one
# warm-up each; CRIER_VM_BENCH_N on the host sets BENCH_FS_N). The capture ends at the first 30 ms
# pause after something loud (15 s at most), so a long text is not waited for. Not a test: it fails only if a process dies or nothing is heard.
# vm-timeout: 900
BENCH_FS_N=$(sed -n "s/^CRIER_VM_BENCH_N='\([0-9]*\)'$/\1/p" "$RESULTS/job.env")   # vm-test.sh CRIER_VM_BENCH_N
: "${BENCH_FS_N:=5}"
VOICE=cmn-latn-pinyin RATE=350 PITCH=40 AMP=100   # as scripts/bench/bench.py
side() {  # side WHO: every text, BENCH_FS_N + 1 times
  local who=$1 label i f ms
  for label in one ten long; do
    for i in $(seq 0 "$BENCH_FS_N"); do
      f="$RESULTS/fs-$who-$label-$i"
      capture --quiet 0.8 --max-wait 60 --seconds 15 --stop-after-speech 0.03 --trigger-line "stdin T $label" \
        --out "$f.wav" --meta "$f.json" >/dev/null || fail "capture failed ($who $label $i)"
      ms=$(onset_ms "$f.wav" "$f.json")
      [ "$ms" != none ] || fail "$who: nothing heard within 15 s of the order ($label, run $i)"
      say "$who $label run $i: first sound $ms ms"
      ((i == 0)) || echo "firstsound $who $label $ms" >> "$RESULTS/bench.txt"
      if [ "$who" = crier ]; then
        echo "stdin C" > /dev/ttyS2
      else
        pkill -x espeak-ng 2>/dev/null || true; pkill -x aplay 2>/dev/null || true
      fi
      rm -f "$f.wav"
    done
  done
}
crier_config "status.on_start = off" "status.on_link_up = off" "status.on_link_down = off" \
  "speech.lang = zh" "speech.zh.voice = $VOICE" "speech.zh.rate = $RATE" "speech.zh.pitch = $PITCH" "speech.zh.volume = $AMP"
crier_start
sleep 1
side crier
kill -0 "$CRIER_PID" || fail "crier died"
crier_stop
# Streamed clips that ran dry (synthesis behind playback) and underruns, over Crier's whole side.
echo "dry crier $(grep -c 'speech synthesis is behind playback' "$RESULTS/crier.log" || true) $(grep -Ec '(underrun|suspended), recovered' "$RESULTS/crier.log" || true)" >> "$RESULTS/bench.txt"
# The peer connects to the same server once Crier has gone (its orders all ended: spoken or cancelled).
PEER_DEVICE=plughw:Loopback,0 PEER_VOICE=$VOICE PEER_RATE=$RATE PEER_PITCH=$PITCH PEER_AMPLITUDE=$AMP \
  bash "$REPO/scripts/bench/peer.sh" 10.0.2.100 7000 > "$RESULTS/peer.log" 2>&1 &
PEER_PID=$!
sleep 2
kill -0 "$PEER_PID" || fail "the peer (socat) did not stay connected: $(cat "$RESULTS/peer.log")"
side peer
kill "$PEER_PID" 2>/dev/null || true
cat "$RESULTS/bench.txt"
[ ! -s "$RESULTS/failures" ] || { say "failures:"; cat "$RESULTS/failures"; exit 1; }
