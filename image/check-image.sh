#!/usr/bin/env bash
# Checks a Crier disk image without mounting it (mtools for the FAT partition, debugfs/e2fsck
# for the ext4 root in slot A and the ext4 crier-data partition, each at its offset inside the
# image file):
#
#   image/check-image.sh --arch amd64|arm64 IMAGE.img
#
# Every check prints one line; exit 1 if any failed. Run by scripts/build-image.sh after each
# build, so the Raspberry Pi boot layout is checked even where the Pi image cannot be booted.
set -uo pipefail
ARCH="" IMG=""
while (($#)); do
  case "$1" in
    --arch) ARCH="$2"; shift 2 ;;
    *) IMG="$1"; shift ;;
  esac
done
[ -f "$IMG" ] && [[ "$ARCH" =~ ^(amd64|arm64)$ ]] || { echo "usage: $0 --arch amd64|arm64 IMAGE" >&2; exit 2; }

fails=0
ok() { printf '  ok    %s\n' "$*"; }
bad() { printf '  FAIL  %s\n' "$*"; fails=$((fails + 1)); }
check() { local what="$1"; shift; if "$@" >/dev/null 2>&1; then ok "$what"; else bad "$what"; fi; }

# Partition table (docs/updates.md): p1 FAT32 (type c) boot, p2 and p3 Linux (83) root slots A
# and B (B empty), p4 Linux (83) crier-data, the last one; disk identifier 0x43524945, which
# makes the PARTUUIDs 43524945-0N that boot.scr, system.conf and the amd64 command line use.
mapfile -t parts < <(sfdisk -d "$IMG" 2>/dev/null | sed -n 's/.*start= *\([0-9]*\), size= *\([0-9]*\), type=\([0-9a-f]*\).*/\1 \2 \3/p')
if [ "${#parts[@]}" = 4 ] && [ "${parts[0]##* }" = c ] && [ "${parts[1]##* }" = 83 ] && [ "${parts[2]##* }" = 83 ] && [ "${parts[3]##* }" = 83 ]; then
  ok "MBR with 4 partitions: FAT32 (c) boot + Linux (83) slot A + Linux (83) slot B + Linux (83) data"
else
  bad "MBR with 4 partitions: FAT32 boot + slot A + slot B + data (got: ${parts[*]:-none})"; exit 1
fi
read -r bstart _ _ <<<"${parts[0]}"; read -r rstart rsize _ <<<"${parts[1]}"
read -r sbstart sbsize _ <<<"${parts[2]}"; read -r dstart dsize _ <<<"${parts[3]}"
FAT="$IMG@@$((bstart * 512))"
EXT="$IMG?offset=$((rstart * 512))"
DATA="$IMG?offset=$((dstart * 512))"
check "partitions: disk identifier 0x43524945 (PARTUUIDs 43524945-01..04)" sh -c "sfdisk -d '$IMG' | grep -qx 'label-id: 0x43524945'"
check "partitions: slot B (p3) as large as slot A (p2, $((rsize / 2048)) MiB)" test "$sbsize" = "$rsize"
check "partitions: slot B follows slot A" test "$sbstart" -ge $((rstart + rsize))
check "partitions: slot B is empty in a fresh image (no file system, first MiB zero)" bash -c "! dumpe2fs -h '$IMG?offset=$((sbstart * 512))' >/dev/null 2>&1 && dd if='$IMG' bs=1M skip=$((sbstart / 2048)) count=1 status=none | cmp -s - <(head -c 1048576 /dev/zero)"
# crier-growdata grows p4 into the space behind it: it must come last and end the image.
check "partitions: data (p4) follows slot B (p3)" test "$dstart" -ge $((sbstart + sbsize))
check "partitions: data (p4) ends the image ($((dsize / 2048)) MiB)" test $(((dstart + dsize) * 512)) = "$(stat -c %s "$IMG")"
export MTOOLS_SKIP_CHECK=1

