# Scenario 7, button lines on a real kernel (gpio-sim), for either libgpiod backend (run it with
# CRIER_VM_GPIOD=1 and =2: the same script, so the two cannot drift apart). No order server.
#   missing   a name no chip has (GPIO5), a chip that does not exist (gpiochip9:3), an offset
#             the chip lacks (gpiochip0:40): one ERROR each naming button, line and key, no
#             matter how often they are retried (debug "still unavailable" lines), while
#             the other buttons work
#   lookups   a chip by label (pinctrl-bcm2835:22) and by number (0:23); the kernel shows the
#             lines as crier's, with the bias asked for, not inverted (crier applies the active level)
#   active    replay on a pull-down line, active high (a press = the line pulled up)
#   hotplug   a second gpio-sim chip with a line GPIO5 appears: volume_up is taken within a
#             retry (NOTICE ... tries=N) and its press works
#   unplug    that chip goes away while crier holds the line: an ERROR about reading it, the
#             other buttons still work
#   lost      edges the kernel dropped (crier stopped while 21 edges arrive): the level is
#             re-read, the button is not left "held", the next press counts
# vm-timeout: 240
CRIER_VM_SERVER= crier_config "status.on_start = off" "status.on_link_up = off" "status.on_link_down = off" \
  "state.path = /tmp/crier-state" "log.level = debug" \
  "button.volume_up = GPIO5" "button.volume_down = gpiochip9:3" "button.mute = pinctrl-bcm2835:22" \
  "button.replay = 0:23" "button.replay.bias = pull-down" "button.replay.hold_ms = 3000" \
  "button.acknowledge = gpiochip0:40"
crier_start
L=$RESULTS/crier.log
# fixed strings: the messages hold ( ) and dots
count() { grep -cF -- "$1" "$L" || true; }
wait_fixed() { local end=$((SECONDS + $2)); until grep -qF -- "$1" "$L"; do ((SECONDS < end)) || return 1; sleep 0.1; done; }
line() { gpioinfo "$1" | sed -n "s/^[[:space:]]*line[[:space:]]*$2:/line $2:/p"; }

e_up='ERROR buttons: button volume_up: line GPIO5 not found on any gpiochip; retrying every 5 s; check button.volume_up in crier.conf'
e_down='ERROR buttons: button volume_down: gpiochip9 not found (no such gpiochip); retrying every 5 s; check button.volume_down in crier.conf'
e_ack='ERROR buttons: button acknowledge: gpiochip0 has no line 40 (it has 28 lines, 0...27); retrying every 5 s; check button.acknowledge in crier.conf'
for e in "$e_up" "$e_down" "$e_ack"; do wait_fixed "$e" 20 || fail "no '$e' in crier's log"; done
wait_fixed 'INFO buttons: button mute: line pinctrl-bcm2835:22 ready at=gpiochip0:22' 20 || fail "mute (by label) not ready at gpiochip0:22"
wait_fixed 'INFO buttons: button replay: line 0:23 ready at=gpiochip0:23 bias=pull-down' 20 || fail "replay (by number) not ready at gpiochip0:23"
say "kernel: $(line "$GPIO_CHIP" 22) / $(line "$GPIO_CHIP" 23)"
line "$GPIO_CHIP" 22 | grep -q '"crier".*active-high.*pull-up' || fail "line 22 not crier's, active-high, pull-up: $(line "$GPIO_CHIP" 22)"
line "$GPIO_CHIP" 23 | grep -q '"crier".*active-high.*pull-down' || fail "line 23 not crier's, active-high, pull-down: $(line "$GPIO_CHIP" 23)"

sleep 11   # two more retries of each missing line
for e in "$e_up" "$e_down" "$e_ack"; do
  [ "$(count "$e")" = 1 ] || fail "logged $(count "$e") times, expected once: $e"
done
nd=$(count 'still unavailable')
say "after 11 s: each error once, $nd debug retry lines"
((nd >= 6)) || fail "only $nd 'still unavailable' lines: the missing lines are not retried every 5 s"

# the lines that are there work meanwhile: mute (active low), replay (active high: pull-up = pressed)
python3 "$REPO/scripts/vm/lib/press.py" --sysfs "$GPIO_SYSFS" --log "$RESULTS/presses.jsonl" --tag mute 22:0.1:0.3
wait_log "$L" 'button mute: press' 15 || fail "no 'button mute: press' after pulling GPIO22 down"
gpio_pull 23 pull-up; sleep 0.3; gpio_pull 23 pull-down
wait_log "$L" 'button replay: press' 15 || fail "no 'button replay: press' after pulling the active-high GPIO23 up"
[ "$(count 'INFO buttons: button replay: hold')" = 0 ] || fail "a short active-high press was taken as a hold"

