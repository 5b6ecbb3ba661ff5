# Scenario 14, music and orders on a busy box (issue 36): both vCPUs kept busy by stress-ng
# (`--cpu 2 --cpu-method all`, nice 0, as the host benchmark's load) while music plays from a file
# on hw:Loopback and the host's order-sim sends an order whenever the capture has been quiet for
# 1 s. For each order: first sound in the capture (ms from the order's line to the first sample
# above 1 % of full scale) and its `ack ... status=spoken`. Over the whole run: crier's underrun
# lines, clips that ran dry, and how many orders were heard. An underrun fails the run unless a
# vCPU ran nothing of the guest's for about as long as the audio thread woke late (stall
# watchers at FIFO 90 on each vCPU: scripts/vm/lib/stallwatch.py, stallmatch.py): TCG's vCPU
# threads share the host's cores with QEMU's own, and no guest priority helps then.
# Length: CRIER_VM_BENCH_N seconds of load (default 60; `scripts/bench.sh --only vmloaded` runs
# 600). The measuring side (capture.py and its arecord) runs at SCHED_FIFO 10, below crier's audio
# thread (30): an instrument that overruns under the load would report gaps that are not crier's.
# Results: $RESULTS/loaded.txt ("firstsound N MS", then "underruns U", "underruns_crier C",
# "underruns_emulator E", "stalls S", "stall_max_ms M", "dry D", "orders N heard H");
# $RESULTS/underruns.txt (each underrun and whose), $RESULTS/stalls.txt (each vCPU stall).
# vm-timeout: 1200
SECS=$(sed -n "s/^CRIER_VM_BENCH_N='\([0-9]*\)'$/\1/p" "$RESULTS/job.env")
: "${SECS:=60}"
command -v stress-ng >/dev/null || { fail "stress-ng missing (vm-test.sh installs it on the host)"; exit 1; }
mkdir -p /tmp/music
sox -n -r 44100 -c 2 -b 16 /tmp/music/tone.wav synth 60 sine 15000 vol 0.12
crier_config "status.on_start = off" "status.on_link_up = off" "status.on_link_down = off" \
  "music.source = /tmp/music" "input = keyboard"
crier_start
wait_log "$RESULTS/crier.log" ' INFO music: playing file=' 30 || fail "music did not start"
grep -o 'audio thread: [^"]*' "$RESULTS/crier.log" | head -n1 | sed 's/^/crier: /'
# One stall watcher per vCPU (scripts/vm/lib/stallwatch.py: FIFO 90, pinned): a vCPU that ran
# nothing of the guest's for a while, whatever its priority, is the emulator's doing.
WATCH=()
for ((c = 0; c < $(nproc); c++)); do
  python3 "$REPO/scripts/vm/lib/stallwatch.py" --cpu "$c" --out "$RESULTS/stalls.txt" & WATCH+=($!)
done
stress-ng --cpu 2 --cpu-method all --timeout 0 --quiet &
LOAD_PID=$!
sleep 2
kill -0 "$LOAD_PID" || fail "stress-ng exited at once"
say "load: stress-ng --cpu 2 --cpu-method all (pid $LOAD_PID) for $SECS s; $(cut -d' ' -f1-3 /proc/loadavg)"
: > "$RESULTS/loaded.txt"
n=0 heard=0 end=$((SECONDS + SECS))
while ((SECONDS < end)); do
  n=$((n + 1)); num=$((100 + n)); f="$RESULTS/loaded-$n"
  chrt -f 10 python3 "$REPO/scripts/vm/lib/capture.py" --device hw:Loopback,1 --params "$PCM_PARAMS" \
    --quiet 1.0 --max-wait 60 --seconds 20 --stop-after-speech 0.3 --trigger-line "stdin $num" \
    --out "$f.wav" --meta "$f.json" >/dev/null || { fail "capture failed (order $num)"; break; }
  ms=$(onset_ms "$f.wav" "$f.json")
  if [ "$ms" = none ]; then fail "order $num: nothing heard within 20 s"
  else heard=$((heard + 1)); echo "firstsound $num $ms" >> "$RESULTS/loaded.txt"; fi
  ctl_expect "ack .*status=spoken" 60 || fail "order $num: no 'ack ... status=spoken' within 60 s"
  say "order $num: first sound $ms ms"
  rm -f "$f.wav"
  kill -0 "$CRIER_PID" || { fail "crier died"; break; }
done
kill "$LOAD_PID" 2>/dev/null || true; wait "$LOAD_PID" 2>/dev/null || true
kill "${WATCH[@]}" 2>/dev/null || true; wait "${WATCH[@]}" 2>/dev/null || true
kill -0 "$CRIER_PID" || fail "crier died"
crier_stop
under=$(grep -Ec '(underrun|suspended), recovered' "$RESULTS/crier.log" || true)
susp=$(grep -c 'suspended, recovered' "$RESULTS/crier.log" || true)
dry=$(grep -c 'speech synthesis is behind playback' "$RESULTS/crier.log" || true)
# Each underrun against the vCPU stalls: the emulator's when the audio thread woke late by about
# as long as a vCPU ran nothing of the guest's then; every other one (and any suspend) is crier's.
python3 "$REPO/scripts/vm/lib/stallmatch.py" "$RESULTS/crier.log" "$RESULTS/stalls.txt" > "$RESULTS/underruns.txt"
ucrier=$(tail -n1 "$RESULTS/underruns.txt" | awk '{print $2}'); uemu=$(tail -n1 "$RESULTS/underruns.txt" | awk '{print $4}')
ucrier=$((ucrier + susp))
nst=$(wc -l < "$RESULTS/stalls.txt" 2>/dev/null || echo 0)
mst=$(awk 'BEGIN{m=0} $2>m{m=$2} END{printf "%.0f", m}' "$RESULTS/stalls.txt" 2>/dev/null || echo 0)
{ echo "underruns $under"; echo "underruns_crier $ucrier"; echo "underruns_emulator $uemu"; echo "stalls $nst"; echo "stall_max_ms ${mst:-0}"
  echo "dry $dry"; echo "orders $n heard $heard"; } >> "$RESULTS/loaded.txt"
say "loaded run: $n orders, $heard heard, $under underrun lines ($ucrier crier's, $uemu during a vCPU stall), $dry clips ran dry; $nst vCPU stalls of 20 ms or more (longest ${mst:-0} ms); first sound p50 $(
  awk '$1=="firstsound"{print $3}' "$RESULTS/loaded.txt" | sort -n | awk '{a[NR]=$1} END{if(NR) print a[int((NR+1)/2)]; else print "-"}') ms"
head -n -1 "$RESULTS/underruns.txt" | while IFS= read -r l; do say "$l"; done
((ucrier == 0)) || fail "$ucrier underrun(s) under load not explained by a vCPU stall"
[ ! -s "$RESULTS/failures" ] || { say "failures:"; cat "$RESULTS/failures"; exit 1; }
