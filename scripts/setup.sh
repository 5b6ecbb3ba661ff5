#!/usr/bin/env bash
# Installs what building, testing and running Crier needs on Debian 12. Idempotent: a second
# run installs nothing. Swift itself is expected at /opt/swift or on PATH (see README).
set -euo pipefail

PKGS=(
  pkg-config
  libasound2-dev alsa-utils        # ALSA: build + aplay/arecord for manual checks
  libgpiod-dev gpiod               # GPIO v1 API (same as Raspberry Pi OS bookworm)
  libespeak-ng-dev espeak-ng espeak-ng-data
  python3 python3-pytest           # process-level integration tests (Tests/integration)
  python3-pytest-xdist             # ... two at a time (scripts/test.sh: pytest -n 2)
  device-tree-compiler             # dtc + fdtoverlay: the Pi audio overlays (Tests/board/test_pi_overlays.py)
  sox socat                        # WAV inspection, benchmarks' peer
  libssl-dev openssl               # TLS link and HMAC-signed orders; openssl makes test certificates
  libsndfile1-dev libmpg123-dev    # background music: files (WAV/FLAC/OGG/MP3) and MP3 streams
  libcurl4-openssl-dev libsoxr-dev # music: HTTP(S)/Icecast streams; resampling to the output rate
  libmosquitto-dev mosquitto mosquitto-clients   # MQTT transport; a real broker for its tests
  libmicrohttpd-dev                # the local page (docs/setup.md)
  chromium fonts-wqy-microhei      # its browser test and screenshots (zh needs a CJK font)
  libebur128-dev                   # voice packs: EBU R128 loudness of the clips (crier voice build/check)
  fdisk e2fsprogs                  # sfdisk + mkfs.ext4: the bundle tests' tiny disk image (Tests/bundle)
)

missing=()
for p in "${PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}" >&2
  SUDO=""; [ "$(id -u)" = 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

if ! command -v swift >/dev/null 2>&1; then
  if [ -x /opt/swift/usr/bin/swift ]; then
    echo "setup: swift is at /opt/swift/usr/bin; scripts add it to PATH themselves" >&2
  else
    echo "setup: no Swift toolchain found. Install Swift 6.x (https://www.swift.org/install/linux/) to /opt/swift or put it on PATH." >&2
    exit 1
  fi
fi
