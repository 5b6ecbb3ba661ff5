#!/usr/bin/env bash
# The peer Crier is measured against: what a shop would script instead. socat holds the TCP
# connection to the order server; for every order line, espeak-ng synthesizes the text and aplay
# opens the ALSA device, plays it and closes it again; then the ack is sent.
#
#   peer.sh HOST PORT          connect and serve orders until the server closes the connection
#
# It speaks just enough of docs/protocol.md (hello, order → ack) and is deliberately generous to
# itself: no jq, no sed, JSON fields cut out with bash parameter expansion (no extra processes).
# Voice settings and device come from the environment so they match Crier's config:
#   PEER_VOICE (cmn-latn-pinyin) PEER_RATE (175) PEER_PITCH (40) PEER_AMPLITUDE (100) PEER_DEVICE (default)
set -u
if [ "${1:-}" != "--loop" ]; then
    exec socat "TCP:$1:$2" EXEC:"bash $0 --loop"
fi
: "${PEER_VOICE:=cmn-latn-pinyin}" "${PEER_RATE:=175}" "${PEER_PITCH:=40}" "${PEER_AMPLITUDE:=100}" "${PEER_DEVICE:=default}"
printf '{"type":"hello","protocol":1,"device":"shell-peer"}\n'
while IFS= read -r line; do
    case "$line" in
        *'"type":"order"'*) ;;
        *) continue ;;
    esac
    id=${line#*\"id\":\"}; id=${id%%\"*}
    text=${line#*\"text\":\"}; text=${text%%\"*}
    espeak-ng -v "$PEER_VOICE" -s "$PEER_RATE" -p "$PEER_PITCH" -a "$PEER_AMPLITUDE" --stdout "$text" </dev/null \
        | aplay -q -D "$PEER_DEVICE" >/dev/null
    printf '{"type":"ack","id":"%s","status":"spoken"}\n' "$id"
done
