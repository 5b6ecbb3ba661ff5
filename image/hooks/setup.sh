#!/bin/sh
# mmdebstrap --setup-hook: runs on the host before any package is unpacked. $1 = the new root.
# Puts in the files that must exist BEFORE the kernel package runs update-initramfs
# (MODULES=list, see rootfs-early/etc/initramfs-tools/conf.d/crier.conf).
set -eu
root="$1"
src="$CRIER_IMAGE_DIR/rootfs-early"
(cd "$src" && find . -type f) | while read -r f; do
  install -D -m 0644 "$src/$f" "$root/$f"
done
# The FAT boot partition is mounted here; raspi-firmware's hooks fill it during the build.
mkdir -p "$root/boot/firmware"
