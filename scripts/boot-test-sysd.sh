#!/bin/bash
# Runs INSIDE the amd64 image that scripts/boot-test.sh boots, in boot 2 only (crier.boottest=sysd
# on that boot's kernel command line), as root from the test copy's crier-boot-sysd.service:
# crier's own systemd units under the image's own systemd (docs/image.md, "Boot test"):
#   a. crier.socket holds :80 and passes it to crier.service (no capability): the page answers
#   b. crier-config.path: a settings request in /run/crier as the page leaves it, written into
#      crier.conf on the boot partition by crier-config.service, crier reloaded in place
#   c. crier-setup-ap.path/.service: crier's request file starts it; the radio (mac80211_hwsim
#      when this kernel has it, else the "no radio" answer)
#   d. systemd-analyze security of every crier unit
# Each result is one console line "crier-boot-sysd: X: ..."; the host checks them after
# "crier-boot-sysd: end". Changes only what the units themselves change (crier.conf, once).
set -u
T0=$(cut -d' ' -f1 /proc/uptime)
say() { echo "crier-boot-sysd: $*"; }
since() { awk -v a="$T0" -v b="$(cut -d' ' -f1 /proc/uptime)" 'BEGIN { printf "%.1f", b - a }'; }
cursor() { journalctl -b -n 0 --show-cursor --no-pager | sed -n 's/^-- cursor: //p'; }
# unit_log CURSOR UNIT: the unit's journal lines (crier's without their timestamp) since CURSOR
unit_log() { journalctl -b --no-pager -o cat ${1:+--after-cursor="$1"} -u "$2" | sed -E 's/^[0-9T:.-]+Z //'; }
# wait_log SECONDS CURSOR UNIT REGEX: until REGEX is in UNIT's journal since CURSOR (wall-clock
# bounded: one journalctl takes a second or more under TCG on a loaded host)
wait_log() {
  local end=$(($(date +%s) + $1))
  until unit_log "$2" "$3" | grep -qE "$4"; do
    (($(date +%s) < end)) || return 1
    sleep 0.5
  done
}
# wait_inactive SECONDS UNIT
wait_inactive() {
  local end=$(($(date +%s) + $1))
  while systemctl is-active -q "$2" || [ "$(systemctl show -P ActiveState "$2")" = activating ]; do
    (($(date +%s) < end)) || return 1
    sleep 0.5
  done
}
# wait_nojobs SECONDS: until systemd has no job queued (ExecStopPost's --no-block restarts)
wait_nojobs() {
  local end=$(($(date +%s) + $1))
  while [ -n "$(systemctl list-jobs --no-legend --plain 2>/dev/null)" ]; do
    (($(date +%s) < end)) || return 1
    sleep 0.5
  done
}
# state UNIT: Result/ActiveState/SubState
state() { systemctl show -p Result -p ActiveState -p SubState "$1" | awk -F= '{ v[$1] = $2 } END { print v["Result"] "/" v["ActiveState"] "/" v["SubState"] }'; }
joblist() { systemctl list-jobs --no-legend --plain 2>/dev/null | awk '{ print $2 "/" $3 "/" $4 }' | paste -sd' '; }
# http_get PATH: sets STATUS, CTYPE, BODY (HTTP/1.1 to 127.0.0.1:80, bash's /dev/tcp: no curl here)
http_get() {
  local raw
  raw=$(timeout 20 bash -c 'exec 3<>/dev/tcp/127.0.0.1/80 || exit 1
    printf "GET %s HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n" "$1" >&3; cat <&3' _ "$1" 2>/dev/null | tr -d '\r')
  STATUS=$(head -n1 <<<"$raw")
  CTYPE=$(sed -n 's/^[Cc]ontent-[Tt]ype: *//p' <<<"$raw" | head -n1)
  BODY=$(sed '1,/^$/d' <<<"$raw")
}
# as_crier CMD...: what crier itself would do, as its user
as_crier() { runuser -u crier -- "$@"; }

systemctl is-system-running --wait >/dev/null
wait_log 60 "" crier.service 'runtime: ready'
say "start: $(systemctl --version | head -n1), kernel $(uname -r), system $(systemctl is-system-running)"

# ---- a. port 80 from crier.socket ---------------------------------------------------------------
MP=$(systemctl show -P MainPID crier.service)
say "a: crier.socket $(systemctl is-active crier.socket) Listen=$(systemctl show -P Listen crier.socket); crier.service $(systemctl is-active crier.service) pid $MP user $(stat -c %U /proc/"$MP")"
say "a: port 80 held by: $(ss -Hltnp 'sport = :80' | grep -o 'users:.*' | paste -sd' ')"
say "a: crier's capabilities: $(grep -E '^Cap(Inh|Prm|Eff|Bnd|Amb):' /proc/"$MP"/status | tr -d '\t ' | paste -sd' ')"
say "a: crier's log: $(journalctl -b -u crier.service -o cat | grep -m1 -o 'local page listening.*')"
http_get /
say "a: GET / -> $STATUS; $CTYPE; ${#BODY} bytes; $(grep -o '<title>[^<]*' <<<"$BODY" | head -n1)"
http_get /api/status
say "a: GET /api/status -> $STATUS; $CTYPE; $BODY"

# ---- b. crier-config.path: the page's settings into crier.conf ---------------------------------
CONF=/boot/firmware/crier.conf
C=$(cursor)
comments=$(grep -c '^[[:space:]]*#' "$CONF")
# What LocalPage.writeConfig hands over when crier may not write crier.conf (the image): the
# whole new file (changed keys in place, a new key at the end, every comment kept) as
# /run/crier/crier.conf.new.tmp (0600), renamed. speech.en.rate: a setting of the page's form.
{ cat "$CONF"; echo "speech.en.rate = 170"; } |
  as_crier sh -c 'umask 077; cat > /run/crier/crier.conf.new.tmp && mv /run/crier/crier.conf.new.tmp /run/crier/crier.conf.new'
t=$(since)
# crier-config.service (a oneshot) ends when its ExecStartPost's `systemctl reload crier` returns:
# the reload job is done once crier, re-executed in place, says READY=1 again
wait_log 60 "$C" crier-config.service 'apply-config|Failed' || true
wait_inactive 60 crier-config.service || true
wait_log 30 "$C" crier.service 'reloaded: running with the new configuration|reload failed' || true
say "b: crier-config.service $(state crier-config.service) after $(awk -v a="$t" -v b="$(since)" 'BEGIN { printf "%.1f", b - a }') s: $(unit_log "$C" crier-config.service | grep -E 'apply-config|Failed|failed|error' | paste -sd'|')"
say "b: request $( [ -e /run/crier/crier.conf.new ] && echo 'left in /run/crier' || echo removed); crier.conf: $(grep -c '^[[:space:]]*#' "$CONF") comment lines (before: $comments), $(grep -cvE '^[[:space:]]*(#|$)' "$CONF") settings, last line '$(tail -n1 "$CONF")'"
say "b: crier's log: $(unit_log "$C" crier.service | grep -E 'reload' | cut -c1-110 | paste -sd'|')"
sleep 6   # past the watchdog's first pet after the re-exec (WatchdogSec=10: a late pet kills it here)
MP2=$(systemctl show -P MainPID crier.service)
http_get /
say "b: after the reload: crier.service $(systemctl is-active crier.service) pid $MP2 (before: $MP), restarts $(systemctl show -P NRestarts crier.service); GET / -> $STATUS; port 80 held by: $(ss -Hltnp 'sport = :80' | grep -o 'users:.*' | paste -sd' ')"
say "b: systemd on crier.service since: $(journalctl -b --no-pager -o cat --after-cursor="$C" _PID=1 | grep -F 'crier.service' | tail -n 4 | paste -sd'|')"

# ---- c. the setup hotspot's units ---------------------------------------------------------------
hwsim=$(modinfo -n mac80211_hwsim 2>/dev/null || echo "not in this kernel")
say "c: kernel $(uname -r): mac80211_hwsim: $hwsim; cfg80211: $(modinfo -n cfg80211 2>/dev/null || echo 'not in this kernel'); interfaces: $(ls /sys/class/net | paste -sd' ')"
C=$(cursor)
# crier's request (SetupRadio.request: one word, written through PATH.tmp and a rename)
echo ap | as_crier sh -c 'cat > /run/crier/setup-ap.tmp && mv /run/crier/setup-ap.tmp /run/crier/setup-ap'
t=$(since)
wait_log 30 "$C" crier-setup-ap.service 'crier-setup-ap: (no radio|access point)' || true
say "c: after $(awk -v a="$t" -v b="$(since)" 'BEGIN { printf "%.1f", b - a }') s: crier-setup-ap.service $(state crier-setup-ap.service), crier-setup-ap.path $(systemctl is-active crier-setup-ap.path); jobs: [$(joblist)]"
unit_log "$C" crier-setup-ap.service | tail -n 8 | sed 's/^/crier-boot-sysd: c: unit: /'
as_crier rm -f /run/crier/setup-ap
wait_inactive 30 crier-setup-ap.service || true
sleep 1   # ExecStopPost's --no-block jobs: queued, then run
wait_nojobs 20 || true
say "c: request removed: crier-setup-ap.service $(state crier-setup-ap.service), crier-setup-ap.path $(systemctl is-active crier-setup-ap.path); jobs: [$(joblist)]; $(unit_log "$C" crier-setup-ap.service | grep -m1 -o 'crier-setup-ap: request file gone.*')"

# ---- d. systemd-analyze security of every crier unit ---------------------------------------------
t=$(since)
for u in crier.service crier-config.service crier-setup-ap.service crier-reboot.service crier-wifi-config.service \
         crier-wpa-supplicant.service crier-hostname.service crier-growdata.service crier-image-layout.service crier-mark-good.service; do
  e=$(systemd-analyze security --no-pager "$u" 2>&1 | sed -n 's/.*Overall exposure level for [^:]*: *\([0-9.]*\) *\([A-Z]*\).*/\1 \2/p')
  say "d: $u ${e:-"(no score: $(systemd-analyze security --no-pager "$u" 2>&1 | tail -n1))"}"
done
say "d: $(awk -v a="$t" -v b="$(since)" 'BEGIN { printf "%.1f", b - a }') s for 10 units"

# ---- e. crier-hostname (sandboxed: CAP_SYS_ADMIN only, no network, read-only system) -------------
say "e: crier-hostname.service $(systemctl show -P Result crier-hostname.service)/$(systemctl is-active crier-hostname.service), host name $(cat /proc/sys/kernel/hostname)"

say "end: system $(systemctl is-system-running), failed units: [$(systemctl --failed --no-legend --plain | cut -d' ' -f1 | paste -sd' ')], jobs: [$(joblist)], EROFS lines: $(journalctl -b --no-pager -o cat | grep -ci 'read-only file system'); $(since) s in all"
