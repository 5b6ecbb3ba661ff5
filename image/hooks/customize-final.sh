#!/bin/sh
# mmdebstrap --customize-hook, the last one. $1 = root.
# mmdebstrap copied the build host's /etc/resolv.conf in; nothing of the build host may ship.
# systemd-resolved's package points /etc/resolv.conf at its stub; keep that symlink, else blank.
set -eu
root="$1"
if [ -L "$root/etc/resolv.conf" ]; then
  echo "customize-final: /etc/resolv.conf -> $(readlink "$root/etc/resolv.conf")"
else
  : > "$root/etc/resolv.conf"
  echo "customize-final: /etc/resolv.conf blanked"
fi

# Updates (docs/updates.md): RAUC's system.conf for this arch (slots, boot loader backend,
# keyring path; the keyring itself comes from build-image.sh --keyring). Here rather than in the
# cached base root (image/rauc/ is not part of its key), so an edit to it needs no base rebuild.
install -D -m 0644 "${CRIER_IMAGE_DIR:?}/rauc/system-${CRIER_ARCH:?}.conf" "$root/etc/rauc/system.conf"
echo "customize-final: /etc/rauc/system.conf from image/rauc/system-$CRIER_ARCH.conf"

# A Pi has no real-time clock: until timesyncd has reached a server (or read its clock file on
# crier-data, from an earlier boot), systemd starts the clock at the newest of its own build date
# and /usr/lib/clock-epoch's mtime. The build time here, so a box that has never been online
# does not live months in the past (log times, certificate checks of the order link's TLS).
touch "$root/usr/lib/clock-epoch"
echo "customize-final: /usr/lib/clock-epoch = $(date -u -r "$root/usr/lib/clock-epoch" +%Y-%m-%dT%H:%M:%SZ) (the clock's floor at boot)"

# Read-only root: the units that run when /usr is newer than /etc/.updated or /var/.updated
# (ConditionNeedsUpdate=: ldconfig, systemd-hwdb-update, systemd-sysusers, the journal catalog,
# systemd-update-done) would try to write /etc and /var on every boot and fail. Debian's
# packages did that work when they were installed, so the stamps say so, written the way
# systemd-update-done writes them: /usr's mtime as the file's mtime, its nanoseconds inside.
# Last of all, after every change to /usr.
usr_ns=$(stat -c %.9Y "$root/usr" | tr -d .)
for d in etc var; do
  printf '%s\n' "# This file was created by systemd-update-done. Its only" \
    "# purpose is to hold a timestamp of the time this directory" \
    "# was updated. See man:systemd-update-done.service(8)." \
    "TIMESTAMP_NSEC=$usr_ns" > "$root/$d/.updated"
  touch -r "$root/usr" "$root/$d/.updated"
done
echo "customize-final: /etc/.updated and /var/.updated stamped with /usr's time ($usr_ns ns)"
