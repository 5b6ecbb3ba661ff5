#!/usr/bin/env bash
# Installs an arm64 crier .deb into a fresh Debian 13 arm64 root and runs it there under
# qemu-aarch64: the proof that the cross-built binary and its Depends are complete.
#
#   scripts/trixie-run-arm64.sh out/crier_<version>_arm64.deb
#
# The root is `mmdebstrap --variant=extract --architectures=arm64 trixie` of exactly what the
# package's Depends name (and theirs), nothing else, with the package unpacked into it: a
# library missing from Depends makes the binary fail to start here. Extracted, not
# configured (no maintainer scripts under emulation: ~30 s instead of minutes). The binary runs
# through binfmt_misc (qemu-user-static, fix-binary) in a chroot of that root:
#   crier --version; crier say --print (text pipeline); crier say --output (espeak-ng synthesis,
#   the WAV's size checked). Needs root. Installs qemu-user-static etc. on the host if missing.
set -euo pipefail
source "$(dirname "$0")/env.sh"
DEB="${1:?usage: trixie-run-arm64.sh CRIER_ARM64_DEB}"
DEB="$(realpath "$DEB")"
MIRROR="${CRIER_TRIXIE_MIRROR:-http://deb.debian.org/debian}"
[ "$(dpkg-deb -f "$DEB" Architecture)" = arm64 ] || { echo "trixie-run-arm64: $DEB is not arm64" >&2; exit 1; }
t0=$(date +%s)

need=()
for p in mmdebstrap qemu-user-static binfmt-support arch-test; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || need+=("$p")
done
if ((${#need[@]})); then
  echo "trixie-run-arm64: installing ${need[*]}" >&2
  DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi
mountpoint -q /proc/sys/fs/binfmt_misc || mount -t binfmt_misc binfmt_misc /proc/sys/fs/binfmt_misc
update-binfmts --enable qemu-aarch64 2>/dev/null || true
arch-test arm64 >/dev/null || { echo "trixie-run-arm64: arm64 binaries do not run through qemu-user (arch-test arm64)" >&2; exit 1; }

R="$(mktemp -d)"
trap 'rm -rf "$R"' EXIT
# The root holds what the package's Depends name (first alternative, versions left to apt) and
# their dependencies; the package itself is unpacked into it with dpkg-deb.
deps="$(dpkg-deb -f "$DEB" Depends | tr ',' '\n' | sed 's/|.*//; s/(.*)//; s/[[:space:]]//g' | sed '/^$/d' | paste -sd,)"
echo "[trixie-run-arm64] mmdebstrap --variant=extract arm64 trixie with $deps" >&2
mmdebstrap --mode=root --variant=extract --architectures=arm64 --format=directory \
  --aptopt='Acquire::Check-Valid-Until "false"' --aptopt='APT::Install-Recommends "false"' \
  --hook-dir=/usr/share/mmdebstrap/hooks/merged-usr \
  --include="$deps" trixie "$R/root" "deb $MIRROR trixie main" > "$R/mm.log" 2>&1 ||
  { tail -n 30 "$R/mm.log" >&2; echo "trixie-run-arm64: mmdebstrap failed" >&2; exit 1; }
dpkg-deb -x "$DEB" "$R/root"
mkdir -p "$R/root/proc" "$R/root/tmp"
r="$R/root"
[ -x "$r/usr/bin/crier" ] || { echo "trixie-run-arm64: the root has no /usr/bin/crier" >&2; exit 1; }
echo "  $(du -sh "$r" | cut -f1) root" >&2

# (The root has no shell or coreutils: crier runs directly; its files are read from outside.)
run() { unshare --mount --propagation private sh -c 'mount -t proc proc "$1/proc" && r=$1 && shift && exec chroot "$r" "$@"' sh "$r" "$@"; }
fails=0
check() {   # check NAME EXPECTED-REGEX CMD...
  local name="$1" want="$2"; shift 2
  local out
  if out="$(run "$@" 2>&1)" && grep -qE "$want" <<<"$out"; then
    echo "  ok   $name: $(head -n 1 <<<"$out" | cut -c1-100)" >&2
  else
    echo "  FAIL $name: $(head -n 5 <<<"$out")" >&2; fails=$((fails + 1))
  fi
}
check "crier --version" '^crier [0-9]' /usr/bin/crier --version
check "crier say --print (zh)" "^新客户来了，四十二号$" /usr/bin/crier say --lang zh --print "新客户来了，42号"
bytes=0
run /usr/bin/crier say --lang en --output /tmp/s.wav "number 42" >/dev/null 2>&1 && bytes="$(stat -c %s "$r/tmp/s.wav")"
if [ "${bytes:-0}" -gt 20000 ]; then echo "  ok   speech WAV: $bytes bytes" >&2; else echo "  FAIL speech WAV: ${bytes:-0} bytes" >&2; fails=$((fails + 1)); fi
echo "[trixie-run-arm64] $((fails == 0 ? 1 : 0)) ($fails failed) in $(( $(date +%s) - t0 )) s" | sed 's/\] 1 /] ok /; s/\] 0 /] FAILED /' >&2
((fails == 0))
