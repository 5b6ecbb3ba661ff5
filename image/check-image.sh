#!/usr/bin/env bash
# Checks a Crier disk image without mounting it (mtools for the FAT partition, debugfs/e2fsck
# for the ext4 root, both at their offsets inside the image file):
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

# Partition table: p1 FAT32 (type c), p2 Linux (83).
mapfile -t parts < <(sfdisk -d "$IMG" 2>/dev/null | sed -n 's/.*start= *\([0-9]*\), size= *\([0-9]*\), type=\([0-9a-f]*\).*/\1 \2 \3/p')
if [ "${#parts[@]}" = 2 ] && [ "${parts[0]##* }" = c ] && [ "${parts[1]##* }" = 83 ]; then
  ok "MBR with 2 partitions: FAT32 (c) + Linux (83)"
else
  bad "MBR with 2 partitions: FAT32 + Linux (got: ${parts[*]:-none})"; exit 1
fi
read -r bstart _ _ <<<"${parts[0]}"; read -r rstart _ _ <<<"${parts[1]}"
FAT="$IMG@@$((bstart * 512))"
EXT="$IMG?offset=$((rstart * 512))"
export MTOOLS_SKIP_CHECK=1

# ---- boot partition --------------------------------------------------------------------------
BOOTLS="$(mdir -b -i "$FAT" ::/ 2>/dev/null | sed 's#^::/##')"
has() { grep -qxE "$1" <<<"$BOOTLS"; }
check "boot label CRIER-BOOT" sh -c "minfo -i '$FAT' :: | grep -q 'disk label=\"CRIER-BOOT'"
check "boot: crier.conf" has 'crier.conf'
if [ "$ARCH" = arm64 ]; then
  for f in 'bootcode\.bin' 'start\.elf' 'start4\.elf' 'fixup\.dat' 'fixup4\.dat' \
           'vmlinuz-.*-arm64' 'initrd\.img-.*-arm64' 'config\.txt' 'cmdline\.txt' \
           'bcm2837-rpi-3-b\.dtb' 'bcm2837-rpi-3-b-plus\.dtb' 'bcm2711-rpi-4-b\.dtb' \
           'bcm2837-rpi-zero-2-w\.dtb'; do
    check "boot: ${f//\\/}" has "$f"
  done
  config="$(mtype -i "$FAT" ::/config.txt 2>/dev/null | tr -d '\r')"
  cmdline="$(mtype -i "$FAT" ::/cmdline.txt 2>/dev/null | tr -d '\r')"
  for l in 'arm_64bit=1' 'enable_uart=1' 'upstream_kernel=1'; do
    check "config.txt: $l" grep -qx "$l" <<<"$config"
  done
  k="$(sed -n 's/^kernel=//p' <<<"$config")"; i="$(sed -n 's/^initramfs \([^ ]*\).*/\1/p' <<<"$config")"
  check "config.txt: kernel=$k is on the partition" has "${k:-none}"
  check "config.txt: initramfs $i is on the partition" has "${i:-none}"
  check "cmdline.txt: console=serial0,115200" grep -qw 'console=serial0,115200' <<<"$cmdline"
  check "cmdline.txt: root=LABEL=crier-root" grep -qw 'root=LABEL=crier-root' <<<"$cmdline"
  check "cmdline.txt: one line" test "$(printf '%s\n' "$cmdline" | wc -l)" = 1
fi

# ---- root partition --------------------------------------------------------------------------
check "root: e2fsck clean" e2fsck -fn "$EXT"
dbg() { debugfs -R "$1" "$EXT" 2>/dev/null; }
exists() { debugfs -R "stat $1" "$EXT" 2>&1 | grep -q '^Inode:'; }
check "root: label crier-root" sh -c "dumpe2fs -h '$EXT' 2>/dev/null | grep -q 'volume name: *crier-root'"
check "root: /etc/hostname is crier" test "$(dbg 'cat /etc/hostname')" = crier
check "root: /etc/hosts names localhost" grep -q '^127.0.0.1.*localhost' <<<"$(dbg 'cat /etc/hosts')"
check "root: fstab mounts LABEL=crier-root and LABEL=CRIER-BOOT" sh -c "test \$(printf '%s\n' \"\$1\" | grep -cE '^LABEL=(crier-root|CRIER-BOOT)') = 2" _ "$(dbg 'cat /etc/fstab')"
check "root: /etc/machine-id empty (generated on first boot)" test -z "$(dbg 'cat /etc/machine-id')"
check "root: root account locked, no password" grep -qE '^root:!' <<<"$(dbg 'cat /etc/shadow')"
check "root: no SSH server" sh -c "! debugfs -R 'stat /usr/sbin/sshd' '$EXT' 2>&1 | grep -q '^Inode:'"
check "root: resolv.conf carries nothing of the build host" sh -c "test -z \"\$(debugfs -R 'cat /etc/resolv.conf' '$EXT' 2>/dev/null | grep -v '^#')\" || debugfs -R 'stat /etc/resolv.conf' '$EXT' 2>/dev/null | grep -q 'Type: symlink'"
check "root: /boot/firmware is an empty mount point" test "$(dbg 'ls -p /boot/firmware' | grep -c '^/')" = 2
check "root: crier's serial-console drop-in" exists /etc/systemd/system/crier.service.d/10-serial-console.conf
check "root: networkd enabled" exists /etc/systemd/system/multi-user.target.wants/systemd-networkd.service
if exists /usr/bin/crier; then
  check "root: crier.service enabled" exists /etc/systemd/system/multi-user.target.wants/crier.service
else
  echo "  --    no /usr/bin/crier (image built without --deb)"
fi

if ((fails)); then echo "check-image: $fails check(s) FAILED for $IMG"; exit 1; fi
echo "check-image: all checks passed for $(basename "$IMG") ($ARCH)"
