#!/usr/bin/env bash
# Benchmarks Crier against the shell script a shop would write instead (socat + espeak-ng | aplay)
# and writes docs/benchmarks.md. A benchmark, not a test: it prints, and exits non-zero only if
# something broke (never because of a time).
#
#   scripts/bench.sh [--quick] [--vm auto|on|off] [--firstsound-n N] [--only firstsound,firstsoundload,textpath,latency,idle,start,reconnect,peermem,burst,static,buttons,alerts,vm,vmfirstsound,vmloaded]
#   scripts/bench.sh --only mqtt      the MQTT fleet table (scripts/bench/mqtt_fleet.py), printed only
#   scripts/bench.sh --quick --only firstsoundpack --voice-pack-zh PACK --out /tmp/b.md
#                                     first sound, RSS and pack load with and without a voice pack (docs/voice.md)
#
# Full run ≈ 19 min without the alerts step (100 latency orders each, 60 s idle, the VM idle and
# first-sound scenarios through scripts/vm-test.sh, ~4 + ~8 min); the alerts step (10 000 paced
# alerts, ~26 min) runs beside the others (`--skip alerts` leaves it out); --quick ≈ 3 min (20 orders, 10 s idle, 100 alerts, no VM, no
# static build). Builds are not counted in those times.
# See docs/benchmarks.md for what each number means.
set -euo pipefail
source "$(dirname "$0")/env.sh"
cd "$ROOT"

need=()
# stress-ng and sox: the load of the loaded first-sound step (docs/benchmarks.md)
for pkg in socat alsa-utils espeak-ng espeak-ng-data procps time stress-ng sox; do
    dpkg-query -W -f '${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || need+=("$pkg")
done
if [ ${#need[@]} -gt 0 ]; then
    echo "bench: installing ${need[*]}"
    if [ "$(id -u)" = 0 ]; then SUDO=""; else SUDO="sudo"; fi
    $SUDO apt-get install -y --no-install-recommends "${need[@]}" >/dev/null
fi

echo "bench: building the release binary"
swift build -c release 2>&1 | tail -n 1
BIN="$(swift build -c release --show-bin-path)/crier"
TEXTPATH=(--textpath-bench "$(swift build -c release --show-bin-path)/crier-textpath-bench")
# The MQTT fleet (a broker and hundreds of links) is its own table: scripts/bench/mqtt_fleet.py.
case " $* " in
  *" --only mqtt "*|*" --only mqtt") exec /usr/bin/python3 scripts/bench/mqtt_fleet.py --crier "$BIN" ;;
esac
STATIC=()
case " $* " in
  *" --quick "*) ;;
  *)  # memory as shipped: the .deb's binary links the Swift runtime statically
      echo "bench: building the static release binary (as scripts/build-deb.sh does) in .build/static"
      swift build -c release --static-swift-stdlib --scratch-path .build/static 2>&1 | tail -n 1
      STATIC=(--crier-static "$(swift build -c release --static-swift-stdlib --scratch-path .build/static --show-bin-path)/crier")
      ;;
esac
exec /usr/bin/python3 scripts/bench/bench.py --crier "$BIN" "${TEXTPATH[@]}" "${STATIC[@]}" "$@"