# ---- boot partition --------------------------------------------------------------------------
BOOTLS="$(mdir -b -i "$FAT" ::/ 2>/dev/null | sed 's#^::/##')"
has() { grep -qxE "$1" <<<"$BOOTLS"; }
check "boot label CRIER-BOOT" sh -c "minfo -i '$FAT' :: | grep -q 'disk label=\"CRIER-BOOT'"
check "boot: crier.conf" has 'crier.conf'
if [ "$ARCH" = arm64 ]; then
  for f in 'bootcode\.bin' 'start\.elf' 'start4\.elf' 'fixup\.dat' 'fixup4\.dat' \
           'u-boot\.bin' 'boot\.scr' 'config\.txt' \
           'bcm2837-rpi-3-b\.dtb' 'bcm2837-rpi-3-b-plus\.dtb' 'bcm2711-rpi-4-b\.dtb' \
           'bcm2837-rpi-zero-2-w\.dtb'; do
    check "boot: ${f//\\/}" has "$f"
  done
  config="$(mtype -i "$FAT" ::/config.txt 2>/dev/null | tr -d '\r')"
  cmdline="$(mtype -i "$FAT" ::/cmdline.txt 2>/dev/null | tr -d '\r')"
  for l in 'arm_64bit=1' 'enable_uart=1' 'upstream_kernel=1'; do
    check "config.txt: $l" grep -qx "$l" <<<"$config"
  done
  # A/B boot: the firmware starts U-Boot, whose boot.scr loads the chosen slot's kernel and
  # initrd from that slot; none is on the boot partition.
  check "config.txt: kernel=u-boot.bin" grep -qx 'kernel=u-boot.bin' <<<"$config"
  check "config.txt: no initramfs line (U-Boot loads the slot's initrd)" bash -c "! grep -q '^initramfs' <<<\"\$1\"" _ "$config"
  check "boot: no kernel or initrd on the boot partition (each slot has its own)" bash -c "! grep -qE '^(vmlinuz|initrd\.img)' <<<\"\$1\"" _ "$BOOTLS"
  scr="$(mtype -i "$FAT" ::/boot.scr 2>/dev/null | tr -d '\0')"
  check "boot.scr: a U-Boot script image (mkimage magic 27051956)" sh -c "mtype -i '$FAT' ::/boot.scr | head -c 4 | od -An -tx1 | tr -d ' ' | grep -qx 27051956"
  for w in 'BOOT_ORDER' 'BOOT_A_LEFT' 'BOOT_B_LEFT' 'saveenv' 'root=PARTUUID=43524945-0${crier_part}' 'rauc.slot=${crier_slot}' ' ro ' 'console=ttyS1,115200' 'panic=10' '/vmlinuz' '/initrd.img'; do
    check "boot.scr: has '$w'" grep -qF -- "$w" <<<"$scr"
  done
  # Pi audio (image/raspi/config.txt, image/raspi/overlays): every dtoverlay= line names an
  # overlay on the partition, and the two I2S overlays are there.
  OVLS="$(mdir -b -i "$FAT" ::/overlays 2>/dev/null | sed 's#^::/overlays/##')"
  for o in crier-max98357a crier-pcm5102a; do
    check "boot: overlays/$o.dtbo" grep -qx "$o.dtbo" <<<"$OVLS"
  done
  while read -r o; do
    check "config.txt: dtoverlay=$o has overlays/$o.dtbo" grep -qx "$o.dtbo" <<<"$OVLS"
  done < <(sed -n 's/^dtoverlay=\([^,]*\).*/\1/p' <<<"$config")
  check "config.txt: one I2S overlay switched on" test "$(grep -cE '^dtoverlay=crier-(max98357a|pcm5102a)' <<<"$config")" = 1
  : "$cmdline"   # cmdline.txt is raspi-firmware's and not used: boot.scr sets the command line
else
  # amd64 has no boot loader: QEMU boots the command line kept next to the image.
  if [ -f "${IMG%.img}.cmdline" ]; then
    c="$(cat "${IMG%.img}.cmdline")"
    check "$(basename "${IMG%.img}").cmdline: root=PARTUUID=43524945-02 (slot A)" grep -qw 'root=PARTUUID=43524945-02' <<<"$c"
    check "$(basename "${IMG%.img}").cmdline: rauc.slot=A" grep -qw 'rauc.slot=A' <<<"$c"
    check "$(basename "${IMG%.img}").cmdline: root mounted ro (last of ro/rw)" test "$(tr ' ' '\n' <<<"$c" | grep -xE 'ro|rw' | tail -n 1)" = ro
  else
    echo "  --    no $(basename "${IMG%.img}").cmdline next to the image"
  fi
fi

