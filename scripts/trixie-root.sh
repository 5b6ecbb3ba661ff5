#!/usr/bin/env bash
# Makes and caches the Debian 13 "trixie" roots that build crier with Debian's Swift 6.0.3.
#
#   scripts/trixie-root.sh [--kind build|sysroot] [--mirror URL] [--offline] [--print-path]
#
#   --kind build    (default) amd64 build root: swiftlang 6.0.3, the -dev packages crier links
#                   (libasound2, libgpiod 2.2.1, libespeak-ng, libssl), pkg-config, lld, what the
#                   unit tests run (espeak-ng-data, openssl, python3) and what packaging needs
#                   (dpkg-dev, lintian, binutils-aarch64-linux-gnu, file).
#   --kind sysroot  arm64 sysroot for the cross build: mmdebstrap --variant=extract of libc6-dev,
#                   libgcc-14-dev, libstdc++-14-dev and the -dev packages (merged /usr), the
#                   aarch64 Swift resources from swiftlang:arm64 (dpkg-deb -x), and a Swift SDK
#                   bundle (swift-sdk.json schema 4.0 + toolset.json) beside it.
#   --offline       do not ask the mirror: reuse the newest cached root of that kind.
#   --print-path    print only the root's path on stdout (progress goes to stderr anyway).
#   --key           resolve, print the cache key and whether it is cached, build nothing.
#
# Cache: /var/cache/crier-trixie (or REPO/.cache/crier-trixie when that is not writable;
# CRIER_TRIXIE_CACHE overrides). Each root lives in <kind>-<key>/ where key is the sha256 of
# the package versions apt resolves for it from the mirror (the whole dependency closure, plus
# the Essential set for the build root) and of this script's recipe; the resolved list is kept
# as <kind>-<key>/manifest. A root is rebuilt only when that list (or the recipe) changes;
# older roots of the same kind are removed once a new one is complete.
# trixie comes from the same mirror through an apt configuration of this script's own (and
# mmdebstrap's own source line); the host's /etc/apt is never touched. Needs root (mmdebstrap
# --mode=root). Installs its own host packages (mmdebstrap, ...) on Debian 12.
set -euo pipefail
source "$(dirname "$0")/env.sh"

KIND=build MIRROR="${CRIER_TRIXIE_MIRROR:-http://deb.debian.org/debian}" OFFLINE=0 PRINT=0 KEYONLY=0
while (($#)); do
  case "$1" in
    --kind) KIND="$2"; shift 2 ;;
    --mirror) MIRROR="$2"; shift 2 ;;
    --offline) OFFLINE=1; shift ;;
    --print-path) PRINT=1; shift ;;
    --key) KEYONLY=1; shift ;;
    -h|--help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; exit 0 ;;
    *) echo "trixie-root: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done
case "$KIND" in build|sysroot) ;; *) echo "trixie-root: --kind build|sysroot" >&2; exit 2 ;; esac
[ "$(id -u)" = 0 ] || { echo "trixie-root: must run as root (mmdebstrap --mode=root)" >&2; exit 1; }

# ---- progress: one line per step with the step's and the total time (stderr) ---------------
T0=$(date +%s.%N) TS=$T0 STEP=""
elapsed() { awk -v a="$1" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }'; }
step() {
  [ -n "$STEP" ] && printf '[trixie-root %6ss]   done: %s (%ss)\n' "$(elapsed "$T0")" "$STEP" "$(elapsed "$TS")" >&2
  STEP="$*" TS=$(date +%s.%N)
  [ -n "$STEP" ] && printf '[trixie-root %6ss] %s\n' "$(elapsed "$T0")" "$STEP" >&2
  return 0
}
fail() { echo "trixie-root: FAILED in step '$STEP': $*" >&2; exit 1; }

CACHE="${CRIER_TRIXIE_CACHE:-/var/cache/crier-trixie}"
if ! mkdir -p "$CACHE" 2>/dev/null || ! [ -w "$CACHE" ]; then CACHE="$ROOT/.cache/crier-trixie"; mkdir -p "$CACHE"; fi
# One run at a time per cache: the roots share the private apt state.
exec 9>"$CACHE/.lock"
flock -n 9 || { echo "trixie-root: waiting for another trixie-root.sh on $CACHE" >&2; flock 9; }

