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
