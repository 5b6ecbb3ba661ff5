#!/usr/bin/env bash
# Background-music benchmarks (CPU of MP3/WAV/FIFO playback, order latency with and without
# music); prints tables, never fails on a time. See scripts/bench/music.py and docs/benchmarks.md.
#   scripts/bench/music.sh [--quick] [--vm | --vm-only]   (--vm: the CPU rows on hw:Loopback in the
#   QEMU VM too, scripts/bench/vm/music.sh through scripts/vm-test.sh)
set -euo pipefail
source "$(dirname "$0")/../env.sh"
cd "$ROOT"
swift build -c release 2>&1 | tail -n 1
BIN="$(swift build -c release --show-bin-path)/crier"
exec /usr/bin/python3 scripts/bench/music.py --crier "$BIN" "$@"