BUILD_PKGS=(
  swiftlang                                   # 6.0.3: swift, swiftc, clang, lld, the Linux SDK (amd64)
  libc6-dev libstdc++-14-dev                  # swiftlang needs gcc only; gcc merely recommends libc6-dev
  libasound2-dev libgpiod-dev libespeak-ng-dev libssl-dev pkg-config
  lld                                         # the cross link (issue 15: the default linker fails)
  espeak-ng-data openssl python3 ca-certificates   # unit tests: voices, TLS test PKI, python peer
  dpkg-dev binutils file lintian binutils-aarch64-linux-gnu   # .deb: shlibdeps, strip, lint
  # The adapters of issues 17-18 (music decoders, HTTP streams, resampler, MQTT), and what their
  # unit tests start (a broker, sox for generated test music):
  libsndfile1-dev libmpg123-dev libcurl4-openssl-dev libsoxr-dev libmosquitto-dev libebur128-dev
  libmicrohttpd-dev                           # the local page (issue 34)
  mosquitto sox
)
RECIPE=1   # bump when the recipe below changes what a root holds beyond the package versions
SYSROOT_PKGS=(libc6-dev libgcc-14-dev libstdc++-14-dev
              libasound2-dev libgpiod-dev libespeak-ng-dev libssl-dev
              libsndfile1-dev libmpg123-dev libcurl4-openssl-dev libsoxr-dev libmosquitto-dev libmicrohttpd-dev libebur128-dev)
# The arm64 libraries crier links, unpacked with their control files (symbols, shlibs) into
# shlibs/<pkg>/: what dpkg-shlibdeps reads for the cross-built binary (build-deb.sh -S).
SYSROOT_RECIPE=2
SYSROOT_RUNTIME=(libc6 libgcc-s1 libstdc++6 libasound2t64 libgpiod3 libespeak-ng1 libssl3t64
                 libsndfile1 libmpg123-0t64 libcurl4t64 libsoxr0 libmosquitto1 libmicrohttpd12t64 libebur128-1)

# ---- 1. host packages -----------------------------------------------------------------------
step "host packages"
HOST_PKGS=(mmdebstrap debian-archive-keyring ca-certificates)
missing=()
for p in "${HOST_PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "  installing ${missing[*]}" >&2
  APT=(apt-get -o DPkg::Lock::Timeout=600)
  DEBIAN_FRONTEND=noninteractive "${APT[@]}" install -y -qq --no-install-recommends "${missing[@]}" >/dev/null ||
    { "${APT[@]}" update -qq && DEBIAN_FRONTEND=noninteractive "${APT[@]}" install -y -qq --no-install-recommends "${missing[@]}" >/dev/null; }
fi
KEYRING=/usr/share/keyrings/debian-archive-keyring.gpg

# ---- 2. resolve versions (private apt: own sources, lists, empty dpkg status) ----------------
# The mirror's Release files may be older than their Valid-Until on a frozen mirror; the
# signature is still checked.
APTDIR="$CACHE/apt"
apt_setup() {
  mkdir -p "$APTDIR"/{etc/apt.conf.d,etc/preferences.d,etc/sources.list.d,lists/partial,archives/partial,cache,dpkg}
  : > "$APTDIR/dpkg/status"
  echo "deb [signed-by=$KEYRING] $MIRROR trixie main" > "$APTDIR/etc/sources.list"
  cat > "$APTDIR/apt.conf" <<EOF
Dir::Etc "$APTDIR/etc/";
Dir::Etc::SourceList "$APTDIR/etc/sources.list";
Dir::Etc::SourceParts "$APTDIR/etc/sources.list.d/";
Dir::Etc::Parts "$APTDIR/etc/apt.conf.d/";
Dir::Etc::Preferences "$APTDIR/etc/preferences";
Dir::Etc::PreferencesParts "$APTDIR/etc/preferences.d/";
Dir::State::Lists "$APTDIR/lists/";
Dir::State::status "$APTDIR/dpkg/status";
Dir::Cache "$APTDIR/cache/";
Dir::Cache::Archives "$APTDIR/archives/";
APT::Architecture "amd64";
APT::Architectures { "amd64"; "arm64"; };
APT::Install-Recommends "false";
Acquire::Check-Valid-Until "false";
Acquire::Languages "none";
Acquire::IndexTargets::deb::DEP-11 { DefaultEnabled "false"; };
Acquire::IndexTargets::deb::Contents-deb { DefaultEnabled "false"; };
EOF
}
export -n APT_CONFIG
papt() { APT_CONFIG="$APTDIR/apt.conf" "$@"; }

