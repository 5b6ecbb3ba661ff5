# Scenario 3, buttons on a real GPIO chip (gpio-sim, libgpiod v1 uAPI): crier run with the
# default `input = gpio` and the Pi's default lines (GPIO17/27/22/23/24, pull-up, active low);
# a press is the simulated line pulled down (scripts/vm/lib/press.py). The same order ("42",
# the same words each time) is spoken at different volumes and captured from hw:Loopback,1; the
# host check compares the energy of the speech in dB (same clip × gain → 20·log10(gain)):
#   ref    volume 10/10 (0 dB): the reference
#   down3  3 short pulls of GPIO27 (volume down): 3 clicks, each one step (3 dB) quieter, then
#          the order at level 7: 9 dB below ref. Levels follow the press/repeat lines: should
#          the guest be starved so long that a 100 ms pull outlasts hold_ms, repeats are right.
#   floor  GPIO22 (mute): no click, 3 s of silence with the playback PCM running, then the order
#          at the floor (mute.alerts = floor, volume.alert_floor = 4): 18 dB below ref
#   after  GPIO27 held 1.6 s (hold_ms 800, repeat_ms 250) while muted: ends the mute, one step
#          plus one per `repeat` line (one click each, 3 dB apart), then the order at that
#          level: 3 dB × (10 − level) below ref
# vm-timeout: 420
crier_config "status.on_start = off" "status.on_link_up = off" "state.path = /tmp/crier-state" \
  "volume.steps = 10" "volume.min_db = -30" "volume.default = 10" \
  "volume.alert_floor = 4" "mute.alerts = floor" \
  "button.volume_down.hold_ms = 800" "button.repeat_ms = 250"
crier_start
L=$RESULTS/crier.log
for b in volume_up:GPIO17 volume_down:GPIO27 mute:GPIO22 replay:GPIO23 acknowledge:GPIO24; do
  wait_log "$L" "button ${b%%:*}: line ${b#*:} ready at=gpiochip0:${b#*:GPIO}" 20 \
    || fail "no 'button ${b%%:*}: line ${b#*:} ready at=gpiochip0:${b#*:GPIO}' in crier's log"
done
grep -q 'controls: ready.*volume=10/10' "$L" || fail "controls did not start at volume 10/10"
P=$GPIO_SYSFS/sim_gpio
PH=$RESULTS/phases   # "NAME key=value..." lines for the host check
t_sc=$SECONDS

count() { grep -c -- "$1" "$L" || true; }
n_spoken=0
# order_capture NAME [CMD]: once the capture has been quiet for 1 s, runs CMD (button presses,
# which wait for their log lines), then sends the order "42"; captures until 1.5 s after the
# speech. The presses and the order share one capture (one python + arecord start less each).
order_capture() {
  local t0=$SECONDS trig
  if [ -n "${2:-}" ]; then trig=(--trigger-cmd "$2; echo 'stdin 42' > /dev/ttyS2")
  else trig=(--trigger-line "stdin 42"); fi
  capture --quiet 1.0 --max-wait 30 --seconds 60 --stop-after-speech 1.5 --loud 0.02 "${trig[@]}" \
    --watch /proc/asound/Loopback/pcm0p/sub0/status --out "$RESULTS/$1.wav" --meta "$RESULTS/$1.json"
  n_spoken=$((n_spoken + 1))
  ctl_expect 'ack .*status=spoken' 30 || fail "$1: no 'ack ... status=spoken' from order-sim"
  local c; c=$(count 'INFO alert: spoken id=')
  [ "$c" = "$n_spoken" ] || fail "$1: $c 'alert: spoken' lines in crier's log, expected $n_spoken"
  say "$1: captured in $((SECONDS - t0)) s; $(grep 'INFO alert: saying' "$L" | tail -n1 | sed 's/.*saying //')"
}
# presses TAG N REGEX SPEC...: a shell command: press.py with SPEC (one process, no exec between
# the two writes of a press), then wait (20 s at most) until crier's log has N lines matching
# REGEX, plus WAIT s (to hear the last click / the silence).
presses() {
  local tag=$1 n=$2 re=$3 wait=$4; shift 4
  echo "python3 $REPO/scripts/vm/lib/press.py --sysfs $GPIO_SYSFS --log $RESULTS/presses.jsonl --tag $tag $*;" \
       "i=0; until [ \$(grep -c -- '$re' $L) -ge $n ] || [ \$i -ge 100 ]; do sleep 0.2; i=\$((i+1)); done; sleep $wait"
}
vd='button volume_down: press'; vr='button volume_down: repeat'; vc='button volume_down: .*effects=.*click'
# longest TAG: the longest press of press.py --tag TAG, in s (sed, not python: ~3 s less in TCG)
longest() { sed -n "s/.*\"tag\": \"$1\".*\"down_s\": \([0-9.]*\).*/\1/p" "$RESULTS/presses.jsonl" | sort -n | tail -n1; }

