#!/usr/bin/env bash
# Builds the Crier Debian package: out/crier_<version>_<arch>.deb
#
#   scripts/build-deb.sh [--target host|trixie-amd64|trixie-arm64] [--binary PATH] [--version V] [--out DIR]
#
#   --target T     host (default): today's path, the package for this machine's Debian (bookworm:
#                  libgpiod v1), built with the host's Swift.
#                  trixie-amd64 / trixie-arm64: for Debian 13 / Raspberry Pi OS trixie, built
#                  with Debian's Swift 6.0.3 in the cached trixie root (scripts/trixie-build.sh;
#                  arm64 is cross-compiled through the Swift SDK), stripped with the target's
#                  binutils, Depends from dpkg-shlibdeps against trixie's libraries of that
#                  architecture, checked with lintian; arm64 is then installed into a fresh
#                  arm64 trixie root (mmdebstrap, its Depends from the mirror) and run there
#                  under qemu-aarch64 (crier --version, say --print, say --output). Needs root.
#   --binary PATH  package this crier binary (built elsewhere with
#                  `swift build -c release --static-swift-stdlib`); it is stripped on the way.
#                  Without it the release binary is built here first.
#   --version V    package version; default: `crier --version`, else `git describe`.
#   --out DIR      output directory (default: out/ in the repository).
#   --fast         gzip -1 instead of xz -6: for tests (xz takes ~1 min for a 58 MB binary
#                  on one core; the package is otherwise identical).
#
# Beside it, out/crier-sim_<version>_<arch>.deb: crier-sim (the reference order servers, the
# MQTT fleet bench and the demo; docs/packaging.md) for integrators' machines and the tests,
# never installed on a box. Its binary is the crier-sim beside crier's (built here, by
# trixie-build.sh, or next to --binary PATH); none there: no crier-sim package, said on stderr.
#
# The package holds the binary, the systemd unit, sysusers/tmpfiles entries, the gpio udev
# rule, systemd's watchdog drop-in, the example configs (crier.conf, asound.conf, config.txt)
# and the docs. Depends are computed from the binary with dpkg-shlibdeps, plus the data the
# runtime reads (espeak-ng-data). --target host packages for the build machine's architecture
# (`dpkg --print-architecture`; the binary must match it); a Pi's Debian 13 package is
# cross-built on x86_64 with --target trixie-arm64 (scripts/build-image.sh --arch arm64 does
# that itself). --target host needs no root: dpkg-deb --root-owner-group.
set -euo pipefail
source "$(dirname "$0")/env.sh"
cd "$ROOT"

BINARY="" VERSION="" OUT="$ROOT/out" COMPRESS=(-Zxz) TARGET=host IN_ROOT=""
while (($#)); do
  case "$1" in
    --target) TARGET="$2"; shift 2 ;;
    --in-root) IN_ROOT="$2"; shift 2 ;;   # internal: the packaging half, inside the trixie root
    --binary) BINARY="$2"; shift 2 ;;
    --version) VERSION="$2"; shift 2 ;;
    --out) OUT="$2"; shift 2 ;;
    --fast) COMPRESS=(-Zgzip -z1); shift ;;
    -h|--help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; exit 0 ;;
    *) echo "build-deb: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done

case "$TARGET" in host|trixie-amd64|trixie-arm64) ;; *) echo "build-deb: --target host|trixie-amd64|trixie-arm64" >&2; exit 2 ;; esac

