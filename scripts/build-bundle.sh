#!/usr/bin/env bash
# Makes a signed RAUC update bundle (format verity, one image rootfs.ext4 for slot class rootfs)
# from a Crier disk image's root slot (partition 2).
#
#   scripts/build-bundle.sh --image out/crier-arm64.img [--root-ext4 F] --cert C --key K
#                           [--build-id ID] [--keyring K] [--out F] [--compatible C]
#
#   --root-ext4 F  take the root file system from F instead of partition 2 of --image
#   --build-id ID  version suffix (default: the manifest's build time, else the image's mtime, UTC
#                  yyyymmddHHMMSS); version = <crier version>+<ID>
#   --keyring K    also check the new bundle against K (rauc info --keyring)
#   --out F        default: next to the image, crier-<arch>-<version>.raucb
#   --compatible C override the compatible (tests: a bundle for the other board must be refused)
# compatible: from the image's /etc/rauc/system.conf, else from the arch (arm64 crier-rpi-arm64,
# amd64 crier-qemu-amd64). Keys: scripts/bundle-keys.sh (test only), docs/updates.md#signing-keys.
set -euo pipefail
source "$(dirname "$0")/env.sh"

IMAGE="" ROOTFS="" CERT="" KEY="" BUILD_ID="" KEYRING="" OUT="" COMPATIBLE=""
usage() { sed -n '2,15p' "$0" | sed 's/^# \{0,1\}//'; exit "${1:-2}"; }
while (($#)); do
  case "$1" in
    --image) IMAGE="$2"; shift 2 ;;
    --root-ext4) ROOTFS="$2"; shift 2 ;;
    --cert) CERT="$2"; shift 2 ;;
    --key) KEY="$2"; shift 2 ;;
    --build-id) BUILD_ID="$2"; shift 2 ;;
    --keyring) KEYRING="$2"; shift 2 ;;
    --out) OUT="$2"; shift 2 ;;
    --compatible) COMPATIBLE="$2"; shift 2 ;;
    -h|--help) usage 0 ;;
    *) echo "build-bundle: unknown argument $1" >&2; usage ;;
  esac
done
[ -n "$IMAGE" ] || [ -n "$ROOTFS" ] || { echo "build-bundle: --image or --root-ext4 is required" >&2; usage; }
[ -n "$CERT" ] && [ -n "$KEY" ] || { echo "build-bundle: --cert and --key are required (test keys: scripts/bundle-keys.sh DIR)" >&2; usage; }
for f in "$IMAGE" "$ROOTFS"; do [ -z "$f" ] || [ -f "$f" ] || { echo "build-bundle: $f: no such file" >&2; exit 1; }; done
case "$CERT$KEY" in *pkcs11:*) ;; *) for f in "$CERT" "$KEY"; do [ -f "$f" ] || { echo "build-bundle: $f: no such file" >&2; exit 1; }; done ;; esac

source "$(dirname "$0")/steps.sh"
steps_init build-bundle

step "host packages"
host_packages rauc squashfs-tools openssl e2fsprogs fdisk

base="${IMAGE:-$ROOTFS}"; base="${base%.img}"; base="${base%.ext4}"
WORK="$(mktemp -d "$(dirname "$base")/.bundle.XXXXXX")"
trap 'rm -rf "$WORK"' EXIT
mkdir "$WORK/content"
R="$WORK/content/rootfs.ext4"

if [ -n "$ROOTFS" ]; then
  step "root file system from $ROOTFS"
  src="$ROOTFS" off=0
