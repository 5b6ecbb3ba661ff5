#!/usr/bin/env bash
# The Pi's under-voltage sensor for the arm64 image: the kernel's own raspberrypi-hwmon driver
# (drivers/hwmon/raspberrypi-hwmon.c, hwmon "rpi_volt", in0_lcrit_alarm), built as an
# out-of-tree module for exactly the image's kernel and installed into the root under
# /usr/lib/modules/<ver>/updates/ (depmod). Debian's arm64 kernel builds the firmware driver in
# (CONFIG_RASPBERRYPI_FIRMWARE=y, which registers the "raspberrypi-hwmon" platform device when the
# firmware answers GET_THROTTLED) but leaves CONFIG_SENSORS_RASPBERRYPI_HWMON unset, so without
# this module crier cannot see under-voltage on a Pi (docs/image.md, "Under-voltage sensor").
#
#   scripts/kmod-raspi-hwmon.sh ROOT [--suite trixie] [--mirror URL] [--cache DIR | --no-cache]
#
# Called by scripts/build-image.sh --arch arm64 with the root it assembles (needs root: chroot,
# mmdebstrap --mode=root). The kernel is the one in ROOT/usr/lib/modules; its Debian version
# comes from ROOT's dpkg status. Sources: linux-source-<major.minor> of that same version, of
# which only drivers/hwmon/raspberrypi-hwmon.c is extracted, built against linux-headers-<ver>
# (arm64, Module.symvers of the image's kernel) + its -common and linux-kbuild (amd64: the host
# tools), with the compiler the kernel names in CONFIG_CC_VERSION_TEXT (gcc-14-aarch64-linux-gnu
# for trixie's), all in a throwaway mmdebstrap root (amd64, no emulation). Every package is
# fetched through this script's own apt configuration (the host's /etc/apt is never read).
#
# Cache: DIR/kmod/ (default /var/cache/crier-image/kmod). The key is the kernel release and
# Debian version, the SHA256 of linux-source, linux-headers (-arm64, -common), linux-kbuild and
# the cross gcc as the mirror's signed indexes give them, and this script's build recipe. A hit
# costs the index check (an apt update, ~3 s) and the install; a miss the downloads (~170 MB),
# the root (~2 min) and a build of seconds. The module is checked on every install: vermagic as
# the image's own modules', the CRC of every symbol it imports as the image's modules that
# import the same symbol, and the image's own modprobe resolving platform:raspberrypi-hwmon to it.
# Prints "kmod-raspi-hwmon: ..." lines; the last is the one-line summary for the manifest.
set -euo pipefail
source "$(dirname "$0")/env.sh"

R="" SUITE=trixie MIRROR="http://deb.debian.org/debian" CACHE="${CRIER_IMAGE_CACHE:-/var/cache/crier-image}"
while (($#)); do
  case "$1" in
    --suite) SUITE="$2"; shift 2 ;;
    --mirror) MIRROR="$2"; shift 2 ;;
    --cache) CACHE="$2"; shift 2 ;;
    --no-cache) CACHE=""; shift ;;
    -h|--help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; exit 0 ;;
    -*) echo "kmod-raspi-hwmon: unknown option $1" >&2; exit 2 ;;
    *) R="$1"; shift ;;
  esac
done
say() { echo "kmod-raspi-hwmon: $*"; }
die() { echo "kmod-raspi-hwmon: ERROR: $*" >&2; exit 1; }
[ -n "$R" ] && [ -d "$R/usr/lib/modules" ] || die "usage: $0 ROOT (an arm64 root with a kernel in usr/lib/modules)"
[ "$(id -u)" = 0 ] || die "must run as root (chroot, mmdebstrap --mode=root)"

