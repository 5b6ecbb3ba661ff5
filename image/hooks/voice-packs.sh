#!/bin/sh
# Puts voice packs into the image's read-only root (scripts/build-image.sh --voice-pack LANG=DIR;
# docs/voice.md, "Where packs live"): each DIR is copied to ROOT/usr/share/crier/voice/LANG,
# where crier's voice.pack.LANG = auto finds it when the boot partition has no
# /boot/firmware/voice/LANG. Every signed update bundle made from the image carries it: it is
# replaced with the rest of the root, A/B, never half-installed.
#
#   image/hooks/voice-packs.sh ROOT LANG=DIR [LANG=DIR]
#   image/hooks/voice-packs.sh --check-args LANG=DIR ...   (only the arguments; nothing written)
#
# Each pack is checked with `crier voice check` against the image's crier.conf: the build fails if
# the pack cannot serve it alone. The check runs $CRIER_VOICE_CHECK_BIN on the host when set
# (tests), else the root's own /usr/bin/crier in a chroot (qemu-user for arm64); without crier in
# the root (--no-crier) the pack is copied unchecked. Only the pack's regular files are copied
# (no links, no sub-folders, no dot files), mode 0644, owned by root.
set -eu
CHECK_ONLY=0
if [ "${1:-}" = --check-args ]; then CHECK_ONLY=1; shift; else root="${1:?usage: voice-packs.sh ROOT LANG=DIR ...}"; shift; fi
[ $# -gt 0 ] || { echo "voice-packs: no LANG=DIR given" >&2; exit 2; }
seen=""
for arg in "$@"; do
  lang="${arg%%=*}" dir="${arg#*=}"
  case "$arg" in *=*) ;; *) echo "voice-packs: --voice-pack $arg: expected LANG=DIR, e.g. zh=packs/voice-zh" >&2; exit 2 ;; esac
  case "$lang" in zh|en) ;; *) echo "voice-packs: --voice-pack $arg: the language is zh or en, not '$lang'" >&2; exit 2 ;; esac
  case " $seen " in *" $lang "*) echo "voice-packs: --voice-pack $lang given twice; one pack per language" >&2; exit 2 ;; esac
  seen="$seen $lang"
  [ -d "$dir" ] || { echo "voice-packs: --voice-pack $arg: $dir is not a folder (a pack is a folder with a manifest; docs/voice.md)" >&2; exit 1; }
  [ -f "$dir/manifest" ] || { echo "voice-packs: --voice-pack $arg: no manifest in $dir (docs/voice.md, \"The pack format\")" >&2; exit 1; }
  grep -Eq "^[[:space:]]*language[[:space:]]*=[[:space:]]*$lang[[:space:]]*(#.*)?\$" "$dir/manifest" || {
    echo "voice-packs: --voice-pack $arg: the manifest of $dir does not say language = $lang" >&2; exit 1; }
done
[ "$CHECK_ONLY" = 1 ] && exit 0

for arg in "$@"; do
  lang="${arg%%=*}" dir="${arg#*=}"
  dest="$root/usr/share/crier/voice/$lang"
  rm -rf "$dest"
  mkdir -p "$dest"
  chmod 0755 "$root/usr/share/crier/voice" "$dest"
  n=0
  for f in "$dir"/*; do
    [ -f "$f" ] && [ ! -L "$f" ] || continue
    install -m 0644 "$f" "$dest/"
    n=$((n + 1))
  done
  [ -z "${SOURCE_DATE_EPOCH:-}" ] || find "$dest" -exec touch -h -d "@$SOURCE_DATE_EPOCH" {} +
  chown -R 0:0 "$dest" 2>/dev/null || true
  name="$(sed -n 's/^[[:space:]]*name[[:space:]]*=[[:space:]]*//p' "$dest/manifest" | head -1)"
  echo "voice-packs: $lang: $dir -> /usr/share/crier/voice/$lang ($n files, $(du -sk "$dest" | cut -f1) KiB; name: $name)"
  if [ -n "${CRIER_VOICE_CHECK_BIN:-}" ]; then
    check() { "$CRIER_VOICE_CHECK_BIN" voice check --config "$root/boot/firmware/crier.conf" --lang "$lang" "$dest"; }
  elif [ -x "$root/usr/bin/crier" ]; then
    check() { chroot "$root" /usr/bin/crier voice check --config /boot/firmware/crier.conf --lang "$lang" "/usr/share/crier/voice/$lang"; }
  else
    echo "voice-packs: $lang: not checked (no crier in the root)"; continue
  fi
  if out="$(check 2>&1)"; then
    echo "voice-packs: $lang: $(printf '%s\n' "$out" | grep -E '^(coverage|ok):' | paste -sd' ')"
  else
    printf '%s\n' "$out" | grep -E '^(error|coverage|the pack)' | sed 's/^/  /' >&2
    echo "voice-packs: $lang: $dir cannot serve the image's crier.conf (crier voice check failed); fix the pack or leave --voice-pack $lang out" >&2
    exit 1
  fi
done
