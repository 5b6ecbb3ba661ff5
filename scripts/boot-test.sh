#!/usr/bin/env bash
# Boots the amd64 Crier image in QEMU (TCG, no KVM) and proves it works end to end:
#
#   scripts/boot-test.sh [--arch amd64] [IMAGE]   (default out/crier-amd64.img, or its .img.xz)
#   scripts/boot-test.sh --arch arm64 [IMAGE]     the Pi image as a raspi3b: boot-test-arm64.sh
#
#  1. copies the image (sparse, 256 MiB bigger: a card larger than the image) and prepares the
#     copy for the test only:
#     - crier.conf on the FAT partition (mcopy): server = tcp://10.0.2.100:7000, device.id = qemu,
#       input = fifo:/run/crier/buttons (button presses from a test unit)
#     - /etc/asound.conf on the root (debugfs): the VM has no sound card, so ALSA's default
#       device becomes a "file" PCM recording to /tmp; crier can then speak and ack "spoken".
#     - test units: one prints the system state, one (first boot only) presses volume down
#       through the FIFO so crier writes its state file.
#  2. starts `crier order-sim` on the host loopback, boots the copy with the kernel/initrd of the
#     build (IMAGE's .vmlinuz/.initrd/.cmdline), -nographic, serial console captured to a file,
#     network ONLY -nic user,restrict=on,guestfwd=tcp:10.0.2.100:7000-... to 127.0.0.1:PORT
#     (per connection through socat; BOOT_TEST_GUESTFWD=tcp for QEMU's single tcp chardev)
#  3. boot 1 (bounded, BOOT_TIMEOUT=180 s): crier's "runtime: ready"; the image's layout line
#     ("crier-image: / ro (slot A, crier-root, writes refused), /var/lib/crier rw on crier-data, ...");
#     crier-data grown to the end of the disk; the system "running"; one order spoken and acked
#     ("status=spoken", "alert: spoken"); volume down pressed and crier's state file written.
#     Then the plug is pulled (QEMU killed, no shutdown).
#  4. boot 2, same disk: the layout line again, no second growth, crier loads the state file of
#     boot 1 with the volume set there; ACPI power-off. Afterwards the root partition must be
#     byte for byte what it was before boot 1, and both ext4 file systems clean (e2fsck -fn).
#  Prints sizes and boot-to-ready times.
# An image built without crier (no --deb) is checked on the boot path instead (boot 1 only):
# systemd reaches multi-user.target, the layout line, and a probe unit (added to the copy)
# reaches the host through guestfwd and prints the server's answer on the serial console.
# Exit 0 on success; otherwise non-zero with the whole serial log printed. The serial log is
# kept next to the image as <image>.serial.log.
# Env: BOOT_TIMEOUT (s, default 180), CRIER_HOST_BIN (the host's crier for order-sim; default
# .build/release/crier or .build/debug/crier), QEMU_SMP (default 2), QEMU_MEM (MiB, default 512).
set -euo pipefail
# --arch arm64: the Raspberry Pi image on QEMU's raspi3b (scripts/boot-test-arm64.sh).
if [ "${1:-}" = --arch ]; then
  case "${2:-}" in
    arm64) shift 2; exec bash "$(dirname "$0")/boot-test-arm64.sh" "$@" ;;
    amd64) shift 2 ;;
    *) echo "boot-test: --arch amd64|arm64, not '${2:-}'" >&2; exit 2 ;;
  esac
fi
source "$(dirname "$0")/env.sh"

IMG="${1:-$ROOT/out/crier-amd64.img}"
BOOT_TIMEOUT="${BOOT_TIMEOUT:-180}"
ORDER_TIMEOUT="${ORDER_TIMEOUT:-60}"
T0=$(date +%s.%N)
elapsed() { awk -v a="$1" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }'; }
say() { printf '[boot-test %6ss] %s\n' "$(elapsed "$T0")" "$*"; }

