# Sourced by the long build scripts (build-image.sh, build-bundle.sh): one progress line per
# step with the step's and the total elapsed time, a failure line naming the step, and the host
# packages a script needs. `steps_init NAME` first; NAME prefixes every line.
steps_init() { STEPS_NAME="$1"; T0=$(date +%s.%N) TS=$T0 STEP=""; }
elapsed() { awk -v a="$1" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }'; }
step() {
  [ -n "$STEP" ] && printf '[%s %6ss]   done: %s (%ss)\n' "$STEPS_NAME" "$(elapsed "$T0")" "$STEP" "$(elapsed "$TS")"
  STEP="$*" TS=$(date +%s.%N)
  [ -n "$STEP" ] && printf '[%s %6ss] %s\n' "$STEPS_NAME" "$(elapsed "$T0")" "$STEP"
  return 0
}
fail() { echo "$STEPS_NAME: FAILED in step '$STEP': $*" >&2; exit 1; }
# host_packages PKG...: installs (apt) those not installed yet; needs root only when one is missing.
host_packages() {
  local p missing=()
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  ((${#missing[@]})) || return 0
  [ "$(id -u)" = 0 ] || fail "needs ${missing[*]}: apt-get install ${missing[*]} (as root)"
  echo "  installing ${missing[*]}"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}