newest_cached() { ls -dt "$CACHE/$KIND"-*/ 2>/dev/null | while read -r d; do [ -f "$d/complete" ] && { echo "${d%/}"; break; }; done; }

if ((OFFLINE)); then
  step "offline: newest cached $KIND root"
  DIR="$(newest_cached)"
  [ -n "$DIR" ] || fail "no complete $KIND root in $CACHE; run once without --offline"
else
  step "resolve trixie package versions ($MIRROR, own apt configuration)"
  apt_setup
  papt apt-get update -qq 2>&1 | grep -v '^W: ' >&2 || true
  [ -n "$(ls "$APTDIR"/lists/*_trixie_main_binary-amd64_Packages* 2>/dev/null)" ] || fail "apt update of trixie from $MIRROR failed"
  # Versions cannot change while the signed Release file stays the same: then the key of the
  # last resolution is reused (apt's solver takes ~20 s on a busy 2-core machine).
  recipe="$(echo "$RECIPE ${BUILD_PKGS[*]} / ${SYSROOT_PKGS[*]}$([ "$KIND" = build ] || echo " / $SYSROOT_RECIPE ${SYSROOT_RUNTIME[*]}")" | sha256sum | cut -c1-16)"
  release="$(cat "$APTDIR"/lists/*_dists_trixie_InRelease | sha256sum | cut -c1-16)"
  memo="$CACHE/$KIND.key"
  key="" resolved=""
  if read -r m_release m_recipe m_key < "$memo" 2>/dev/null && [ "$m_release $m_recipe" = "$release $recipe" ] &&
     [ -f "$CACHE/$KIND-$m_key/complete" ]; then
    key="$m_key"
    echo "  trixie Release unchanged since the last resolution: key $key" >&2
  else
    if [ "$KIND" = build ]; then
      # What mmdebstrap installs: the Essential set (minbase: +Priority required, apt) and the closure of our list.
      mapfile -t base < <(papt apt-cache dumpavail | awk -v RS= '/\nArchitecture: (amd64|all)\n/ && (/\nEssential: yes\n/ || /\nPriority: required\n/) { match($0, /^Package: [^\n]+/); print substr($0, 10, RLENGTH - 9) }' | sort -u)
      want=("${base[@]}" apt "${BUILD_PKGS[@]}")
    else
      want=("${SYSROOT_PKGS[@]/%/:arm64}")
    fi
    resolved="$(papt apt-get install -s -qq "${want[@]}" 2>&1 | sed -n 's/^Inst \([^ ]*\) (\([^ ]*\) .*\[\([^]]*\)\].*/\1\t\2\t\3/p; s/^Inst \([^ ]*\) (\([^ ]*\) [^[]*$/\1\t\2/p' | LC_ALL=C sort)" ||
      fail "apt cannot resolve ${want[*]}"
    [ -n "$resolved" ] || { papt apt-get install -s "${want[@]}" >&2 || true; fail "apt resolved nothing for ${want[*]}"; }
    if [ "$KIND" = sysroot ]; then
      swift_arm64="$(papt apt-cache policy swiftlang:arm64 | sed -n 's/^ *Candidate: //p')"
      [ -n "$swift_arm64" ] && [ "$swift_arm64" != "(none)" ] || fail "no swiftlang:arm64 in trixie"
      resolved="$resolved"$'\n'"swiftlang:arm64 (resources only)	$swift_arm64"
    fi
    key="$( { echo "kind $KIND recipe $recipe"; echo "$resolved"; } | sha256sum | cut -c1-16)"
    echo "$release $recipe $key" > "$memo"
  fi
  DIR="$CACHE/$KIND-$key"
  [ -n "$resolved" ] || resolved="$(cat "$DIR/manifest")"
  echo "  $(wc -l <<<"$resolved") packages; key $key; swiftlang $(awk -F'\t' '$1 ~ /^swiftlang/ { print $2; exit }' <<<"$resolved")$( [ "$KIND" = build ] || echo " (arm64 resources)"), libgpiod $(awk -F'\t' '$1 ~ /^libgpiod-dev/ { print $2; exit }' <<<"$resolved")" >&2
fi

if ((KEYONLY)); then
  echo "$key $( [ -f "$DIR/complete" ] && echo cached || echo missing)"; exit 0
fi