# ---- host tools ------------------------------------------------------------------------------
missing=()
for p in qemu-system-x86 mtools e2fsprogs fdisk xz-utils python3 socat iproute2; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  say "installing ${missing[*]}"
  SUDO=""; [ "$(id -u)" = 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# ---- inputs ----------------------------------------------------------------------------------
IMG="${IMG%.xz}"
base="${IMG%.img}"
WORK="$(mktemp -d /tmp/crier-boot-test.XXXXXX)"
SERIAL="$WORK/serial1.log"          # the console of the boot in progress (serial1, serial2)
QEMU_PID="" SIM_PID="" PROBE_PID=""
serial_logs() {
  for f in "$WORK"/serial1.log "$WORK"/serial2.log; do
    [ -f "$f" ] || continue
    f2="${f##*/serial}"; echo "===== serial console, boot ${f2%.log} ====="
    tr -d '\r' < "$f"
  done
}
cleanup() {
  local rc=$?
  for p in $QEMU_PID $SIM_PID $PROBE_PID; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  [ -f "$WORK/serial1.log" ] && serial_logs > "$base.serial.log" 2>/dev/null || true
  rm -rf "$WORK"
  exit $rc
}
trap cleanup EXIT
fail() {
  say "FAILED: $*"
  [ -f "$WORK/serial1.log" ] && serial_logs || echo "(no serial output)"
  echo "===== end of serial log ====="
  [ -s "$WORK/server.log" ] && { echo "===== order server output ====="; cat "$WORK/server.log"; }
  exit 1
}

if [ ! -f "$IMG" ] && [ -f "$IMG.xz" ]; then
  say "decompressing $(basename "$IMG").xz"
  xz -dc -T2 "$IMG.xz" | cp --sparse=always /dev/stdin "$WORK/disk.img"
elif [ -f "$IMG" ]; then
  cp --sparse=always "$IMG" "$WORK/disk.img"
else
  fail "no image at $IMG(.xz): run scripts/build-image.sh --arch amd64 first"
fi
for f in vmlinuz initrd cmdline; do [ -f "$base.$f" ] || fail "missing $base.$f (kept next to the image by build-image.sh)"; done
DISK="$WORK/disk.img"
# A card is bigger than the image: 256 MiB more lets crier-growdata show its first-boot growth.
truncate -s +256M "$DISK"

mapfile -t starts < <(sfdisk -d "$DISK" | sed -n 's/.*start= *\([0-9]*\),.*/\1/p')
mapfile -t sizes < <(sfdisk -d "$DISK" | sed -n 's/.*size= *\([0-9]*\),.*/\1/p')
((${#starts[@]} == 4)) || fail "expected 4 partitions (boot, slot A, slot B, crier-data), found ${#starts[@]}"
FAT="$DISK@@$((starts[0] * 512))"
EXT="$DISK?offset=$((starts[1] * 512))"
DATAFS="$DISK?offset=$((starts[3] * 512))"
# root_sum: sha256 of the whole root partition (it must never change: the root is read-only).
root_sum() { dd if="$DISK" bs=1M iflag=skip_bytes,count_bytes skip=$((starts[1] * 512)) count=$((sizes[1] * 512)) status=none | sha256sum | cut -d' ' -f1; }
export MTOOLS_SKIP_CHECK=1

# ---- test-only changes to the copy ---------------------------------------------------------
# crier.conf: the image's file with the two test keys replaced.
{ mtype -i "$FAT" ::/crier.conf 2>/dev/null | tr -d '\r' | grep -vE '^[[:space:]]*(server|device\.id|input)[[:space:]]*=' || true
  echo "server = tcp://10.0.2.100:7000"
  echo "device.id = qemu"
  echo "input = fifo:/run/crier/buttons"; } > "$WORK/crier.conf"
mcopy -o -i "$FAT" "$WORK/crier.conf" ::/crier.conf

# ALSA: no sound card in the VM. The image's /etc/asound.conf (the package's named outputs)
# stays; appended to it, ALSA's default device becomes a "file" PCM on the null device that
# records what crier plays to /tmp (crier's private /tmp: its unit has PrivateTmp=yes), so
# speaking works and is acked. crier.conf's audio.device is "default" unless a shop changes it.
debugfs -R "cat /etc/asound.conf" "$EXT" > "$WORK/asound.conf" 2>/dev/null || true
cat >> "$WORK/asound.conf" <<'EOF'

# --- boot-test only (scripts/boot-test.sh): the VM has no sound card ---
pcm.!default {
    type file
    slave.pcm "null"
    file "/tmp/crier-boot-test.raw"
    format "raw"
}
EOF
printf 'rm /etc/asound.conf\nwrite %s /etc/asound.conf\n' "$WORK/asound.conf" | debugfs -w -f - "$EXT" >/dev/null 2>&1
debugfs -R "cat /etc/asound.conf" "$EXT" 2>/dev/null | grep -q 'boot-test only' || fail "debugfs could not write /etc/asound.conf"

# A state unit (test copy only) prints on the serial console how the boot ended: systemd's
# own "Reached target" lines stop once a getty owns the console.
cat > "$WORK/state.service" <<'EOF2'
[Unit]
Description=boot-test: report the system state on the console
[Service]
# simple, not oneshot: a oneshot's start job would keep the boot from ever finishing
Type=simple
# The end state of the boot, then every journal line of this boot about a write the read-only
# root refused (EROFS): the boot test fails on any.
ExecStart=/bin/sh -c 'echo "crier-boot-state: $(systemctl is-system-running --wait) failed units: [$(systemctl --failed --no-legend --plain | cut -d" " -f1 | tr "\\n" " ")]"; journalctl -b --no-pager -o short-monotonic | grep -i "read-only file system" | head -n 5 | sed "s/^/crier-boot-erofs: /"; echo "crier-boot-erofs: end"'
StandardOutput=journal+console
[Install]
WantedBy=multi-user.target
EOF2
# Puts a test-only unit FILE into the image as NAME.service, enabled for multi-user.target.
add_unit() {
  debugfs -w -f - "$EXT" >/dev/null 2>&1 <<EOF2 || fail "debugfs could not add the unit $1"
write $2 /etc/systemd/system/$1.service
cd /etc/systemd/system/multi-user.target.wants
symlink $1.service /etc/systemd/system/$1.service
EOF2
}
add_unit crier-boot-state "$WORK/state.service"

HAVE_CRIER=0
debugfs -R "stat /usr/bin/crier" "$EXT" 2>&1 | grep -q '^Inode:' && HAVE_CRIER=1

if ((HAVE_CRIER)); then
  # First boot only (no state file yet): press volume down through crier's button FIFO (the
  # crier.conf above), so crier writes /var/lib/crier/state on crier-data; the unit prints the
  # file's volume once it is there. Boot 2 must find that volume.
  cat > "$WORK/press.service" <<'EOF2'
[Unit]
Description=boot-test: press volume down once so crier saves its state
After=crier.service
RequiresMountsFor=/var/lib/crier
ConditionPathExists=!/var/lib/crier/state
[Service]
Type=simple
ExecStart=/bin/sh -c 'for i in $(seq 240); do [ -p /run/crier/buttons ] && break; sleep 0.5; done; echo "volume_down 0" > /run/crier/buttons; sleep 0.3; echo "volume_down 1" > /run/crier/buttons; for i in $(seq 60); do [ -s /var/lib/crier/state ] && break; sleep 0.5; done; sleep 1; echo "crier-boot-press: volume_down pressed; /var/lib/crier/state: $(grep -E "^(volume|muted)=" /var/lib/crier/state | tr "\\n" " ")"'
StandardOutput=journal+console
[Install]
WantedBy=multi-user.target
EOF2
  add_unit crier-boot-press "$WORK/press.service"
fi

# ---- host side: the order server on loopback ------------------------------------------------
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
PORT=$(free_port)
mkfifo "$WORK/orders"
if ((HAVE_CRIER)); then
  HOST_BIN="${CRIER_HOST_BIN:-}"
  for c in "$ROOT/.build/release/crier" "$ROOT/.build/debug/crier"; do
    [ -z "$HOST_BIN" ] && [ -x "$c" ] && HOST_BIN="$c"
  done
  [ -n "$HOST_BIN" ] || fail "no host crier for order-sim: run 'swift build' (or set CRIER_HOST_BIN)"
  say "order server: $HOST_BIN order-sim --host 127.0.0.1 --port $PORT --every 0"
  # Its stdin is a FIFO held open read-write here (opening it read-only would block until a
  # writer appears); each line written to fd 4 is one order.
  exec 4<>"$WORK/orders"
  "$HOST_BIN" order-sim --host 127.0.0.1 --port "$PORT" --every 0 <&4 > "$WORK/server.log" 2>&1 &
  SIM_PID=$!
  READY_RE='runtime: ready'
else
  # No crier in the image: a probe unit in the copy connects to 10.0.2.100:7000 and prints what
  # the host answers; the host side is this small loopback server.
  say "image has no crier (built without --deb): checking the boot path with a probe unit"
  cat > "$WORK/probe.service" <<'EOF'
[Unit]
Description=boot-test probe: reach the host through guestfwd
After=systemd-networkd.service
[Service]
Type=oneshot
ExecStart=/bin/bash -c 'for i in $(seq 90); do if exec 3<>/dev/tcp/10.0.2.100/7000; then echo "hello from $(hostname)" >&3; read -r -t 20 line <&3; echo "crier-boot-probe: host answered: $line"; exit 0; fi 2>/dev/null; sleep 1; done; echo "crier-boot-probe: no connection"; exit 1'
StandardOutput=journal+console
[Install]
WantedBy=multi-user.target
EOF
  debugfs -w -f - "$EXT" >/dev/null 2>&1 <<EOF || fail "debugfs could not add the probe unit"
write $WORK/probe.service /etc/systemd/system/crier-boot-probe.service
cd /etc/systemd/system/multi-user.target.wants
symlink crier-boot-probe.service /etc/systemd/system/crier-boot-probe.service
EOF
  python3 -u - "$PORT" > "$WORK/server.log" 2>&1 <<'EOF' &
import socket, sys
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", int(sys.argv[1]))); s.listen(1)
c, _ = s.accept()            # QEMU's guestfwd connects when it starts; bytes flow once the guest does
line = c.makefile().readline().strip()
print("probe said:", line)
c.sendall(b"hello from the host loopback\n")
c.close()
EOF
  PROBE_PID=$!
  READY_RE='crier-boot-probe: host answered: hello from the host loopback'
fi
# QEMU connects its guestfwd chardev to the server when it starts: the server must listen first.
for _ in $(seq 300); do
  ss -Hltn "sport = :$PORT" 2>/dev/null | grep -q . && break
  sleep 0.1
done
ss -Hltn "sport = :$PORT" | grep -q . || fail "the order server does not listen on 127.0.0.1:$PORT"

# ---- boot ------------------------------------------------------------------------------------
# The VM's only network: slirp with restrict=on (no route out), where 10.0.2.100:7000 is
# forwarded to the server on the host loopback. Default: per guest connection, slirp runs
# `socat - TCP:127.0.0.1:PORT`, so the server sees every connect and close of crier.
# BOOT_TEST_GUESTFWD=tcp: QEMU's own chardev instead (guestfwd=...-tcp:127.0.0.1:PORT), ONE
# connection made when QEMU starts and kept across guest connections: the order server drops
# it after 45 s without a hello (a slow TCG boot) and never sees crier reconnect.
if [ "${BOOT_TEST_GUESTFWD:-cmd}" = tcp ]; then
  GUESTFWD="guestfwd=tcp:10.0.2.100:7000-tcp:127.0.0.1:$PORT"
else
  GUESTFWD="guestfwd=tcp:10.0.2.100:7000-cmd:socat - TCP:127.0.0.1:$PORT"
fi
CMDLINE="$(cat "$base.cmdline") systemd.show_status=1"
ROOT_SUM_BEFORE=$(root_sum)

# boot_vm N: starts QEMU on the disk, its serial console to $WORK/serialN.log (= $SERIAL).
boot_vm() {
  SERIAL="$WORK/serial$1.log"
  MON_PORT=$(free_port)
  say "boot $1: $(basename "$IMG") (TCG, $(nproc) host cores): $CMDLINE"
  TBOOT=$(date +%s.%N)
  qemu-system-x86_64 -accel tcg -machine q35 -cpu max -smp "${QEMU_SMP:-2}" -m "${QEMU_MEM:-512}" \
    -nographic -no-reboot \
    -kernel "$base.vmlinuz" -initrd "$base.initrd" -append "$CMDLINE" \
    -drive "file=$DISK,format=raw,if=virtio" \
    -nic "user,model=virtio-net-pci,restrict=on,$GUESTFWD" \
    -chardev "file,id=serial0,path=$SERIAL" -serial chardev:serial0 \
    -monitor "tcp:127.0.0.1:$MON_PORT,server=on,wait=off" \
    < /dev/null > "$WORK/qemu.out" 2>&1 &
  QEMU_PID=$!
}

# wait_for REGEX TIMEOUT: until REGEX is on the serial console; prints the seconds since boot.
wait_for() {
  local deadline=$(( $(date +%s) + $2 ))
  while (( $(date +%s) < deadline )); do
    if { tr -d '\r' < "$SERIAL" | grep -qE "$1"; } 2>/dev/null; then elapsed "$TBOOT"; return 0; fi
    kill -0 "$QEMU_PID" 2>/dev/null || { cat "$WORK/qemu.out" >&2; return 1; }
    sleep 0.5
  done
  return 1
}
# line REGEX: the first serial line (from the match on) of the boot in progress.
line() { tr -d '\r' < "$SERIAL" | grep -m1 -oE "$1.*" || true; }

# check_boot N: what every boot must show: crier (or the probe) ready, the layout line, the
# system running with no failed unit.
LAYOUT_RE='crier-image: / ro \(slot A, crier-root, writes refused\), /var/lib/crier rw on crier-data, /var/lib/systemd rw on crier-data'
check_boot() {
  local t
  t=$(wait_for "$READY_RE" "$BOOT_TIMEOUT") || fail "boot $1: no '$READY_RE' on the serial console within ${BOOT_TIMEOUT}s"
  eval "T_READY$1=$t"
  say "boot $1: ready after ${t}s: $(tr -d '\r' < "$SERIAL" | grep -m1 -E "$READY_RE")"
  wait_for 'crier-image: ' 60 >/dev/null || fail "boot $1: no 'crier-image:' layout line on the console"
  say "boot $1: $(line 'crier-image: ')"
  [ -n "$(line "$LAYOUT_RE")" ] && [ -z "$(line 'NOT AS DESIGNED')" ] || fail "boot $1: storage layout not as designed: $(line 'crier-image: ')"
  t=$(wait_for 'crier-boot-state: ' 90) || fail "boot $1: the boot did not finish (no crier-boot-state line)"
  eval "T_MULTI$1=$t"
  local state; state="$(line 'crier-boot-state: ')"
  say "boot $1: finished after ${t}s: $state"
  grep -q 'crier-boot-state: running' <<<"$state" || fail "boot $1: system not running: $state"
  # Any write the read-only root refused is a journal line with "Read-only file system" (EROFS).
  wait_for 'crier-boot-erofs: end' 30 >/dev/null || fail "boot $1: no 'crier-boot-erofs: end' line"
  if tr -d '\r' < "$SERIAL" | grep 'crier-boot-erofs: ' | grep -qv 'crier-boot-erofs: end'; then
    fail "boot $1: something tried to write the read-only root: $(tr -d '\r' < "$SERIAL" | grep 'crier-boot-erofs: ' | paste -sd'|')"
  fi
  say "boot $1: no write refused by the read-only root in the journal"
  # crier-mark-good: a normal boot of slot A is committed at once (RAUC's noop backend here;
  # the arm64 test checks the U-Boot counters).
  wait_for 'crier-update: ' 120 >/dev/null || fail "boot $1: no 'crier-update:' line from crier-mark-good"
  grep -q 'crier-update: slot A marked good (normal boot)' <<<"$(line 'crier-update: ')" || fail "boot $1: slot A not marked good: $(line 'crier-update: ')"
  say "boot $1: $(line 'crier-update: ')"
}

# power_off: ACPI power button, then wait (30 s) for QEMU to exit.
power_off() {
  say "powering off (ACPI)"
  (exec 3<>"/dev/tcp/127.0.0.1/$MON_PORT"; echo system_powerdown >&3; sleep 1) 2>/dev/null || true
  for _ in $(seq 60); do kill -0 "$QEMU_PID" 2>/dev/null || break; sleep 0.5; done
  if kill -0 "$QEMU_PID" 2>/dev/null; then
    say "no clean power-off within 30 s, stopping QEMU"; kill "$QEMU_PID"
  else
    say "VM powered off"
  fi
  wait "$QEMU_PID" 2>/dev/null || true; QEMU_PID=""
}

# ---- boot 1: first boot ----------------------------------------------------------------------
boot_vm 1
check_boot 1
grow="$(line 'crier-growdata: ')"
[ -n "$grow" ] || fail "boot 1: no 'crier-growdata:' line (first boot grows crier-data)"
say "boot 1: $grow"
grep -q 'grown from' <<<"$grow" || fail "boot 1: crier-data was not grown: $grow"

if ((HAVE_CRIER)); then
  say "boot 1: $(line 'state: no saved state' | cut -c1-100)"
  [ -n "$(line 'state: no saved state at /var/lib/crier/state')" ] || fail "boot 1: crier did not start from an empty crier-data (no 'state: no saved state' line)"
  say "sending order 42 through order-sim"
  echo 42 >&4
  deadline=$(( $(date +%s) + ORDER_TIMEOUT ))
  until grep -q 'status=spoken' "$WORK/server.log"; do
    (( $(date +%s) < deadline )) || fail "no 'status=spoken' ack within ${ORDER_TIMEOUT}s"
    kill -0 "$SIM_PID" 2>/dev/null || fail "order-sim exited"
    sleep 0.5
  done
  T_SPOKEN=$(elapsed "$TBOOT")
  say "ack: $(grep -m1 'status=spoken' "$WORK/server.log")"
  wait_for 'alert: spoken' 20 >/dev/null || fail "no 'alert: spoken' line on the serial console"
  say "serial: $(line 'alert: spoken' | cut -c1-120)"
  wait_for 'crier-boot-press: ' 60 >/dev/null || fail "boot 1: no 'crier-boot-press:' line (the volume press and state file)"
  press="$(line 'crier-boot-press: ')"
  say "boot 1: $press"
  SAVED_VOLUME="$(grep -oE 'volume=[0-9]+' <<<"$press" || true)"
  [ -n "$SAVED_VOLUME" ] || fail "boot 1: crier wrote no volume to /var/lib/crier/state: $press"

  # Pull the plug: no shutdown, no sync. The root must not care; crier-data's journal and
  # crier's atomic state writes must.
  say "boot 1: pulling the plug (QEMU killed)"
  kill -KILL "$QEMU_PID"; wait "$QEMU_PID" 2>/dev/null || true; QEMU_PID=""

  # ---- boot 2: the same card again ---------------------------------------------------------
  boot_vm 2
  check_boot 2
  [ -z "$(line 'crier-growdata: ')" ] || fail "boot 2: crier-data grown again: $(line 'crier-growdata: ')"
  wait_for 'state: loaded /var/lib/crier/state' 30 >/dev/null || fail "boot 2: crier did not load its state file: $(line 'state: ')"
  loaded="$(line 'state: loaded /var/lib/crier/state')"
  say "boot 2: $loaded"
  grep -qw "$SAVED_VOLUME" <<<"$loaded" || fail "boot 2: crier loaded another volume than boot 1 saved ($SAVED_VOLUME): $loaded"
  say "boot 2: crier's state survived the power cut ($SAVED_VOLUME)"
  exec 4>&-
fi
power_off

# The root partition is byte for byte what it was before boot 1; both ext4 file systems clean.
[ "$(root_sum)" = "$ROOT_SUM_BEFORE" ] || fail "the root partition changed while booted (it must be read-only)"
say "root partition unchanged after the boots (sha256 ${ROOT_SUM_BEFORE:0:16}...)"
e2fsck -fn "$EXT" >/dev/null 2>&1 || fail "e2fsck: the root file system is not clean"
e2fsck -fn "$DATAFS" >/dev/null 2>&1 || fail "e2fsck: the crier-data file system is not clean: $(e2fsck -fn "$DATAFS" 2>&1 | tail -n 3 | paste -sd'|')"
say "e2fsck -fn: root and crier-data clean"

# ---- report ----------------------------------------------------------------------------------
mib() { echo $(( $1 >> 20 )); }
raw=$(stat -c %s "$IMG" 2>/dev/null || stat -c %s "$DISK")
echo "boot-test: PASSED"
echo "  image:        $(basename "$IMG")  raw $(mib "$raw") MiB$( [ -f "$IMG.xz" ] && echo ", xz $(mib "$(stat -c %s "$IMG.xz")") MiB")"
echo "  partitions:   boot $((sizes[0] / 2048)) MiB, slot A $((sizes[1] / 2048)) MiB (read-only root), slot B $((sizes[2] / 2048)) MiB (empty), crier-data $((sizes[3] / 2048)) MiB in the image"
echo "  kernel+initrd $(mib $(( $(stat -c %s "$base.vmlinuz") + $(stat -c %s "$base.initrd") ))) MiB (outside the image, amd64 only)"
if ((HAVE_CRIER)); then
  echo "  power-on to crier ready: boot 1 ${T_READY1}s, boot 2 ${T_READY2}s (QEMU TCG)   order spoken+acked at ${T_SPOKEN}s of boot 1"
else
  echo "  power-on to probe line: ${T_READY1}s, to boot finished (running): ${T_MULTI1}s (QEMU TCG; no crier in this image)"
fi
echo "  total: $(elapsed "$T0")s"
