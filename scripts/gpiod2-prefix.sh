#!/usr/bin/env bash
# libgpiod 2 (the v2 API) for building and running Crier's v2 GPIO backend on this Debian 12
# machine, without touching the host's apt sources or installed packages: bookworm-backports'
# libgpiod-dev + libgpiod3 are fetched with an apt configuration of their own and unpacked with
# `dpkg -x` into a prefix. Cached: a second run only prints where it is.
#
#   bash scripts/gpiod2-prefix.sh            make (or reuse) the prefix, print its path last
#   eval "$(bash scripts/gpiod2-prefix.sh --env)"   PKG_CONFIG_PATH + LD_LIBRARY_PATH for it
#
# Environment: CRIER_GPIOD2_PREFIX (default /var/cache/crier-gpiod2, or REPO/.cache/gpiod2 if
# that is not writable). The prefix's pkg-config file is rewritten to point at the prefix, so
#   PKG_CONFIG_PATH=$P/usr/lib/x86_64-linux-gnu/pkgconfig swift build
# builds the v2 backend (Package.swift asks pkg-config which libgpiod it gets), and
#   LD_LIBRARY_PATH=$P/usr/lib/x86_64-linux-gnu .build/.../crier
# runs it. The host's normal build (no PKG_CONFIG_PATH) keeps libgpiod 1.6 and the v1 backend.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
log() { echo "gpiod2-prefix: $*" >&2; }
die() { echo "gpiod2-prefix: ERROR: $*" >&2; exit 1; }

if [ -z "${CRIER_GPIOD2_PREFIX:-}" ]; then
  if mkdir -p /var/cache/crier-gpiod2 2>/dev/null && [ -w /var/cache/crier-gpiod2 ]; then
    CRIER_GPIOD2_PREFIX=/var/cache/crier-gpiod2
  else
    CRIER_GPIOD2_PREFIX="$ROOT/.cache/gpiod2"
  fi
fi
C=$CRIER_GPIOD2_PREFIX
ARCH=$(dpkg --print-architecture)
MA=$(dpkg-architecture -qDEB_HOST_MULTIARCH 2>/dev/null || gcc -dumpmachine)
P="$C/prefix"
LIB="$P/usr/lib/$MA"

if [ "${1:-}" = --env ]; then
  [ -f "$C/.ready" ] || "$0" >/dev/null
  echo "export PKG_CONFIG_PATH=$LIB/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}"
  echo "export LD_LIBRARY_PATH=$LIB${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  exit 0
fi

mkdir -p "$C"
exec 9>"$C/.lock"
flock 9   # concurrent callers: one fetches, the others wait and reuse it
if [ -f "$C/.ready" ]; then
  log "libgpiod $(cat "$C/version") ready in $P"
  echo "$P"
  exit 0
fi

t0=$SECONDS
log "fetching libgpiod 2 from bookworm-backports into $C"
A="$C/apt"
rm -rf "$A" "$P" "$C/debs"
mkdir -p "$A/lists/partial" "$A/cache/archives/partial" "$P" "$C/debs"
echo "deb http://deb.debian.org/debian bookworm-backports main" > "$A/sources.list"
APT=(-o Dir::Etc::SourceList="$A/sources.list" -o Dir::Etc::SourceParts=/dev/null
     -o Dir::State::Lists="$A/lists" -o Dir::Cache="$A/cache"
     -o Dir::State::Status=/var/lib/dpkg/status -o APT::Architectures::="$ARCH"
     -o Debug::NoLocking=1)
apt-get "${APT[@]}" update -qq >"$C/apt-update.log" 2>&1 || { cat "$C/apt-update.log" >&2; die "apt-get update (bookworm-backports) failed"; }
log "apt lists: $((SECONDS - t0)) s"
ver=$(apt-cache "${APT[@]}" madison libgpiod-dev | awk '$3 ~ /^2\./ && $0 ~ /bookworm-backports/ {print $3; exit}')
[ -n "$ver" ] || die "bookworm-backports offers no libgpiod-dev 2.x (apt-cache madison libgpiod-dev)"
( cd "$C/debs" && apt-get "${APT[@]}" download -qq "libgpiod-dev=$ver" "libgpiod3=$ver" ) >"$C/download.log" 2>&1 \
  || { cat "$C/download.log" >&2; die "apt-get download libgpiod-dev=$ver libgpiod3=$ver failed"; }
for d in "$C"/debs/*.deb; do dpkg -x "$d" "$P"; done
pc="$LIB/pkgconfig/libgpiod.pc"
[ -f "$pc" ] || die "no $pc in the unpacked packages"
sed -i "s#^prefix=.*#prefix=$P/usr#" "$pc"
# By soname, not -lgpiod: SwiftPM puts other packages' -L/usr/lib/<triplet> (openssl, alsa)
# before this -L on the link line, where -lgpiod would find the host's libgpiod 1.6. (That
# is why CGPIOD's module map has no `link`: the library comes from pkg-config's Libs.)
sed -i 's#^Libs: .*#Libs: -L${libdir} -l:libgpiod.so.3#' "$pc"
# dpkg -x leaves the dev symlink pointing at the versioned .so next to it: check it resolves.
[ -e "$LIB/libgpiod.so" ] || die "$LIB/libgpiod.so does not resolve"
grep -q 'gpiod_line_settings_new' "$P/usr/include/gpiod.h" || die "$P/usr/include/gpiod.h is not the v2 API"
rm -rf "$A"
echo "$ver" > "$C/version"
touch "$C/.ready"
log "libgpiod $ver unpacked in $((SECONDS - t0)) s: $(du -sh "$P" | cut -f1) in $P"
echo "$P"