# The Swift SDK bundle beside the sysroot: a few small files, rewritten on every run (not part of
# the cache key), so a fix here reaches existing caches. Debian's swift calls the host
# x86_64-pc-linux-gnu, swift.org's x86_64-unknown-linux-gnu: both are listed.
write_sdk_bundle() {
  B="$1/sdks/crier-trixie-arm64.artifactbundle"
  mkdir -p "$B/sdk"
  # The bundle names the sysroot by a relative link so the cache directory can move.
  ln -sfn ../../../sysroot "$B/sdk/sysroot"
  cat > "$B/info.json" <<'EOF'
{
"schemaVersion": "1.0",
"artifacts": {
  "crier-trixie-arm64": {
    "type": "swiftSDK",
    "version": "6.0.3",
    "variants": [ { "path": "sdk", "supportedTriples": ["x86_64-unknown-linux-gnu", "x86_64-pc-linux-gnu"] } ]
  }
}
}
EOF
  cat > "$B/sdk/swift-sdk.json" <<'EOF'
{
"schemaVersion": "4.0",
"targetTriples": {
  "aarch64-unknown-linux-gnu": {
    "sdkRootPath": "sysroot",
    "swiftResourcesPath": "sysroot/usr/libexec/swift/lib/swift",
    "swiftStaticResourcesPath": "sysroot/usr/libexec/swift/lib/swift_static",
    "toolsetPaths": ["toolset.json"]
  }
}
}
EOF
  # lld: the default (gold/bfd for x86_64) cannot link aarch64. No toolchain rpath: else
  # RUNPATH points into the sysroot on the build machine.
  cat > "$B/sdk/toolset.json" <<'EOF'
{
"schemaVersion": "1.0",
"swiftCompiler": { "extraCLIOptions": ["-use-ld=lld", "-no-toolchain-stdlib-rpath"] }
}
EOF
}

# ---- 3. the root ------------------------------------------------------------------------------
if [ -f "$DIR/complete" ]; then
  step "cached: $DIR"
