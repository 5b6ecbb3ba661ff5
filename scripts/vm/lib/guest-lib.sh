# Helpers for guest-side scenario scripts (sourced by scripts/vm/guest.sh).
# ttyS0: console (the host keeps it as console.log); ttyS1: a spare serial port whose far end is
# the host (lines written land in RUN/ttyS1.log; the host echoes each one back as "echo: LINE");
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
