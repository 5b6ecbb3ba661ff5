#!/usr/bin/env bash
# Boots the arm64 Crier image as a Raspberry Pi 3 B in QEMU (TCG) and proves what it can:
#
#   scripts/boot-test.sh --arch arm64 [--mem MB] [IMAGE]   (default out/crier-arm64.img, or its .img.xz)
#
#   --mem MB   the kernel's mem= (default 512: a Raspberry Pi Zero 2 W's memory; QEMU's raspi3b
#              has 1 GB fixed). --mem 0 boots with all of it, as a Pi 3 B.
#
# What boots is the image's own boot partition, read with mtools: the kernel= that config.txt
# names (u-boot.bin) and bcm2837-rpi-3-b.dtb with config.txt's dtoverlay= lines applied by
# fdtoverlay (what the Pi firmware does with overlays/NAME.dtbo), on `qemu-system-aarch64 -M
# raspi3b` with the whole image as its SD card. From there it is the Pi's own chain: U-Boot runs
# boot.scr from the SD card, which takes an attempt from slot A in uboot.env, saves it, and loads
# slot A's /vmlinuz and /initrd.img (docs/updates.md). Differences from a Pi:
#   - no bootcode.bin/start.elf: QEMU loads u-boot.bin and the dtb itself; the firmware would
#     also set the memory node, serial number, MAC and apply dtparam= lines (this image has
#     none). The firmware's overlay step is replayed with fdtoverlay.
#   - the test's extra kernel parameters go in crier-bootargs.txt on the boot partition, the
#     file boot.scr reads for that (an integrator's way too).
#   - QEMU's raspi3b has no VideoCore: no vchiq services, so the 3.5 mm jack (snd_bcm2835)
#     cannot appear; its I2S block is not emulated either (the overlay's card may or may not
#     probe; reported, not required). Sound leaves through QEMU's usb-audio on the emulated
#     DWC2 USB port, recorded by the host (-audiodev wav).
#   - the SD card is the image padded to a power of two (QEMU requires it): crier-data grows.
# Serial: the first -serial is the PL011 (Bluetooth on a Pi 3), the second the mini UART on
# GPIO14/15 = serial0 = ttyS1, the console this image names last; that one is checked.
# Checks, boot 1 (BOOT_TIMEOUT, default 900 s under TCG):
#   - U-Boot's boot.scr chose slot A ("crier-boot: slot A" with the attempts left) and booted it
#   - crier-mark-good marked slot A good (a normal boot), and after the power cut uboot.env on
#     the boot partition holds BOOT_A_LEFT=3 again (RAUC's uboot backend through fw_setenv)
#   - systemd reaches a running system with no failed unit; the layout line (read-only root,
#     crier-data binds) as on amd64; crier-data grown on first boot; no EROFS in the journal
#   - the Pi's GPIO controller (pinctrl-bcm2835) with the button lines GPIO17, 27, 22, 23, 24
#     by name; with crier they must be requested by crier (gpioinfo consumer), without crier
#     the probe requests them itself with gpiomon and they must show as used
#   - the USB audio device as an ALSA card in the guest; the probe plays a 1 kHz tone on it
#     (speaker-test) and the host's capture must hold it (or, with crier, the order's speech)
#   - the under-voltage sensor (scripts/kmod-raspi-hwmon.sh): raspberrypi-hwmon.ko in updates/
#     with the running kernel's vermagic, in lsmod (by udev when the firmware driver registered
#     the raspberrypi-hwmon device, else by hand); with the device, bound and an rpi_volt hwmon;
#     with crier, `crier status` reads it ("under-voltage only (hwmon)"), says "under-voltage
#     unknown" once the module is unloaded and reads it again once it is loaded again (without
#     the device: "under-voltage unknown"). QEMU's mailbox trace (bcm2835_mbox_property) counts
#     the GET_THROTTLED requests and whether QEMU answered them (7.2 does not: docs/image.md)
#   - with crier (image built with --deb): "runtime: ready" on the UART, an order from an
#     in-guest `crier-sim order-sim` (added to the test's copy from the crier-sim package, not
#     shipped in the image) spoken and acked, and the capture holds speech
#   - with crier, as a Pi Zero 2 W (docs/image.md#pi-zero-2-w-512-mb): the boot has mem=512M,
#     music plays from a file (a FLAC put into the test's copy at /srv/music, music.source
#     = /srv/music), and after the order a probe prints the guest's free memory (free -m,
#     MemAvailable), crier's RSS (VmRSS, VmHWM) and CPU (/proc/PID/stat over ZERO_CPU_S, 20 s,
#     with the music playing), the music's and the power sensors' state (crier status --json);
#     checked: music playing, MemAvailable >= ZERO_MIN_AVAIL_MB (100), the capture holds music
#     besides the speech
# Then QEMU is stopped (SIGTERM, no shutdown: a power cut), the root partition must be byte for
# byte unchanged and both ext4 file systems clean. Serial log kept as <image>.serial.log.
# Env: BOOT_TIMEOUT (s, default 900), QEMU_OVERLAYS=0 (boot the dtb without config.txt's overlays),
# ZERO_CPU_S (20), ZERO_MIN_AVAIL_MB (100).
set -euo pipefail
source "$(dirname "$0")/env.sh"
source "$(dirname "$0")/boot-guest-crash.sh"
retry_on_guest_crash "$0" "$@"

MEM=512
while (($#)); do
  case "$1" in
    --mem) MEM="${2:-}"; shift 2 || true ;;
    -h|--help) sed -n '2,8p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    --*) echo "boot-test-arm64: unknown option $1" >&2; exit 2 ;;
    *) break ;;
  esac
done
[[ "$MEM" =~ ^[0-9]+$ ]] && ((MEM == 0 || (MEM >= 256 && MEM <= 1024))) ||
  { echo "boot-test-arm64: --mem MB: 256 to 1024, or 0 for the machine's 1 GB (not '$MEM')" >&2; exit 2; }
ZERO_CPU_S="${ZERO_CPU_S:-20}"
ZERO_MIN_AVAIL_MB="${ZERO_MIN_AVAIL_MB:-100}"
IMG="${1:-$ROOT/out/crier-arm64.img}"
BOOT_TIMEOUT="${BOOT_TIMEOUT:-900}"
T0=$(date +%s.%N)
elapsed() { awk -v a="$1" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }'; }
say() { printf '[boot-test arm64 %6ss] %s\n' "$(elapsed "$T0")" "$*"; }

