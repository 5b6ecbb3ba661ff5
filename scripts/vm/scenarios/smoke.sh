# Smoke test of the simulated hardware itself (no Crier): gpio-sim lines with names, pulls read
# back through the v1 uAPI (libgpiod 1.6 tools), snd-aloop playback → capture, snd-dummy mixer,
# ttyS1 to the host and back. The capture's level is checked on the host (smoke.check.py).

say "gpio: chip $GPIO_CHIP at $GPIO_SYSFS"
gpioinfo "$GPIO_CHIP" > "$RESULTS/gpioinfo.txt"
for o in 17 27 22 23 24; do
  grep -Eq "line +$o: +\"GPIO$o\"" "$RESULTS/gpioinfo.txt" || fail "gpioinfo lacks line $o named GPIO$o"
  [ "$(gpiofind "GPIO$o")" = "$GPIO_CHIP $o" ] || fail "gpiofind GPIO$o"
done
for o in 17 27; do
  [ "$(gpioget "$GPIO_CHIP" $o)" = 1 ] || fail "GPIO$o pulled up should read 1"
  gpio_pull $o pull-down
  [ "$(gpioget "$GPIO_CHIP" $o)" = 0 ] || fail "GPIO$o pulled down should read 0"
  gpio_pull $o pull-up
  [ "$(gpioget "$GPIO_CHIP" $o)" = 1 ] || fail "GPIO$o pulled up again should read 1"
done
# an edge reaches a waiting reader (gpiomon: v1 line events)
gpiomon --num-events=1 --falling-edge "$GPIO_CHIP" 22 > "$RESULTS/gpiomon.txt" &
mon=$!
sleep 0.5; gpio_pull 22 pull-down
for _ in $(seq 50); do kill -0 $mon 2>/dev/null || break; sleep 0.1; done
kill $mon 2>/dev/null && fail "gpiomon saw no falling edge on GPIO22"
grep -q FALLING "$RESULTS/gpiomon.txt" || fail "gpiomon output: $(cat "$RESULTS/gpiomon.txt")"
gpio_pull 22 pull-up
say "gpio ok"

cat /proc/asound/cards > "$RESULTS/cards.txt"
grep -q Loopback "$RESULTS/cards.txt" || fail "no Loopback card"
grep -q Dummy "$RESULTS/cards.txt" || fail "no Dummy card"
sox -n -r 48000 -c 2 -b 16 /tmp/tone.wav synth 2 sine 440 vol 0.5
t0=$(uptime_s)
arecord -q -D hw:Loopback,1 -f S16_LE -r 48000 -c 2 -d 3 "$RESULTS/capture.wav" &
rec=$!
sleep 0.3
aplay -q -D hw:Loopback,0 /tmp/tone.wav || fail "aplay"
wait $rec || fail "arecord"
t1=$(uptime_s)
say "audio: 3 s capture took $(awk -v a=$t0 -v b=$t1 'BEGIN{print b-a}') s (real-time pacing)"

amixer -c Dummy scontrols > "$RESULTS/amixer.txt"
grep -q "'Master'" "$RESULTS/amixer.txt" || fail "snd-dummy has no Master control"
amixer -q -c Dummy sset Master 40% || fail "amixer sset"
amixer -c Dummy sget Master >> "$RESULTS/amixer.txt"
grep -q '\[40%\]' "$RESULTS/amixer.txt" || fail "Master did not move to 40%"
say "mixer ok"

exec {S1}<>/dev/ttyS1
echo "ping hello from ttyS1" >&$S1
IFS= read -r -t 5 reply <&$S1 || fail "no reply on ttyS1"
[ "${reply%$'\r'}" = "pong hello from ttyS1" ] || fail "ttyS1 reply: $reply"
say "serial ok"

# the Crier debug binary (links libswift*.so from /opt/swift through the host share) runs here
if [ -x "$CRIER_BIN" ]; then
  "$CRIER_BIN" --help > "$RESULTS/crier-help.txt" 2>&1 || "$CRIER_BIN" --version > "$RESULTS/crier-help.txt" 2>&1 \
    || { cat "$RESULTS/crier-help.txt"; fail "$CRIER_BIN does not run in the guest"; }
  say "crier binary runs: $(head -n1 "$RESULTS/crier-help.txt")"
else
  say "note: no crier binary at $CRIER_BIN (skipped its check)"
fi
[ ! -s "$RESULTS/failures" ] || { say "failures:"; cat "$RESULTS/failures"; exit 1; }
