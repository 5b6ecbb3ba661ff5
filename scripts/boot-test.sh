#!/usr/bin/env bash
# Boots the amd64 Crier image in QEMU (TCG, no KVM) and proves it works end to end:
#
#   scripts/boot-test.sh [--arch amd64] [IMAGE]   (default out/crier-amd64.img, or its .img.xz)
#   scripts/boot-test.sh --arch arm64 [--mem MB] [IMAGE]   the Pi image as a raspi3b (default as a
#                                                 Pi Zero 2 W: mem=512M, music on): boot-test-arm64.sh
#
#  1. copies the image (sparse, 256 MiB bigger: a card larger than the image) and prepares the
#     copy for the test only:
#     - crier.conf on the FAT partition (mcopy): server = tcp://10.0.2.100:7000, device.id = qemu,
#       input = fifo:/run/crier/buttons (button presses from a test unit)
#     - /etc/asound.conf on the root (debugfs): the VM has no sound card, so ALSA's default
#       device becomes a "file" PCM recording to /tmp; crier can then speak and ack "spoken".
#     - test units: one prints the system state, one (first boot only) presses volume down
#       through the FIFO so crier writes its state file.
#  2. starts `crier-sim order-sim` on the host loopback, boots the copy with the kernel/initrd of the
#     build (IMAGE's .vmlinuz/.initrd/.cmdline), -nographic, serial console captured to a file,
#     network ONLY -nic user,restrict=on,guestfwd=tcp:10.0.2.100:7000-... to 127.0.0.1:PORT
#     (per connection through socat; BOOT_TEST_GUESTFWD=tcp for QEMU's single tcp chardev)
#  3. boot 1 (bounded, BOOT_TIMEOUT=180 s): crier's "runtime: ready"; the image's layout line
#     ("crier-image: / ro (slot A, crier-root, writes refused), /var/lib/crier rw on crier-data, ...");
#     crier-data grown to the end of the disk; the system "running"; one order spoken and acked
#     ("status=spoken", "alert: spoken"); volume down pressed and crier's state file written.
#     Then the plug is pulled (QEMU killed, no shutdown).
#  4. boot 2, same disk: the layout line again, no second growth, crier loads the state file of
#     boot 1 with the volume set there; then crier's own units under the image's systemd
#     (scripts/boot-test-sysd.sh in the guest, crier.boottest=sysd on this boot's command line):
#     crier.socket passes :80 to crier (no capability) and the page answers, also from the host
#     (hostfwd 127.0.0.1:P -> guest :80); crier-config.path writes a request into crier.conf
#     (read back from the FAT after power-off) and crier reloads in place; crier-setup-ap.path
#     starts its unit (no radio in this kernel); systemd-analyze security of each crier unit.
#     ACPI power-off.
#  5. boot 3, an update the server offers (issue 20; BOOT_TEST_UPDATE=0 leaves it out): order-sim
#     has offered a small signed RAUC bundle (test keys; its keyring put into the copy) on
#     every hello since boot 1, where update.allow_remote was off and crier only said why it
#     ignored it. Now it is on: crier, in its own sandboxed unit, downloads the bundle onto
#     crier-data (update.download = on; from a range-capable server on the host loopback,
#     guestfwd 10.0.2.100:8080), RAUC's service installs it from there (loop + dm-verity),
#     crier logs RAUC's progress, waits for update.quiet_seconds with nothing said, and asks
#     crier-reboot.path to reboot: the VM must reboot by itself. Then slot B holds the bundle's
#     file system (its marker file read back), crier-data the post-install record and no
#     leftover download. (Streaming instead, update.download = off, fails on this image: RAUC
#     1.13's nbd device is disconnected by udev's probe, "Hash device is too small";
#     docs/updates.md, "Downloads". BOOT_TEST_UPDATE=stream tries it.) (The amd64 image has RAUC's noop boot loader: slot switching and
#     rollback are scripts/ota-test-arm64.sh's, on the Pi image.)
#     Afterwards the root partition (slot A) must be byte for byte what it was before boot 1,
#     and the ext4 file systems clean (e2fsck -fn).
#  Prints sizes and boot-to-ready times.
# An image built without crier (no --deb) is checked on the boot path instead (boot 1 only):
# systemd reaches multi-user.target, the layout line, and a probe unit (added to the copy)
# reaches the host through guestfwd and prints the server's answer on the serial console.
# Exit 0 on success; otherwise non-zero with the whole serial log printed. The serial log is
# kept next to the image as <image>.serial.log.
# Env: BOOT_TIMEOUT (s, default 180), BOOT_TEST_UPDATE (1; 0: no boot 3; stream: RAUC streams),
# CRIER_SIM_BIN (the host's crier-sim for order-sim; default the newer of
# .build/release/crier-sim and .build/debug/crier-sim), QEMU_SMP (default 2), QEMU_MEM (MiB, default 512),
# QEMU_TCG_THREAD (single; multi: a host thread per vCPU). A crash of the guest kernel stops the
# wait at once and runs the whole test a second time (scripts/boot-guest-crash.sh).
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
source "$(dirname "$0")/boot-guest-crash.sh"
retry_on_guest_crash "$0" "$@"

