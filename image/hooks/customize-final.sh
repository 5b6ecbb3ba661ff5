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