else
  step "root slot: partition 2 of $IMAGE (sfdisk -J)"
  read -r start sectors < <(sfdisk -J "$IMAGE" | python3 -c '
import json, sys
t = json.load(sys.stdin)["partitiontable"]; p = t["partitions"]
if len(p) < 2: sys.exit("no partition 2")
print(p[1]["start"] * t.get("sectorsize", 512), p[1]["size"] * t.get("sectorsize", 512))') ||
    fail "cannot read partition 2 of $IMAGE"
  src="$IMAGE" off=$start
  echo "  offset $off, partition $((sectors / 1048576)) MiB"
fi
# The file system's own size (dumpe2fs), not the partition's: a slot bigger than the root
# would otherwise put its empty tail into every bundle.
dd if="$src" of="$WORK/sb" bs=4096 iflag=skip_bytes,count_bytes skip="$off" count=65536 status=none
sbinfo="$(dumpe2fs -h "$WORK/sb" 2>/dev/null || true)"   # complains that the copy is short
bc=$(awk -F: '/^Block count/ {print $2+0}' <<<"$sbinfo")
bs=$(awk -F: '/^Block size/ {print $2+0}' <<<"$sbinfo")
[ -n "$bc" ] && [ -n "$bs" ] || fail "no ext4 file system at offset $off of $src"
size=$((bc * bs)); rm -f "$WORK/sb"
step "cut the ext4 file system ($((size / 1048576)) MiB, $bc blocks of $bs)"
dd if="$src" of="$R" bs=4M iflag=skip_bytes,count_bytes skip="$off" count="$size" conv=sparse status=none
e2fsck -fn "$R" >/dev/null 2>&1 || fail "e2fsck finds errors in the root file system of $src"

step "compatible and version (debugfs)"
dcat() { debugfs -R "cat $1" "$R" 2>/dev/null; }
# (Read whole, then parsed: an awk that exits at its match would end debugfs with SIGPIPE on a
# real image's dpkg status, and pipefail would end this script without a word.)
sysconf="$(dcat /etc/rauc/system.conf)"; dpkg_status="$(dcat /var/lib/dpkg/status)"
compatible="$(printf '%s\n' "$sysconf" | awk -F= '/^\[/ {s=$0} s=="[system]" && $1 ~ /^ *compatible *$/ && !done {gsub(/^ *| *$/, "", $2); print $2; done=1}')"
crier_status="$(printf '%s\n' "$dpkg_status" | awk 'BEGIN {RS=""} /(^|\n)Package: crier\n/ && !done {print; done=1}')"
version="$(printf '%s\n' "$crier_status" | awk -F': ' '$1=="Version" {print $2; exit}')"
arch="$(printf '%s\n' "$crier_status" | awk -F': ' '$1=="Architecture" {print $2; exit}')"
manifest="$base.manifest"
if [ -z "$version" ] && [ -f "$manifest" ]; then
  version="$(awk -F'\t' '$1=="crier" {print $2; exit}' "$manifest")"
  arch="${arch:-$(awk -F'\t' '$1=="crier" {print $3; exit}' "$manifest")}"
fi
[ -n "$version" ] || fail "no crier package in the image's dpkg status nor in $manifest: an image built with --no-crier cannot be an update"
if [ -z "$compatible" ]; then
  case "$arch" in
    arm64) compatible=crier-rpi-arm64 ;;
    amd64) compatible=crier-qemu-amd64 ;;
    *) fail "no /etc/rauc/system.conf in the image and unknown architecture '$arch'" ;;
  esac
fi
[ -z "$COMPATIBLE" ] || compatible="$COMPATIBLE"
if [ -z "$BUILD_ID" ]; then
  built="$( [ -f "$manifest" ] && sed -n 's/^# built: \([0-9TZ:-]*\).*/\1/p' "$manifest" | head -1 || true)"
  if [ -n "$built" ]; then BUILD_ID="$(date -u -d "$built" +%Y%m%d%H%M%S)"
  else BUILD_ID="$(date -u -r "${IMAGE:-$ROOTFS}" +%Y%m%d%H%M%S)"; fi
fi
[[ "$BUILD_ID" =~ ^[0-9A-Za-z.-]+$ ]] || fail "--build-id '$BUILD_ID': use letters, digits, '.' and '-' only"
VERSION="$version+$BUILD_ID"
echo "  compatible $compatible, version $VERSION"
cat > "$WORK/content/manifest.raucm" <<EOF
[update]
compatible=$compatible
version=$VERSION
build=$BUILD_ID
description=Crier root file system (crier $version)

[bundle]
format=verity

[image.rootfs]
filename=rootfs.ext4
EOF

OUT="${OUT:-$(dirname "$base")/crier-${arch:-$compatible}-$VERSION.raucb}"
step "rauc bundle (mksquashfs + verity + CMS signature) -> $OUT"
rm -f "$OUT"
rauc bundle --cert="$CERT" --key="$KEY" "$WORK/content" "$OUT" >"$WORK/rauc.log" 2>&1 ||
  { cat "$WORK/rauc.log" >&2; fail "rauc bundle failed"; }
if [ -n "$KEYRING" ]; then
  step "check against $KEYRING (rauc info)"
  rauc info --keyring="$KEYRING" "$OUT" 2>&1 | grep -E "^(Compatible|Version|Bundle Format)|Verified|Signature" | sed 's/^/  /' ||
    fail "rauc info refuses the new bundle with $KEYRING"
fi
step ""
printf 'bundle %s\n  compatible %s, version %s\n  rootfs.ext4 %s MiB, bundle %s bytes (%s MiB)\n  sha256 %s\n  total %ss\n' \
  "$OUT" "$compatible" "$VERSION" "$((size / 1048576))" "$(stat -c %s "$OUT")" \
  "$(awk -v s="$(stat -c %s "$OUT")" 'BEGIN { printf "%.1f", s / 1048576 }')" \
  "$(sha256sum "$OUT" | cut -d' ' -f1)" "$(elapsed "$T0")"