# --- Debian 13: the binary from the trixie root, the packaging inside it -----------------------
if [ "$TARGET" != host ] && [ -z "$IN_ROOT" ]; then
  [ "$(id -u)" = 0 ] || { echo "build-deb: --target $TARGET needs root (mmdebstrap, chroot)" >&2; exit 1; }
  tarch="${TARGET#trixie-}"
  t0=$(date +%s)
  if [ -z "$BINARY" ]; then
    if [ "$tarch" = arm64 ]; then BINARY="$(bash scripts/trixie-build.sh --target arm64 | tail -n 1)"
    else BINARY="$(bash scripts/trixie-build.sh --release | tail -n 1)"; fi
  fi
  [ -x "$BINARY" ] || { echo "build-deb: no binary ($BINARY)" >&2; exit 1; }
  BINARY="$(realpath "$BINARY")"
  # The version is the source's (the binary may not run on this machine).
  [ -n "$VERSION" ] || VERSION="$(sed -n 's/.*static let string = "\(.*\)".*/\1/p' Sources/CrierCore/Version.swift)"
  export SOURCE_DATE_EPOCH="${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct 2>/dev/null || date +%s)}"
  commit="${CRIER_COMMIT:-$(git rev-parse --short HEAD 2>/dev/null || echo unknown)}"
  BROOT="$(bash scripts/trixie-root.sh --kind build --print-path --offline)"
  SYS=""; [ "$tarch" = arm64 ] && SYS="$(bash scripts/trixie-root.sh --kind sysroot --print-path --offline)"
  mkdir -p "$OUT"; OUT="$(realpath "$OUT")"
  fast=(); [ "${COMPRESS[0]}" = -Zgzip ] && fast=(--fast)
  unshare --mount --propagation private sh -c '
    r=$1 src=$2 bin=$3 out=$4 sys=$5; shift 5
    mount -t proc proc "$r/proc" && mount --rbind /dev "$r/dev" && mount -t tmpfs tmpfs "$r/tmp" || exit 97
    mkdir -p "$r/src" "$r/in" "$r/out" "$r/sdk"
    mount --bind -o ro "$src" "$r/src" && mount --bind "$out" "$r/out" || exit 97
    cp "$bin" "$r/tmp/crier" || exit 97
    if [ -x "$(dirname "$bin")/crier-sim" ]; then cp "$(dirname "$bin")/crier-sim" "$r/tmp/crier-sim" || exit 97; fi
    [ -z "$sys" ] || mount --rbind "$sys" "$r/sdk" || exit 97
    exec chroot "$r" env -i HOME=/tmp PATH=/usr/bin:/bin LANG=C.UTF-8 "$@"
  ' sh "$BROOT/root" "$ROOT" "$BINARY" "$OUT" "$SYS" \
    SOURCE_DATE_EPOCH="$SOURCE_DATE_EPOCH" CRIER_COMMIT="$commit" CRIER_MAINTAINER="${CRIER_MAINTAINER:-}" \
    bash /src/scripts/build-deb.sh --in-root "$tarch" --binary /tmp/crier --version "$VERSION" --out /out "${fast[@]}" \
    > "$OUT/.build-deb-$tarch.log" || { cat "$OUT/.build-deb-$tarch.log"; exit 1; }
  DEB="$OUT/$(tail -n 1 "$OUT/.build-deb-$tarch.log" | xargs basename)"
  rm -f "$OUT/.build-deb-$tarch.log"
  [ -f "$DEB" ] || { echo "build-deb: no package from the trixie root" >&2; exit 1; }
  if [ "$tarch" = arm64 ]; then bash scripts/trixie-run-arm64.sh "$DEB" || exit 1; fi
  echo "build-deb: $TARGET package in $(( $(date +%s) - t0 )) s: $DEB" >&2
  echo "$DEB"
  exit 0
fi

# --- tools (idempotent) -----------------------------------------------------------------------
need=()
for p in dpkg-dev binutils file; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || need+=("$p")
done
if [ -z "$IN_ROOT" ] && ((${#need[@]})); then
  echo "build-deb: installing ${need[*]}" >&2
  SUDO=""; [ "$(id -u)" = 0 ] || SUDO="sudo"
  APT=($SUDO apt-get -o DPkg::Lock::Timeout=600)
  DEBIAN_FRONTEND=noninteractive "${APT[@]}" install -y -qq --no-install-recommends "${need[@]}" >/dev/null ||
    { "${APT[@]}" update -qq && DEBIAN_FRONTEND=noninteractive "${APT[@]}" install -y -qq --no-install-recommends "${need[@]}" >/dev/null; }
fi

# --- the binary -------------------------------------------------------------------------------
if [ -z "$BINARY" ]; then
  echo "== swift build -c release --static-swift-stdlib" >&2
  t0=$(date +%s)
  swift build -c release --static-swift-stdlib --product crier 2>&1 | tail -n 3 >&2
  swift build -c release --static-swift-stdlib --product crier-sim 2>&1 | tail -n 1 >&2
  BINARY="$(swift build -c release --static-swift-stdlib --show-bin-path)/crier"
  echo "build-deb: release build took $(( $(date +%s) - t0 )) s" >&2
fi
[ -x "$BINARY" ] || { echo "build-deb: $BINARY is not an executable" >&2; exit 1; }

if readelf -d "$BINARY" | grep -q 'NEEDED.*libswift'; then
  echo "build-deb: $BINARY loads the Swift runtime as a shared library; build it with" \
       "swift build -c release --static-swift-stdlib (the target has no Swift .so)" >&2
  exit 1
fi

ARCH="${IN_ROOT:-$(dpkg --print-architecture)}"
elf_machine="$(readelf -h "$BINARY" | sed -n 's/^ *Machine: *//p')"
case "$elf_machine" in
  *X86-64*) elf_arch=amd64 ;;
  *AArch64*) elf_arch=arm64 ;;
  *ARM*) elf_arch=armhf ;;
  *) elf_arch="unknown ($elf_machine)" ;;
