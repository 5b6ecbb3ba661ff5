# Benchmark (scripts/bench/music.sh --vm), VM part: CPU of background music on a clock-driven
# device (hw:Loopback,0, QEMU TCG: every figure ~100× a native one; compare rows, not absolutes).
# crier connected to nothing, prompts off, BENCH_IDLE_S seconds each (CRIER_VM_BENCH_N on the host):
#   none   no music (the keep-alive alone)
#   mp3    a 30 s MP3 at 44.1 kHz (libsndfile + libmpg123, resampled by libsoxr to 48 kHz)
#   fifo   raw 44100:16:2 PCM written in real time by a player into a FIFO (resampled)
# Results: $RESULTS/bench.txt ("music_NAME cpu_pct=… audio_pct=… music_pct=…"). Not a test: it
# fails only if a process dies or the music never starts.
# vm-timeout: 600
BENCH_IDLE_S=$(sed -n "s/^CRIER_VM_BENCH_N='\([0-9]*\)'$/\1/p" "$RESULTS/job.env")
: "${BENCH_IDLE_S:=30}"
source "$REPO/scripts/bench/vm/measure.sh"
mkdir -p /tmp/mp3
python3 - /tmp/mp3/a.mp3 "$REPO/scripts/bench" <<'PY'
import sys
sys.path.insert(0, sys.argv[2])
from music import write_mp3   # the host benchmark's file: a chord, so the decoder has real work
write_mp3(sys.argv[1], 30, 220, 0.8)
PY
sox -n -r 44100 -c 2 -b 16 -e signed -t raw /tmp/tone.raw synth 5 sine 220 vol 0.8
one() {  # one NAME [CONFIG LINES]
  local name=$1; shift
  CRIER_VM_SERVER= crier_config "status.on_start = off" "status.on_link_up = off" "status.on_link_down = off" "$@"
  CRIER_LOG="$RESULTS/crier-$name.log" crier_start
  if [ "$name" != none ]; then
    wait_log "$RESULTS/crier-$name.log" ' INFO music: .*playing' 30 || fail "music ($name) did not start"
  fi
  sleep 3
  measure "music_$name" "$CRIER_PID"
  kill -0 "$CRIER_PID" || fail "crier died ($name)"
  crier_stop
}
one none
one mp3 "music.source = /tmp/mp3"
# A player writing 44100:16:2 in real time, 20 ms at a time (as scripts/bench/music.py's feeder).
python3 - /tmp/music.pcm /tmp/tone.raw <<'PY' &
import os, sys, time
fifo, data = sys.argv[1], open(sys.argv[2], "rb").read()
while not os.path.exists(fifo):
    time.sleep(0.05)
with open(fifo, "wb") as w:
    step, t, pos = 44100 * 4 // 50, time.monotonic(), 0
    while True:
        w.write(data[pos:pos + step]); w.flush()
        pos = (pos + step) % (len(data) - step)
        t += 0.02
        time.sleep(max(0, t - time.monotonic()))
PY
FEED=$!
one fifo "music.source = fifo:/tmp/music.pcm"   # music.fifo_format: the default 44100:16:2
kill "$FEED" 2>/dev/null || true
cat "$RESULTS/bench.txt"
[ ! -s "$RESULTS/failures" ] || { say "failures:"; cat "$RESULTS/failures"; exit 1; }
