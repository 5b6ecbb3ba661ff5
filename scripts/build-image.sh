#!/usr/bin/env bash
# Builds a flashable Crier disk image (MBR: FAT32 boot, two read-only ext4 root slots A and B for
# A/B updates (B empty), a small ext4 data partition) from Debian 13 "trixie" packages (or
# Debian 12 "bookworm" with --suite bookworm).
#
#   scripts/build-image.sh --arch amd64|arm64 [--suite trixie|bookworm] [--deb FILE | --no-crier]
#                          [--out FILE] [--mirror URL] [--no-xz] [--cache DIR | --no-cache]
#                          [--keyring FILE] [--voice-pack LANG=DIR ...]
#
#   --deb FILE   the crier package to put in. Without it the package is built here, in the
#                background while the root is made: trixie: scripts/build-deb.sh --target
#                trixie-<arch> (the cached Debian 13 roots, built first if missing; arm64 is
#                cross-compiled); bookworm: scripts/build-deb.sh (the host's Swift).
#   --no-crier   no crier: the runtime libraries and the boot layout only.
#   --keyring F  the CA certificate(s) (PEM) bundles must be signed under, installed as
#                /etc/rauc/keyring.pem (docs/updates.md). Without it the image refuses every bundle.
#   --voice-pack LANG=DIR  (zh or en; once per language) a voice pack folder, copied into the
#                read-only root as /usr/share/crier/voice/LANG and checked with `crier voice
#                check` against the image's crier.conf (the build fails if it cannot serve it).
#                voice.pack.LANG = auto uses it unless the boot partition has voice/LANG; every
#                update bundle made from the image carries it (docs/voice.md).
#   --cache DIR  where the base root lives (default /var/cache/crier-image): everything but crier,
#                keyed on the recipe and the mirror's package indexes; crier is layered onto a
#                copy of it on every run. --no-cache: build the base root for this run only.
#   --reuse-root the same as the default --cache (kept for older command lines).
#   --base-cached  build nothing: exit 0 if the base root for these arguments is in the cache,
#                1 if not (CI decides with it whether the Pi image fits its time budget).
#
# The recipe is image/ (package lists, mmdebstrap hooks, overlay files); this script only runs
# it and assembles the disk without loop mounts: mmdebstrap into a directory (the base root,
# cached), crier's .deb installed into a copy of it (dpkg in a chroot, qemu-user for arm64),
# mkfs.vfat + mcopy for the boot partition, mkfs.ext4 -d for the root and for crier-data (the
# state that the image's fstab bind-mounts from it, moved out of the root tree), sfdisk on a
# sparse file, dd at the offsets.
# Outputs next to --out (default out/crier-<arch>.img):
#   crier-<arch>.img             raw image (sparse)         crier-<arch>.img.xz(.sha256)
#   crier-<arch>.manifest        package versions + inputs  crier-<arch>.build.log
#   crier-<arch>.vmlinuz/.initrd/.cmdline   amd64 only: what scripts/boot-test.sh boots
# Needs root (mmdebstrap --mode=root, chroot). Installs its own host packages (idempotent).
set -euo pipefail
source "$(dirname "$0")/env.sh"

ARCH="" DEB="" OUT="" MIRROR="http://deb.debian.org/debian" XZ=1 CACHE="${CRIER_IMAGE_CACHE:-/var/cache/crier-image}"
SUITE=trixie CRIER=1 CHECK=0 KEYRING="" VOICE_PACKS=()
usage() { sed -n '2,39p' "$0" | sed 's/^# \{0,1\}//'; exit "${1:-2}"; }
while (($#)); do
  case "$1" in
    --arch) ARCH="$2"; shift 2 ;;
    --suite) SUITE="$2"; shift 2 ;;
    --deb) DEB="$2"; shift 2 ;;
    --no-crier) CRIER=0; shift ;;
    --out) OUT="$2"; shift 2 ;;
    --mirror) MIRROR="$2"; shift 2 ;;
    --no-xz) XZ=0; shift ;;
    --cache) CACHE="$2"; shift 2 ;;
    --no-cache) CACHE=""; shift ;;
    --reuse-root) shift ;;
    --base-cached) CHECK=1; shift ;;
    --keyring) KEYRING="$2"; shift 2 ;;
    --voice-pack) VOICE_PACKS+=("$2"); shift 2 ;;
    -h|--help) usage 0 ;;
    *) echo "build-image: unknown argument $1" >&2; usage ;;
  esac