IMG="${1:-$ROOT/out/crier-amd64.img}"
BOOT_TIMEOUT="${BOOT_TIMEOUT:-180}"
ORDER_TIMEOUT="${ORDER_TIMEOUT:-60}"
# One host thread for all vCPUs. With a thread per vCPU (QEMU 7.2's default) the guest kernel
# once oopsed on "int3" at a static branch it had just patched (text_poke_bp while systemd
# enabled a cgroup controller, boot 3 of a CI run): a stale translation of the patched code on
# the multi-threaded TCG. Serialised vCPUs cannot race that way. QEMU_TCG_THREAD=multi: the old way.
TCG_THREAD="${QEMU_TCG_THREAD:-single}"
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
QEMU_PID="" SIM_PID="" PROBE_PID="" HTTP_PID=""
serial_logs() {
  for f in "$WORK"/serial1.log "$WORK"/serial2.log "$WORK"/serial3.log; do
    [ -f "$f" ] || continue
    f2="${f##*/serial}"; echo "===== serial console, boot ${f2%.log} ====="
    tr -d '\r' < "$f"
  done
}
cleanup() {
  local rc=$?
  for p in $QEMU_PID $SIM_PID $PROBE_PID $HTTP_PID; do kill "$p" 2>/dev/null || true; done
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
  [ -s "$WORK/http.log" ] && { echo "===== bundle HTTP server (last 20 requests) ====="; tail -n 20 "$WORK/http.log"; }
  guest_crash_exit "$WORK"/serial[123].log
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
# crier.conf: the image's file with the test keys replaced (put_conf [LINE...]: more lines).
mtype -i "$FAT" ::/crier.conf 2>/dev/null | tr -d '\r' > "$WORK/crier.conf.image" || true
put_conf() {
  { grep -vE '^[[:space:]]*(server|device\.id|input)[[:space:]]*=' "$WORK/crier.conf.image" || true
    echo "server = tcp://10.0.2.100:7000"
    echo "device.id = qemu"
    echo "input = fifo:/run/crier/buttons"
    printf '%s\n' "$@"; } > "$WORK/crier.conf"
  mcopy -o -i "$FAT" "$WORK/crier.conf" ::/crier.conf
}
put_conf

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
# The kernel's lines about nbd, device-mapper and dm-verity (an update streamed by RAUC, boot 3)
# on the console too: `quiet` keeps them off it, and RAUC's own error names only the errno.
cat > "$WORK/kmsg.service" <<'EOF2'
[Unit]
Description=boot-test: kernel lines about nbd and dm-verity on the console
[Service]
Type=simple
ExecStart=/bin/sh -c 'journalctl -k -f -n all --no-pager -o cat | grep --line-buffered -iE "nbd|verity|device-mapper|squashfs" | sed -u "s/^/crier-boot-kmsg: /"'
StandardOutput=journal+console
[Install]
WantedBy=multi-user.target
EOF2
add_unit crier-boot-kmsg "$WORK/kmsg.service"

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
  # Boot 2 only (crier.boottest=sysd on its kernel command line): crier's socket, path and setup
  # units under the image's own systemd, run by scripts/boot-test-sysd.sh in the guest; its
  # "crier-boot-sysd: " lines are checked below (check_sysd).
  cat > "$WORK/sysd.service" <<'EOF2'
[Unit]
Description=boot-test: crier's socket, path and setup units under the image's systemd
After=crier.service crier.socket
ConditionKernelCommandLine=crier.boottest=sysd
[Service]
Type=simple
ExecStart=/bin/bash /usr/local/sbin/crier-boot-sysd
StandardOutput=journal+console
[Install]
WantedBy=multi-user.target
EOF2
  printf 'write %s /usr/local/sbin/crier-boot-sysd\n' "$ROOT/scripts/boot-test-sysd.sh" | debugfs -w -f - "$EXT" >/dev/null 2>&1
  debugfs -R "stat /usr/local/sbin/crier-boot-sysd" "$EXT" 2>&1 | grep -q '^Inode:' || fail "debugfs could not add /usr/local/sbin/crier-boot-sysd"
  add_unit crier-boot-sysd "$WORK/sysd.service"
fi

# ---- the update boot 3 installs (test copy only) ---------------------------------------------
# A throwaway test PKI, its CA as the copy's RAUC keyring, and a small bundle signed with it: a
# 32 MiB ext4 (a marker file and 8 MiB of random bytes, so that RAUC streams it in many range
# requests) with crier's version + "+boottest". Served by a range-capable HTTP server on the host
# loopback (RAUC streams with HTTP range requests, which python's http.server does not answer),
# which the guest reaches as 10.0.2.100:8080.
UPDATE="${BOOT_TEST_UPDATE:-1}"
((HAVE_CRIER)) || UPDATE=0
OFFER_ARGS=()
if [ "$UPDATE" != 0 ]; then
  say "update: test keys, a small signed bundle (scripts/build-bundle.sh), an HTTP server for it"
  bash "$ROOT/scripts/bundle-keys.sh" "$WORK/keys" >/dev/null
  printf 'rm /etc/rauc/keyring.pem\nwrite %s /etc/rauc/keyring.pem\n' "$WORK/keys/keyring.pem" | debugfs -w -f - "$EXT" >/dev/null 2>&1
  debugfs -R "cat /etc/rauc/keyring.pem" "$EXT" 2>/dev/null | grep -q 'BEGIN CERTIFICATE' || fail "debugfs could not write /etc/rauc/keyring.pem"
  debugfs -R "cat /var/lib/dpkg/status" "$EXT" 2>/dev/null > "$WORK/dpkg.status" || true
  CRIER_VERSION="$(awk 'BEGIN {RS=""} /(^|\n)Package: crier\n/' "$WORK/dpkg.status" | awk -F': ' '$1=="Version" {print $2; exit}')"
  [ -n "$CRIER_VERSION" ] || fail "no crier package in the image's dpkg status"
  B="$WORK/bundle-root"
  mkdir -p "$B/var/lib/dpkg" "$WORK/www"
  printf 'Package: crier\nStatus: install ok installed\nVersion: %s\nArchitecture: amd64\n\n' "$CRIER_VERSION" > "$B/var/lib/dpkg/status"
  echo "boot-test bundle $CRIER_VERSION+boottest" > "$B/crier-boot-test-bundle"
  head -c 8M /dev/urandom > "$B/payload"
  mkfs.ext4 -q -F -L crier-root -d "$B" "$WORK/bundle-root.ext4" 32M >/dev/null
  BUNDLE_VERSION="$CRIER_VERSION+boottest"
  bash "$ROOT/scripts/build-bundle.sh" --root-ext4 "$WORK/bundle-root.ext4" --build-id boottest \
    --cert "$WORK/keys/signing.cert.pem" --key "$WORK/keys/signing.key.pem" --keyring "$WORK/keys/keyring.pem" \
    --compatible crier-qemu-amd64 --out "$WORK/www/crier-boottest.raucb" > "$WORK/bundle.log" 2>&1 ||
    { cat "$WORK/bundle.log"; fail "build-bundle.sh failed"; }
  grep -q "version $BUNDLE_VERSION" "$WORK/bundle.log" || { cat "$WORK/bundle.log"; fail "the bundle's version is not $BUNDLE_VERSION"; }
  BUNDLE_BYTES=$(stat -c %s "$WORK/www/crier-boottest.raucb")
  HPORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
  python3 -u - "$HPORT" "$WORK/www" > "$WORK/http.log" 2>&1 <<'PY' &
import http.server, os, re, sys
port, root = int(sys.argv[1]), sys.argv[2]
class H(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def log_message(self, *a): pass
    def head(self):
        p = os.path.join(root, os.path.basename(self.path.split("?")[0]))
        if not os.path.isfile(p):
            self.send_response(404); self.send_header("Content-Length", "0"); self.end_headers(); return None
        size = os.path.getsize(p); lo, hi = 0, size - 1
        m = re.fullmatch(r"bytes=(\d*)-(\d*)", self.headers.get("Range", ""))
        if m and (m.group(1) or m.group(2)):
            if m.group(1): lo = int(m.group(1)); hi = min(int(m.group(2)), size - 1) if m.group(2) else size - 1
            else: lo = max(0, size - int(m.group(2)))
            if lo > hi:
                self.send_response(416); self.send_header("Content-Range", "bytes */%d" % size); self.send_header("Content-Length", "0"); self.end_headers(); return None
            self.send_response(206); self.send_header("Content-Range", "bytes %d-%d/%d" % (lo, hi, size))
        else:
            self.send_response(200)
        self.send_header("Accept-Ranges", "bytes"); self.send_header("Content-Length", str(hi - lo + 1)); self.end_headers()
        print("%s %s range=%s bytes=%d" % (self.command, self.path, self.headers.get("Range", "-"), hi - lo + 1 if self.command == "GET" else 0), flush=True)
        return p, lo, hi
    def do_HEAD(self): self.head()
    def do_GET(self):
        r = self.head()
        if r:
            with open(r[0], "rb") as f:
                f.seek(r[1]); self.wfile.write(f.read(r[2] - r[1] + 1))
http.server.ThreadingHTTPServer(("127.0.0.1", port), H).serve_forever()
PY
  HTTP_PID=$!
  BUNDLE_URL="http://10.0.2.100:8080/crier-boottest.raucb"
  OFFER_ARGS=(--offer-update "$BUNDLE_URL" --offer-version "$BUNDLE_VERSION")
  say "update: bundle $BUNDLE_VERSION, $((BUNDLE_BYTES / 1024)) KiB, offered by order-sim as $BUNDLE_URL"
fi

# ---- host side: the order server on loopback ------------------------------------------------
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
PORT=$(free_port)
mkfifo "$WORK/orders"
if ((HAVE_CRIER)); then
  # crier-sim (the order server is not in crier since issue 32). The newer of the two builds: a
  # release binary left from an older commit lacks options (--offer-update) this script uses.
  HOST_BIN="${CRIER_SIM_BIN:-}"
  if [ -z "$HOST_BIN" ]; then
    for c in "$ROOT/.build/release/crier-sim" "$ROOT/.build/debug/crier-sim"; do
      [ -x "$c" ] && { [ -z "$HOST_BIN" ] || [ "$c" -nt "$HOST_BIN" ]; } && HOST_BIN="$c"
    done
  fi
  [ -n "$HOST_BIN" ] || fail "no host crier-sim for order-sim: run 'swift build' (or set CRIER_SIM_BIN)"
  say "order server: $HOST_BIN order-sim --host 127.0.0.1 --port $PORT --every 0 ${OFFER_ARGS[*]}"
  # Its stdin is a FIFO held open read-write here (opening it read-only would block until a
  # writer appears); each line written to fd 4 is one order.
  exec 4<>"$WORK/orders"
  "$HOST_BIN" order-sim --host 127.0.0.1 --port "$PORT" --every 0 "${OFFER_ARGS[@]}" <&4 > "$WORK/server.log" 2>&1 &
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
# The bundle server (boot 3): per connection as well; RAUC's streaming opens several.
[ "$UPDATE" = 0 ] || GUESTFWD="$GUESTFWD,guestfwd=tcp:10.0.2.100:8080-cmd:socat - TCP:127.0.0.1:$HPORT"
CMDLINE="$(cat "$base.cmdline") systemd.show_status=1"
ROOT_SUM_BEFORE=$(root_sum)

# The local page from the host (boot 2): QEMU forwards 127.0.0.1:WPORT to the guest's port 80.
HOSTFWD=""
if ((HAVE_CRIER)); then WPORT=$(free_port); HOSTFWD=",hostfwd=tcp:127.0.0.1:$WPORT-:80"; fi

# boot_vm N [KERNEL-ARG...]: starts QEMU on the disk, its serial console to $WORK/serialN.log (= $SERIAL).
boot_vm() {
  SERIAL="$WORK/serial$1.log"
  MON_PORT=$(free_port)
  local cmdline="$CMDLINE${2:+ ${*:2}}"
  say "boot $1: $(basename "$IMG") (TCG, $(nproc) host cores): $cmdline"
  TBOOT=$(date +%s.%N)
  qemu-system-x86_64 -accel "tcg,thread=$TCG_THREAD" -machine q35 -cpu max -smp "${QEMU_SMP:-2}" -m "${QEMU_MEM:-512}" \
    -nographic -no-reboot \
    -kernel "$base.vmlinuz" -initrd "$base.initrd" -append "$cmdline" \
    -drive "file=$DISK,format=raw,if=virtio" \
    -nic "user,model=virtio-net-pci,restrict=on,$GUESTFWD$HOSTFWD" \
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
    ! guest_crash "$SERIAL" >/dev/null || return 1   # the image has no panic=: it would hang
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

# check_sysd: boot 2's "crier-boot-sysd:" lines (scripts/boot-test-sysd.sh in the guest: crier's
# socket, path and setup units under the image's own systemd), then the page from the host
# through QEMU's hostfwd, as a phone on the shop network would open it.
sysd() { tr -d '\r' < "$SERIAL" | grep -m1 -oE "crier-boot-sysd: $1.*" || true; }
check_sysd() {
  local t l mp
  t=$(wait_for 'crier-boot-sysd: end' "${SYSD_TIMEOUT:-300}") || fail "boot 2: no 'crier-boot-sysd: end' line within ${SYSD_TIMEOUT:-300} s (scripts/boot-test-sysd.sh in the guest)"
  say "boot 2: crier's units under the image's systemd (scripts/boot-test-sysd.sh), done ${t}s after power-on:"
  tr -d '\r' < "$SERIAL" | grep -oE 'crier-boot-sysd: .*' | cut -c18-260 | sed 's/^/    /'
  # a. crier.socket: systemd (pid 1) holds :80 and passed it to crier, which has no capability
  l=$(sysd 'a: crier.socket ')
  grep -q 'crier.socket active' <<<"$l" && grep -q ':80' <<<"$l" || fail "a: crier.socket is not listening on port 80: $l"
  mp=$(grep -oE 'pid [0-9]+' <<<"$l" | head -n1 | cut -d' ' -f2)
  grep -q 'user crier' <<<"$l" || fail "a: crier does not run as user crier: $l"
  l=$(sysd 'a: port 80 held by')
  grep -q '"systemd",pid=1,' <<<"$l" && grep -q "\"crier\",pid=$mp," <<<"$l" || fail "a: port 80 is not systemd's socket passed to crier (pid $mp): $l"
  l=$(sysd "a: crier's capabilities")
  [ "$(grep -oE 'Cap(Inh|Prm|Eff|Bnd|Amb):0{16}' <<<"$l" | wc -l)" = 5 ] || fail "a: crier.service holds a capability: $l"
  grep -q 'socket from systemd' <<<"$(sysd "a: crier's log")" || fail "a: crier did not serve the socket systemd passed: $(sysd "a: crier's log")"
  l=$(sysd 'a: GET / ')
  grep -q 'HTTP/1.1 200' <<<"$l" && grep -q 'text/html' <<<"$l" || fail "a: GET / inside the guest: $l"
  python3 -c 'import json, sys; l = sys.argv[1]; s = json.loads(l[l.index("{"):]); assert " 200 " in l and s["device"] == "qemu" and s["paired"] is False and "healthy" in s, s' \
    "$(sysd 'a: GET /api/status')" 2>/dev/null || fail "a: GET /api/status inside the guest: $(sysd 'a: GET /api/status')"
  l=$(python3 - "$WPORT" <<'PY'
import json, sys, urllib.request
base = "http://127.0.0.1:%s" % sys.argv[1]
r = urllib.request.urlopen(base + "/", timeout=30)
page = r.read()
assert r.status == 200 and r.headers.get_content_type() == "text/html", (r.status, dict(r.headers))
r = urllib.request.urlopen(base + "/api/status", timeout=30)
st = json.loads(r.read())
assert r.status == 200 and st["device"] == "qemu" and st["paired"] is False, st
print("GET / 200, %d bytes; GET /api/status 200: %s" % (len(page), json.dumps(st, separators=(",", ":"))))
PY
) || fail "a: the page through QEMU's hostfwd (127.0.0.1:$WPORT -> guest :80): $l"
  say "a: from the host (hostfwd 127.0.0.1:$WPORT -> guest :80): $l"
  # b. crier-config.path: the page's request written into crier.conf, crier reloaded in place
  l=$(sysd 'b: crier-config.service')
  grep -q 'apply-config: /boot/firmware/crier.conf written' <<<"$l" || fail "b: crier-config.service did not write crier.conf: $l"
  l=$(sysd 'b: request')
  grep -q 'request removed' <<<"$l" || fail "b: crier-config left the request: $l"
  [[ "$l" =~ ([0-9]+)\ comment\ lines\ \(before:\ ([0-9]+)\) ]] && [ "${BASH_REMATCH[1]}" = "${BASH_REMATCH[2]}" ] || fail "b: comments of crier.conf lost: $l"
  grep -q "last line 'speech.en.rate = 170'" <<<"$l" || fail "b: crier.conf does not end with the page's new setting: $l"
  grep -q 'reloaded: running with the new configuration' <<<"$(sysd "b: crier's log")" || fail "b: crier was not reloaded: $(sysd "b: crier's log")"
  l=$(sysd 'b: after the reload')
  grep -q "pid $mp (before: $mp), restarts 0;" <<<"$l" && grep -q 'GET / -> HTTP/1.1 200' <<<"$l" && grep -qE "\"[^\"]+\",pid=$mp," <<<"$l" ||
    fail "b: after the reload crier must be the same process, not restarted, still serving systemd's socket: $l $(sysd 'b: systemd on')"
  # The re-executed image names itself crier again (it was "exe": ReExec.takeMarker; test_lifecycle).
  grep -q "\"crier\",pid=$mp," <<<"$l" || say "b: NOTE: after the reload the process is not named crier: $l"
  # c. crier-setup-ap: crier's request starts the unit; this kernel has no radio
  l=$(sysd 'c: kernel')
  grep -q 'mac80211_hwsim: not in this kernel' <<<"$l" || say "c: NOTE: this kernel has mac80211_hwsim now; the hotspot could be tested with a radio here (not done yet): $l"
  l=$(sysd 'c: after')
  grep -q 'crier-setup-ap.service success/active/running' <<<"$l" && grep -q 'crier-setup-ap.path active' <<<"$l" || fail "c: crier's request did not start crier-setup-ap.service: $l"
  grep -qE 'crier-boot-sysd: c: unit: crier setup-ap-config: wrote .* for Crier-[0-9]{4} ' <<<"$(tr -d '\r' < "$SERIAL")" || fail "c: no 'crier setup-ap-config: wrote ... for Crier-NNNN' (ExecStartPre)"
  grep -q 'crier-boot-sysd: c: unit: crier-setup-ap: no radio: network interface wlan0 does not exist' <<<"$(tr -d '\r' < "$SERIAL")" || fail "c: crier-setup-ap did not say that there is no radio"
  l=$(sysd 'c: request removed')
  grep -q 'crier-setup-ap.service success/inactive/dead' <<<"$l" && grep -q 'crier-setup-ap.path active' <<<"$l" && grep -q 'jobs: \[\]' <<<"$l" &&
    grep -q 'request file gone' <<<"$l" || fail "c: the unit did not end cleanly with the request (or left a job): $l"
  # d. exposure (systemd-analyze security, the image's systemd): crier.service at most 2.0
  for u in crier crier-config crier-setup-ap crier-hostname; do
    l=$(sysd "d: $u.service ")
    awk '{ exit !($4 != "" && $4 <= 2.0) }' <<<"$l" || fail "d: $u.service's exposure is above 2.0: $l"
  done
  # e. the sandboxed crier-hostname still sets the host name from device.id (qemu)
  l=$(sysd 'e: ')
  grep -q 'crier-hostname.service success/active, host name qemu$' <<<"$l" || fail "e: crier-hostname under its sandbox: $l"
  l=$(sysd 'end: ')
  grep -q 'system running, failed units: \[\], jobs: \[\], EROFS lines: 0;' <<<"$l" || fail "boot 2 after the unit checks: $l"
  T_SYSD=$(sed -n 's/.*; \([0-9.]*\) s in all$/\1/p' <<<"$l")
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
  if [ "$UPDATE" != 0 ]; then
    # The image's crier.conf leaves update.allow_remote off: the offer is only reported.
    wait_for 'update offer ignored: update\.allow_remote is off' 30 >/dev/null ||
      fail "boot 1: crier did not say why it ignored the server's update offer (update.allow_remote is off)"
    say "boot 1: $(line 'WARN update: update offer ignored' | cut -c1-110)..."
    [ -z "$(line 'INFO update: installing')" ] || fail "boot 1: crier installed an offered update with update.allow_remote off"
  fi

  # Pull the plug: no shutdown, no sync. The root must not care; crier-data's journal and
  # crier's atomic state writes must.
  say "boot 1: pulling the plug (QEMU killed)"
  kill -KILL "$QEMU_PID"; wait "$QEMU_PID" 2>/dev/null || true; QEMU_PID=""

  # ---- boot 2: the same card again ---------------------------------------------------------
  boot_vm 2 crier.boottest=sysd
  check_boot 2
  [ -z "$(line 'crier-growdata: ')" ] || fail "boot 2: crier-data grown again: $(line 'crier-growdata: ')"
  wait_for 'state: loaded /var/lib/crier/state' 30 >/dev/null || fail "boot 2: crier did not load its state file: $(line 'state: ')"
  loaded="$(line 'state: loaded /var/lib/crier/state')"
  say "boot 2: $loaded"
  grep -qw "$SAVED_VOLUME" <<<"$loaded" || fail "boot 2: crier loaded another volume than boot 1 saved ($SAVED_VOLUME): $loaded"
  say "boot 2: crier's state survived the power cut ($SAVED_VOLUME)"
  check_sysd
fi
power_off
if ((HAVE_CRIER)); then
  # b, after the power-off: crier.conf on the boot partition is the request byte for byte.
  mtype -i "$FAT" ::/crier.conf > "$WORK/crier.conf.after" 2>/dev/null || true
  { cat "$WORK/crier.conf"; echo "speech.en.rate = 170"; } | cmp -s - "$WORK/crier.conf.after" ||
    fail "b: crier.conf on the boot partition is not what the page asked for: $(diff "$WORK/crier.conf" "$WORK/crier.conf.after" | head -n 5 | paste -sd'|')"
  say "b: crier.conf on the boot partition after boot 2: the page's file byte for byte ($(stat -c %s "$WORK/crier.conf.after") bytes, $(grep -c '^[[:space:]]*#' "$WORK/crier.conf.after") comment lines kept, 'speech.en.rate = 170' added)"
fi

# ---- boot 3: the update the server offers --------------------------------------------------
if [ "$UPDATE" != 0 ]; then
  DL=on; [ "$UPDATE" != stream ] || DL=off
  put_conf "update.allow_remote = on" "update.quiet_seconds = 10" "update.download = $DL"
  say "boot 3: crier.conf now has update.allow_remote = on, update.quiet_seconds = 10, update.download = $DL"
  boot_vm 3
  t=$(wait_for "$READY_RE" "$BOOT_TIMEOUT") || fail "boot 3: no '$READY_RE' on the serial console within ${BOOT_TIMEOUT}s"
  say "boot 3: ready after ${t}s"
  t=$(wait_for 'INFO update: installing version=' 120) || fail "boot 3: crier did not start installing the offered update"
  say "boot 3: ${t}s: $(line 'INFO update: installing')"
  T_INST0=$t
  t=$(wait_for 'update: (installed version=|install of version)' 600) || fail "boot 3: the install did not finish within 600 s"
  grep -q '^update: installed version=' <<<"$(line 'update: (installed version=|install of version)')" ||
    fail "boot 3: the install failed: $(line 'update: install of version')"
  T_INSTALL=$(awk -v a="$T_INST0" -v b="$t" 'BEGIN { printf "%.1f", b - a }')
  say "boot 3: ${t}s: $(line 'INFO update: installed version=') (install ${T_INSTALL}s)"
  tr -d '\r' < "$SERIAL" | grep -oE 'INFO update: rauc: .*' | sed 's/^/    /' | tail -n 8
  t=$(wait_for 'INFO update: rebooting into the installed update' 120) || fail "boot 3: crier did not ask for the reboot after update.quiet_seconds"
  say "boot 3: ${t}s: $(line 'INFO update: rebooting into')"
  # crier-reboot.path (root) reboots; QEMU (-no-reboot) exits when the guest does.
  for _ in $(seq 240); do kill -0 "$QEMU_PID" 2>/dev/null || break; sleep 0.5; done
  if kill -0 "$QEMU_PID" 2>/dev/null; then
    fail "boot 3: crier asked for the reboot but the VM did not reboot within 120 s (crier-reboot.path)"
  fi
  wait "$QEMU_PID" 2>/dev/null || true; QEMU_PID=""
  say "boot 3: the VM rebooted by itself ($(tr -d '\r' < "$SERIAL" | grep -m1 -oE 'reboot: Restarting system' || echo 'QEMU exited'))"
  ranges=$(grep -c '^GET .* range=bytes=' "$WORK/http.log" || true)
  served=$(awk '$1 == "GET" { split($NF, b, "="); n += b[2] } END { print n + 0 }' "$WORK/http.log")
  say "boot 3: the bundle server answered $(grep -c . "$WORK/http.log") requests ($ranges with a range), $((served / 1024)) KiB of the $((BUNDLE_BYTES / 1024)) KiB bundle"
  if [ "$DL" = on ]; then
    ((served >= BUNDLE_BYTES)) || fail "boot 3: the bundle was not downloaded in full ($served of $BUNDLE_BYTES bytes)"
    say "boot 3: $(line 'INFO update: downloaded ')"
    ! debugfs -R "stat /crier/update-download.raucb" "$DATAFS" 2>&1 | grep -q '^Inode:' || fail "boot 3: the downloaded bundle was left on crier-data"
  fi
  SLOTB="$DISK?offset=$((starts[2] * 512))"
  got="$(debugfs -R "cat /crier-boot-test-bundle" "$SLOTB" 2>/dev/null || true)"
  [ "$got" = "boot-test bundle $BUNDLE_VERSION" ] || fail "boot 3: slot B does not hold the bundle's file system (marker: '$got')"
  e2fsck -fn "$SLOTB" >/dev/null 2>&1 || fail "boot 3: e2fsck: slot B is not clean"
  say "boot 3: slot B holds the bundle's root file system (marker file read back, e2fsck clean)"
  pending="$(debugfs -R "cat /crier/update-pending" "$DATAFS" 2>/dev/null || true)"
  grep -qx "version=$BUNDLE_VERSION" <<<"$pending" && grep -qx 'slot=B' <<<"$pending" ||
    fail "boot 3: crier-data has no post-install record of $BUNDLE_VERSION in slot B: $(paste -sd'|' <<<"$pending")"
  say "boot 3: crier-data /crier/update-pending: $(paste -sd' ' <<<"$pending")"
fi
exec 4>&- 2>/dev/null || true

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
  echo "  crier's units under systemd (boot 2, scripts/boot-test-sysd.sh): ${T_SYSD}s in the guest; exposure: $(tr -d '\r' < "$WORK/serial2.log" | sed -n 's/.*crier-boot-sysd: d: \(crier[^ ]*\)\.service \([0-9.]*\).*/\1 \2/p' | paste -sd',' | sed 's/,/, /g')"
  [ "$UPDATE" = 0 ] || echo "  update offered by the server: bundle $((BUNDLE_BYTES / 1024)) KiB downloaded (update.download = $DL) and installed into slot B in ${T_INSTALL}s, then rebooted by crier-reboot.path"
else
  echo "  power-on to probe line: ${T_READY1}s, to boot finished (running): ${T_MULTI1}s (QEMU TCG; no crier in this image)"
fi
echo "  total: $(elapsed "$T0")s"
