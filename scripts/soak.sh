#!/usr/bin/env bash
# A year of a busy shop in an hour (issue 35 item 3; docs/benchmarks.md, "Soak"): ~110 000 orders
# with coalescing bursts, link drops, server restarts, reloads, SIGKILLs, device losses and music,
# against the real daemon, sampled every minute; the chaos checker's invariants at the end.
# A benchmark: it prints tables and fails only on a broken invariant or unbounded growth, never on
# a time. Audio runs CRIER_TEST_AUDIO_SPEED times faster than real time (test-only, null/file PCM).
#   scripts/soak.sh                              the year: 110 000 orders over 60 min (release build)
#   scripts/soak.sh --orders 36000 --minutes 20  a third of it
#   scripts/soak.sh --mqtt                       through mosquitto instead of the v1 order server
#   scripts/soak.sh --ci                         CI: 3 000 orders over 2 min, debug build (~3-4 min)
# Other options: --seed N, --speed X, --sample-seconds S, --idle-seconds S, --paced-orders N,
# --json FILE, --keep; see Tests/chaos/soak.py --help.
set -euo pipefail
source "$(dirname "$0")/env.sh"
cd "$ROOT"
# The build flags of the steps before it, so nothing is rebuilt: CI's debug build as chaos.sh
# and test.sh make it (warnings as errors), the release build as bench.sh makes it.
case " $* " in
  *" --ci "*) BUILD=(-c debug -Xswiftc -warnings-as-errors) ;;
  *) BUILD=(-c release) ;;
esac
if [ -z "${CRIER_BIN:-}" ]; then
  swift build "${BUILD[@]}" --product crier 2>&1 | tail -n 3
  CRIER_BIN="$(swift build "${BUILD[@]}" --show-bin-path)/crier"
fi
CRIER_BIN="$CRIER_BIN" exec /usr/bin/python3 Tests/chaos/soak.py "$@"
