#!/usr/bin/env bash
# Seeded chaos run (docs/chaos.md): a scripted order server, the real daemon signalled,
# restarted and starved of its sound card at random, then an invariant checker over the
# server's record, the daemon's log and the decoded capture.
#   scripts/chaos.sh                  CI: seeds from the clock for ~3.5 minutes
#   scripts/chaos.sh --minutes 30     longer
#   scripts/chaos.sh --seed 1234      replay the seed a failure printed (repeatable)
# Other options: --scenario-seconds S, --keep, --out DIR, --check RECORD.json (re-check a
# record without running anything); see Tests/chaos/chaos.py --help.
# The last line is "N passed, N failed"; exit status 1 when a seed failed.
set -euo pipefail
source "$(dirname "$0")/env.sh"
cd "$ROOT"
swift build --product crier -Xswiftc -warnings-as-errors 2>&1 | tail -n 3
# The checker first: a checker that misses a broken record makes the run below meaningless.
/usr/bin/python3 -m pytest -q Tests/chaos/test_checker.py
CRIER_BIN="$(swift build --show-bin-path)/crier" exec /usr/bin/python3 Tests/chaos/chaos.py "$@"
