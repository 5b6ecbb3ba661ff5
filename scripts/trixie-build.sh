#!/usr/bin/env bash
# Builds (and tests) crier with Debian 13's Swift 6.0.3 in the cached trixie root
# (scripts/trixie-root.sh), warnings as errors, the same commit the host builds with 6.3.1.
#
#   scripts/trixie-build.sh [--test] [--target amd64|arm64] [--release] [--offline]
#
#   (default)        swift build -Xswiftc -warnings-as-errors, debug, amd64, in the build root.
#   --test           then swift test --no-parallel (every unit suite; see docs/build.md).
#   --target arm64   cross build for aarch64 through the Swift SDK of the arm64 sysroot
#                    (trixie-root.sh --kind sysroot): always -c release --static-swift-stdlib;
#                    prints the binary's path. (--test does not apply.)
#   --release        -c release --static-swift-stdlib (what the .deb packages; amd64).
#   --offline        reuse the newest cached roots without asking the mirror.
#   --src DIR        build the tree in DIR (e.g. a `git archive` of another commit) instead of
#                    this working tree.
#
# The working tree (tracked and untracked files, not what .gitignore names) is copied with its
# mtimes to CACHE/work-<target>-<checkout hash>/src, and the build directory is .../scratch:
# incremental like a host build, never touching the host's .build. Everything is mounted in a
# private mount namespace (unshare), so nothing stays mounted when the script ends.
#
# Last line on stdout: the binary's path (--release / --target arm64).
set -euo pipefail
source "$(dirname "$0")/env.sh"
cd "$ROOT"

TARGET=amd64 TEST=0 RELEASE=0 OFFLINE=() SRC=""
while (($#)); do
  case "$1" in
    --test) TEST=1; shift ;;
    --target) TARGET="$2"; shift 2 ;;
    --release) RELEASE=1; shift ;;
    --offline) OFFLINE=(--offline); shift ;;
    --src) SRC="$(realpath "$2")"; shift 2 ;;
    -h|--help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; exit 0 ;;
    *) echo "trixie-build: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done
case "$TARGET" in amd64) ;; arm64) RELEASE=1; TEST=0 ;; *) echo "trixie-build: --target amd64|arm64" >&2; exit 2 ;; esac

T0=$(date +%s.%N) TS=$T0 STEP=""
elapsed() { awk -v a="$1" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }'; }
step() {
  [ -n "$STEP" ] && printf '[trixie-build %6ss]   done: %s (%ss)\n' "$(elapsed "$T0")" "$STEP" "$(elapsed "$TS")" >&2
  STEP="$*" TS=$(date +%s.%N)
  [ -n "$STEP" ] && printf '[trixie-build %6ss] %s\n' "$(elapsed "$T0")" "$STEP" >&2
  return 0
}
fail() { echo "trixie-build: FAILED in step '$STEP': $*" >&2; exit 1; }

step "build root"
BROOT="$(bash scripts/trixie-root.sh --kind build --print-path "${OFFLINE[@]}")" || fail "trixie-root.sh --kind build"
CACHE="$(dirname "$BROOT")"
SYS=""
if [ "$TARGET" = arm64 ]; then
  step "arm64 sysroot and Swift SDK"
  SYS="$(bash scripts/trixie-root.sh --kind sysroot --print-path "${OFFLINE[@]}")" || fail "trixie-root.sh --kind sysroot"
fi

step "copy the working tree"
# One work dir per checkout (worktrees build side by side), locked against a second run of the
# same checkout.
W="$CACHE/work-$TARGET-$(printf '%s' "$ROOT" | sha256sum | cut -c1-8)"
mkdir -p "$W/scratch"
exec 8>"$W/lock"
flock -n 8 || { echo "trixie-build: waiting for another run on $W" >&2; flock 8; }
rm -rf "$W/src.new"; mkdir -p "$W/src.new"
if [ -n "$SRC" ]; then
  tar -C "$SRC" --exclude=./.build --exclude=./.git -cf - . | tar -xf - -C "$W/src.new"
else
  git ls-files -z --cached --others --exclude-standard | tar --null -T - -cf - | tar -xf - -C "$W/src.new"
fi
rm -rf "$W/src"; mv "$W/src.new" "$W/src"