# hotplug: a second chip with a line named GPIO5
X=/sys/kernel/config/gpio-sim/extra
mkdir "$X" "$X/bank0"; echo 8 > "$X/bank0/num_lines"; mkdir "$X/bank0/line5"; echo GPIO5 > "$X/bank0/line5/name"
echo 1 > "$X/live"
XCHIP=$(cat "$X/bank0/chip_name"); XSYSFS="/sys/devices/platform/$(cat "$X/dev_name")/$XCHIP"
t_plug=$SECONDS
say "second chip $XCHIP with GPIO5"
wait_fixed "NOTICE buttons: button volume_up: line GPIO5 ready at=$XCHIP:5 tries=" 15 \
  || fail "volume_up not taken within 15 s of GPIO5 appearing on $XCHIP"
tries=$(sed -n 's/.*button volume_up: line GPIO5 ready.*tries=\([0-9]*\).*/\1/p' "$L" | head -n1)
say "GPIO5 taken $((SECONDS - t_plug)) s after it appeared (tries=$tries): $(line "$XCHIP" 5)"
((${tries:-0} >= 3)) || fail "expected tries >= 3, got '${tries:-none}'"
python3 "$REPO/scripts/vm/lib/press.py" --sysfs "$XSYSFS" --log "$RESULTS/presses.jsonl" --tag up 5:0.1:0.3
wait_log "$L" 'button volume_up: press' 15 || fail "no 'button volume_up: press' after pulling GPIO5 down"

# unplug it while crier holds the line
echo 0 > "$X/live"
wait_fixed 'ERROR buttons: button volume_up: line GPIO5: reading events failed' 15 \
  || fail "no 'reading events failed' ERROR after $XCHIP went away"
say "crier: $(grep 'button volume_up: line GPIO5: reading events failed' "$L" | head -n1 | cut -d' ' -f2-)"
python3 "$REPO/scripts/vm/lib/press.py" --sysfs "$GPIO_SYSFS" --log "$RESULTS/presses.jsonl" --tag mute2 22:0.1:0.3
# (each press is logged twice at debug level: the reader's DEBUG line, the INFO with its effects)
end=$((SECONDS + 15)); until [ "$(count 'INFO buttons: button mute: press')" -ge 2 ] || ((SECONDS > end)); do sleep 0.2; done
[ "$(count 'INFO buttons: button mute: press')" = 2 ] || fail "mute no longer works after the other chip went away"
rmdir "$X/bank0/line5" "$X/bank0" "$X" 2>/dev/null || true

# lost events: GPIO22 held down, crier stopped (SIGSTOP), 21 edges ending released; the kernel
# queues 16 per line (v1 keeps the oldest 16: crier would believe "still down"; v2 the newest),
# so crier must re-read the level. Then a new press must count: it would not while crier
# believed the button held.
gpio_pull 22 pull-down
end=$((SECONDS + 15)); until [ "$(count 'INFO buttons: button mute: press')" -ge 3 ] || ((SECONDS > end)); do sleep 0.2; done
[ "$(count 'INFO buttons: button mute: press')" = 3 ] || fail "no third mute press"
kill -STOP "$CRIER_PID"
python3 - "$GPIO_SYSFS/sim_gpio22/pull" <<'PY'
import sys, time
for i in range(21):   # up, down, ..., up: released at the end
    with open(sys.argv[1], "w") as f: f.write("pull-up" if i % 2 == 0 else "pull-down")
time.sleep(1.5)       # older than 1 s: the stamps count as "now" (eventTime), one burst
PY
kill -CONT "$CRIER_PID"
sleep 2
say "after 21 edges while stopped: $(count 'button mute: level resynchronised') resync line(s), $(count 'INFO buttons: button mute: press') mute presses"
python3 "$REPO/scripts/vm/lib/press.py" --sysfs "$GPIO_SYSFS" --log "$RESULTS/presses.jsonl" --tag mute4 22:0.1:0.3
end=$((SECONDS + 15)); until [ "$(count 'INFO buttons: button mute: press')" -ge 4 ] || ((SECONDS > end)); do sleep 0.2; done
[ "$(count 'INFO buttons: button mute: press')" = 4 ] || fail "after lost events, a new press of GPIO22 gave $(($(count 'INFO buttons: button mute: press') - 3)) presses, expected 1 (level not re-read?)"
grep -q 'button mute: down for more than' "$L" && fail "mute reported stuck after the lost events"

kill -0 "$CRIER_PID" || fail "crier died"
crier_stop
grep -q 'INFO buttons: stopped' "$L" || fail "no 'buttons: stopped' after SIGTERM"
[ ! -s "$RESULTS/failures" ] || { say "failures:"; cat "$RESULTS/failures"; exit 1; }