esac
if [ "$elf_arch" != "$ARCH" ]; then
  echo "build-deb: $BINARY is $elf_arch but this machine packages $ARCH; build the .deb on a $elf_arch Debian" >&2
  exit 1
fi

# --- version ----------------------------------------------------------------------------------
if [ -z "$VERSION" ]; then
  VERSION="$("$BINARY" --version 2>/dev/null | grep -oE '[0-9]+\.[0-9]+(\.[0-9]+)?([~+.-][0-9A-Za-z.~+-]*)?' | head -n1 || true)"
fi
if [ -z "$VERSION" ]; then
  d="$(git describe --tags --always --dirty 2>/dev/null || echo unknown)"
  if [[ "$d" =~ ^v?[0-9] ]]; then VERSION="${d#v}"; else VERSION="0.0.0+git.${d}"; fi
  VERSION="${VERSION//-/+}"   # a native package's version has no '-'
fi
[[ "$VERSION" =~ ^[0-9][0-9A-Za-z.+~]*$ ]] || { echo "build-deb: bad version '$VERSION'" >&2; exit 1; }

# Reproducible: every timestamp is the last commit's.
export SOURCE_DATE_EPOCH="${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct 2>/dev/null || date +%s)}"
# The target's binutils: the arm64 binary is stripped by aarch64-linux-gnu-strip in the trixie root.
STRIP=strip
[ "$ARCH" = arm64 ] && [ "$(uname -m)" != aarch64 ] && STRIP=aarch64-linux-gnu-strip

# --- the tree ---------------------------------------------------------------------------------
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
PKG="$WORK/crier"
DOC="$PKG/usr/share/doc/crier"
# Debian 13 ships nothing under the /lib alias (merged /usr, lintian's aliased-location):
# units and udev rules go to /usr/lib there; bookworm's package keeps /lib.
L=lib; [ -n "$IN_ROOT" ] && L=usr/lib
install -d "$PKG/DEBIAN" "$PKG/usr/bin" "$DOC" "$PKG/usr/share/crier" "$PKG/usr/share/man/man1" \
  "$PKG/$L/systemd/system" "$PKG/$L/udev/rules.d" "$PKG/usr/lib/sysusers.d" \
  "$PKG/usr/lib/tmpfiles.d" "$PKG/usr/lib/systemd/system.conf.d"

install -m 0755 "$BINARY" "$PKG/usr/bin/crier"
"$STRIP" --strip-unneeded --remove-section=.comment --remove-section=.note "$PKG/usr/bin/crier"

B="$ROOT/board"
install -m 0644 "$B/systemd/crier.service" "$PKG/$L/systemd/system/crier.service"
install -m 0644 "$B/systemd/crier-reboot.path" "$B/systemd/crier-reboot.service" "$PKG/$L/systemd/system/"
# The local page (docs/setup.md): port 80 from systemd, the root helper that writes crier.conf.
install -m 0644 "$B/systemd/crier.socket" "$B/systemd/crier-config.path" "$B/systemd/crier-config.service" "$PKG/$L/systemd/system/"
install -m 0644 "$B/systemd/crier.sysusers" "$PKG/usr/lib/sysusers.d/crier.conf"
install -m 0644 "$B/systemd/crier.tmpfiles" "$PKG/usr/lib/tmpfiles.d/crier.conf"
install -m 0644 "$B/systemd/system.conf.d/watchdog.conf" "$PKG/usr/lib/systemd/system.conf.d/crier-watchdog.conf"
install -m 0644 "$B/udev/60-crier-gpio.rules" "$PKG/$L/udev/rules.d/60-crier-gpio.rules"
# Examples the postinst and the image recipe use (not under /usr/share/doc, which may be
# excluded by dpkg path-exclude on small systems).
install -m 0644 "$B/crier.conf" "$PKG/usr/share/crier/crier.conf"
install -m 0644 "$B/asound.conf" "$PKG/usr/share/crier/asound.conf"
install -m 0644 "$B/raspberrypi/config.txt" "$PKG/usr/share/crier/config.txt"
install -m 0644 "$B/systemd/kiosk.conf" "$PKG/usr/share/crier/kiosk.conf"

