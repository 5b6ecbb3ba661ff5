#!/bin/sh
# mmdebstrap --customize-hook, arm64 only: the Raspberry Pi boot partition. $1 = root.
# Debian's raspi-firmware regenerates /boot/firmware/{config.txt,cmdline.txt} on every kernel or
# firmware upgrade from /etc/default/raspi-firmware*, so our settings go THERE (they survive
# upgrades on the device), then its hook is re-run once to write the boot partition now.
set -eu
root="$1"
[ -x "$root/etc/kernel/postinst.d/z50-raspi-firmware" ] || { echo "customize-raspi: raspi-firmware missing" >&2; exit 1; }

# Root by label (any card reader / slot). Consoles: the last one is /dev/console, where the
# kernel, systemd and crier's log lines go. serial0 is the name the Pi firmware rewrites for
# Raspberry Pi OS kernels; Debian's upstream kernel calls the GPIO 14/15 mini UART of a
# Pi 3 / 4 / Zero 2 W "ttyS1", so it is named last.
cat >> "$root/etc/default/raspi-firmware" <<'CONF'

# --- Crier image (image/hooks/customize-raspi.sh) ---
ROOTPART="LABEL=crier-root"
CONSOLES="tty0 serial0,115200 ttyS1,115200"
CONF

# Extra config.txt lines (appended after Debian's arm_64bit/enable_uart/upstream_kernel/kernel/
# initramfs lines): image/raspi/config.txt, written for Debian's upstream kernel and dtbs (the
# repository's board/raspberrypi/config.txt is for Raspberry Pi OS and names its overlays).
# Lines that would fight Debian's generated ones (kernel=, initramfs, arm_64bit) are dropped.
custom="$CRIER_IMAGE_DIR/raspi/config.txt"
echo "customize-raspi: config.txt extras from $custom"
grep -v -E '^[[:space:]]*(kernel|initramfs|arm_64bit)[[:space:]=]' "$custom" > "$root/etc/default/raspi-firmware-custom" || true

# Pi audio overlays for Debian's kernel (MAX98357A amp, PCM5102A DAC), compiled here with the
# build host's dtc (-@: they reference the upstream dtbs' __symbols__, e.g. &i2s, &gpio). The
# firmware applies a dtoverlay= line from /boot/firmware/overlays/NAME.dtbo; raspi-firmware's
# own upgrades copy its overlays into the same directory and leave these alone.
mkdir -p "$root/boot/firmware/overlays"
for dts in "$CRIER_IMAGE_DIR"/raspi/overlays/*.dts; do
  name="$(basename "$dts" .dts)"
  dtc -@ -q -I dts -O dtb -o "$root/boot/firmware/overlays/$name.dtbo" "$dts"
  echo "customize-raspi: overlay $name.dtbo ($(stat -c %s "$root/boot/firmware/overlays/$name.dtbo") bytes)"
done

# Extra kernel parameters, appended at the end of cmdline.txt. ro: the root is mounted read-only
# (docs/image.md, "Read-only root"). raspi-firmware writes a fixed "rw" after root=; the kernel,
# the initramfs and systemd all take the LAST of ro/rw, so this "ro" wins (fstab says ro too, so
# systemd-remount-fs keeps it). quiet keeps the 115200-baud console for systemd's and crier's
# lines.
echo "ro quiet" > "$root/etc/default/raspi-extra-cmdline"

DEB_MAINT_PARAMS=configure chroot "$root" /etc/kernel/postinst.d/z50-raspi-firmware
echo "customize-raspi: cmdline.txt: $(cat "$root/boot/firmware/cmdline.txt")"
last=$(tr ' ' '\n' < "$root/boot/firmware/cmdline.txt" | grep -xE 'ro|rw' | tail -n 1)
[ "$last" = ro ] || { echo "customize-raspi: cmdline.txt does not end up ro (last of ro/rw: ${last:-none})" >&2; exit 1; }

# A/B boot (docs/updates.md): the firmware starts U-Boot (Debian's u-boot-rpi, rpi_arm64 covers
# the Pi 3, 4, 400, CM4 and Zero 2 W), which runs boot.scr: it picks slot A or B by RAUC's
# attempt counters in uboot.env and loads that slot's own /vmlinuz and /initrd.img, so a bundle
# carries its kernel. The kernel and initrd copies raspi-firmware put on the boot partition are
# removed (nothing boots them; the root slot holds the kernel), and config.txt's kernel= names
# u-boot.bin with no initramfs line. cmdline.txt stays for reference; U-Boot builds the command
# line in boot.scr (the firmware's /chosen/bootargs is replaced).
ub="$root/usr/lib/u-boot/rpi_arm64/u-boot.bin"
[ -f "$ub" ] || { echo "customize-raspi: $ub missing (package u-boot-rpi)" >&2; exit 1; }
cp "$ub" "$root/boot/firmware/u-boot.bin"
mkimage -A arm64 -O linux -T script -C none -n "crier A/B boot" -d "$CRIER_IMAGE_DIR/raspi/boot.cmd" "$root/boot/firmware/boot.scr" >/dev/null
sed -i -e 's/^kernel=.*/kernel=u-boot.bin/' -e '/^initramfs[[:space:]]/d' "$root/boot/firmware/config.txt"
grep -qx 'kernel=u-boot.bin' "$root/boot/firmware/config.txt" || { echo "customize-raspi: config.txt has no kernel= line to point at u-boot.bin" >&2; exit 1; }
rm -f "$root"/boot/firmware/vmlinuz-* "$root"/boot/firmware/initrd.img-*
# RAUC's uboot backend reads and writes uboot.env through libubootenv.
install -m 0644 "$CRIER_IMAGE_DIR/raspi/fw_env.config" "$root/etc/fw_env.config"
[ -e "$root/vmlinuz" ] && [ -e "$root/initrd.img" ] || { echo "customize-raspi: no /vmlinuz or /initrd.img link in the root for U-Boot to load" >&2; exit 1; }
echo "customize-raspi: $(grep -a -m1 -oE 'U-Boot 20[0-9.]+[^ ]*' "$ub" || echo '?'), boot.scr $(stat -c %s "$root/boot/firmware/boot.scr") bytes; config.txt: $(grep -E '^(kernel|initramfs)' "$root/boot/firmware/config.txt" | paste -sd' ' -)"
