# Scenario 14, music and orders on a busy box (issue 36): both vCPUs kept busy by stress-ng
# (`--cpu 2 --cpu-method all`, nice 0, as the host benchmark's load) while music plays from a file
# on hw:Loopback and the host's order-sim sends an order whenever the capture has been quiet for
# 1 s. For each order: first sound in the capture (ms from the order's line to the first sample
# above 1 % of full scale) and its `ack ... status=spoken`. Over the whole run: crier's underrun
# lines (must be 0), clips that ran dry, and how many orders were heard.
# Length: CRIER_VM_BENCH_N seconds of load (default 60; `scripts/bench.sh --only vmloaded` runs
# 600). The measuring side (capture.py and its arecord) runs at SCHED_FIFO 10, below crier's audio
# thread (30): an instrument that overruns under the load would report gaps that are not crier's.
# Results: $RESULTS/loaded.txt ("firstsound N MS", then "underruns U", "dry D", "orders N heard H").
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
kill -0 "$CRIER_PID" || fail "crier died"
crier_stop
under=$(grep -Ec '(underrun|suspended), recovered' "$RESULTS/crier.log" || true)
dry=$(grep -c 'speech synthesis is behind playback' "$RESULTS/crier.log" || true)
{ echo "underruns $under"; echo "dry $dry"; echo "orders $n heard $heard"; } >> "$RESULTS/loaded.txt"
say "loaded run: $n orders, $heard heard, $under underrun lines, $dry clips ran dry; first sound p50 $(
  awk '$1=="firstsound"{print $3}' "$RESULTS/loaded.txt" | sort -n | awk '{a[NR]=$1} END{if(NR) print a[int((NR+1)/2)]; else print "-"}') ms"
((under == 0)) || { grep -E '(underrun|suspended), recovered' "$RESULTS/crier.log" | head -n 5; fail "$under underrun(s) under load"; }
[ ! -s "$RESULTS/failures" ] || { say "failures:"; cat "$RESULTS/failures"; exit 1; }