install -m 0644 "$B/debian/copyright" "$DOC/copyright"
for f in docs/hardware.md docs/install-on-pi.md docs/wiring.svg board/raspberrypi/cmdline.md; do
  install -m 0644 "$f" "$DOC/$(basename "$f")"
done
for f in README.md docs/configuration.md docs/protocol.md docs/updates.md docs/setup.md; do   # when the runtime has them
  if [ -f "$f" ]; then install -m 0644 "$f" "$DOC/$(basename "$f")"; fi
done
gzip -9n < "$B/debian/crier.1" > "$PKG/usr/share/man/man1/crier.1.gz"

maint="${CRIER_MAINTAINER:-Crier maintainers <crier@example.org>}"
commit="${CRIER_COMMIT:-$(git rev-parse --short HEAD 2>/dev/null || echo unknown)}"
{
  echo "crier ($VERSION) stable; urgency=medium"
  echo
  echo "  * Built from git commit $commit with scripts/build-deb.sh."
  echo
  echo " -- $maint  $(date -u -R -d "@$SOURCE_DATE_EPOCH")"
} | gzip -9n > "$DOC/changelog.gz"

install -m 0755 "$B/debian/postinst" "$B/debian/prerm" "$B/debian/postrm" "$PKG/DEBIAN/"

