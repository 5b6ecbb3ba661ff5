#!/usr/bin/env bash
# The demo: installs what is missing, builds, and runs the reference order server on loopback
# plus the Crier runtime. An order every few seconds is spoken on the `default` ALSA device, or
# written to crier-demo.wav when there is no sound card. Extra arguments go to `crier-sim demo`
# (e.g. --seconds 30, --every 2-5). Ctrl-C stops it.
set -euo pipefail
source "$(dirname "$0")/env.sh"
cd "$ROOT"
bash scripts/setup.sh
# crier-sim: the demo, the order simulator and the fleet bench (not in crier, the box's binary).
swift build -c release --product crier-sim 2>&1 | tail -n 3
exec "$(swift build -c release --show-bin-path)/crier-sim" demo "$@"
