#!/bin/sh
# mmdebstrap hooks: one initramfs per build instead of two. $1 = root, $2 = defer | run.
#   defer (--essential-hook, before the remaining packages are installed): update-initramfs is
#     diverted (dpkg-divert --rename) and replaced by a no-op, so neither the kernel's postinst
#     (update-initramfs -c) nor the triggers of udev, kmod, zstd, ... (update-initramfs -u) build
#     one. Under qemu-user (arm64) each build takes minutes.
#   run (the first --customize-hook, every package installed): the real update-initramfs is put
#     back and run once per installed kernel, with the MODULES=list of rootfs-early/; its
#     post-update hooks run as usual (raspi-firmware copies the initrd to /boot/firmware).
set -eu
root="$1"
real=/usr/sbin/update-initramfs
case "$2" in
  defer)
    chroot "$root" dpkg-divert --quiet --local --rename --divert "$real.crier-build" --add "$real"
    cat > "$root$real" <<'STUB'
#!/bin/sh
echo "initramfs-defer: 'update-initramfs $*' deferred to the end of the build (image/hooks/initramfs-defer.sh)" >&2
exit 0
STUB
    chmod 0755 "$root$real"
    echo "initramfs-defer: update-initramfs diverted until every package is installed"
    ;;
  run)
    rm -f "$root$real"
    chroot "$root" dpkg-divert --quiet --local --rename --remove "$real"
    [ -x "$root$real" ] || { echo "initramfs-defer: no $real after the divert was removed (initramfs-tools missing?)" >&2; exit 1; }
    found=0
    for m in "$root"/usr/lib/modules/*/; do
      [ -d "$m" ] || continue
      v="$(basename "$m")"
      [ -e "$root/boot/vmlinuz-$v" ] || continue
      found=1
      chroot "$root" update-initramfs -c -k "$v"
      echo "initramfs-defer: initrd for $v: $(du -h "$root/boot/initrd.img-$v" | cut -f1)"
    done
    [ "$found" = 1 ] || { echo "initramfs-defer: no kernel in the root" >&2; exit 1; }
    ;;
  *) echo "initramfs-defer: defer|run, not '$2'" >&2; exit 2 ;;
esac