# ---- root partition --------------------------------------------------------------------------
check "root: e2fsck clean" e2fsck -fn "$EXT"
dbg() { debugfs -R "$1" "$EXT" 2>/dev/null; }
exists() { debugfs -R "stat $1" "$EXT" 2>&1 | grep -q '^Inode:'; }
check "root: label crier-root" sh -c "dumpe2fs -h '$EXT' 2>/dev/null | grep -q 'volume name: *crier-root'"
check "root: /etc/hostname is crier" test "$(dbg 'cat /etc/hostname')" = crier
check "root: /etc/hosts names localhost" grep -q '^127.0.0.1.*localhost' <<<"$(dbg 'cat /etc/hosts')"
FSTAB="$(dbg 'cat /etc/fstab')"
check "root: fstab mounts LABEL=CRIER-BOOT and LABEL=crier-data" sh -c "test \$(printf '%s\n' \"\$1\" | grep -cE '^LABEL=(CRIER-BOOT|crier-data)[[:space:]]') = 2" _ "$FSTAB"
# fstab_has TARGET FSTYPE OPTION [SOURCE]: a line mounting TARGET with that type and option.
fstab_has() { awk -v t="$1" -v f="$2" -v o="$3" -v s="${4:-}" '
  $1 !~ /^#/ && $2 == t && $3 == f && ("," $4 ",") ~ ("," o ",") && (s == "" || $1 == s) { found = 1 }
  END { exit !found }' <<<"$FSTAB"; }
# Both slots carry the label crier-root: / is the kernel's root=PARTUUID mount, read-only.
check "root: fstab has no / line (the kernel mounts the booted slot, ro)" bash -c "! awk '\$1 !~ /^#/ && \$2 == \"/\"' <<<\"\$1\" | grep -q ." _ "$FSTAB"
data_fstab_ok() { awk '$1 == "LABEL=crier-data" && $2 == "/var/lib/crier-data" && $3 == "ext4" && $6 == 2 && ("," $4 ",") !~ /,ro,/ { f = 1 } END { exit !f }' <<<"$FSTAB"; }
check "root: fstab: /var/lib/crier-data is LABEL=crier-data, ext4, rw, fsck pass 2" data_fstab_ok
for t in /var/lib/crier /var/lib/systemd; do
  check "root: fstab: $t bind-mounted from crier-data" fstab_has "$t" none bind "/var/lib/crier-data/${t##*/}"
done
for t in /tmp /var/tmp /var/log; do
  check "root: fstab: $t is tmpfs" fstab_has "$t" tmpfs 'size=[0-9]+[kKmMgG%]?'
done
check "root: journal in RAM (Storage=volatile)" grep -qx 'Storage=volatile' <<<"$(dbg 'cat /etc/systemd/journald.conf.d/10-crier-image.conf')"
check "root: /etc/.updated and /var/.updated (no ConditionNeedsUpdate= writes at boot)" sh -c "debugfs -R 'cat /etc/.updated' '$EXT' 2>/dev/null | grep -q '^TIMESTAMP_NSEC=[0-9]' && debugfs -R 'cat /var/.updated' '$EXT' 2>/dev/null | grep -q '^TIMESTAMP_NSEC=[0-9]'"
empty_dir() { test "$(dbg "ls -p $1" | grep -c '^/')" = 2; }
# Bind-mount targets: empty mount points (their content is on crier-data; nothing hides under them).
while read -r src t; do
  check "root: $t is an empty mount point (content on crier-data/${src#/var/lib/crier-data/})" empty_dir "$t"
done < <(awk '$1 ~ "^/var/lib/crier-data/" && $3 == "none" { print $1, $2 }' <<<"$FSTAB")
check "root: /var/lib/crier-data is an empty mount point" empty_dir /var/lib/crier-data
check "root: tmpfiles.d ran at build time (/var/lib/private, /var/cache/private exist)" sh -c "debugfs -R 'stat /var/lib/private' '$EXT' 2>/dev/null | grep -q 'Type: directory' && debugfs -R 'stat /var/cache/private' '$EXT' 2>/dev/null | grep -q 'Type: directory'"
check "root: /var/lib/dbus/machine-id -> /etc/machine-id (tmpfiles makes no link at boot)" sh -c "debugfs -R 'stat /var/lib/dbus/machine-id' '$EXT' 2>/dev/null | grep -q 'Fast link dest: \"/etc/machine-id\"'"
if [ "$ARCH" = arm64 ]; then
  # raspi-firmware regenerates cmdline.txt on every kernel upgrade; this file keeps the "ro".
  check "root: /etc/default/raspi-extra-cmdline has ro (kept by kernel upgrades)" grep -qw ro <<<"$(dbg 'cat /etc/default/raspi-extra-cmdline')"
fi
check "root: crier-growdata.service enabled" exists /etc/systemd/system/multi-user.target.wants/crier-growdata.service
# ---- updates (docs/updates.md) ----
RAUCCONF="$(dbg 'cat /etc/rauc/system.conf')"
compat=crier-qemu-amd64 bl=noop; [ "$ARCH" = arm64 ] && compat=crier-rpi-arm64 bl=uboot
check "root: /etc/rauc/system.conf: compatible=$compat" grep -qx "compatible=$compat" <<<"$RAUCCONF"
check "root: /etc/rauc/system.conf: bootloader=$bl" grep -qx "bootloader=$bl" <<<"$RAUCCONF"
check "root: /etc/rauc/system.conf: slots by PARTUUID 43524945-02 (A) and -03 (B)" bash -c "grep -qx 'device=/dev/disk/by-partuuid/43524945-02' <<<\"\$1\" && grep -qx 'device=/dev/disk/by-partuuid/43524945-03' <<<\"\$1\" && grep -qx 'bootname=A' <<<\"\$1\" && grep -qx 'bootname=B' <<<\"\$1\"" _ "$RAUCCONF"
check "root: /etc/rauc/system.conf: data-directory on crier-data" grep -qx 'data-directory=/var/lib/crier-data/rauc' <<<"$RAUCCONF"
check "root: /etc/rauc/system.conf: signers checked at the signing time (use-bundle-signing-time=true; no RTC)" grep -qx 'use-bundle-signing-time=true' <<<"$RAUCCONF"
check "root: /usr/lib/clock-epoch (the clock's floor at boot: the build time, not systemd's)" exists /usr/lib/clock-epoch
check "root: /usr/bin/rauc and its D-Bus service" sh -c "debugfs -R 'stat /usr/bin/rauc' '$EXT' 2>&1 | grep -q '^Inode:' && debugfs -R 'stat /usr/share/dbus-1/system-services/de.pengutronix.rauc.service' '$EXT' 2>&1 | grep -q '^Inode:'"
check "root: RAUC post-install handler /usr/local/sbin/crier-rauc-post-install (executable)" sh -c "debugfs -R 'stat /usr/local/sbin/crier-rauc-post-install' '$EXT' 2>/dev/null | grep -qE 'Mode: +0755'"
check "root: crier-mark-good.service enabled" exists /etc/systemd/system/multi-user.target.wants/crier-mark-good.service
if exists /etc/rauc/keyring.pem; then ok "root: RAUC keyring /etc/rauc/keyring.pem ($(dbg 'cat /etc/rauc/keyring.pem' | grep -c 'BEGIN CERTIFICATE') certificate(s))"
else echo "  --    no /etc/rauc/keyring.pem (built without --keyring): this image refuses every bundle"; fi
kv=$(dbg 'ls -p /usr/lib/modules' | awk -F/ 'NF > 5 && $6 != "." && $6 != ".." { print $6 }' | head -n1)
dm_ok() { dbg "ls /usr/lib/modules/${kv:-none}/kernel/drivers/md" | grep -q "$1\.ko" || dbg "cat /usr/lib/modules/${kv:-none}/modules.builtin" | grep -q "drivers/md/$1\.ko"; }
for m in dm-mod dm-verity; do check "root: kernel ${kv:-?} has $m (module or built in): RAUC's verity bundles" dm_ok "$m"; done
if [ "$ARCH" = arm64 ]; then
  check "root: /vmlinuz and /initrd.img (what boot.scr loads from the slot)" sh -c "debugfs -R 'stat /vmlinuz' '$EXT' 2>&1 | grep -q '^Inode:' && debugfs -R 'stat /initrd.img' '$EXT' 2>&1 | grep -q '^Inode:'"
  check "root: /etc/fw_env.config names /boot/firmware/uboot.env" grep -q '^/boot/firmware/uboot.env' <<<"$(dbg 'cat /etc/fw_env.config')"
  check "root: fw_printenv / fw_setenv (libubootenv-tool)" sh -c "debugfs -R 'stat /usr/bin/fw_setenv' '$EXT' 2>&1 | grep -q '^Inode:'"
fi
check "root: crier-image-layout.service enabled" exists /etc/systemd/system/multi-user.target.wants/crier-image-layout.service
check "root: /etc/machine-id empty (a transient ID each boot on the read-only root)" test -z "$(dbg 'cat /etc/machine-id')"
check "root: root account locked, no password" grep -qE '^root:!' <<<"$(dbg 'cat /etc/shadow')"
check "root: no SSH server" sh -c "! debugfs -R 'stat /usr/sbin/sshd' '$EXT' 2>&1 | grep -q '^Inode:'"
check "root: resolv.conf carries nothing of the build host" sh -c "test -z \"\$(debugfs -R 'cat /etc/resolv.conf' '$EXT' 2>/dev/null | grep -v '^#')\" || debugfs -R 'stat /etc/resolv.conf' '$EXT' 2>/dev/null | grep -q 'Type: symlink'"
check "root: /boot/firmware is an empty mount point" test "$(dbg 'ls -p /boot/firmware' | grep -c '^/')" = 2
check "root: crier's serial-console drop-in" exists /etc/systemd/system/crier.service.d/10-serial-console.conf
check "root: networkd enabled" exists /etc/systemd/system/multi-user.target.wants/systemd-networkd.service
# Wi-Fi (docs/network.md): the supplicant, the regulatory database, the units that join the
# network named in crier.conf, DHCP on wlan0, Debian's D-Bus supplicant masked.
check "root: /usr/sbin/wpa_supplicant" exists /usr/sbin/wpa_supplicant
check "root: /usr/sbin/iw" exists /usr/sbin/iw
check "root: wireless-regdb: /usr/lib/firmware/regulatory.db-debian and .p7s-debian" sh -c "debugfs -R 'stat /usr/lib/firmware/regulatory.db-debian' '$EXT' 2>&1 | grep -q '^Inode:' && debugfs -R 'stat /usr/lib/firmware/regulatory.db.p7s-debian' '$EXT' 2>&1 | grep -q '^Inode:'"
check "root: regulatory.db chosen (alternative /etc/alternatives/regulatory.db -> regulatory.db-debian)" sh -c "debugfs -R 'stat /etc/alternatives/regulatory.db' '$EXT' 2>/dev/null | grep -q 'Fast link dest: \"/lib/firmware/regulatory.db-debian\"'"
check "root: crier-wifi-config.service enabled" exists /etc/systemd/system/multi-user.target.wants/crier-wifi-config.service
check "root: crier-wpa-supplicant.service starts with wlan0" exists /etc/systemd/system/sys-subsystem-net-devices-wlan0.device.wants/crier-wpa-supplicant.service
check "root: Debian's wpa_supplicant.service masked" sh -c "debugfs -R 'stat /etc/systemd/system/wpa_supplicant.service' '$EXT' 2>/dev/null | grep -q 'Fast link dest: \"/dev/null\"'"
check "root: networkd: 80-wifi.network (DHCP on wlan*, route metric 600)" sh -c "debugfs -R 'cat /etc/systemd/network/80-wifi.network' '$EXT' 2>/dev/null | grep -qx 'RouteMetric=600'"
check "root: setup hotspot: hostapd, dnsmasq" sh -c "debugfs -R 'stat /usr/sbin/hostapd' '$EXT' 2>&1 | grep -q '^Inode:' && debugfs -R 'stat /usr/sbin/dnsmasq' '$EXT' 2>&1 | grep -q '^Inode:'"
check "root: crier-setup-ap.path enabled" exists /etc/systemd/system/multi-user.target.wants/crier-setup-ap.path
check "root: crier-setup-ap helper" exists /usr/local/sbin/crier-setup-ap
check "root: networkd: 80-wired.network preferred (route metric 100)" sh -c "debugfs -R 'cat /etc/systemd/network/80-wired.network' '$EXT' 2>/dev/null | grep -qx 'RouteMetric=100'"
if [ "$ARCH" = arm64 ]; then
  # firmware-brcm80211 (non-free-firmware): the firmware of the Pi 3/Zero 2 W (43430) and
  # Pi 3 B+/4/400/CM4 (43455) radios, and Raspberry Pi NVRAM files brcmfmac loads by board.
  fw=/usr/lib/firmware
  for f in cypress/cyfmac43430-sdio.bin cypress/cyfmac43430-sdio.clm_blob cypress/cyfmac43455-sdio.bin cypress/cyfmac43455-sdio.clm_blob \
           brcm/brcmfmac43430-sdio.raspberrypi,3-model-b.txt brcm/brcmfmac43455-sdio.raspberrypi,3-model-b-plus.txt \
           brcm/brcmfmac43455-sdio.raspberrypi,4-model-b.txt; do
    check "root: Wi-Fi firmware $fw/$f" exists "$fw/$f"
  done
  for l in brcm/brcmfmac43430-sdio.bin brcm/brcmfmac43430-sdio.clm_blob brcm/brcmfmac43455-sdio.bin brcm/brcmfmac43455-sdio.clm_blob \
           brcm/brcmfmac43430-sdio.raspberrypi,model-zero-2-w.txt brcm/brcmfmac43455-sdio.raspberrypi,4-compute-module.txt; do
    check "root: Wi-Fi firmware link $fw/$l" sh -c "debugfs -R 'stat \"$fw/$l\"' '$EXT' 2>/dev/null | grep -q 'Fast link dest:'"
  done
  kver=$(dbg 'ls -p /usr/lib/modules' | awk -F/ 'NF > 5 && $6 != "." && $6 != ".." { print $6 }' | head -n1)
  check "root: brcmfmac driver kept (not path-excluded, kernel ${kver:-?})" sh -c "debugfs -R 'ls /usr/lib/modules/${kver:-none}/kernel/drivers/net/wireless/broadcom/brcm80211/brcmfmac' '$EXT' 2>/dev/null | grep -q 'brcmfmac\.ko'"
fi
# The local page (docs/setup.md): avahi answers DEVICE-ID.local and advertises _http._tcp.
check "root: avahi-daemon enabled" exists /etc/systemd/system/multi-user.target.wants/avahi-daemon.service
check "root: crier-hostname.service enabled (DEVICE-ID.local)" exists /etc/systemd/system/multi-user.target.wants/crier-hostname.service
check "root: avahi service file for the page (_http._tcp, port 80)" sh -c "debugfs -R 'cat /etc/avahi/services/crier-http.service' '$EXT' 2>/dev/null | grep -q '<type>_http._tcp</type>'"
if exists /usr/bin/crier; then
  check "root: crier.service enabled" exists /etc/systemd/system/multi-user.target.wants/crier.service
  check "root: crier.socket enabled (port 80 for the page)" exists /etc/systemd/system/sockets.target.wants/crier.socket
else
  echo "  --    no /usr/bin/crier (image built without --deb)"
fi

# ---- data partition (crier-data) -------------------------------------------------------------
check "data: e2fsck clean" e2fsck -fn "$DATA"
check "data: label crier-data" sh -c "dumpe2fs -h '$DATA' 2>/dev/null | grep -q 'volume name: *crier-data'"
while read -r src t; do
  n="${src#/var/lib/crier-data/}"
  check "data: /$n (bound to $t)" sh -c "debugfs -R 'stat /$n' '$DATA' 2>/dev/null | grep -q 'Type: directory'"
done < <(awk '$1 ~ "^/var/lib/crier-data/" && $3 == "none" { print $1, $2 }' <<<"$FSTAB")
check "data: /rauc (RAUC's data-directory)" sh -c "debugfs -R 'stat /rauc' '$DATA' 2>/dev/null | grep -q 'Type: directory'"
check "data: /systemd holds systemd's state from the build (deb-systemd-helper-enabled)" sh -c "debugfs -R 'ls /systemd' '$DATA' 2>/dev/null | grep -q deb-systemd-helper-enabled"
if exists /usr/bin/crier; then
  cuid="$(dbg 'cat /etc/passwd' | awk -F: '$1 == "crier" { print $3 }')"
  check "data: /crier owned by crier (uid ${cuid:-?}), mode 0750" sh -c "debugfs -R 'stat /crier' '$DATA' 2>/dev/null | grep -qE 'Mode: +0750' && debugfs -R 'stat /crier' '$DATA' 2>/dev/null | grep -qE 'User: +${cuid:-x} '"
fi

if ((fails)); then echo "check-image: $fails check(s) FAILED for $IMG"; exit 1; fi
echo "check-image: all checks passed for $(basename "$IMG") ($ARCH)"
