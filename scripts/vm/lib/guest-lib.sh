# Helpers for guest-side scenario scripts (sourced by scripts/vm/guest.sh).
# ttyS0: console (the host keeps it as console.log); ttyS1: a spare serial port whose far end is
# the host (lines written land in RUN/ttyS1.log; the host answers a line "ping X" with "pong X");
# ttyS2: control channel to the host harness (see ctl_* below).

uptime_s() { cut -d' ' -f1 /proc/uptime; }
say() { echo "[$(uptime_s)] $*"; }
fail() { echo "[$(uptime_s)] FAIL: $*" | tee -a "$RESULTS/failures"; return 1; }

# gpio-sim: one bank like a Pi's GPIO block: 28 lines, offset = BCM number, the buttons named.
GPIO_LINES=(17 27 22 23 24)
setup_gpio_sim() {
  local c=/sys/kernel/config/gpio-sim/crier o
  mkdir "$c" "$c/bank0" || return 1
  echo 28 > "$c/bank0/num_lines"
  echo pinctrl-bcm2835 > "$c/bank0/label"
  for o in "${GPIO_LINES[@]}"; do
    mkdir "$c/bank0/line$o" && echo "GPIO$o" > "$c/bank0/line$o/name"
  done
  echo 1 > "$c/live" || return 1
  GPIO_CHIP=$(cat "$c/bank0/chip_name")
  GPIO_SYSFS="/sys/devices/platform/$(cat "$c/dev_name")/$GPIO_CHIP"
  export GPIO_CHIP GPIO_SYSFS
  # Buttons are active-low with pull-ups on the real board: idle = pulled up.
  for o in "${GPIO_LINES[@]}"; do echo pull-up > "$GPIO_SYSFS/sim_gpio$o/pull"; done
}
# gpio_pull OFFSET pull-up|pull-down   (a button press = pull-down)
gpio_pull() { echo "$2" > "$GPIO_SYSFS/sim_gpio$1/pull"; }

# Control channel to the host harness (scripts/vm/host.py):
#   ctl_send stdin TEXT  → TEXT is written to the scenario's host part's stdin
#   ctl_send mark NAME   → the host notes its monotonic time for NAME
# Lines the host part prints come back as "out TEXT"; ctl_expect REGEX [TIMEOUT] waits for one.
exec {CTL_FD}<>/dev/ttyS2
ctl_send() { printf '%s\n' "$*" >&"$CTL_FD"; }
ctl_expect() {
  local re=$1 t=${2:-10} line end=$((SECONDS + ${2:-10}))
  while ((SECONDS < end)); do
    IFS= read -r -t $((end - SECONDS + 1)) line <&"$CTL_FD" || continue
    line=${line%$'\r'}
    echo "ctl< $line" >> "$RESULTS/ctl.log"
    if [[ $line =~ $re ]]; then CTL_LINE=$line; return 0; fi
  done
  return 1
}

# wait_log FILE REGEX [TIMEOUT]: wait until FILE has a line matching REGEX.
wait_log() {
  local f=$1 re=$2 end=$((SECONDS + ${3:-20}))
  while ((SECONDS < end)); do
    grep -Eq -- "$re" "$f" 2>/dev/null && return 0
    sleep 0.1
  done
  return 1
}

# pcm_params CARD DEV: "FORMAT CHANNELS RATE" of an open playback PCM, from /proc/asound.
pcm_params() {
  local f="/proc/asound/$1/pcm${2}p/sub0/hw_params"
  awk '$1=="format:"{f=$2} $1=="channels:"{c=$2} $1=="rate:"{r=$2} END{if(f)print f, c, r}' "$f"
}

# --- Crier -------------------------------------------------------------------------------------
# crier_config [EXTRA LINES...]: writes /tmp/crier.conf (the contract's keys + extra lines).
# CRIER_VM_DEVICE (default hw:Loopback,0): audio.device; PCM_CARD (Loopback) must name its card.
# CRIER_VM_SERVER (default tcp://10.0.2.100:7000, the host part): empty = no server.
crier_config() {
  {
    echo "audio.device = ${CRIER_VM_DEVICE:-hw:Loopback,0}"
    echo "server = ${CRIER_VM_SERVER-tcp://10.0.2.100:7000}"
    echo "device.id = vm"
    # TCG on a shared 2-core host starves the guest for 100+ ms at times: the product's 80 ms
    # buffer then underruns for reasons a Pi never sees. CRIER_VM_BUFFER_MS=80 tests the default.
    if [ -n "${CRIER_VM_BUFFER_MS:-}" ]; then echo "audio.buffer_ms = $CRIER_VM_BUFFER_MS"; fi
    # Synthesis under TCG (debug build) is ~100x slower than on a Pi: the product's 5 s
    # synthesis deadline would cut ordinary sentences here (60 s is the longest allowed).
    echo "speech.deadline = 60"
    local l; for l in "$@"; do echo "$l"; done
  } > /tmp/crier.conf
  cp /tmp/crier.conf "$RESULTS/crier.conf"
}