done
case "$ARCH" in amd64|arm64) ;; *) echo "build-image: --arch amd64|arm64 is required" >&2; usage ;; esac
case "$SUITE" in trixie|bookworm) ;; *) echo "build-image: --suite trixie|bookworm, not '$SUITE'" >&2; usage ;; esac
if ((${#VOICE_PACKS[@]})); then
  # Checked before anything is built (minutes); the folders as absolute paths from here on.
  sh "$(dirname "$0")/../image/hooks/voice-packs.sh" --check-args "${VOICE_PACKS[@]}" || exit $?
  for i in "${!VOICE_PACKS[@]}"; do VOICE_PACKS[i]="${VOICE_PACKS[i]%%=*}=$(realpath "${VOICE_PACKS[i]#*=}")"; done
fi
[ "$(id -u)" = 0 ] || { echo "build-image: must run as root (mmdebstrap --mode=root, chroot)" >&2; exit 1; }
((CRIER)) || [ -z "$DEB" ] || { echo "build-image: --deb and --no-crier exclude each other" >&2; exit 2; }
check_deb() {
  local deb="$1" deb_arch
  deb_arch="$(dpkg-deb -f "$deb" Architecture)"
  [ "$deb_arch" = "$ARCH" ] || [ "$deb_arch" = all ] || {
    echo "build-image: $deb is for $deb_arch, not $ARCH" >&2; return 1; }
  # A crier built against libgpiod 1.6 (the v1 backend: Raspberry Pi OS / Debian 12) depends on
  # libgpiod2, which trixie does not have.
  if [ "$SUITE" = trixie ] && dpkg-deb -f "$deb" Depends | grep -qw libgpiod2; then
    echo "build-image: $deb depends on libgpiod2 (a bookworm build, libgpiod v1); trixie has only libgpiod3." >&2
    echo "  Use a crier .deb built for trixie (scripts/build-deb.sh --target trixie-$ARCH), or --suite bookworm," >&2
    echo "  or leave --deb out: this script then builds the right one." >&2
    return 1
  fi
}
if [ -n "$KEYRING" ]; then
  grep -q 'BEGIN CERTIFICATE' "$KEYRING" 2>/dev/null || { echo "build-image: --keyring $KEYRING: not a PEM certificate file" >&2; exit 1; }
  KEYRING="$(realpath "$KEYRING")"
fi
if [ -n "$DEB" ]; then
  [ -f "$DEB" ] || { echo "build-image: --deb $DEB: no such file" >&2; exit 1; }
  DEB="$(realpath "$DEB")"
  check_deb "$DEB" || exit 1
fi
OUT="${OUT:-$ROOT/out/crier-$ARCH.img}"
mkdir -p "$(dirname "$OUT")"
OUT="$(realpath -m "$OUT")"
base="${OUT%.img}"
WORK="$base.work"
LOG="$base.build.log"
COMPONENTS=main; [ "$ARCH" = arm64 ] && COMPONENTS="main non-free-firmware"
# The image's files carry the last commit's time; the base root's the last commit that changed
# its recipe (it is shared by every later commit with the same recipe).
export SOURCE_DATE_EPOCH="${SOURCE_DATE_EPOCH:-$(git -C "$ROOT" log -1 --format=%ct 2>/dev/null || date +%s)}"
BASE_EPOCH="$(git -C "$ROOT" log -1 --format=%ct -- image scripts/build-image.sh 2>/dev/null || true)"
BASE_EPOCH="${BASE_EPOCH:-$SOURCE_DATE_EPOCH}"

# ---- progress: one line per step, with the step's and the total elapsed time (steps.sh) -----
source "$(dirname "$0")/steps.sh"
steps_init build-image
DEB_PID=""
trap 'rc=$?; [ -z "$DEB_PID" ] || kill "$DEB_PID" 2>/dev/null || true; [ $rc = 0 ] || echo "build-image: failed (exit $rc) in step \"$STEP\"; log: $LOG" >&2' EXIT

# ---- 1. host tools -------------------------------------------------------------------------
step "host packages"
HOST_PKGS=(mmdebstrap dosfstools mtools e2fsprogs fdisk xz-utils)
[ "$ARCH" = arm64 ] && [ "$(dpkg --print-architecture)" != arm64 ] &&
  HOST_PKGS+=(qemu-user-static binfmt-support arch-test)
[ "$ARCH" = arm64 ] && HOST_PKGS+=(device-tree-compiler python3)   # the Pi audio overlays (customize-raspi.sh)
[ "$ARCH" = arm64 ] && HOST_PKGS+=(u-boot-tools)                    # mkimage: boot.scr (customize-raspi.sh)
host_packages "${HOST_PKGS[@]}"

if [ "$ARCH" = arm64 ] && [ "$(dpkg --print-architecture)" != arm64 ]; then
  step "binfmt_misc for arm64 (qemu-user-static)"
  mountpoint -q /proc/sys/fs/binfmt_misc || mount -t binfmt_misc binfmt_misc /proc/sys/fs/binfmt_misc
  update-binfmts --enable qemu-aarch64 2>/dev/null || true
  arch-test arm64 >/dev/null || fail "arm64 binaries do not run through qemu-user (arch-test arm64)"
fi

# ---- 2. crier's .deb, in the background while the root is made ------------------------------
# (The compiler and mmdebstrap's emulated dpkg each use about one core; on 2 cores they overlap.)
DEB_LOG="$base.deb.log"
if ((CRIER)) && ! ((CHECK)) && [ -z "$DEB" ]; then
  if [ "$SUITE" = trixie ]; then deb_cmd=(bash "$ROOT/scripts/build-deb.sh" --target "trixie-$ARCH" --fast)
  else
    [ "$ARCH" = "$(dpkg --print-architecture)" ] || fail "a bookworm $ARCH .deb is built on a $ARCH machine only: give it with --deb, or use --suite trixie"
    deb_cmd=(bash "$ROOT/scripts/build-deb.sh" --fast)
  fi
  printf '[build-image %6ss] crier .deb: %s, in the background (log: %s)\n' "$(elapsed "$T0")" "${deb_cmd[*]#"$ROOT/"}" "$(basename "$DEB_LOG")"
  DEB_T0=$(date +%s.%N)
  { "${deb_cmd[@]}"; rc=$?; date +%s.%N > "$DEB_LOG.done"; exit $rc; } > "$DEB_LOG" 2>&1 &
  DEB_PID=$!
fi

# ---- 3. base root: everything but crier (cached) --------------------------------------------
# The base root's recipe: the mmdebstrap command line below (this function's text is part of
# the cache key, so an edit here re-keys the cache and nothing else in this script does), the
# package lists, path-excludes, hooks and overlay files under image/, except customize-crier.sh
# and customize-final.sh, which run on every build after crier is installed, and image/rauc/
# (RAUC's system.conf, installed by customize-final.sh).
BASE_RECIPE=1
pkglist() { sed -e 's/#.*//' "$@" | tr -s ' \t\n' '\n' | sed '/^$/d' | paste -sd, -; }
base_mmdebstrap() {   # $1: target directory; output to the log
  local PKGS args pat
  PKGS="$(pkglist "$ROOT/image/packages/common.list" "$ROOT/image/packages/$SUITE.list" "$ROOT/image/packages/$ARCH.list")"
  args=(
    --mode=root --variant=minbase
    # merged /usr through mmdebstrap's own hook (else apt picks usrmerge, which pulls in 50 MB of perl)
    --hook-dir=/usr/share/mmdebstrap/hooks/merged-usr --arch="$ARCH" --format=directory
    # dpkg without fsync (libeatmydata, for the build only: the hook removes it at the end; a
    # --dpkgopt=force-unsafe-io would stay in the image's /etc/dpkg/dpkg.cfg.d/99mmdebstrap)
    --hook-dir=/usr/share/mmdebstrap/hooks/eatmydata
    --include="$PKGS"
    --aptopt='APT::Install-Recommends "false"'
    # Trim what a kiosk never reads; copyright files and crier's own docs stay. (These stay in
    # the image's /etc/dpkg/dpkg.cfg.d/99mmdebstrap, so crier's .deb and later upgrades obey them.)
    --dpkgopt='path-exclude=/usr/share/man/*'
    --dpkgopt='path-exclude=/usr/share/info/*'
    --dpkgopt='path-exclude=/usr/share/locale/*'
    --dpkgopt='path-include=/usr/share/locale/locale.alias'
    --dpkgopt='path-exclude=/usr/share/doc/*'
    --dpkgopt='path-include=/usr/share/doc/*/copyright'
    --dpkgopt='path-include=/usr/share/doc/crier/*'
    --setup-hook='"$CRIER_IMAGE_DIR/hooks/setup.sh" "$1"'
    # One initramfs, made once after every package is in (customize-system.sh): during the
    # build update-initramfs is diverted to a no-op; else the kernel's postinst makes one and a
    # trigger makes it again (each minutes under qemu-user).
    --essential-hook='"$CRIER_IMAGE_DIR/hooks/initramfs-defer.sh" "$1" defer'
    --customize-hook='"$CRIER_IMAGE_DIR/hooks/initramfs-defer.sh" "$1" run'
    --customize-hook='"$CRIER_IMAGE_DIR/hooks/customize-system.sh" "$1"'
  )
  # Per-arch dpkg path-excludes (image/packages/<arch>.path-exclude), e.g. unused kernel modules.
  if [ -f "$ROOT/image/packages/$ARCH.path-exclude" ]; then
    while read -r pat; do
      case "$pat" in +*) args+=(--dpkgopt="path-include=${pat#+}") ;; *) args+=(--dpkgopt="path-exclude=$pat") ;; esac
    done < <(sed -e 's/#.*//' -e '/^[[:space:]]*$/d' "$ROOT/image/packages/$ARCH.path-exclude")
  fi
  [ "$ARCH" = arm64 ] && args+=(--customize-hook='"$CRIER_IMAGE_DIR/hooks/customize-raspi.sh" "$1"')
  SOURCE_DATE_EPOCH=$BASE_EPOCH CRIER_IMAGE_DIR="$ROOT/image" CRIER_REPO_DIR="$ROOT" CRIER_ARCH="$ARCH" \
  mmdebstrap "${args[@]}" "$SUITE" "$1" \
    "deb $MIRROR $SUITE $COMPONENTS" \
    "deb $MIRROR $SUITE-updates $COMPONENTS" \
    "deb ${MIRROR%/debian}/debian-security $SUITE-security $COMPONENTS"
}

# The key: BASE_RECIPE, base_mmdebstrap's text, the recipe files, the arguments, and the package
# versions the mirror serves: the SHA256 of each Packages index this build reads, taken from the
# suite's InRelease (they change only when a package does; the InRelease's own date changes
# every few hours and is not part of the key).
base_key() {
  {
    echo "recipe=$BASE_RECIPE arch=$ARCH suite=$SUITE mirror=$MIRROR"
    declare -f base_mmdebstrap pkglist
    (cd "$ROOT" && find image -type f ! -name customize-crier.sh ! -name customize-final.sh ! -name voice-packs.sh ! -path 'image/rauc/*' | LC_ALL=C sort | xargs sha256sum)
    local s
    for s in "$MIRROR/dists/$SUITE" "$MIRROR/dists/$SUITE-updates" "${MIRROR%/debian}/debian-security/dists/$SUITE-security"; do
      python3 - "$s/InRelease" "$ARCH" $COMPONENTS <<'PY' || return 1
import sys, urllib.request
url, arch, comps = sys.argv[1], sys.argv[2], sys.argv[3:]
text = urllib.request.urlopen(url, timeout=60).read().decode()
sha = text.split("\nSHA256:\n", 1)[1]
want = {f"{c}/binary-{a}/Packages.xz" for c in comps for a in (arch, "all")}
for line in sha.splitlines():
    parts = line.split()
    if len(parts) == 3 and parts[2] in want:
        print(url, parts[2], parts[0])
PY
    done
  } | sha256sum | cut -c1-16
}

# mmdebstrap's own phase lines and our hooks' lines as progress; everything else in the log.
run_base_mmdebstrap() {   # $1: target directory
  local mm shown=0 n
  : > "$LOG"
  base_mmdebstrap "$1" >>"$LOG" 2>&1 &
  mm=$!
  show_progress() {
    n=$(wc -l < "$LOG")
    sed -n "$((shown + 1)),${n}p" "$LOG" |
      grep -E '^(I: (running|installing|downloading|extracting|cleaning|success)|customize-|initramfs-defer|E:)' | sed 's/^/  /' || true
    shown=$n
  }
  # (|| true: a sleep killed from outside must not end the build under set -e; mmdebstrap goes on)
  while kill -0 $mm 2>/dev/null; do show_progress; sleep 2 || true; done
  wait $mm || { show_progress; tail -n 40 "$LOG" >&2; fail "mmdebstrap failed"; }
  show_progress
}

if ((CHECK)); then
  [ -n "$CACHE" ] || fail "--base-cached needs a cache (not --no-cache)"
  KEY="$(base_key)" || fail "cannot read the mirror's InRelease files for the cache key"
  if [ -f "$CACHE/base-$ARCH-$SUITE-$KEY/complete" ]; then
    echo "build-image: base root $ARCH $SUITE cached (key $KEY, built $(cat "$CACHE/base-$ARCH-$SUITE-$KEY/complete"))"; exit 0
  fi
  echo "build-image: base root $ARCH $SUITE not cached (key $KEY)"; trap - EXIT; exit 1
fi
rm -rf "$WORK"; mkdir -p "$WORK"
R="$WORK/root"
if [ -n "$CACHE" ]; then
  step "base root: cache key (recipe + the mirror's package indexes)"
  KEY="$(base_key)" || fail "cannot read the mirror's InRelease files for the cache key"
  mkdir -p "$CACHE"
  BDIR="$CACHE/base-$ARCH-$SUITE-$KEY"
  echo "  key $KEY"
  # One build per arch and suite at a time; a second run waits and then uses the first's root.
  exec 7>"$CACHE/.lock-$ARCH-$SUITE"
  flock -n 7 || { echo "  waiting for another build-image.sh on $CACHE ($ARCH $SUITE)"; flock 7; }
  if [ -f "$BDIR/complete" ]; then
    step "base root: cached $BDIR (built $(cat "$BDIR/complete"))"
  else
    step "base root: mmdebstrap $SUITE $ARCH (log: $(basename "$LOG"))"
    rm -rf "$BDIR.tmp"; mkdir -p "$BDIR.tmp"
    run_base_mmdebstrap "$BDIR.tmp/root"
    cp "$LOG" "$BDIR.tmp/mmdebstrap.log"
    mv "$BDIR.tmp" "$BDIR"
    date -u +%Y-%m-%dT%H:%M:%SZ > "$BDIR/complete"
    # The cache holds the newest base root per arch and suite.
    for old in "$CACHE/base-$ARCH-$SUITE-"*; do [ "$old" = "$BDIR" ] || rm -rf "$old"; done
  fi
  step "base root: copy"
  cp -a --reflink=auto "$BDIR/root" "$R"
  [ -f "$BDIR/mmdebstrap.log" ] && cp "$BDIR/mmdebstrap.log" "$LOG"
  flock -u 7
else
  step "base root: mmdebstrap $SUITE $ARCH, not cached (log: $(basename "$LOG"))"
  run_base_mmdebstrap "$R"
fi

# ---- 4. crier on top: its .deb into the copy (dpkg in a chroot; qemu-user for arm64) ---------
if [ -n "$DEB_PID" ]; then
  step "crier .deb: waiting for the background build"
  if ! wait "$DEB_PID"; then DEB_PID=""; tail -n 40 "$DEB_LOG" >&2; fail "the crier .deb build failed (log: $DEB_LOG)"; fi
  DEB_PID=""
  DEB="$(tail -n 1 "$DEB_LOG")"
  [ -f "$DEB" ] || { tail -n 20 "$DEB_LOG" >&2; fail "the .deb build printed no package"; }
  echo "  $DEB (the background build took $(awk -v a="$DEB_T0" -v b="$(cat "$DEB_LOG.done")" 'BEGIN { printf "%.1f", b - a }')s)"
  rm -f "$DEB_LOG.done"
  check_deb "$DEB" || fail "the .deb just built does not fit this image"
fi
# dpkg and customize-crier.sh in one private mount namespace with /proc, /dev and /run mounted
# in the root (nothing stays mounted when it ends).
layer() {   # $1: "deb" to install /tmp/crier.deb first
  unshare --mount --propagation private sh -c '
    r=$1 deb=$2 log=$3
    mount -t proc proc "$r/proc" && mount --rbind /dev "$r/dev" && mount -t tmpfs tmpfs "$r/run" || exit 97
    if [ "$deb" = deb ]; then
      chroot "$r" env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin LANG=C.UTF-8 DEBIAN_FRONTEND=noninteractive \
        SOURCE_DATE_EPOCH="$SOURCE_DATE_EPOCH" dpkg -i /tmp/crier.deb >> "$log" 2>&1 || exit 98
    fi
    exec sh "$CRIER_IMAGE_DIR/hooks/customize-crier.sh" "$r"
  ' sh "$R" "$1" "$LOG" | sed 's/^/  /'
}
export CRIER_IMAGE_DIR="$ROOT/image" CRIER_ARCH="$ARCH"
if [ -n "$DEB" ]; then
  step "crier: dpkg -i $(basename "$DEB") in the root"
  # Its Depends must already be in the base root (image/packages lists crier's runtime
  # libraries); dpkg refuses otherwise, and nothing is fetched here.
  cp "$DEB" "$R/tmp/crier.deb"
  layer deb || {
    rc=$?; tail -n 20 "$LOG" >&2
    ((rc == 98)) && fail "dpkg could not install $(basename "$DEB") into the base root; a missing dependency belongs in image/packages/common.list (or <suite>.list)"
    fail "installing crier into the root failed (exit $rc)"
  }
  rm -f "$R/tmp/crier.deb"
else
  step "no crier (--no-crier): the runtime libraries only"
  layer none || fail "customize-crier.sh failed"
fi
# Leftovers of that dpkg run (mmdebstrap cleaned the same for the base).
rm -f "$R"/var/lib/dpkg/*-old "$R"/var/cache/debconf/*-old "$R"/var/log/dpkg.log "$R"/var/log/alternatives.log
if [ -n "$KEYRING" ]; then
  install -D -m 0644 "$KEYRING" "$R/etc/rauc/keyring.pem"
  echo "  RAUC keyring: $(grep -c 'BEGIN CERTIFICATE' "$KEYRING") certificate(s) from $KEYRING"
else
  echo "  RAUC keyring: none (--keyring not given): this image refuses every update bundle"
fi
KMOD_SUMMARY=""
if [ "$ARCH" = arm64 ]; then
  # Debian's arm64 kernel has no raspberrypi-hwmon (CONFIG_SENSORS_RASPBERRYPI_HWMON unset): the
  # kernel's own driver, built for exactly this kernel (cached by kernel and source), so crier
  # sees under-voltage on a Pi (docs/image.md, "Under-voltage sensor").
  step "Pi under-voltage sensor: raspberrypi-hwmon.ko for the image's kernel (scripts/kmod-raspi-hwmon.sh)"
  kc=(--no-cache); [ -z "$CACHE" ] || kc=(--cache "$CACHE")
  bash "$ROOT/scripts/kmod-raspi-hwmon.sh" "$R" --suite "$SUITE" --mirror "$MIRROR" "${kc[@]}" > "$WORK/kmod.out" 2>&1 ||
    { sed 's/^/  /' "$WORK/kmod.out" >&2; fail "the raspberrypi-hwmon module could not be built or installed (above)"; }
  sed 's/^/  /' "$WORK/kmod.out"
  KMOD_SUMMARY="$(sed -n 's/^kmod-raspi-hwmon: summary: //p' "$WORK/kmod.out")"
fi
if ((${#VOICE_PACKS[@]})); then
  step "voice packs: ${VOICE_PACKS[*]%%=*} into /usr/share/crier/voice (crier voice check)"
  sh "$ROOT/image/hooks/voice-packs.sh" "$R" "${VOICE_PACKS[@]}" | sed 's/^/  /' || fail "a voice pack cannot go into the image (above)"
fi
CRIER_IMAGE_DIR="$ROOT/image" CRIER_ARCH="$ARCH" sh "$ROOT/image/hooks/customize-final.sh" "$R" | sed 's/^/  /'

# ---- 5. manifest -----------------------------------------------------------------------------
step "manifest"
{
  echo "# Crier image manifest: inputs and every installed package"
  echo "# arch: $ARCH   suite: $SUITE ($COMPONENTS, +updates, +security)   mirror: $MIRROR"
  echo "# built: $(date -u +%Y-%m-%dT%H:%M:%SZ)   SOURCE_DATE_EPOCH: $SOURCE_DATE_EPOCH"
  echo "# recipe: git $(git -C "$ROOT" rev-parse HEAD 2>/dev/null || echo unknown)$(git -C "$ROOT" diff --quiet -- image scripts 2>/dev/null || echo ' (+local changes)')"
  if [ -n "$DEB" ]; then
    echo "# crier deb: $(basename "$DEB") sha256 $(sha256sum "$DEB" | cut -d' ' -f1)"
  else
    echo "# crier deb: none (runtime libraries only)"
  fi
  for vp in "${VOICE_PACKS[@]}"; do
    l="${vp%%=*}"
    echo "# voice pack $l: ${vp#*=} -> /usr/share/crier/voice/$l, files sha256 $(cd "$R/usr/share/crier/voice/$l" && find . -type f | LC_ALL=C sort | xargs sha256sum | sha256sum | cut -c1-16)"
  done
  [ -z "$KMOD_SUMMARY" ] || echo "# kernel module added: $KMOD_SUMMARY"
  echo "# base root: $( [ -n "$CACHE" ] && echo "$(basename "$BDIR"), built $(cat "$BDIR/complete")" || echo "built for this run (--no-cache)"), SOURCE_DATE_EPOCH $BASE_EPOCH"
  echo "# package	version	architecture"
  chroot "$R" dpkg-query -W -f='${Package}\t${Version}\t${Architecture}\n' | sort
} > "$base.manifest"
echo "  $(grep -vc '^#' "$base.manifest") packages"

if [ "$ARCH" = arm64 ]; then
  # The overlays (compiled by customize-raspi.sh) on the Pi 3 / 4 / Zero 2 W dtbs of the image's
  # own kernel, every compatible string against its modules.alias; the jack's vchiq node too.
  step "Pi audio: overlays x dtbs x modules.alias (image/test-overlays.py)"
  python3 "$ROOT/image/test-overlays.py" "$R" | grep -v '^  ok ' || fail "the Pi audio overlays do not fit this kernel"
fi

# ---- 6. boot files ---------------------------------------------------------------------------
step "boot partition content"
mkdir -p "$WORK/bootfs"
cp -a "$R/boot/firmware/." "$WORK/bootfs/"
find "$R/boot/firmware" -mindepth 1 -delete      # only the mount point stays in the root
if [ "$ARCH" = amd64 ]; then
  # No boot loader: QEMU (scripts/boot-test.sh) boots these directly with -kernel/-initrd.
  kver="$(ls "$R"/boot/vmlinuz-* | sort -V | tail -1)"; kver="${kver##*/vmlinuz-}"
  cp "$R/boot/vmlinuz-$kver" "$base.vmlinuz"
  cp "$R/boot/initrd.img-$kver" "$base.initrd"
  # Slot A (partition 2) by its PARTUUID, and rauc.slot=A: RAUC reads the booted slot from it.
  echo "root=PARTUUID=43524945-02 ro console=ttyS0,115200 quiet rauc.slot=A" > "$base.cmdline"
  echo "  kernel $kver, initrd $(du -h "$base.initrd" | cut -f1), cmdline: $(cat "$base.cmdline")"
fi
ls "$WORK/bootfs" | sed 's/^/  /' | paste -sd' ' | cut -c1-200

# The root is mounted read-only; what must persist lives on crier-data (mounted at
# /var/lib/crier-data) and is bind-mounted where programs expect it. The image's fstab is the one
# list of what that is: for every "/var/lib/crier-data/NAME  TARGET  none  bind" line, TARGET's
# content moves from the root tree to NAME on the data partition (owners and modes kept), and
# TARGET stays as an empty mount point.
step "data partition content (bind mounts from the image's fstab)"
mkdir -p "$WORK/data"
binds=0
while read -r src target _; do
  name="${src#/var/lib/crier-data/}"
  [ -n "$name" ] && [ "$name" != "$src" ] && [ "${target#/}" != "$target" ] || fail "bad bind line in fstab: $src $target"
  mkdir -p "$R$target"
  cp -a "$R$target" "$WORK/data/$name"   # the directory itself: owner, mode
  find "$R$target" -mindepth 1 -delete
  echo "  $target -> crier-data/$name ($(du -sk "$WORK/data/$name" | cut -f1) KiB)"
  binds=$((binds + 1))
done < <(awk '$1 ~ "^/var/lib/crier-data/" && $3 == "none" && $4 ~ /(^|,)bind(,|$)/ { print $1, $2 }' "$R/etc/fstab")
((binds)) || fail "the image's fstab bind-mounts nothing from /var/lib/crier-data"
mkdir -p "$R/var/lib/crier-data"
# RAUC's data-directory (/etc/rauc/system.conf): slot status that must outlive the slots.
mkdir -p "$WORK/data/rauc"
# systemd's tmpfiles.d/dbus.conf wants /var/lib/dbus/machine-id -> /etc/machine-id and makes it at
# every boot if missing, which the read-only root refuses. customize-system.sh ran
# systemd-tmpfiles, but mmdebstrap's final cleanup deletes this link again (it may carry the
# build host's ID), so it is put back here, after mmdebstrap.
mkdir -p "$R/var/lib/dbus"; ln -sfn /etc/machine-id "$R/var/lib/dbus/machine-id"

# ---- 7. file systems -------------------------------------------------------------------------
step "FAT32 boot file system (mkfs.vfat + mcopy)"
BOOT_MB=40; [ "$ARCH" = arm64 ] && BOOT_MB=256    # FAT32 needs >= 33 MiB
need=$(du -sm "$WORK/bootfs" | cut -f1)
((need * 2 < BOOT_MB)) || BOOT_MB=$(( (need * 2 + 63) / 64 * 64 ))   # room for a kernel upgrade
mkfs.vfat -F 32 -n CRIER-BOOT -i 43524945 -C "$WORK/boot.vfat" $((BOOT_MB * 1024)) >/dev/null
mcopy -s -m -i "$WORK/boot.vfat" "$WORK/bootfs"/* ::/
echo "  ${BOOT_MB} MiB, ${need} MiB used"

step "ext4 root file system (mkfs.ext4 -d)"
used=$(du -sm "$R" | cut -f1)
# +5 % and 16 MiB: journal, inode tables and a little free space for an integrator's changes.
# The root keeps this size (it is read-only, nothing grows on it); the card's remaining space
# goes to crier-data on first boot (crier-growdata.service).
ROOT_MB=$(( (used * 105 / 100 + 16 + 3) / 4 * 4 ))
rm -f "$WORK/root.ext4"; truncate -s "${ROOT_MB}M" "$WORK/root.ext4"
E2FSPROGS_FAKE_TIME=$SOURCE_DATE_EPOCH mkfs.ext4 -q -F -L crier-root -m 1 -J size=8 -d "$R" "$WORK/root.ext4" "${ROOT_MB}M"
e2fsck -fn "$WORK/root.ext4" >/dev/null 2>&1 || fail "e2fsck found errors in the new root file system"
echo "  ${ROOT_MB} MiB, ${used} MiB used"
# Each slot partition is twice today's root (at least 1 GiB on the Pi, 512 MiB on amd64), so a
# later, larger root still fits slot B and then A: partitions never move on a box in the field.
SLOT_MB=$(( (ROOT_MB * 2 + 63) / 64 * 64 )); MIN_SLOT=512; [ "$ARCH" = arm64 ] && MIN_SLOT=1024
((SLOT_MB >= MIN_SLOT)) || SLOT_MB=$MIN_SLOT

step "ext4 data file system crier-data (mkfs.ext4 -d)"
# Small in the image; grown online to the end of the card on first boot. 4 KiB blocks and the
# default inode ratio (not mke2fs's "small" type with 1 KiB blocks) suit the grown size.
DATA_MB=16
data_used=$(du -sm "$WORK/data" | cut -f1)
((data_used * 2 < DATA_MB)) || fail "crier-data content (${data_used} MiB) does not fit ${DATA_MB} MiB with room to spare"
rm -f "$WORK/data.ext4"; truncate -s "${DATA_MB}M" "$WORK/data.ext4"
E2FSPROGS_FAKE_TIME=$SOURCE_DATE_EPOCH mkfs.ext4 -q -F -L crier-data -b 4096 -T default -m 1 -d "$WORK/data" "$WORK/data.ext4" "${DATA_MB}M"
e2fsck -fn "$WORK/data.ext4" >/dev/null 2>&1 || fail "e2fsck found errors in the new data file system"
echo "  ${DATA_MB} MiB, $(du -sk "$WORK/data" | cut -f1) KiB used"

# ---- 8. disk image ---------------------------------------------------------------------------
step "partition table + assembly (sfdisk on a sparse file, dd)"
rm -f "$OUT" "$OUT.xz" "$OUT.xz.sha256"
# The disk identifier 0x43524945 ("CRIE") makes the PARTUUIDs 43524945-01..04 that the boot
# script, the amd64 command line and /etc/rauc/system.conf name the slots by.
TOTAL_MB=$((4 + BOOT_MB + 2 * SLOT_MB + DATA_MB))
truncate -s "${TOTAL_MB}M" "$OUT"
sfdisk -q "$OUT" <<EOF
label: dos
label-id: 0x43524945
unit: sectors
start=$((4 * 2048)), size=$((BOOT_MB * 2048)), type=c, bootable
start=$(((4 + BOOT_MB) * 2048)), size=$((SLOT_MB * 2048)), type=83
start=$(((4 + BOOT_MB + SLOT_MB) * 2048)), size=$((SLOT_MB * 2048)), type=83
start=$(((4 + BOOT_MB + 2 * SLOT_MB) * 2048)), size=$((DATA_MB * 2048)), type=83
EOF
dd if="$WORK/boot.vfat" of="$OUT" bs=1M seek=4 conv=notrunc,sparse status=none
dd if="$WORK/root.ext4" of="$OUT" bs=1M seek=$((4 + BOOT_MB)) conv=notrunc,sparse status=none
dd if="$WORK/data.ext4" of="$OUT" bs=1M seek=$((4 + BOOT_MB + 2 * SLOT_MB)) conv=notrunc,sparse status=none
echo "  p1 CRIER-BOOT ${BOOT_MB} MiB, p2 slot A ${SLOT_MB} MiB (root ${ROOT_MB} MiB, read-only), p3 slot B ${SLOT_MB} MiB (empty), p4 crier-data ${DATA_MB} MiB"

step "check the image (no mounts)"
bash "$ROOT/image/check-image.sh" --arch "$ARCH" "$OUT"

if ((XZ)); then
  step "compress (xz -T2 -6) + sha256"
  xz -T2 -6 -c "$OUT" > "$OUT.xz"
  (cd "$(dirname "$OUT")" && sha256sum "$(basename "$OUT").xz" > "$(basename "$OUT").xz.sha256")
fi

step "clean up"
rm -rf "$WORK"
step ""
raw=$(stat -c %s "$OUT"); alloc=$(du -B1 "$OUT" | cut -f1)
echo "build-image: $OUT"
printf '  raw %d MiB (%d MiB allocated)' $((raw >> 20)) $((alloc >> 20))
((XZ)) && printf ', xz %d MiB' $(($(stat -c %s "$OUT.xz") >> 20))
printf ', total %ss\n' "$(elapsed "$T0")"