# in_root CMD: runs CMD (sh -c) in the build root, /src = the copy, /scratch = build dir,
# /sysroot = the arm64 sysroot's cache directory (cross build).
in_root() {
  unshare --mount --propagation private sh -c '
    r=$1 w=$2 s=$3; shift 3
    mount -t proc proc "$r/proc" && mount --rbind /dev "$r/dev" && mount -t tmpfs tmpfs "$r/tmp" || exit 97
    mkdir -p "$r/src" "$r/scratch" "$r/sdk"
    mount --bind "$w/src" "$r/src" && mount --bind "$w/scratch" "$r/scratch" || exit 97
    if [ -n "$s" ]; then mount --rbind "$s" "$r/sdk" || exit 97; fi
    exec chroot "$r" env -i HOME=/tmp PATH=/usr/bin:/bin LANG=C.UTF-8 TERM=dumb "$@"
  ' sh "$BROOT/root" "$W" "$SYS" sh -c "cd /src && $1"
}

SWIFT_FLAGS="--scratch-path /scratch -Xswiftc -warnings-as-errors"
if [ "$TARGET" = arm64 ]; then
  # pkg-config must read the sysroot's aarch64 .pc files and prefix their paths with it.
  ENVS="PKG_CONFIG_PATH=/sdk/sysroot/usr/lib/aarch64-linux-gnu/pkgconfig:/sdk/sysroot/usr/share/pkgconfig PKG_CONFIG_LIBDIR=/sdk/sysroot/usr/lib/aarch64-linux-gnu/pkgconfig:/sdk/sysroot/usr/share/pkgconfig PKG_CONFIG_SYSROOT_DIR=/sdk/sysroot"
  # (lld, from the SDK's toolset.json; full RELRO and immediate binding as for amd64 below)
  SWIFT_FLAGS="$SWIFT_FLAGS -c release --static-swift-stdlib --swift-sdks-path /sdk/sdks --swift-sdk crier-trixie-arm64 -Xlinker -z -Xlinker relro -Xlinker -z -Xlinker now"
else
  ENVS=""
  # Release (what the trixie amd64 .deb packages): linked by lld with full RELRO and immediate
  # binding, as Debian's hardening asks (lintian hardening-no-relro). Debian 13's swift links
  # amd64 with gold by default, and gold gave the static-stdlib binary no PT_GNU_RELRO.
  ((RELEASE)) && SWIFT_FLAGS="$SWIFT_FLAGS -c release --static-swift-stdlib -Xswiftc -use-ld=lld -Xlinker -z -Xlinker relro -Xlinker -z -Xlinker now"
fi

step "swift build ($TARGET, Swift $(in_root 'swift --version 2>/dev/null' | sed -n 's/^Swift version \([^ ]*\).*/\1/p'))"
LOG="$W/build.log"
if ! in_root "env $ENVS swift build $SWIFT_FLAGS" > "$LOG" 2>&1; then
  grep -E 'error:|warning:' "$LOG" | sed 's/^/  /' | sort -u | head -n 60 >&2
  tail -n 5 "$LOG" >&2
  fail "swift build failed; log: $LOG"
fi
tail -n 1 "$LOG" | sed 's/^/  /' >&2

if ((TEST)); then
  step "swift test --no-parallel"
  TLOG="$W/test.log"
  set +e
  # Skipped here, on purpose: stockCmnVoiceWouldHaveReadHanziAsEnglish asserts a property of
  # bookworm's espeak-ng-data 1.51 (its stock "cmn" voice reads Hanzi as English, the reason
  # the default zh voice is cmn-latn-pinyin, docs/speech.md). trixie's 1.52 reads them as
  # Mandarin, so the test "tells us", as it was written to: measured 2026-12-01, reported to
  # the speech owners; it keeps running on the host.
  in_root "swift test $SWIFT_FLAGS --no-parallel --skip stockCmnVoiceWouldHaveReadHanziAsEnglish" > "$TLOG" 2>&1
  st=$?
  set -e
  grep -E "^(Test Suite 'All tests'|	 Executed|.*error:|.*failed|✔ Test run|✘)" "$TLOG" | grep -v "started" | tail -n 25 | sed 's/^/  /' >&2
  [ "$st" = 0 ] || fail "swift test failed (exit $st); log: $TLOG"
fi

BIN=""
if ((RELEASE)); then
  bp="$(in_root "env $ENVS swift build $SWIFT_FLAGS --show-bin-path" 2>/dev/null | tail -n 1)"
  BIN="$W/scratch/${bp#/scratch/}/crier"
  [ -x "$BIN" ] || fail "no binary at $BIN"
  echo "  $(file -b "$BIN" | cut -d, -f1-2), $(du -h "$BIN" | cut -f1)" >&2
fi
step ""
printf '[trixie-build %6ss] ok\n' "$(elapsed "$T0")" >&2
[ -n "$BIN" ] && echo "$BIN"
exit 0