# ---- the image's kernel ------------------------------------------------------------------------
mapfile -t kvers < <(ls "$R/usr/lib/modules")
((${#kvers[@]} == 1)) || die "expected one kernel in $R/usr/lib/modules, found ${#kvers[@]}: ${kvers[*]}"
KVER="${kvers[0]}"                                  # 6.12.118+deb13-arm64
CONFIG="$R/boot/config-$KVER"
[ -f "$CONFIG" ] || die "no $CONFIG"
case "$(sed -n 's/^CONFIG_SENSORS_RASPBERRYPI_HWMON=//p' "$CONFIG")" in
  y|m) say "kernel $KVER has CONFIG_SENSORS_RASPBERRYPI_HWMON itself: nothing to build"; exit 0 ;;
esac
grep -qE '^CONFIG_RASPBERRYPI_FIRMWARE=(y|m)$' "$CONFIG" ||
  die "kernel $KVER has no CONFIG_RASPBERRYPI_FIRMWARE: nothing would register the raspberrypi-hwmon device"
KPKG="linux-image-$KVER"
DEBVER="$(chroot "$R" dpkg-query -W -f='${Version}' "$KPKG" 2>/dev/null)" || die "$KPKG is not installed in $R"
MAJMIN="$(sed -E 's/^([0-9]+\.[0-9]+).*/\1/' <<<"$KVER")"
GCCV="$(sed -n 's/^CONFIG_GCC_VERSION=\([0-9]*\)$/\1/p' "$CONFIG")"; GCCV="${GCCV:0:${#GCCV}-4}"   # 140200 -> 14
[ -n "$GCCV" ] || die "$CONFIG names no CONFIG_GCC_VERSION (a clang-built kernel is not handled)"
GCCPKG="gcc-$GCCV-aarch64-linux-gnu"

# ---- private apt: the suite, -updates and -security, amd64 + arm64 -----------------------------
KC="${CACHE:+$CACHE/kmod}"
W="$(mktemp -d /tmp/crier-kmod.XXXXXX)"
trap 'rm -rf "$W"' EXIT
if [ -n "$KC" ]; then
  mkdir -p "$KC"
  exec 8>"$KC/.lock"
  flock -n 8 || { say "waiting for another kmod-raspi-hwmon.sh on $KC"; flock 8; }
  A="$KC/apt"
else
  A="$W/apt"
fi
KEYRING=/usr/share/keyrings/debian-archive-keyring.gpg
mkdir -p "$A"/{etc/apt.conf.d,etc/preferences.d,etc/sources.list.d,lists/partial,archives/partial,cache,dpkg}
: > "$A/dpkg/status"
SOURCES=("deb [signed-by=$KEYRING] $MIRROR $SUITE main"
         "deb [signed-by=$KEYRING] $MIRROR $SUITE-updates main"
         "deb [signed-by=$KEYRING] ${MIRROR%/debian}/debian-security $SUITE-security main")
printf '%s\n' "${SOURCES[@]}" > "$A/etc/sources.list"
cat > "$A/apt.conf" <<EOF
Dir::Etc "$A/etc/";
Dir::Etc::SourceList "$A/etc/sources.list";
Dir::Etc::SourceParts "$A/etc/sources.list.d/";
Dir::Etc::Parts "$A/etc/apt.conf.d/";
Dir::Etc::Preferences "$A/etc/preferences";
Dir::Etc::PreferencesParts "$A/etc/preferences.d/";
Dir::State::Lists "$A/lists/";
Dir::State::status "$A/dpkg/status";
Dir::Cache "$A/cache/";
Dir::Cache::Archives "$A/archives/";
APT::Architecture "amd64";
APT::Architectures { "amd64"; "arm64"; };
APT::Install-Recommends "false";
APT::Sandbox::User "root";
Acquire::Check-Valid-Until "false";
Acquire::Languages "none";
Acquire::IndexTargets::deb::DEP-11 { DefaultEnabled "false"; };
Acquire::IndexTargets::deb::Contents-deb { DefaultEnabled "false"; };
EOF
papt() { APT_CONFIG="$A/apt.conf" "$@"; }
papt apt-get update -qq > "$W/update.log" 2>&1 || { cat "$W/update.log" >&2; die "apt-get update of $SUITE from $MIRROR failed (own apt configuration $A)"; }

# The packages, by what linux-headers-<ver> depends on (the -common and linux-kbuild names change
# between Debian releases).
HDR="linux-headers-$KVER"
deps="$(papt apt-cache depends "$HDR:arm64=$DEBVER" 2>/dev/null | sed -n 's/^ *|\{0,1\}Depends: <\{0,1\}\([^>:]*\).*/\1/p')" ||
  die "the mirror has no $HDR:arm64 version $DEBVER (the image's kernel): rebuild the base root, it is keyed on the mirror"
COMMON="$(grep -m1 -E "^linux-headers-.*-common(-rt)?$" <<<"$deps")" || die "$HDR=$DEBVER depends on no linux-headers-*-common"
KBUILD="$(grep -m1 -E '^linux-kbuild-' <<<"$deps")" || die "$HDR=$DEBVER depends on no linux-kbuild-*"
SRC="linux-source-$MAJMIN"
pkgsha() {  # pkgsha PKG[:ARCH] VERSION: the SHA256 the signed index gives for that .deb
  local s
  s="$(papt apt-cache show "$1=$2" 2>/dev/null | sed -n 's/^SHA256: //p' | head -n1)"
  [ -n "$s" ] || die "the mirror has no $1 version $2 (needed for the module of kernel $KVER)"
  echo "$s"
}
GCCVER="$(papt apt-cache policy "$GCCPKG" | sed -n 's/^ *Candidate: //p')"
[ -n "$GCCVER" ] && [ "$GCCVER" != "(none)" ] || die "no $GCCPKG in $SUITE (the compiler kernel $KVER was built with: $(sed -n 's/^CONFIG_CC_VERSION_TEXT=//p' "$CONFIG"))"
INPUTS="$(printf '%s\n' \
  "$SRC $DEBVER $(pkgsha "$SRC" "$DEBVER")" \
  "$HDR:arm64 $DEBVER $(pkgsha "$HDR:arm64" "$DEBVER")" \
  "$COMMON $DEBVER $(pkgsha "$COMMON" "$DEBVER")" \
  "$KBUILD:amd64 $DEBVER $(pkgsha "$KBUILD:amd64" "$DEBVER")" \
  "$GCCPKG $GCCVER $(pkgsha "$GCCPKG" "$GCCVER")")"

# ---- the build (on a cache miss) ---------------------------------------------------------------
# $1: output directory. Throwaway amd64 root with make, the cross gcc, linux-kbuild and the
# headers' -common tree (mmdebstrap); the arm64 headers unpacked into it (dpkg -x: their own
# Depends are arm64 binaries); raspberrypi-hwmon.c alone from linux-source; make M=, then
# strip --strip-debug as Debian's own modules (BTF kept).
build_module() {
  local out="$1" T="$W/tc" d
  say "building raspberrypi-hwmon.ko for $KVER from $SRC $DEBVER (${GCCPKG} $GCCVER)"
  ( cd "$W" && papt apt-get download -qq "$SRC=$DEBVER" "$HDR:arm64=$DEBVER" ) > "$W/download.log" 2>&1 ||
    { cat "$W/download.log" >&2; die "apt-get download $SRC=$DEBVER $HDR:arm64=$DEBVER failed"; }
  mmdebstrap --mode=root --variant=essential --format=directory --arch=amd64 --keyring="$KEYRING" \
    --hook-dir=/usr/share/mmdebstrap/hooks/merged-usr \
    --aptopt='APT::Install-Recommends "false"' --aptopt='Acquire::Languages "none"' \
    --aptopt='Acquire::Check-Valid-Until "false"' \
    --dpkgopt='path-exclude=/usr/share/man/*' --dpkgopt='path-exclude=/usr/share/locale/*' \
    --dpkgopt='path-exclude=/usr/share/doc/*' \
    --include="make,$GCCPKG=$GCCVER,$KBUILD=$DEBVER,$COMMON=$DEBVER" \
    "$SUITE" "$T" "${SOURCES[@]}" > "$W/mmdebstrap.log" 2>&1 ||
    { tail -n 30 "$W/mmdebstrap.log" >&2; die "mmdebstrap of the build root failed (log above)"; }
  dpkg -x "$W/${HDR}_${DEBVER}_arm64.deb" "$T"
  local H="/usr/src/$HDR"
  # /boot/config lacks four build-only lines of the headers' .config (salt, signing key).
  local buildonly='^CONFIG_(BUILD_SALT|MODULE_SIG_ALL|MODULE_SIG_KEY|SYSTEM_TRUSTED_KEYS)='
  cmp -s <(grep -vE "$buildonly" "$T$H/.config") <(grep -vE "$buildonly" "$CONFIG") ||
    die "$HDR $DEBVER's .config is not the image's /boot/config-$KVER: $(diff <(grep -vE "$buildonly" "$T$H/.config") <(grep -vE "$buildonly" "$CONFIG") | head -n 5 | paste -sd' ' -)"
  mkdir -p "$T/build/m"
  dpkg --fsys-tarfile "$W/${SRC}_${DEBVER}_all.deb" | tar -xO "./usr/src/$SRC.tar.xz" | xz -dc -T2 |
    tar -x -C "$W" --strip-components=1 "$SRC/drivers/hwmon/raspberrypi-hwmon.c" ||
    die "$SRC $DEBVER has no drivers/hwmon/raspberrypi-hwmon.c"
  cp "$W/drivers/hwmon/raspberrypi-hwmon.c" "$T/build/m/"
  echo 'obj-m := raspberrypi-hwmon.o' > "$T/build/m/Kbuild"
  chroot "$T" env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin LANG=C.UTF-8 \
    make -C "$H" M=/build/m modules > "$W/make.log" 2>&1 || { cat "$W/make.log" >&2; die "make M= failed (log above)"; }
  if grep -qiE 'warning|error' "$W/make.log"; then cat "$W/make.log" >&2; die "the module's build printed warnings (above)"; fi
  chroot "$T" aarch64-linux-gnu-strip --strip-debug -o /build/m/out.ko /build/m/raspberrypi-hwmon.ko
  mkdir -p "$out"
  cp "$T/build/m/out.ko" "$out/raspberrypi-hwmon.ko"
  cp "$W/make.log" "$out/build.log"
  {
    echo "source: $SRC $DEBVER drivers/hwmon/raspberrypi-hwmon.c sha256 $(sha256sum "$W/drivers/hwmon/raspberrypi-hwmon.c" | cut -d' ' -f1)"
    echo "compiler: $(chroot "$T" aarch64-linux-gnu-gcc-"$GCCV" --version | head -n1); kernel's: $(sed -n 's/^CONFIG_CC_VERSION_TEXT=//p' "$CONFIG")"
    echo "config: sha256 $(sha256sum "$CONFIG" | cut -d' ' -f1) (= $HDR's .config but its build-only lines)"
    echo "$INPUTS"
    echo "built: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  } > "$out/info"
  for d in "$T"/*; do mountpoint -q "$d" && die "$d is still mounted after mmdebstrap"; done
  rm -rf "$T"
}

RECIPE=1   # bump when the build changes what the module is beyond its inputs
KEY="$( { echo "recipe $RECIPE $KVER $DEBVER"; echo "$INPUTS"; declare -f build_module; } | sha256sum | cut -c1-16)"
if [ -n "$KC" ]; then
  OUT="$KC/raspberrypi-hwmon-$KVER-$KEY"
  if [ -f "$OUT/complete" ]; then
    say "cached: $OUT (built $(sed -n 's/^built: //p' "$OUT/info"))"
  else
    rm -rf "$OUT.tmp"
    t0=$SECONDS
    build_module "$OUT.tmp"
    mv "$OUT.tmp" "$OUT"; touch "$OUT/complete"
    say "built in $((SECONDS - t0)) s: $OUT"
    # Keep this kernel's and the three newest others (a few kB each).
    ls -dt "$KC"/raspberrypi-hwmon-*/ | tail -n +5 | while read -r old; do rm -rf "${old%/}"; done
  fi
else
  OUT="$W/out"; build_module "$OUT"
fi
sed -n 's/^config: sha256 \([0-9a-f]*\).*/\1/p' "$OUT/info" | grep -qx "$(sha256sum "$CONFIG" | cut -d' ' -f1)" ||
  die "the cached module was built against another kernel config than $CONFIG (remove $OUT)"

# ---- install and check -------------------------------------------------------------------------
KO="$OUT/raspberrypi-hwmon.ko"
M="$R/usr/lib/modules/$KVER"
want="$(modinfo -F vermagic "$(find "$M/kernel/drivers" -name 'reset-raspberrypi.ko*' | head -n1)")"
have="$(modinfo -F vermagic "$KO")"
[ -n "$want" ] && [ "$have" = "$want" ] || die "vermagic '$have' is not the image's ('$want')"
# CRCs: every symbol the module imports, against the image modules that import it too.
modprobe --dump-modversions "$KO" | awk '{ print $2, $1 }' | sort > "$W/ours"
: > "$W/theirs"
# (reset-, pwm-raspberrypi-poe, raspberrypi-ts call rpi_firmware_property; any hwmon driver the
# hwmon core's functions.)
for f in $(find "$M/kernel" -name '*raspberrypi*.ko*'; find "$M/kernel/drivers/hwmon" -name '*.ko*' | sort | head -n 12); do
  modprobe --dump-modversions "$f" 2>/dev/null | awk '{ print $2, $1 }' >> "$W/theirs"
done
sort -u "$W/theirs" > "$W/theirs.s"
mism="$(join "$W/ours" "$W/theirs.s" | awk '$2 != $3 { print $1 }' | sort -u | paste -sd' ' -)"
shared="$(join "$W/ours" "$W/theirs.s" | awk '{ print $1 }' | sort -u)"
[ -z "$mism" ] || die "symbol CRCs differ from the image's modules: $mism"
for s in module_layout rpi_firmware_property devm_hwmon_device_register_with_info; do
  grep -qx "$s" <<<"$shared" || die "could not compare the CRC of $s with an image module"
done
install -D -m 0644 "$KO" "$M/updates/raspberrypi-hwmon.ko"
# The host's depmod (a trixie one under qemu-user takes ~1 min for the ~3000 modules): the same
# text indexes as the image's own depmod; its modprobe then resolves the alias through them.
depmod -b "$R" "$KVER"
res="$(chroot "$R" /usr/sbin/modprobe -S "$KVER" --show-depends platform:raspberrypi-hwmon 2>&1)" || true
[ "$res" = "insmod /lib/modules/$KVER/updates/raspberrypi-hwmon.ko " ] ||
  die "the image's modprobe does not resolve platform:raspberrypi-hwmon to updates/raspberrypi-hwmon.ko: $res"
say "vermagic '$have' as the image's; $(wc -l <<<"$shared") imported symbols' CRCs equal to the image's modules' ($(wc -l < "$W/ours") imported)"
say "installed /usr/lib/modules/$KVER/updates/raspberrypi-hwmon.ko ($(stat -c %s "$KO") bytes), depmod; modprobe platform:raspberrypi-hwmon -> it"
say "summary: raspberrypi-hwmon.ko for $KVER ($DEBVER), $(sed -n 's/^source: //p' "$OUT/info"), key $KEY"
