#!/usr/bin/env bash
# The test command: installs what is missing, builds, runs every unit and hermetic integration
# test. No sound card, GPIO chip or network beyond loopback is needed.
#   CRIER_TEST_JOBS=N   integration workers side by side (default 2; 1: one at a time)
set -euo pipefail
source "$(dirname "$0")/env.sh"
cd "$ROOT"
bash scripts/setup.sh

# Each tier's wall time, printed as a table at the end (also when a tier fails): the CI budget
# (docs/image.md, "CI budget").
TIERS=() TIER_T=$SECONDS TIER=""
tier() {
  [ -z "$TIER" ] || TIERS+=("$(printf '%-44s %5d s' "$TIER" $((SECONDS - TIER_T)))")
  TIER="$*" TIER_T=$SECONDS
  [ -z "$TIER" ] || echo "== $TIER"
}
report() {
  local rc=$?
  [ -z "$TIER" ] || TIERS+=("$(printf '%-44s %5d s%s' "$TIER" $((SECONDS - TIER_T)) "$( ((rc)) && echo '  (failed)')")")
  echo "test.sh: tier times (load average $(cut -d' ' -f1-3 /proc/loadavg) at the end):"
  printf '  %s\n' "${TIERS[@]}"
  printf '  %-44s %5d s\n' "total" "$SECONDS"
}
trap report EXIT

tier "swift build"
swift build -Xswiftc -warnings-as-errors 2>&1 | tail -n 20
tier "swift test (unit + adapter tests)"
set +e
# --no-parallel: several suites drive real threads against real time (audio pacing, FIFO
# timing, sockets); run one at a time they are deterministic on a 2-core machine.
# A hung test must fail the run, not hold CI until its limit: 30 min is ~15x a loaded run.
timeout -k 30 1800 swift test --no-parallel -Xswiftc -warnings-as-errors 2>&1 | grep -vE "^(Test Case '.*' (started|passed)|\[[0-9]+/[0-9]+\] )"
st=${PIPESTATUS[0]}
set -e
[ "$st" = 0 ] || { echo "swift test failed (exit $st)"; exit 1; }

BIN="$(swift build --show-bin-path)"
JOBS="${CRIER_TEST_JOBS:-2}"
if [ "$JOBS" -gt 1 ]; then
  # Two workers side by side (pytest-xdist; every test has its own temp dir, ALSA config, control
  # socket, state and update paths, and ports chosen by the kernel: Tests/integration/conftest.py),
  # then the tests marked `serial` alone: they measure time on the machine (audio gaps, preemption
  # and fade latency, watchdog cadence, CPU share), which a neighbour's espeak-ng would skew.
  tier "integration, $JOBS side by side (pytest -n $JOBS)"
  CRIER_BIN="$BIN/crier" /usr/bin/python3 -m pytest -q -n "$JOBS" -m "not serial" Tests/integration
  tier "integration, timing-sensitive alone (-m serial)"
  CRIER_BIN="$BIN/crier" /usr/bin/python3 -m pytest -q -m serial Tests/integration
else
  tier "integration, one at a time"
  CRIER_BIN="$BIN/crier" /usr/bin/python3 -m pytest -q Tests/integration
fi

tier "board (pin map, systemd unit, sandbox, .deb)"
CRIER_BIN="$BIN/crier" /usr/bin/python3 -m pytest -q Tests/board

tier "bundle (signed RAUC bundles, tiny image)"
/usr/bin/python3 -m pytest -q Tests/bundle
tier ""