# --- Depends ----------------------------------------------------------------------------------
# dpkg-shlibdeps wants a debian/control next to it; a minimal one in the work dir.
mkdir -p "$WORK/src/debian"
printf 'Source: crier\n\nPackage: crier\nArchitecture: any\n' > "$WORK/src/debian/control"
# Cross (arm64 in the amd64 trixie root): the libraries and their symbols files are the arm64
# packages unpacked beside the sysroot (trixie-root.sh --kind sysroot: shlibs/<pkg>/ with
# DEBIAN/), searched as package build dirs (-S); DEB_HOST_ARCH selects aarch64 paths and objdump.
shlibdeps_opts=()
if [ -n "$IN_ROOT" ] && [ "$ARCH" != "$(dpkg --print-architecture)" ]; then
  for d in /sdk/shlibs/*/; do shlibdeps_opts+=("-S${d%/}"); done
  ((${#shlibdeps_opts[@]})) || { echo "build-deb: no /sdk/shlibs (sysroot too old: rerun scripts/trixie-root.sh --kind sysroot)" >&2; exit 1; }
  eval "$(dpkg-architecture -a"$ARCH" -s 2>/dev/null)"
fi
shlibs="$(cd "$WORK/src" && dpkg-shlibdeps "${shlibdeps_opts[@]}" -O -e"$PKG/usr/bin/crier" 2>"$WORK/shlibdeps.err" | sed -n 's/^shlibs:Depends=//p')" ||
  { cat "$WORK/shlibdeps.err" >&2; exit 1; }
grep -v "^dpkg-shlibdeps: warning: binaries to analyze should already be installed" "$WORK/shlibdeps.err" >&2 || true
depends="$shlibs"
# What the runtime needs even when a library is not (yet) linked: the product contract.
contract=(libasound2 libgpiod2 libespeak-ng1)
[ -n "$IN_ROOT" ] && contract=(libasound2t64 libgpiod3 libespeak-ng1)   # trixie's names (t64, libgpiod v2)
for lib in "${contract[@]}"; do
  if ! grep -qE "(^|, )$lib( |,|$)" <<<"$depends"; then
    echo "build-deb: warning: the binary does not link $lib; adding it unversioned" >&2
    depends="$depends, $lib"
  fi
done
# espeak-ng's voices; systemd-sysusers for the postinst (systemd ships it).
depends="$depends, espeak-ng-data, systemd | systemd-standalone-sysusers"

installed_size="$(du -sk --exclude=DEBIAN "$PKG" | cut -f1)"
cat > "$PKG/DEBIAN/control" <<CONTROL
Package: crier
Version: $VERSION
Architecture: $ARCH
Maintainer: $maint
Installed-Size: $installed_size
Depends: $depends
Section: sound
Priority: optional
Homepage: https://example.org/crier
Description: kiosk order speaker for the Raspberry Pi
 Crier holds a connection to a shop's order server and speaks every order
 (espeak-ng, Chinese or English) through an always-open ALSA stream, so
 amplifiers never pop or cut the first syllable. GPIO push buttons (libgpiod)
 change the volume, mute, replay the last orders and acknowledge repeats.
 .
 The package installs a hardened systemd service (Type=notify with a
 watchdog), its user and state directory, a udev rule for /dev/gpiochip*,
 systemd's hardware-watchdog setting, and example configuration for the
 boot partition (/boot/firmware/crier.conf).
CONTROL

(cd "$PKG" && find . -path ./DEBIAN -prune -o -type f -printf '%P\0' | LC_ALL=C sort -z |
  xargs -0 md5sum > DEBIAN/md5sums)
chmod 0644 "$PKG/DEBIAN/control" "$PKG/DEBIAN/md5sums"
find "$PKG" -exec touch -h -d "@$SOURCE_DATE_EPOCH" {} +

mkdir -p "$OUT"
DEB="$OUT/crier_${VERSION}_${ARCH}.deb"
dpkg-deb --root-owner-group "${COMPRESS[@]}" --build "$PKG" "$DEB" >/dev/null
echo "build-deb: $DEB ($(du -k "$DEB" | cut -f1) KiB; Depends: $depends)" >&2

# --- crier-sim: the integrators' package (never on a box) ------------------------------------
SIMBIN="$(dirname "$BINARY")/crier-sim" SIMDEB=""
if [ -x "$SIMBIN" ]; then
  SP="$WORK/crier-sim"
  SDOC="$SP/usr/share/doc/crier-sim"
  install -d "$SP/DEBIAN" "$SP/usr/bin" "$SDOC" "$SP/usr/share/man/man1"
  install -m 0755 "$SIMBIN" "$SP/usr/bin/crier-sim"
  "$STRIP" --strip-unneeded --remove-section=.comment --remove-section=.note "$SP/usr/bin/crier-sim"
  install -m 0644 "$B/debian/copyright" "$SDOC/copyright"
  cp -p "$DOC/changelog.gz" "$SDOC/changelog.gz"   # the source package's changelog: both come from crier
  gzip -9n < "$B/debian/crier-sim.1" > "$SP/usr/share/man/man1/crier-sim.1.gz"
  printf 'Source: crier\n\nPackage: crier-sim\nArchitecture: any\n' > "$WORK/src/debian/control"
  sshlibs="$(cd "$WORK/src" && dpkg-shlibdeps "${shlibdeps_opts[@]}" -O -e"$SP/usr/bin/crier-sim" 2>"$WORK/shlibdeps.err" | sed -n 's/^shlibs:Depends=//p')" ||
    { cat "$WORK/shlibdeps.err" >&2; exit 1; }
  cat > "$SP/DEBIAN/control" <<CONTROL
Package: crier-sim
Source: crier
Version: $VERSION
Architecture: $ARCH
Maintainer: $maint
Installed-Size: $(du -sk --exclude=DEBIAN "$SP" | cut -f1)
Depends: $sshlibs, espeak-ng-data
Section: sound
Priority: optional
Homepage: https://example.org/crier
Description: reference order servers and demo for Crier kiosk speakers
 crier-sim serves Crier's order protocol (TCP or TLS, signed orders) or
 publishes orders to an MQTT broker, and prints every acknowledgement: what
 integrators test their order server against. It also runs the MQTT fleet
 benchmark and a demo (the order server plus the speaker runtime in one
 process). It is not needed on a speaker: the crier package is the box.
CONTROL
  (cd "$SP" && find . -path ./DEBIAN -prune -o -type f -printf '%P\0' | LC_ALL=C sort -z |
    xargs -0 md5sum > DEBIAN/md5sums)
  chmod 0644 "$SP/DEBIAN/control" "$SP/DEBIAN/md5sums"
  find "$SP" -exec touch -h -d "@$SOURCE_DATE_EPOCH" {} +
  SIMDEB="$OUT/crier-sim_${VERSION}_${ARCH}.deb"
  dpkg-deb --root-owner-group "${COMPRESS[@]}" --build "$SP" "$SIMDEB" >/dev/null
  echo "build-deb: $SIMDEB ($(du -k "$SIMDEB" | cut -f1) KiB; the integrators' crier-sim, not for a box)" >&2
else
  echo "build-deb: no crier-sim beside $BINARY: no crier-sim package" >&2
fi

if [ -n "$IN_ROOT" ]; then
  # lintian clean: any error or warning fails the package (overrides, with reasons, are in
  # board/debian/lintian-overrides).
  for d in "$DEB" $SIMDEB; do
    lint="$(lintian --fail-on error,warning --tag-display-limit 0 "$d" 2>&1)" && lrc=0 || lrc=$?
    grep -v "^running with root privileges" <<<"$lint" >&2 || true
    ((lrc == 0)) || { echo "build-deb: lintian failed on $(basename "$d")" >&2; exit 1; }
    echo "build-deb: lintian clean: $(basename "$d")" >&2
  done
fi
echo "$DEB"