else
  [ -n "${resolved:-}" ] || fail "internal: nothing resolved"
  LOG="$DIR.tmp/mmdebstrap.log"
  # A finished mmdebstrap run whose later steps failed is kept and resumed (same key).
  resume=0
  if tail -n 1 "$LOG" 2>/dev/null | grep -q '^I: success'; then resume=1; else rm -rf "$DIR" "$DIR.tmp"; mkdir -p "$DIR.tmp"; fi
  src=("deb [signed-by=$KEYRING] $MIRROR trixie main")
  common=(--mode=root --format=directory --keyring="$KEYRING"
          --aptopt='Acquire::Check-Valid-Until "false"' --aptopt='APT::Install-Recommends "false"'
          --aptopt='Acquire::Languages "none"'
          --hook-dir=/usr/share/mmdebstrap/hooks/merged-usr)
  run_mm() {
    mmdebstrap "$@" >"$LOG" 2>&1 &
    local mm=$! shown=0 n
    while kill -0 $mm 2>/dev/null; do
      sleep 3; n=$(wc -l < "$LOG")
      sed -n "$((shown + 1)),${n}p" "$LOG" | grep -E '^(I: (running|install|download|extract|clean|success)|E:)' | sed 's/^/  /' >&2 || true
      shown=$n
    done
    wait $mm || { tail -n 30 "$LOG" >&2; fail "mmdebstrap failed (log: $LOG)"; }
  }
  if [ "$KIND" = build ]; then
    step "mmdebstrap trixie amd64 build root (swiftlang ~400 MB; log: $LOG)"
    pk="$(IFS=,; echo "${BUILD_PKGS[*]}")"
    ((resume)) && echo "  resuming: mmdebstrap already succeeded for this key" >&2 ||
    run_mm "${common[@]}" --variant=minbase --arch=amd64 --include="$pk" \
      --dpkgopt='path-exclude=/usr/share/man/*' --dpkgopt='path-exclude=/usr/share/locale/*' \
      --dpkgopt='path-exclude=/usr/share/doc/*' --dpkgopt='path-include=/usr/share/doc/*/copyright' \
      trixie "$DIR.tmp/root" "${src[@]}"
    step "check the build root"
    # (swift finds its runtime through $ORIGIN, which needs /proc: a private mount namespace.)
    unshare --mount --propagation private sh -c 'mount -t proc proc "$1/proc" && chroot "$1" swift --version' sh "$DIR.tmp/root" 2>&1 | sed -n '1s/^/  /p' >&2
    chroot "$DIR.tmp/root" pkg-config --modversion libgpiod alsa espeak-ng openssl | paste -sd' ' | sed 's/^/  libgpiod alsa espeak-ng openssl: /' >&2
  else
    step "mmdebstrap --variant=extract trixie arm64 sysroot (log: $LOG)"
    pk="$(IFS=,; echo "${SYSROOT_PKGS[*]}")"
    ((resume)) && echo "  resuming: mmdebstrap already succeeded for this key" >&2 ||
    run_mm "${common[@]}" --variant=extract --arch=arm64 --include="$pk" \
      trixie "$DIR.tmp/sysroot" "${src[@]}"
    S="$DIR.tmp/sysroot"
    # extract runs no maintainer scripts: the merged-/usr links must exist for the linker's
    # /lib/ld-linux-aarch64.so.1 and for libc.so's linker script.
    for d in bin sbin lib; do [ -L "$S/$d" ] || { [ -e "$S/$d" ] && fail "$S/$d is not a symlink (merged /usr)"; ln -s "usr/$d" "$S/$d"; }; done
    rm -rf "$S/var/cache/apt/archives/"*.deb "$S/var/lib/apt/lists/"* 2>/dev/null || true

    step "aarch64 Swift resources from swiftlang:arm64 (dpkg-deb -x)"
    ( cd "$APTDIR/archives" && papt apt-get download -qq swiftlang:arm64 ) 2>&1 | grep -v '^W: Download is performed unsandboxed' >&2 || true
    deb="$(ls -t "$APTDIR"/archives/swiftlang_*_arm64.deb | head -n 1)"
    x="$DIR.tmp/swiftlang-arm64"; mkdir -p "$x"
    dpkg-deb --fsys-tarfile "$deb" | tar -x -C "$x" ./usr/libexec/swift/lib/swift ./usr/libexec/swift/lib/swift_static ./usr/libexec/swift/lib/clang 2>/dev/null ||
      dpkg-deb -x "$deb" "$x"
    mkdir -p "$S/usr/libexec/swift/lib"
    for d in swift swift_static clang; do
      [ -d "$x/usr/libexec/swift/lib/$d" ] || fail "swiftlang:arm64 has no usr/libexec/swift/lib/$d"
      rm -rf "$S/usr/libexec/swift/lib/$d"; mv "$x/usr/libexec/swift/lib/$d" "$S/usr/libexec/swift/lib/$d"
    done
    rm -rf "$x" "$deb"

    step "arm64 runtime packages for dpkg-shlibdeps (shlibs/)"
    for p in "${SYSROOT_RUNTIME[@]}"; do
      v="$(awk -F'\t' -v p="$p" '$1 == p || $1 == p ":arm64" { print $2; exit }' <<<"$resolved")"
      [ -n "$v" ] || fail "$p:arm64 is not in the sysroot's closure"
      ( cd "$APTDIR/archives" && papt apt-get download -qq "$p:arm64=$v" ) 2>&1 | grep -v '^W: Download is performed unsandboxed' >&2 || true
      deb="$(ls "$APTDIR/archives/${p}_"*_arm64.deb 2>/dev/null | head -n 1)"
      [ -f "$deb" ] || fail "apt-get download $p:arm64=$v"
      mkdir -p "$DIR.tmp/shlibs/$p"
      dpkg-deb -x "$deb" "$DIR.tmp/shlibs/$p"; dpkg-deb -e "$deb" "$DIR.tmp/shlibs/$p/DEBIAN"
      rm -f "$deb"
    done

  fi
  echo "$resolved" > "$DIR.tmp/manifest"
  du -sh "$DIR.tmp" | awk '{ print "  size " $1 }' >&2
  mv "$DIR.tmp" "$DIR"
  date -u +%Y-%m-%dT%H:%M:%SZ > "$DIR/complete"
  # Older roots of this kind are superseded.
  for old in "$CACHE/$KIND"-*/; do old="${old%/}"; [ "$old" = "$DIR" ] || [ "$old" = "$DIR.tmp" ] || { echo "  removing superseded $old" >&2; rm -rf "$old"; }; done
fi
if [ "$KIND" = sysroot ]; then
  step "Swift SDK bundle $DIR/sdks/crier-trixie-arm64.artifactbundle"
  write_sdk_bundle "$DIR"
fi
step ""
printf '[trixie-root %6ss] %s root: %s\n' "$(elapsed "$T0")" "$KIND" "$DIR" >&2
((PRINT)) && echo "$DIR"
exit 0