# crier_start: starts `crier run` (log in ${CRIER_LOG:-$RESULTS/crier.log}), waits for ' INFO runtime: ready',
# for the PCM to be open and, when a server is configured, for the TCP connection to
# 10.0.2.100:7000. Sets CRIER_PID and PCM_PARAMS ("FORMAT CHANNELS RATE").
crier_start() {
  local t0 log=${CRIER_LOG:-$RESULTS/crier.log}; t0=$(uptime_s)
  "$CRIER_BIN" run --config /tmp/crier.conf 2>>"$log" &
  CRIER_PID=$!
  local end=$((SECONDS + 60))
  until grep -q ' INFO runtime: ready' "$log" 2>/dev/null; do
    if ! kill -0 "$CRIER_PID" 2>/dev/null; then
      local st=0; wait "$CRIER_PID" || st=$?
      tail -n 20 "$log"
      fail "crier run exited (status $st) before logging 'INFO runtime: ready'"; return 1
    fi
    ((SECONDS < end)) || { tail -n 20 "$log"; fail "crier never logged 'INFO runtime: ready' (60 s)"; return 1; }
    sleep 0.1
  done
  say "crier ready after $(awk -v a="$t0" -v b="$(uptime_s)" 'BEGIN{printf "%.2f", b-a}') s (pid $CRIER_PID)"
  # The backend under test (CRIER_VM_GPIOD=1|2) is the one crier says it reads buttons with.
  if [ -n "${CRIER_VM_GPIOD:-}" ] && ! grep -q '^input *= *[^g ]' /tmp/crier.conf; then
    wait_log "$log" ' INFO buttons: reading input=gpio' 10 || { fail "no 'INFO buttons: reading input=gpio' line"; return 1; }
    grep ' INFO buttons: reading input=gpio' "$log" | tail -n1 | grep -q " libgpiod=$CRIER_VM_GPIOD\." \
      || { fail "CRIER_VM_GPIOD=$CRIER_VM_GPIOD but crier says: $(grep ' INFO buttons: reading' "$log" | tail -n1)"; return 1; }
    say "buttons through $(grep -o 'libgpiod=[^ ]*' "$log" | tail -n1)"
  fi
  end=$((SECONDS + 20))
  until PCM_PARAMS=$(pcm_params "${PCM_CARD:-Loopback}" 0) && [ -n "$PCM_PARAMS" ]; do
    ((SECONDS < end)) || { fail "hw:${PCM_CARD:-Loopback},0 not open 20 s after ready"; return 1; }
    sleep 0.1
  done
  say "PCM open: $PCM_PARAMS"
  if grep -q '^server = .' /tmp/crier.conf; then
    # 10.0.2.100:7000 is 6402000A:1B58 in /proc/net/tcp; state 01 = ESTABLISHED
    end=$((SECONDS + 30))
    until awk '$3=="6402000A:1B58" && $4=="01"{f=1} END{exit !f}' /proc/net/tcp; do
      ((SECONDS < end)) || { fail "no TCP connection to 10.0.2.100:7000 within 30 s"; return 1; }
      sleep 0.1
    done
    say "connected to the order server"
    # the reference server prints "device connected device=ID ..." once the hello is through
    if ctl_expect 'device connected' 15; then say "host: $CTL_LINE"
    else say "note: the host part printed no 'device connected' line within 15 s"; fi
  fi
}

crier_stop() {
  [ -n "${CRIER_PID:-}" ] || return 0
  kill -TERM "$CRIER_PID" 2>/dev/null || true
  local i; for i in $(seq 50); do kill -0 "$CRIER_PID" 2>/dev/null || break; sleep 0.1; done
  kill -KILL "$CRIER_PID" 2>/dev/null || true
  wait "$CRIER_PID" 2>/dev/null || true
  CRIER_PID=
}

# onset_ms WAV META: ms from a capture's mark to its first sample above 1 % of full scale, or
# "none" (the first-sound figure of the benchmark's and the loaded scenario's captures).
onset_ms() {  # WAV META: ms from the mark to the first sample above 1 % FS, or "none"
  python3 - "$1" "$2" "$REPO/scripts/vm/lib" <<'PY'
import json, sys
sys.path.insert(0, sys.argv[3])
import wav
rate, x = wav.load(sys.argv[1])
mark = json.load(open(sys.argv[2]))["mark_sample"]
hit = next((i for i in range(mark or 0, len(x)) if abs(x[i]) > 0.01), None) if mark is not None else None
print("none" if hit is None else "%.1f" % ((hit - mark) * 1000 / rate))
PY
}

# capture ARGS...: scripts/vm/lib/capture.py on hw:Loopback,1 with the playback's parameters.
capture() {
  python3 "$REPO/scripts/vm/lib/capture.py" --device hw:Loopback,1 --params "$PCM_PARAMS" "$@"
}
