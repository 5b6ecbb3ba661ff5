#!/usr/bin/env bash
# Boots the amd64 Crier image in QEMU (TCG, no KVM) and proves it works end to end:
#
#   scripts/boot-test.sh [IMAGE]        (default out/crier-amd64.img, or its .img.xz)
#
#  1. copies the image (sparse) and prepares the copy for the test only:
#     - crier.conf on the FAT partition (mcopy): server = tcp://10.0.2.100:7000, device.id = qemu
#     - /etc/asound.conf on the root (debugfs): the VM has no sound card, so ALSA's default
#       device becomes a "file" PCM recording to /tmp; crier can then speak and ack "spoken".
#  2. starts `crier order-sim` on the host loopback, boots the copy with the kernel/initrd of the
#     build (IMAGE's .vmlinuz/.initrd/.cmdline), -nographic, serial console captured to a file,
#     network ONLY -nic user,restrict=on,guestfwd=tcp:10.0.2.100:7000-... to 127.0.0.1:PORT
#     (per connection through socat; BOOT_TEST_GUESTFWD=tcp for QEMU's single tcp chardev)
#  3. waits (bounded, BOOT_TIMEOUT=180 s) for crier's "runtime: ready" line on the serial
#     console, sends one order, waits for the server's "status=spoken" ack and crier's
#     "alert: spoken" line, powers the VM off (ACPI), prints sizes and boot-to-ready time.
# An image built without crier (no --deb) is checked on the boot path instead: systemd reaches
# multi-user.target, and a probe unit (added to the copy) reaches the host through guestfwd and
# prints the server's answer on the serial console.
# Exit 0 on success; otherwise non-zero with the whole serial log printed. The serial log is
# kept next to the image as <image>.serial.log.
# Env: BOOT_TIMEOUT (s, default 180), CRIER_HOST_BIN (the host's crier for order-sim; default
# .build/release/crier or .build/debug/crier), QEMU_SMP (default 2), QEMU_MEM (MiB, default 512).
set -euo pipefail
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
SERIAL="$WORK/serial.log"
QEMU_PID="" SIM_PID="" PROBE_PID=""
cleanup() {
  local rc=$?
  for p in $QEMU_PID $SIM_PID $PROBE_PID; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  [ -f "$SERIAL" ] && tr -d '\r' < "$SERIAL" > "$base.serial.log" 2>/dev/null || true
  rm -rf "$WORK"
  exit $rc
}
trap cleanup EXIT
fail() {
  say "FAILED: $*"
  echo "===== serial log ($SERIAL) ====="
  cat "$SERIAL" 2>/dev/null | tr -d '\r' || echo "(no serial output)"
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
# A card is bigger than the image: 256 MiB more lets crier-growroot show its first-boot growth.
truncate -s +256M "$DISK"

mapfile -t starts < <(sfdisk -d "$DISK" | sed -n 's/.*start= *\([0-9]*\),.*/\1/p')
FAT="$DISK@@$((starts[0] * 512))"
EXT="$DISK?offset=$((starts[1] * 512))"
export MTOOLS_SKIP_CHECK=1

# ---- test-only changes to the copy ---------------------------------------------------------
# crier.conf: the image's file with the two test keys replaced.
{ mtype -i "$FAT" ::/crier.conf 2>/dev/null | tr -d '\r' | grep -vE '^[[:space:]]*(server|device\.id)[[:space:]]*=' || true
  echo "server = tcp://10.0.2.100:7000"
  echo "device.id = qemu"; } > "$WORK/crier.conf"
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
ExecStart=/bin/sh -c 'echo "crier-boot-state: $(systemctl is-system-running --wait) failed units: [$(systemctl --failed --no-legend --plain | cut -d" " -f1 | tr "\\n" " ")]"'
StandardOutput=journal+console
[Install]
WantedBy=multi-user.target
EOF2
debugfs -w -f - "$EXT" >/dev/null 2>&1 <<EOF2 || fail "debugfs could not add the state unit"
write $WORK/state.service /etc/systemd/system/crier-boot-state.service
cd /etc/systemd/system/multi-user.target.wants
symlink crier-boot-state.service /etc/systemd/system/crier-boot-state.service
EOF2

HAVE_CRIER=0
debugfs -R "stat /usr/bin/crier" "$EXT" 2>&1 | grep -q '^Inode:' && HAVE_CRIER=1

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
MON_PORT=$(free_port)
CMDLINE="$(cat "$base.cmdline") systemd.show_status=1"
say "booting $(basename "$IMG") (TCG, $(nproc) host cores): $CMDLINE"
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

T_READY=$(wait_for "$READY_RE" "$BOOT_TIMEOUT") || fail "no '$READY_RE' on the serial console within ${BOOT_TIMEOUT}s"
say "ready after ${T_READY}s: $(tr -d '\r' < "$SERIAL" | grep -m1 -E "$READY_RE")"
T_MULTI=$(wait_for 'crier-boot-state: ' 90) || fail "the boot did not finish (no crier-boot-state line)"
state="$(tr -d '\r' < "$SERIAL" | grep -m1 -o 'crier-boot-state: .*')"
say "boot finished after ${T_MULTI}s: $state"
grep -q 'crier-boot-state: running' <<<"$state" || fail "system not running: $state"
grow="$(tr -d '\r' < "$SERIAL" | grep -m1 -o 'crier-growroot: .*' || true)"
[ -n "$grow" ] && say "first boot: $grow"

if ((HAVE_CRIER)); then
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
  say "serial: $(tr -d '\r' < "$SERIAL" | grep -m1 'alert: spoken')"
  exec 4>&-
fi

# ---- power off -------------------------------------------------------------------------------
say "powering off (ACPI)"
(exec 3<>"/dev/tcp/127.0.0.1/$MON_PORT"; echo system_powerdown >&3; sleep 1) 2>/dev/null || true
for _ in $(seq 60); do kill -0 "$QEMU_PID" 2>/dev/null || break; sleep 0.5; done
if kill -0 "$QEMU_PID" 2>/dev/null; then
  say "no clean power-off within 30 s, stopping QEMU"; kill "$QEMU_PID"
else
  say "VM powered off"
fi
wait "$QEMU_PID" 2>/dev/null || true; QEMU_PID=""

# ---- report ----------------------------------------------------------------------------------
mib() { echo $(( $1 >> 20 )); }
raw=$(stat -c %s "$IMG" 2>/dev/null || stat -c %s "$DISK")
echo "boot-test: PASSED"
echo "  image:        $(basename "$IMG")  raw $(mib "$raw") MiB$( [ -f "$IMG.xz" ] && echo ", xz $(mib "$(stat -c %s "$IMG.xz")") MiB")"
echo "  kernel+initrd $(mib $(( $(stat -c %s "$base.vmlinuz") + $(stat -c %s "$base.initrd") ))) MiB (outside the image, amd64 only)"
if ((HAVE_CRIER)); then
  echo "  power-on to crier ready: ${T_READY}s (QEMU TCG)   order spoken+acked at ${T_SPOKEN}s"
else
  echo "  power-on to probe line: ${T_READY}s, to boot finished (running): ${T_MULTI}s (QEMU TCG; no crier in this image)"
fi