order_capture ref
echo "ref level=10" >> "$PH"

# 3 short pulls of GPIO27, then the order
order_capture down3 "$(presses clicks 3 "$vd" 1 27:0.1:0.5 27:0.1:0.5 27:0.1:0.5)"
np=$(count "$vd"); nr=$(count "$vr"); nc=$(count "$vc"); held=$(longest clicks)
say "3 pulls of GPIO27 (longest held ${held} s): $np press lines, $nr repeat lines, $nc clicks"
[ "$np" = 3 ] || fail "3 pulls of GPIO27 gave $np 'button volume_down: press' lines"
if [ "$nr" != 0 ]; then
  if awk -v l="$held" 'BEGIN{exit !(l < 0.6)}'; then
    fail "pulls of GPIO27 no longer than $held s (hold_ms 800) gave $nr 'repeat' lines"
  else
    say "note: the guest was starved: a pull lasted $held s, so $nr repeat(s) are right; levels follow the log"
  fi
fi
lvl=$((10 - np - nr)); ((lvl >= 0)) || lvl=0
echo "down3 level=$lvl clicks=$nc" >> "$PH"

# mute (GPIO22): no click, 3 s of silence, then the order at the floor
order_capture floor "$(presses mute 1 'button mute: press' 3 22:0.1:0)"
[ "$(count 'button mute: press')" = 1 ] || fail "a pull of GPIO22 gave $(count 'button mute: press') 'button mute: press' lines"
grep 'button mute: press' "$L" | grep -q 'prompts=0.000 ' || fail "the mute press did not set the prompt gain to 0: $(grep 'button mute: press' "$L")"
echo "floor level=4 clicks=0 silent_s=3" >> "$PH"

# GPIO27 held 1.6 s while muted: ends the mute, steps, repeats; then the order
nc0=$(count "$vc")
order_capture after "$(presses hold 4 "$vd" 1.5 27:1.6:0)"
np=$(count "$vd"); nr2=$(($(count "$vr") - nr)); nc=$(($(count "$vc") - nc0)); held=$(longest hold)
say "GPIO27 held ${held} s: $((np - 3)) press line(s), $nr2 repeat lines: $(grep "$vr" "$L" | tail -n "$nr2" | sed 's/.*: repeat/repeat/; s/ effects=.*alerts=/ alerts=/; s/).*//' | tr '\n' ' ')"
[ "$np" = 4 ] || fail "the hold of GPIO27 gave $((np - 3)) 'button volume_down: press' lines, expected 1"
[ "$nr2" -ge 1 ] || fail "GPIO27 held $held s (hold_ms 800, repeat_ms 250) gave no 'button volume_down: repeat' line"
lvl=$((lvl - 1 - nr2)); ((lvl >= 0)) || lvl=0
echo "after level=$lvl clicks=$nc" >> "$PH"

say "scenario body took $((SECONDS - t_sc)) s"
kill -0 "$CRIER_PID" || fail "crier died"
crier_stop
cat "$PH"
[ ! -s "$RESULTS/failures" ] || { say "failures:"; cat "$RESULTS/failures"; exit 1; }
