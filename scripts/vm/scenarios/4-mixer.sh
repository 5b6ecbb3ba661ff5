# Scenario 4, hardware volume: `audio.mixer = Master` with crier playing on snd-dummy
# (`hw:Dummy,0`, clock-driven; the mixer is looked up on the card of audio.device). Volume keys
# (gpio-sim GPIO27 down, GPIO17 up) must move the Dummy card's Master control, read back with
# `amixer -c Dummy sget Master` (a separate process, through the kernel's control API):
#   before crier  Master set to raw 0 (-30 dB on snd-dummy's -45..0 dB scale)
#   start         volume.default 7 → Master at -9 dB (3 dB per step, volume.min_db -30)
#   2 × GPIO27    → -15 dB;  1 × GPIO17 → -12 dB
# and the PCM keeps RUNNING on hw:Dummy,0 throughout. No order server: nothing is spoken.
# audio.buffer_ms = 300 (CRIER_VM_BUFFER_MS): snd-dummy caps its buffer at 64 KiB, so the
# harness's 400 ms (76800 bytes) becomes 16384 frames, not a whole number of 960-frame periods; crier then fills 17
# periods (16320 frames), its start threshold is the whole buffer, and the PCM stays PREPARED
# for ever with nothing logged (a crier bug, reported). 300 ms = 15 periods in 57600 bytes.
# vm-timeout: 300
CRIER_VM_DEVICE=hw:Dummy,0 CRIER_VM_SERVER= PCM_CARD=Dummy CRIER_VM_BUFFER_MS=300
L=$RESULTS/crier.log
# master_db: "RAW DB" of Master's front left channel, e.g. "70 -9.00"
master() {
  amixer -c Dummy sget Master | tee -a "$RESULTS/amixer.log" \
    | sed -n 's/^ *Front Left: \(Playback \)\?\(-\?[0-9]\+\) \[[0-9]\+%\] \[\(-\?[0-9.]\+\)dB\].*/\2 \3/p' | head -n1
}
# expect_db WHAT DB: Master must read DB (within 0.5 dB: snd-dummy's steps are 0.3 dB); 10 s.
expect_db() {
  local end=$((SECONDS + 10)) m=
  while :; do
    m=$(master)
    awk -v m="${m#* }" -v w="$2" 'BEGIN{d=m-w; if(d<0)d=-d; exit !(m!="" && d<=0.5)}' && break
    ((SECONDS < end)) || { fail "$1: Master reads '${m:-?}' (raw dB), expected $2 dB"; return 0; }
    sleep 0.5
  done
  say "$1: Master $m dB (expected $2)"
  echo "$1 raw=${m% *} db=${m#* } want=$2" >> "$RESULTS/mixer"
}
press() { python3 "$REPO/scripts/vm/lib/press.py" --sysfs "$GPIO_SYSFS" --log "$RESULTS/presses.jsonl" --tag "$@"; }
count() { grep -c -- "$1" "$L" || true; }
wait_count() {
  local end=$((SECONDS + 15)); until [ "$(count "$1")" -ge "$2" ] || ((SECONDS > end)); do sleep 0.2; done
}

amixer -c Dummy sset Master 0 >/dev/null
expect_db before -30
crier_config "status.on_start = off" "audio.mixer = Master" "state.path = /tmp/crier-state" \
  "volume.steps = 10" "volume.min_db = -30" "volume.default = 7"
crier_start
say "hw:Dummy,0: $(grep -h 'period_size\|buffer_size\|start_threshold' /proc/asound/Dummy/pcm0p/sub0/{hw,sw}_params | tr '\n' ' ')"
wait_log "$L" 'INFO [a-z]*: volume on mixer element card=hw:Dummy element=Master' 20 \
  || fail "no 'volume on mixer element card=hw:Dummy element=Master' in crier's log"
expect_db start -9
press down2 27:0.1:0.4 27:0.1:0.4
wait_count 'button volume_down: press' 2
[ "$(count 'button volume_down: press')" = 2 ] || fail "2 pulls of GPIO27 gave $(count 'button volume_down: press') press lines"
expect_db down2 -15
press up1 17:0.1:0.3
wait_count 'button volume_up: press' 1
[ "$(count 'button volume_up: press')" = 1 ] || fail "a pull of GPIO17 gave $(count 'button volume_up: press') press lines"
expect_db up1 -12
st=$(sed -n 's/^state: //p' /proc/asound/Dummy/pcm0p/sub0/status)
[ "$st" = RUNNING ] || fail "hw:Dummy,0 is '$st', expected RUNNING"
grep -E 'ERROR|mixer.*(not found|cannot)' "$L" && fail "crier logged the errors above"
kill -0 "$CRIER_PID" || fail "crier died"
crier_stop
[ ! -s "$RESULTS/failures" ] || { say "failures:"; cat "$RESULTS/failures"; exit 1; }