missing=()
for p in qemu-system-arm mtools e2fsprogs fdisk xz-utils python3 device-tree-compiler; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  say "installing ${missing[*]}"
  SUDO=""; [ "$(id -u)" = 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

IMG="${IMG%.xz}"
base="${IMG%.img}"
WORK="$(mktemp -d /tmp/crier-boot-test-arm64.XXXXXX)"
SERIAL="$WORK/uart1.log"
QEMU_PID=""
cleanup() {
  local rc=$?
  [ -n "$QEMU_PID" ] && kill "$QEMU_PID" 2>/dev/null || true
  wait 2>/dev/null || true
  [ -f "$SERIAL" ] && tr -d '\r' < "$SERIAL" > "$base.serial.log" 2>/dev/null || true
  rm -rf "$WORK"
  exit $rc
}
trap cleanup EXIT
fail() {
  say "FAILED: $*"
  if [ -f "$SERIAL" ]; then echo "===== serial0 (mini UART, ttyS1) ====="; tr -d '\r' < "$SERIAL"; else echo "(no serial output)"; fi
  echo "===== end of serial log ====="
  [ -s "$WORK/qemu.out" ] && { echo "===== qemu ====="; cat "$WORK/qemu.out"; }
  guest_crash_exit "$SERIAL"
  exit 1
}

if [ ! -f "$IMG" ] && [ -f "$IMG.xz" ]; then
  say "decompressing $(basename "$IMG").xz"
  xz -dc -T2 "$IMG.xz" | cp --sparse=always /dev/stdin "$WORK/disk.img"
elif [ -f "$IMG" ]; then
  cp --sparse=always "$IMG" "$WORK/disk.img"
else
  fail "no image at $IMG(.xz): run scripts/build-image.sh --arch arm64 first"
fi
DISK="$WORK/disk.img"
# QEMU's SD card must be a power of two in size; that also makes it bigger than the image, so
# crier-growdata's first-boot growth shows.
size=$(stat -c %s "$DISK"); card=$((1 << 20)); while ((card < size + (256 << 20))); do card=$((card * 2)); done
truncate -s "$card" "$DISK"

mapfile -t starts < <(sfdisk -d "$DISK" | sed -n 's/.*start= *\([0-9]*\),.*/\1/p')
mapfile -t sizes < <(sfdisk -d "$DISK" | sed -n 's/.*size= *\([0-9]*\),.*/\1/p')
((${#starts[@]} == 4)) || fail "expected 4 partitions (boot, slot A, slot B, crier-data), found ${#starts[@]}"
FAT="$DISK@@$((starts[0] * 512))"
EXT="$DISK?offset=$((starts[1] * 512))"
DATAFS="$DISK?offset=$((starts[3] * 512))"
root_sum() { dd if="$DISK" bs=1M iflag=skip_bytes,count_bytes skip=$((starts[1] * 512)) count=$((sizes[1] * 512)) status=none | sha256sum | cut -d' ' -f1; }
export MTOOLS_SKIP_CHECK=1

# ---- what the Pi firmware would load, from the image's boot partition ----------------------
mtype -i "$FAT" ::/config.txt | tr -d '\r' > "$WORK/config.txt" || fail "no config.txt on the boot partition"
kernel="$(sed -n 's/^kernel=//p' "$WORK/config.txt" | tail -n 1)"
[ "$kernel" = u-boot.bin ] || fail "config.txt names kernel=${kernel:-nothing}, not u-boot.bin (the A/B boot loader)"
mcopy -n -i "$FAT" "::/$kernel" "$WORK/kernel" || fail "config.txt's kernel=$kernel is not on the boot partition"
mcopy -n -i "$FAT" ::/bcm2837-rpi-3-b.dtb "$WORK/board.dtb" || fail "no bcm2837-rpi-3-b.dtb on the boot partition"
cp "$WORK/board.dtb" "$WORK/boot.dtb"
OVERLAYS=()
if [ "${QEMU_OVERLAYS:-1}" = 1 ]; then
  while read -r o; do
    mcopy -n -i "$FAT" "::/overlays/$o.dtbo" "$WORK/$o.dtbo" || fail "config.txt: dtoverlay=$o but no overlays/$o.dtbo"
    fdtoverlay -i "$WORK/boot.dtb" -o "$WORK/boot.dtb.new" "$WORK/$o.dtbo" || fail "fdtoverlay refused $o.dtbo on bcm2837-rpi-3-b.dtb"
    mv "$WORK/boot.dtb.new" "$WORK/boot.dtb"; OVERLAYS+=("$o")
  done < <(sed -n 's/^dtoverlay=\([^,]*\).*/\1/p' "$WORK/config.txt")
fi
# modprobe.blacklist=bcm2835_wdt (test only): QEMU's raspi3b emulates the PM watchdog, and with
# the crier package's RuntimeWatchdogSec=15s a starved TCG guest was reset ~100 s into boot
# (seen on a loaded 2-core host); a real Pi keeps the watchdog. -no-reboot makes any other
# reset a failure instead of a boot loop.
# systemd.default_device_timeout_sec=900 (test only): on a loaded 2-core host the TCG guest's udev
# took longer than systemd's default 90 s to announce the SD card's partitions, and every mount
# of /boot/firmware and crier-data (and so crier.service) failed on "Timed out waiting for
# device"; a real Pi's udev announces them within seconds.
# mem=512M: the Zero 2 W's 512 MB on QEMU's raspi3b (1 GB fixed); the kernel uses the first 512 MB.
MEM_ARG=""; ((MEM)) && MEM_ARG=" mem=${MEM}M"
printf 'crier_extra_bootargs=systemd.show_status=1 modprobe.blacklist=bcm2835_wdt systemd.default_device_timeout_sec=900%s\n' "$MEM_ARG" > "$WORK/crier-bootargs.txt"
mcopy -o -i "$FAT" "$WORK/crier-bootargs.txt" ::/crier-bootargs.txt
say "firmware stage: $kernel, dtb bcm2837-rpi-3-b.dtb + overlays [${OVERLAYS[*]}]; test kernel parameters in crier-bootargs.txt: $(cut -d= -f2- "$WORK/crier-bootargs.txt")"

# ---- test-only changes to the copy -----------------------------------------------------------
HAVE_CRIER=0
debugfs -R "stat /usr/bin/crier" "$EXT" 2>&1 | grep -q '^Inode:' && HAVE_CRIER=1
add_file() {  # add_file SRC DEST: replace DEST on the root (debugfs)
  printf 'rm %s\nwrite %s %s\n' "$2" "$1" "$2" | debugfs -w -f - "$EXT" >/dev/null 2>&1
  debugfs -R "stat $2" "$EXT" 2>&1 | grep -q '^Inode:' || fail "debugfs could not write $2"
}
add_unit() {  # add_unit NAME FILE: a test-only unit, enabled for multi-user.target
  debugfs -w -f - "$EXT" >/dev/null 2>&1 <<EOF || fail "debugfs could not add the unit $1"
write $2 /etc/systemd/system/$1.service
cd /etc/systemd/system/multi-user.target.wants
symlink $1.service /etc/systemd/system/$1.service
EOF
}

# ALSA's default: the USB audio card QEMU emulates (its id "Audio", from "QEMU USB Audio"),
# through plug (crier opens 22050 Hz mono; the device takes 48000 Hz stereo).
debugfs -R "cat /etc/asound.conf" "$EXT" > "$WORK/asound.conf" 2>/dev/null || true
cat >> "$WORK/asound.conf" <<'EOF'

# --- boot-test only (scripts/boot-test-arm64.sh): QEMU's usb-audio is the speaker ---
pcm.!default {
    type plug
    slave.pcm "hw:CARD=Audio,DEV=0"
}
ctl.!default {
    type hw
    card Audio
}
EOF
add_file "$WORK/asound.conf" /etc/asound.conf

cat > "$WORK/state.service" <<'EOF'
[Unit]
Description=boot-test: report the system state on the console
[Service]
Type=simple
ExecStart=/bin/sh -c 'echo "crier-boot-state: $(systemctl is-system-running --wait) failed units: [$(systemctl --failed --no-legend --plain | cut -d" " -f1 | tr "\\n" " ")]"; journalctl -b --no-pager -o short-monotonic | grep -i "read-only file system" | head -n 5 | sed "s/^/crier-boot-erofs: /"; echo "crier-boot-erofs: end"'
StandardOutput=journal+console
[Install]
WantedBy=multi-user.target
EOF
add_unit crier-boot-state "$WORK/state.service"

# The Pi probe: the GPIO controller and the button lines, the sound cards, a tone on the USB
# card (without crier: crier's own speech is the sound otherwise).
cat > "$WORK/pi-probe.sh" <<'EOF'
#!/bin/sh
# boot-test only: what the emulated Pi offers crier. One "crier-pi-probe:" line per fact.
p() { echo "crier-pi-probe: $*"; }
chip=""
for c in /dev/gpiochip*; do
  [ -e "$c" ] || continue
  if gpioinfo -c "$c" 2>/dev/null | grep -q '"GPIO17"'; then chip="$c"; break; fi
done
p "gpio chip: ${chip:-none} ($(gpiodetect 2>/dev/null | grep -m1 pinctrl-bcm2835 || echo 'no pinctrl-bcm2835'))"
if [ "$1" = request ] && [ -n "$chip" ]; then
  # No crier: request the five lines the way crier does (inputs, both edges, pull-up).
  gpiomon -c "$chip" -b pull-up -e both GPIO17 GPIO27 GPIO22 GPIO23 GPIO24 >/dev/null 2>&1 &
  mon=$!; sleep 3
fi
for l in GPIO17 GPIO27 GPIO22 GPIO23 GPIO24; do
  info="$(gpioinfo -c "$chip" 2>/dev/null | grep -m1 "\"$l\"" | tr -s ' \t' ' ')"
  p "line $l: ${info:-MISSING}"
done
[ -n "${mon:-}" ] && kill "$mon" 2>/dev/null
# The USB speaker's card: udev loads snd-usb-audio when it sees the device's audio interfaces;
# under TCG on a loaded host that came after the probe's first look (seen: the device enumerated,
# the module not yet loaded), so wait for it (180 s). Not there then: say so, with the interfaces'
# modaliases, and load it by hand so the speech path is still tested (reported as a failure of
# autoloading by the host side).
n=0
until grep -q '\[Audio' /proc/asound/cards 2>/dev/null || [ $n -ge 180 ]; do
  [ $n = 0 ] && udevadm settle --timeout=60 2>/dev/null; sleep 1; n=$((n + 1))
done
if grep -q '\[Audio' /proc/asound/cards 2>/dev/null; then
  p "usb audio: card Audio after ${n}s of waiting (snd-usb-audio autoloaded by udev)"
else
  p "usb audio: NOT autoloaded after ${n}s; interfaces: $(cat /sys/bus/usb/devices/*:*/modalias 2>/dev/null | paste -sd' ' -)"
  modprobe snd-usb-audio && sleep 10
  p "usb audio: modprobe snd-usb-audio by hand: $(grep -c '\[Audio' /proc/asound/cards) card(s) Audio"
fi
# The USB path to the speaker (DWC2 host, QEMU's hub, usb-audio): for the log when no card shows.
p "usb: modules [$(lsmod | awk '$1 ~ /^(dwc2|phy_generic|snd_usb_audio)$/ { print $1 }' | paste -sd' ' -)] $(dmesg | grep -oE 'dwc2 [^ ]*: DWC OTG Controller|Product: QEMU USB Audio' | paste -sd';' -)"
p "cards: $(tr -s ' ' < /proc/asound/cards | grep -E '^ ?[0-9]' | paste -sd'|' -)"
if [ "$1" = request ]; then
  if speaker-test -D plughw:CARD=Audio,DEV=0 -c 2 -r 48000 -t sine -f 1000 -l 1 -p 500000 >/dev/null 2>&1; then p "tone: played 1 kHz on the USB card"; else p "tone: speaker-test failed"; fi
fi
# The under-voltage sensor (scripts/kmod-raspi-hwmon.sh): the module built for the image's
# kernel, the platform device the firmware driver registers when GET_THROTTLED answers, the
# hwmon "rpi_volt" the module makes of it, and what crier status says about power.
ko=/lib/modules/$(uname -r)/updates/raspberrypi-hwmon.ko
dev=/sys/bus/platform/devices/raspberrypi-hwmon
loaded() { grep -q '^raspberrypi_hwmon ' /proc/modules; }
rpivolt() { for h in /sys/class/hwmon/hwmon*; do [ "$(cat "$h/name" 2>/dev/null)" = rpi_volt ] && echo "$h in0_lcrit_alarm=$(cat "$h/in0_lcrit_alarm" 2>&1)"; done; }
crierpower() { crier status 2>/dev/null | grep '^power:' || echo "(crier status has no power line)"; }
if [ -f "$ko" ]; then p "hwmon module: present $ko vermagic $(modinfo -F vermagic "$ko") (kernel $(uname -r))"; else p "hwmon module: MISSING $ko"; fi
if [ -e "$dev" ]; then p "hwmon device: registered by the firmware driver"; else p "hwmon device: not registered (the firmware driver's GET_THROTTLED failed at boot)"; fi
if loaded; then p "hwmon load: loaded by udev"
elif modprobe raspberrypi_hwmon 2>/dev/null && loaded; then p "hwmon load: not loaded by udev; modprobe by hand: loaded"
else p "hwmon load: FAILED (modprobe raspberrypi_hwmon: $(modprobe raspberrypi_hwmon 2>&1 | head -n 1))"; fi
p "hwmon lsmod: $(lsmod | awk '$1 == "raspberrypi_hwmon"' | tr -s ' ')"
p "hwmon driver: $(basename "$(readlink "$dev/driver" 2>/dev/null)" 2>/dev/null || echo none)"
p "hwmon dmesg: $(dmesg | grep -iE 'raspberrypi.hwmon|rpi_volt|undervoltage|voltage normalised|module verification|out-of-tree' | sed 's/^\[ *[0-9.]*\] //' | paste -sd'|' -)"
sleep 3   # the driver's first poll of the firmware, 2 s after its probe
p "hwmon rpi_volt: $(rpivolt | head -n 1)"
if command -v crier >/dev/null; then
  sleep 6   # crier reads the sensors every 5 s
  p "crier power, module loaded: $(crierpower)"
  # The sensor taken away and given back: the module unloads and loads again, crier follows.
  if loaded && rmmod raspberrypi_hwmon; then
    sleep 6; p "crier power, module unloaded: $(crierpower)"
    modprobe raspberrypi_hwmon; sleep 8
    p "crier power, module loaded again: $(crierpower); lsmod: $(lsmod | awk '$1 == "raspberrypi_hwmon" { print $1 }'); $(rpivolt | head -n 1)"
  fi
fi
p "end"
EOF
chmod 0755 "$WORK/pi-probe.sh"
add_file "$WORK/pi-probe.sh" /usr/local/sbin/crier-pi-probe
debugfs -w -R "sif /usr/local/sbin/crier-pi-probe mode 0100755" "$EXT" >/dev/null 2>&1
if ((HAVE_CRIER)); then PROBE_ARG=observe; PROBE_AFTER="After=crier.service"; else PROBE_ARG=request; PROBE_AFTER=""; fi
cat > "$WORK/probe.service" <<EOF
[Unit]
Description=boot-test: the Pi's GPIO lines and sound cards
After=systemd-udevd.service systemd-modules-load.service
$PROBE_AFTER
[Service]
Type=oneshot
ExecStartPre=/bin/sleep ${PROBE_DELAY:-20}
ExecStart=/usr/local/sbin/crier-pi-probe $PROBE_ARG
StandardOutput=journal+console
[Install]
WantedBy=multi-user.target
EOF
add_unit crier-pi-probe "$WORK/probe.service"

if ((HAVE_CRIER)); then
  # crier.conf: the in-guest order server on the loopback (there is no network on raspi3b:
  # its Ethernet is a USB chip QEMU does not emulate).
  { mtype -i "$FAT" ::/crier.conf 2>/dev/null | tr -d '\r' | grep -vE '^[[:space:]]*(server|device\.id|audio\.device|music\.source)[[:space:]]*=' || true
    echo "server = tcp://127.0.0.1:7000"
    echo "device.id = qemu-raspi3b"
    echo "audio.device = default"
    echo "music.source = /srv/music"; } > "$WORK/crier.conf"
  mcopy -o -i "$FAT" "$WORK/crier.conf" ::/crier.conf
  # Music from a file, as a shop plays it: 8 s of a melody (sine notes, peak -6 dBFS, 44.1 kHz
  # stereo, so crier decodes and resamples as it would a CD rip), FLAC when the host has sox.
  python3 - "$WORK/music.wav" <<'PY'
import math, struct, sys, wave
rate, notes = 44100, [262, 330, 392, 523, 392, 330, 294, 349, 440, 587, 440, 349, 247, 294, 392, 494]
amp, out = 32767 * 10 ** (-6 / 20), []
for f in notes * 2:
    n = rate // 4
    for k in range(n):
        e = min(1.0, k / 220) * (1 - k / n) ** 0.5
        v = int(amp * e * math.sin(2 * math.pi * f * k / rate))
        out.append(struct.pack("<hh", v, v))
w = wave.open(sys.argv[1], "wb"); w.setnchannels(2); w.setsampwidth(2); w.setframerate(rate)
w.writeframes(b"".join(out)); w.close()
PY
  MUSIC_FILE="$WORK/music.wav"
  command -v sox >/dev/null && sox -q "$WORK/music.wav" "$WORK/music.flac" 2>/dev/null && MUSIC_FILE="$WORK/music.flac"
  printf 'mkdir /srv\nmkdir /srv/music\n' | debugfs -w -f - "$EXT" >/dev/null 2>&1 || true
  add_file "$MUSIC_FILE" "/srv/music/boot-test.${MUSIC_FILE##*.}"
  debugfs -w -R "sif /srv/music/boot-test.${MUSIC_FILE##*.} mode 0100644" "$EXT" >/dev/null 2>&1
  say "test copy: music.source = /srv/music with boot-test.${MUSIC_FILE##*.} ($(stat -c %s "$MUSIC_FILE") bytes, 8 s, 44.1 kHz stereo)"
  # The order: an in-guest `crier-sim order-sim` on the loopback that types ONE order (42) once
  # crier has connected, so "order -> spoken" is the speaking path alone and not crier's start;
  # every line it prints is stamped with the guest's uptime. crier-sim is not in the image (the
  # box ships crier only, issue 32): this test's copy gets the arm64 crier-sim of the image's
  # crier version from its package, which scripts/build-deb.sh --target trixie-arm64 (run by
  # build-image.sh --arch arm64) leaves beside crier's (CRIER_SIM_DEB names another).
  ver="$(debugfs -R "cat /var/lib/dpkg/status" "$EXT" 2>/dev/null |
    awk '/^Package: / { p = ($2 == "crier") } p && /^Version: / && v == "" { v = $2 } END { print v }')"
  SIM_DEB="${CRIER_SIM_DEB:-$(dirname "$IMG")/crier-sim_${ver}_arm64.deb}"
  [ -f "$SIM_DEB" ] || SIM_DEB="$ROOT/out/crier-sim_${ver}_arm64.deb"
  [ -f "$SIM_DEB" ] || fail "no crier-sim package for the image's crier $ver ($SIM_DEB): build it with scripts/build-deb.sh --target trixie-arm64, or set CRIER_SIM_DEB"
  dpkg-deb --fsys-tarfile "$SIM_DEB" | tar -xOf - ./usr/bin/crier-sim > "$WORK/crier-sim" ||
    fail "$SIM_DEB holds no usr/bin/crier-sim"
  add_file "$WORK/crier-sim" /usr/local/sbin/crier-sim
  debugfs -w -R "sif /usr/local/sbin/crier-sim mode 0100755" "$EXT" >/dev/null 2>&1
  say "test copy: crier-sim $ver from $(basename "$SIM_DEB") in /usr/local/sbin (not in the image itself)"
  cat > "$WORK/boot-order.sh" <<'EOF'
#!/bin/sh
# boot-test only (scripts/boot-test-arm64.sh): one order from crier-sim order-sim after crier connects.
up() { cut -d' ' -f1 /proc/uptime; }
fifo=/run/crier-boot-order.in log=/run/crier-boot-order.log
rm -f "$fifo"; mkfifo "$fifo"; : > "$log"
( exec 3>"$fifo"                 # held open: order-sim never reads EOF
  # ... and once the emulated speaker is an ALSA card (the probe unit waits for it too).
  until grep -q '^device connected' "$log" && grep -q '\[Audio' /proc/asound/cards; do sleep 0.2; done
  echo "crier-boot-order: sending order 42 at uptime $(up)"
  echo 42 >&3
  exec sleep 3600 ) &
/usr/local/sbin/crier-sim order-sim --host 127.0.0.1 --port 7000 --every 0 --count 1 < "$fifo" 2>&1 |
  while IFS= read -r l; do echo "$l" >> "$log"; echo "crier-boot-order: [$(up)] $l"; done
exit 0
EOF
  chmod 0755 "$WORK/boot-order.sh"
  add_file "$WORK/boot-order.sh" /usr/local/sbin/crier-boot-order
  debugfs -w -R "sif /usr/local/sbin/crier-boot-order mode 0100755" "$EXT" >/dev/null 2>&1
  cat > "$WORK/order-sim.service" <<'EOF'
[Unit]
Description=boot-test: an order server in the guest (crier-sim order-sim), one order once crier connects
Before=crier.service
[Service]
Type=simple
ExecStart=/usr/local/sbin/crier-boot-order
StandardOutput=journal+console
StandardError=journal+console
[Install]
WantedBy=multi-user.target
EOF
  add_unit crier-boot-order-sim "$WORK/order-sim.service"
  # The Zero 2 W figures, once the order is spoken, with the music playing.
  printf '#!/bin/sh\n# boot-test only (scripts/boot-test-arm64.sh): memory and CPU as a Pi Zero 2 W; "crier-zero:" lines.\ncpu_s=%s\n' "$ZERO_CPU_S" > "$WORK/zero-figures.sh"
  cat >> "$WORK/zero-figures.sh" <<'EOF'
p() { echo "crier-zero: $*"; }
until grep -q 'status=spoken' /run/crier-boot-order.log 2>/dev/null; do sleep 1; done
sleep 5                                   # the alert's tail; the music back up
pid=$(systemctl show -p MainPID --value crier.service)
tck=$(getconf CLK_TCK 2>/dev/null || echo 100)
# (The image has no procps: no free(1); the same figures from /proc/meminfo.)
p "mem: kernel mem=$(sed -n 's/.*mem=\([^ ]*\).*/\1/p' /proc/cmdline); $(awk '/^MemTotal:/ { t = $2 } /^MemAvailable:/ { a = $2 } END { printf "total %d MiB, used (total - available) %d MiB, available %d MiB", t / 1024, (t - a) / 1024, a / 1024 }' /proc/meminfo)"
p "meminfo: $(awk '/^(MemTotal|MemFree|MemAvailable|Cached|AnonPages|Shmem|CmaTotal|SwapTotal):/ { printf "%s %d MiB; ", $1, $2 / 1024 }' /proc/meminfo)"
p "music: $(crier status --json 2>/dev/null | grep -o '"music":{[^}]*}' || echo none)"
jiff() { awk '{ print $14 + $15 }' /proc/$pid/stat; }
busy() { awk '/^cpu / { print $2 + $3 + $4 + $7 + $8, $2 + $3 + $4 + $5 + $6 + $7 + $8 }' /proc/stat; }
j0=$(jiff); b0=$(busy); t0=$(cut -d' ' -f1 /proc/uptime)
sleep "$cpu_s"
j1=$(jiff); b1=$(busy); t1=$(cut -d' ' -f1 /proc/uptime)
start=$(awk '{ print $22 }' /proc/$pid/stat)
p "crier cpu: $(awk -v a="$j0" -v b="$j1" -v t0="$t0" -v t1="$t1" -v h="$tck" 'BEGIN { printf "%.1f %% of one core over %.1f s (music playing, no order)", (b - a) / h / (t1 - t0) * 100, t1 - t0 }'); since its start: $(awk -v j="$j1" -v s="$start" -v t="$t1" -v h="$tck" 'BEGIN { printf "%.1f s CPU in %.1f s = %.1f %%", j / h, t - s / h, j / h / (t - s / h) * 100 }')"
p "system cpu: $(echo "$b0 $b1" | awk '{ printf "%.1f %% of the 4 vCPUs busy over the same interval", ($3 - $1) / ($4 - $2) * 100 }')"
p "crier rss: $(awk '/^(VmRSS|VmHWM|RssAnon|RssFile|Threads):/ { printf "%s %s %s; ", $1, $2, $3 }' /proc/$pid/status)"
p "available after: MemAvailable $(awk '/^MemAvailable:/ { printf "%d", $2 / 1024 }' /proc/meminfo) MiB"
st="$(crier status --json 2>/dev/null)"
p "power: $(echo "$st" | grep -o '"power":{[^}]*}' || echo 'no power field'); last_start: $(echo "$st" | grep -o '"last_start":"[^"]*"' || echo none)"
p "sensors: get_throttled $(cat /sys/devices/platform/soc/soc:firmware/get_throttled 2>/dev/null || echo absent); hwmon [$(cat /sys/class/hwmon/*/name 2>/dev/null | paste -sd' ' -)]; thermal_zone0 $(cat /sys/class/thermal/thermal_zone0/temp 2>/dev/null || echo absent)"
p "end"
EOF
  chmod 0755 "$WORK/zero-figures.sh"
  add_file "$WORK/zero-figures.sh" /usr/local/sbin/crier-zero-figures
  debugfs -w -R "sif /usr/local/sbin/crier-zero-figures mode 0100755" "$EXT" >/dev/null 2>&1
  cat > "$WORK/zero-figures.service" <<'EOF'
[Unit]
Description=boot-test: memory and CPU as a Pi Zero 2 W, after the order
After=crier.service crier-boot-order-sim.service
[Service]
Type=simple
ExecStart=/usr/local/sbin/crier-zero-figures
StandardOutput=journal+console
[Install]
WantedBy=multi-user.target
EOF
  add_unit crier-zero-figures "$WORK/zero-figures.service"
fi

# ---- boot ------------------------------------------------------------------------------------
ROOT_SUM_BEFORE=$(root_sum)
say "boot: qemu-system-aarch64 -M raspi3b (TCG), SD card $((card >> 20)) MiB, crier: $( ((HAVE_CRIER)) && echo yes || echo 'no (image built without --deb)')"
# The first power-on of a fresh card: boot.scr switches U-Boot's USB start off for good, saves
# and resets (before counting an attempt); with -no-reboot that ends QEMU.
qemu-system-aarch64 -M raspi3b -kernel "$WORK/kernel" -dtb "$WORK/boot.dtb" \
  -drive "file=$DISK,if=sd,format=raw" -serial null -serial "file:$WORK/uart1.first.log" \
  -display none -monitor none -no-reboot < /dev/null > "$WORK/qemu.first.out" 2>&1 &
QEMU_PID=$!
for _ in $(seq 240); do kill -0 "$QEMU_PID" 2>/dev/null || break; sleep 0.5; done
kill "$QEMU_PID" 2>/dev/null && fail "the first power-on did not restart by itself within 120 s: $(tr -d '\r' < "$WORK/uart1.first.log" | grep 'crier-boot' | paste -sd'|')"
wait "$QEMU_PID" 2>/dev/null || true; QEMU_PID=""
grep -q 'crier-boot: first power-on: USB stays off' "$WORK/uart1.first.log" || fail "boot.scr's first power-on step did not run: $(tr -d '\r' < "$WORK/uart1.first.log" | tail -n 5 | paste -sd'|')"
say "first power-on: $(tr -d '\r' < "$WORK/uart1.first.log" | grep -o 'crier-boot: first power-on.*' | cut -c1-100)"
TBOOT=$(date +%s.%N)
qemu-system-aarch64 -M raspi3b -kernel "$WORK/kernel" -dtb "$WORK/boot.dtb" \
  -drive "file=$DISK,if=sd,format=raw" \
  -serial "file:$WORK/uart0.log" -serial "file:$SERIAL" -display none -monitor none -no-reboot \
  -usb -device usb-audio,audiodev=snd0 -audiodev "wav,id=snd0,path=$WORK/capture.wav" \
  -trace bcm2835_mbox_property -D "$WORK/qemu-trace.log" \
  < /dev/null > "$WORK/qemu.out" 2>&1 &
QEMU_PID=$!

wait_for() {
  local deadline=$(( $(date +%s) + $2 ))
  while (( $(date +%s) < deadline )); do
    if { tr -d '\r' < "$SERIAL" | grep -qE "$1"; } 2>/dev/null; then elapsed "$TBOOT"; return 0; fi
    kill -0 "$QEMU_PID" 2>/dev/null || return 1
    ! guest_crash "$SERIAL" >/dev/null || return 1
    sleep 0.5 || true
  done
  return 1
}
line() { tr -d '\r' < "$SERIAL" | grep -m1 -oE "$1.*" || true; }

# U-Boot prints on serial0 too (the dtb's stdout-path); its script's choice comes first.
t=$(wait_for 'crier-boot: slot ' 300) || fail "U-Boot's boot.scr chose no slot within 300 s (no 'crier-boot: slot' line on serial0)"
T_UBOOT=$t
say "U-Boot after ${t}s: $(line 'crier-boot: slot ' | cut -c1-120)"
grep -q 'crier-boot: slot A (partition 2); attempts left now A=2 B=3' <<<"$(line 'crier-boot: slot ')" || fail "boot.scr did not take a first attempt from slot A: $(line 'crier-boot: slot ')"
# The kernel has "quiet": its own lines stay off the console; systemd's status lines
# (systemd.show_status=1) are the next sign of life on serial0.
t=$(wait_for 'Welcome to|systemd\[1\]|\[  OK  \]|OK ' 600) || fail "nothing from Linux on serial0 (mini UART, ttyS1) within 600 s of power-on"
say "first Linux console output on serial0 after ${t}s"
t=$(wait_for 'crier-image: ' "$BOOT_TIMEOUT") || fail "no 'crier-image:' layout line within ${BOOT_TIMEOUT}s"
T_LAYOUT=$t
say "layout after ${t}s: $(line 'crier-image: ')"
LAYOUT_RE='crier-image: / ro \(slot A, crier-root, writes refused\), /var/lib/crier rw on crier-data, /var/lib/systemd rw on crier-data'
[ -n "$(line "$LAYOUT_RE")" ] && [ -z "$(line 'NOT AS DESIGNED')" ] || fail "storage layout not as designed: $(line 'crier-image: ')"
t=$(wait_for 'crier-boot-state: ' 600) || fail "the boot did not finish (no crier-boot-state line)"
T_MULTI=$t
state="$(line 'crier-boot-state: ')"
say "boot finished after ${t}s: $state"
grep -q 'crier-boot-state: running' <<<"$state" || fail "system not running: $state"
wait_for 'crier-boot-erofs: end' 60 >/dev/null || fail "no 'crier-boot-erofs: end' line"
if tr -d '\r' < "$SERIAL" | grep 'crier-boot-erofs: ' | grep -qv 'crier-boot-erofs: end'; then
  fail "something tried to write the read-only root: $(tr -d '\r' < "$SERIAL" | grep 'crier-boot-erofs: ' | paste -sd'|')"
fi
grow="$(line 'crier-growdata: ')"
say "first boot: ${grow:-no crier-growdata line}"
grep -q 'grown from' <<<"$grow" || fail "crier-data was not grown on first boot: $grow"

wait_for 'crier-pi-probe: end' 600 >/dev/null || fail "no 'crier-pi-probe: end' line (the GPIO/sound probe)"
tr -d '\r' < "$SERIAL" | grep -oE 'crier-pi-probe: .*' | sed 's/^/  /'
[ -n "$(line 'crier-pi-probe: gpio chip: /dev/gpiochip')" ] || fail "no GPIO chip with the line GPIO17 (pinctrl-bcm2835)"
for l in GPIO17 GPIO27 GPIO22 GPIO23 GPIO24; do
  info="$(line "crier-pi-probe: line $l: ")"
  grep -q MISSING <<<"$info" && fail "button line $l missing on the Pi's GPIO controller"
  if ((HAVE_CRIER)); then want='consumer="crier"'; else want='consumer="gpiomon"'; fi
  grep -q "$want" <<<"$info" || fail "button line $l not requested ($want expected): $info"
done
say "GPIO: all five button lines present and requested ($( ((HAVE_CRIER)) && echo by crier || echo by the probe\'s gpiomon))"
grep -qE '\[Audio *\]' <<<"$(line 'crier-pi-probe: cards: ')" || fail "QEMU's USB audio device is not an ALSA card in the guest"
say "sound: $(line 'crier-pi-probe: usb audio: ' | tail -n 1 | cut -c1-200)"
[ -z "$(line 'crier-pi-probe: usb audio: NOT autoloaded')" ] || { AUTOLOAD_FAILED=1; say "WARNING: udev did not load snd-usb-audio; the probe loaded it by hand"; }
say "sound: USB audio card present: $(line 'crier-pi-probe: cards: ' | cut -c1-160)"

# The under-voltage sensor (docs/image.md, "Under-voltage sensor"): raspberrypi-hwmon.ko is in
# the image for the running kernel and loads. What it reads depends on the firmware: QEMU's
# property mailbox (its trace, bcm2835_mbox_property) shows whether GET_THROTTLED (tag
# 0x00030046) was answered (out_sz > 0) or not.
hw() { line "crier-pi-probe: hwmon $1: " | sed "s/^crier-pi-probe: hwmon $1: //"; }
grep -qE '^present .* vermagic ([^ ]+) .*\(kernel \1\)$' <<<"$(hw module)" || fail "raspberrypi-hwmon.ko missing or not for the running kernel: $(hw module)"
say "power sensor: module $(hw module | cut -c1-150)"
say "power sensor: device $(hw device); load: $(hw load); driver: $(hw driver); $(hw rpi_volt)"
say "power sensor: dmesg: $(hw dmesg | cut -c1-300)"
grep -q FAILED <<<"$(hw load)" && fail "raspberrypi-hwmon.ko does not load: $(hw load)"
grep -q '^raspberrypi_hwmon ' <<<"$(hw lsmod)" || fail "raspberrypi_hwmon not in lsmod: $(hw lsmod)"
MBOX_THROTTLED="$(grep -c 'tag:0x00030046' "$WORK/qemu-trace.log" 2>/dev/null || true)"
MBOX_ANSWERED="$(grep 'tag:0x00030046' "$WORK/qemu-trace.log" 2>/dev/null | grep -c 'out_sz:[1-9]' || true)"
say "power sensor: QEMU's mailbox: GET_THROTTLED (0x00030046) asked ${MBOX_THROTTLED:-0} times, answered (out_sz > 0) ${MBOX_ANSWERED:-0}; first: $(grep -m1 'tag:0x00030046' "$WORK/qemu-trace.log" 2>/dev/null | sed 's/^[0-9]*@[0-9.]*://' || echo none)"
if [ -n "$(line 'crier-pi-probe: hwmon device: registered')" ]; then
  # Registered: udev must have loaded the module for it (as on a Pi), and it must make rpi_volt.
  grep -q 'loaded by udev' <<<"$(hw load)" || fail "the raspberrypi-hwmon device exists but udev did not load the module: $(hw load)"
  [ "$(hw driver)" = raspberrypi-hwmon ] || fail "the raspberrypi-hwmon device is not bound to the module: driver $(hw driver)"
  grep -q 'in0_lcrit_alarm=[01]$' <<<"$(hw rpi_volt)" || fail "no rpi_volt hwmon with an in0_lcrit_alarm: $(hw rpi_volt)"
  SENSOR="rpi_volt $(hw rpi_volt | sed 's/.* //')"
else
  SENSOR="no raspberrypi-hwmon device (the firmware did not answer GET_THROTTLED)"
fi
if ((HAVE_CRIER)); then
  cpow() { line "crier-pi-probe: crier power, $1: " | sed "s/^crier-pi-probe: crier power, $1: //"; }
  say "power sensor: crier status with the module loaded: $(cpow 'module loaded')"
  if [ -n "$(line 'crier-pi-probe: hwmon device: registered')" ]; then
    grep -q 'under-voltage only (hwmon)' <<<"$(cpow 'module loaded')" || fail "crier does not read the rpi_volt hwmon: $(cpow 'module loaded')"
    say "power sensor: crier status, module unloaded: $(cpow 'module unloaded')"
    say "power sensor: crier status, module loaded again: $(cpow 'module loaded again')"
    grep -q 'under-voltage unknown' <<<"$(cpow 'module unloaded')" || fail "with the module unloaded crier status does not say under-voltage is unknown: $(cpow 'module unloaded')"
    grep -q 'under-voltage only (hwmon).*; lsmod: raspberrypi_hwmon; ' <<<"$(cpow 'module loaded again')" || fail "crier did not read rpi_volt again after the module was loaded again: $(cpow 'module loaded again')"
  else
    grep -q 'under-voltage unknown' <<<"$(cpow 'module loaded')" || fail "no sensor, but crier status does not say under-voltage is unknown: $(cpow 'module loaded')"
  fi
fi

if ((HAVE_CRIER)); then
  t=$(wait_for 'runtime: ready' 300) || fail "no 'runtime: ready' from crier on serial0"
  # The host's wait_for returns when it LOOKS (after the probe, the lines may be older); the
  # console line's kernel timestamp is the guest's uptime when crier said it: that is reported.
  # (The "|| true": grep -m1 stops reading, and once the log outgrows a pipe's buffer tr gets
  # SIGPIPE; with pipefail and set -e the bare pipeline here ended the whole test with status 141.)
  up_ready="$( { tr -d '\r' < "$SERIAL" | grep -m1 'runtime: ready' || true; } | sed -n 's/^\[ *\([0-9.]*\)\].*/\1/p')"
  T_READY="${up_ready:-$t}"
  say "crier ready after ${t}s: $(line 'runtime: ready' | cut -c1-120)"
  t=$(wait_for 'crier-boot-order: sending order' 300) || fail "the in-guest order-sim saw no crier connect (no 'crier-boot-order: sending order' line)"
  T_SENT=$t
  t=$(wait_for 'crier-boot-order: .*status=spoken' 300) || fail "the in-guest order was not spoken and acked (no status=spoken)"
  T_SPOKEN=$t
  # order -> spoken by the guest's clock (uptime stamps of the order-sim wrapper), and the host's.
  up_sent="$(line 'crier-boot-order: sending order' | sed -n 's/.*at uptime \([0-9.]*\).*/\1/p')"
  up_spoken="$(line 'crier-boot-order: \[[0-9.]*\] ack .*status=spoken' | sed -n 's/^crier-boot-order: \[\([0-9.]*\)\].*/\1/p')"
  ORDER_SPOKEN="$(awk -v a="$up_sent" -v b="$up_spoken" 'BEGIN { if (a == "" || b == "") print "?"; else printf "%.1f", b - a }')"
  say "order sent after ${T_SENT}s (guest uptime ${up_sent:-?}), spoken+acked after ${T_SPOKEN}s (guest uptime ${up_spoken:-?}): order -> spoken ${ORDER_SPOKEN}s"
  say "  $(line 'crier-boot-order: \[[0-9.]*\] ack .*status=spoken' | cut -c1-140)"
  wait_for 'alert: spoken' 30 >/dev/null && say "  $(line 'alert: spoken' | cut -c1-120)" || say "  (no 'alert: spoken' line on serial0)"
  FIRST_MS="$(line 'alert: synthesized' | sed -n 's/.*first_ms=\([0-9.]*\).*/\1/p')"
  say "  $(line 'alert: synthesized' | cut -c1-140)"
  # The Zero 2 W figures (the probe measures ZERO_CPU_S after the spoken ack).
  T_ZERO0=$(date +%s.%N)
  wait_for 'crier-zero: end' $((ZERO_CPU_S + 180)) >/dev/null || fail "no 'crier-zero: end' line (the memory/CPU probe)"
  T_ZERO="$(elapsed "$T_ZERO0")"
  tr -d '\r' < "$SERIAL" | grep -oE 'crier-zero: .*' | grep -v 'crier-zero: end' | sed 's/^/  /'
  zl() { line "crier-zero: $1" | sed "s/^crier-zero: $1//"; }
  AVAIL_MB="$(zl 'available after: ' | sed -n 's/.*MemAvailable \([0-9]*\) MiB.*/\1/p')"
  TOTAL_MB="$(zl 'meminfo: ' | sed -n 's/.*MemTotal: \([0-9]*\) MiB.*/\1/p')"
  RSS_KB="$(zl 'crier rss: ' | sed -n 's/.*VmRSS: \([0-9]*\) kB.*/\1/p')"
  HWM_KB="$(zl 'crier rss: ' | sed -n 's/.*VmHWM: \([0-9]*\) kB.*/\1/p')"
  CPU_PCT="$(zl 'crier cpu: ' | sed -n 's/^\([0-9.]*\) %.*/\1/p')"
  [ -n "$AVAIL_MB" ] && [ -n "$TOTAL_MB" ] && [ -n "$RSS_KB" ] || fail "the memory probe's lines are incomplete"
  ((MEM == 0 || TOTAL_MB <= MEM)) || fail "MemTotal ${TOTAL_MB} MiB with mem=${MEM}M on the command line: the memory was not cut"
  grep -q '"state":"playing"' <<<"$(zl 'music: ')" || fail "music is not playing from /srv/music: $(zl 'music: ')"
  ((AVAIL_MB >= ZERO_MIN_AVAIL_MB)) || fail "MemAvailable ${AVAIL_MB} MiB with music playing, below ${ZERO_MIN_AVAIL_MB} MiB"
  say "memory ($( ((MEM)) && echo "mem=${MEM}M" || echo 'all 1 GB')): MemTotal ${TOTAL_MB} MiB, MemAvailable ${AVAIL_MB} MiB with music playing (>= ${ZERO_MIN_AVAIL_MB}); crier VmRSS $((RSS_KB / 1024)) MiB, VmHWM $((HWM_KB / 1024)) MiB; CPU ${CPU_PCT:-?} % of one core (TCG); probe waited ${T_ZERO}s"
else
  [ -n "$(line 'crier-pi-probe: tone: played')" ] || fail "the probe could not play on the USB card: $(line 'crier-pi-probe: tone')"
  say "crier checks (ready line, lines requested by crier, order spoken, speech in the capture) skipped: image has no crier (build with --deb)"
fi

t=$(wait_for 'crier-update: ' 300) || fail "no 'crier-update:' line from crier-mark-good"
say "slot commit after ${t}s: $(line 'crier-update: ' | cut -c1-120)"
grep -q 'crier-update: slot A marked good (normal boot)' <<<"$(line 'crier-update: ')" || fail "slot A was not marked good: $(line 'crier-update: ')"
sleep 2 || true   # fw_setenv has written; let the FAT settle before the power cut
# Power cut: SIGTERM makes QEMU stop at once (no guest shutdown) and finish the WAV header.
say "stopping QEMU (power cut for the guest)"
kill -TERM "$QEMU_PID"; wait "$QEMU_PID" 2>/dev/null || true; QEMU_PID=""

# The capture: 1 kHz tone (no crier) or speech (crier): energy, and for speech a voiced band
# with a changing envelope (syllables), not a steady tone or silence.
[ -n "${BOOT_KEEP_CAPTURE:-}" ] && cp "$WORK/capture.wav" "$base.capture.wav"
python3 - "$WORK/capture.wav" "$HAVE_CRIER" > "$WORK/capture.txt" <<'EOF' || { cat "$WORK/capture.txt"; fail "the host's capture of the USB audio device does not hold the expected sound"; }
import struct, sys, wave, math
path, crier = sys.argv[1], sys.argv[2] == "1"
w = wave.open(path)
rate, ch, n = w.getframerate(), w.getnchannels(), w.getnframes()
data = w.readframes(n); w.close()
s = struct.unpack("<%dh" % (len(data) // 2), data)[::ch]
win = rate // 50                                   # 20 ms windows
wins = []                                          # (rms, zero crossings per second, crest factor)
for i in range(0, len(s) - win, win):
    x = s[i:i + win]
    r = math.sqrt(sum(v * v for v in x) / win)
    wins.append((r, 50 * sum(1 for a, b in zip(x, x[1:]) if (a < 0) != (b < 0)), max(abs(v) for v in x) / max(r, 1)))
loud = [w for w in wins if w[0] > 300]
print(f"capture: {n / rate:.1f} s at {rate} Hz x{ch}, {len(loud) * 0.02:.2f} s above -40 dBFS")
if not loud:
    print("capture: silence"); sys.exit(1)
def judge(ws):
    zc = [w[1] for w in ws]; lv = [w[0] for w in ws]
    mean = sum(zc) / len(zc)
    spread = (sum((z - mean) ** 2 for z in zc) / len(zc)) ** 0.5
    return mean, spread, max(lv) / (sum(lv) / len(lv))
if crier:
    # With crier the music plays too (a melody of sine notes, -6 dBFS in the file, -12 dB
    # music.level_db and the volume's gain: about -30 dBFS here; ducked 18 dB more under the
    # alert, below the threshold). A sine's window has a crest factor (peak / RMS) near 1.41,
    # speech's is 2-5: the windows under 1.7 are the music, the rest is judged as speech.
    music = [w for w in loud if w[2] < 1.7]
    speech = [w for w in loud if w[2] >= 1.7]
    print(f"capture: music (sine-like windows) {len(music) * 0.02:.2f} s, the rest {len(speech) * 0.02:.2f} s")
    ok = len(speech) >= 20
    if ok:
        mean, spread, env = judge(speech)
        print(f"capture: speech windows: zero crossings {mean:.0f}/s (spread {spread:.0f}), peak/mean envelope {env:.2f}")
        ok = spread > 150 and env > 1.3
    print("capture: speech" if ok else "capture: not speech-like")
    music_ok = len(music) * 0.02 >= 2.0
    print("capture: music besides the speech" if music_ok else "capture: no music besides the speech")
    sys.exit(0 if ok and music_ok else 1)
mean, spread, env = judge(loud)
print(f"capture: zero crossings {mean:.0f}/s (spread {spread:.0f}), peak/mean envelope {env:.2f}")
ok = 1800 <= mean <= 2200 and len(loud) * 0.02 >= 0.3
print("capture: the 1 kHz tone" if ok else "capture: not the 1 kHz tone"); sys.exit(0 if ok else 1)
EOF
sed 's/^/  /' "$WORK/capture.txt"

# U-Boot's environment after the boot: boot.scr took an attempt (A=2) and saved it, then RAUC's
# mark-good (fw_setenv) gave it back: BOOT_A_LEFT=3, order unchanged.
mcopy -n -i "$FAT" ::/uboot.env "$WORK/uboot.env" 2>/dev/null || fail "no uboot.env on the boot partition (U-Boot's saveenv)"
ENVV="$(tail -c +5 "$WORK/uboot.env" | tr '\0' '\n' | grep -E '^BOOT_(ORDER|A_LEFT|B_LEFT)=' | sort | paste -sd' ' -)"
say "uboot.env after the boot: $ENVV"
[ "$ENVV" = "BOOT_A_LEFT=3 BOOT_B_LEFT=3 BOOT_ORDER=A B" ] || fail "uboot.env is not 'A=3 B=3 order A B' after a boot marked good: $ENVV"
[ "$(root_sum)" = "$ROOT_SUM_BEFORE" ] || fail "the root partition changed while booted (it must be read-only)"
say "root partition unchanged (sha256 ${ROOT_SUM_BEFORE:0:16}...)"
e2fsck -fn "$EXT" >/dev/null 2>&1 || fail "e2fsck: the root file system is not clean"
e2fsck -fn "$DATAFS" >/dev/null 2>&1 || say "note: crier-data needs its journal replayed after the power cut (e2fsck -fn: not clean); ext4 replays it at the next mount"

echo "boot-test arm64 (raspi3b): PASSED$( ((HAVE_CRIER)) || echo ' (without crier: the crier checks were not run)')$( [ -n "${AUTOLOAD_FAILED:-}" ] && echo " (snd-usb-audio loaded by the probe, not by udev)")"
echo "  image: $(basename "$IMG") raw $(( $(stat -c %s "$IMG") >> 20 )) MiB; SD card $((card >> 20)) MiB"
echo "  power-on to U-Boot's slot choice ${T_UBOOT}s (slot A; then mark-good: uboot.env A=3 B=3)"
echo "  power-on to layout line ${T_LAYOUT}s, to multi-user (running) ${T_MULTI}s (QEMU TCG raspi3b)"
if ((HAVE_CRIER)); then
  echo "  power-on -> crier ready: ${T_READY}s (guest uptime of crier's 'runtime: ready' line)"
  echo "  order -> spoken (+acked): ${ORDER_SPOKEN}s by the guest's clock (order typed at uptime ${up_sent:-?}, spoken ack at ${up_spoken:-?})"
  echo "  first sound: first_ms=${FIRST_MS:-?} (crier's 'alert: synthesized' line: synthesis start to the first samples)"
  echo "  memory ($( ((MEM)) && echo "mem=${MEM}M, a Pi Zero 2 W" || echo "all 1 GB, a Pi 3 B")), music playing from a file: MemTotal ${TOTAL_MB} MiB, MemAvailable ${AVAIL_MB} MiB; crier VmRSS $((RSS_KB / 1024)) MiB, VmHWM $((HWM_KB / 1024)) MiB; CPU ${CPU_PCT:-?} % of one core over ${ZERO_CPU_S} s (TCG, not a Pi's)"
  echo "  power (crier status --json): $(zl 'power: ' | cut -c1-200)"
  echo "  power sensor: raspberrypi-hwmon.ko $(hw load | cut -d' ' -f1-4); $SENSOR; QEMU's mailbox answered GET_THROTTLED ${MBOX_ANSWERED:-0} of ${MBOX_THROTTLED:-0} times"
  sed -n 's/^capture: /  capture: /p' "$WORK/capture.txt"
fi
echo "  total: $(elapsed "$T0")s"
